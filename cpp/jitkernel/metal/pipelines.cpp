// The library / pipeline cache of pipelines.hpp. Lookups hash the source
// text and compare it in full (no collision can hand back another kernel's
// code). Compiles run outside the cache lock and inside a BlockingSection,
// so other threads (and Python) keep going; two threads racing on the same
// new source may both compile it, and the first to finish is kept.
#include "jitkernel/metal/pipelines.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jitkernel/core/blocking.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/hash.hpp"

namespace jk::metal {
namespace {

using jk::GeneratedKernel;
using jk::MetalMathMode;

struct LibraryEntry {
  std::string source;
  MetalMathMode math_mode;
  NS::SharedPtr<MTL::Library> library;
  std::vector<std::pair<std::string, NS::SharedPtr<MTL::ComputePipelineState>>> pipelines;
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, std::vector<std::unique_ptr<LibraryEntry>>> libraries;
};

// Never destroyed: its Metal objects must not be released during process
// teardown, when Metal may already be gone.
Cache& cache() {
  static Cache* const instance = new Cache;
  return *instance;
}

std::uint64_t cache_key(const std::string& source, MetalMathMode mode) {
  return hash_combine(hash_string(source), static_cast<std::uint64_t>(mode));
}

// Called with the cache lock held.
LibraryEntry* find_entry(Cache& c, std::uint64_t key, const std::string& source, MetalMathMode mode) {
  auto it = c.libraries.find(key);
  if (it == c.libraries.end()) return nullptr;
  for (auto& entry : it->second) {
    if (entry->math_mode == mode && entry->source == source) return entry.get();
  }
  return nullptr;
}

MTL::ComputePipelineState* find_pipeline(const LibraryEntry& entry, const std::string& name) {
  for (const auto& [function, pipeline] : entry.pipelines) {
    if (function == name) return pipeline.get();
  }
  return nullptr;
}

void set_math_mode(const MetalDevice& device, MTL::CompileOptions* options, MetalMathMode mode) {
  if (device.has_math_mode) {
    options->setMathMode(mode == MetalMathMode::Fast      ? MTL::MathModeFast
                         : mode == MetalMathMode::Relaxed ? MTL::MathModeRelaxed
                                                          : MTL::MathModeSafe);
  } else {
    // Before macOS 15 there is only on/off; "relaxed" keeps IEEE behaviour there.
    options->setFastMathEnabled(mode == MetalMathMode::Fast);
  }
}

[[noreturn]] void throw_compile_error(const GeneratedKernel& kernel, const char* stage,
                                      const std::string& raw_log) {
  std::string log = codegen::map_metal_compile_log(kernel, raw_log);
  throw CompileError(std::string(stage) + " Metal kernel '" + kernel.entry_name + "' failed:\n" + log,
                     log, kernel.source);
}

NS::SharedPtr<MTL::Library> compile_library(const MetalDevice& device,
                                            const GeneratedKernel& kernel, MetalMathMode mode) {
  AutoreleaseScope pool;
  NS::SharedPtr<MTL::CompileOptions> options = NS::TransferPtr(MTL::CompileOptions::alloc()->init());
  if (!options) throw Error("Metal: could not create MTLCompileOptions");
  options->setLanguageVersion(device.language_version);
  set_math_mode(device, options.get(), mode);
  NS::String* source = ns_string(kernel.source);
  NS::Error* error = nullptr;  // autoreleased: read before the pool drains
  MTL::Library* library = nullptr;
  {
    BlockingSection unlocked;
    library = device.device->newLibrary(source, options.get(), &error);  // +1
  }
  if (library == nullptr) {
    throw_compile_error(kernel, "compiling", error_text(error, "(Metal gave no log)"));
  }
  return NS::TransferPtr(library);
}

NS::SharedPtr<MTL::ComputePipelineState> make_pipeline(const MetalDevice& device,
                                                       MTL::Library* library,
                                                       const GeneratedKernel& kernel) {
  AutoreleaseScope pool;
  NS::SharedPtr<MTL::Function> function =
      NS::TransferPtr(library->newFunction(ns_string(kernel.entry_name)));  // +1
  if (!function) {
    throw Error("Metal: the compiled library has no kernel named '" + kernel.entry_name +
                "' (internal error: the generated host_name does not match)");
  }
  NS::Error* error = nullptr;
  MTL::ComputePipelineState* pipeline = nullptr;
  {
    BlockingSection unlocked;
    pipeline = device.device->newComputePipelineState(function.get(), &error);  // +1
  }
  if (pipeline == nullptr) {
    // Link errors (a function declared but never defined, ...) surface here.
    throw_compile_error(kernel, "linking", error_text(error, "(Metal gave no log)"));
  }
  return NS::TransferPtr(pipeline);
}

}  // namespace

MTL::ComputePipelineState* kernel_pipeline(const MetalDevice& device,
                                           const GeneratedKernel& kernel,
                                           MetalMathMode math_mode) {
  Cache& c = cache();
  const std::uint64_t key = cache_key(kernel.source, math_mode);
  NS::SharedPtr<MTL::Library> library;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (LibraryEntry* entry = find_entry(c, key, kernel.source, math_mode)) {
      if (MTL::ComputePipelineState* pipeline = find_pipeline(*entry, kernel.entry_name)) {
        return pipeline;
      }
      library = entry->library;
    }
  }
  if (!library) library = compile_library(device, kernel, math_mode);
  NS::SharedPtr<MTL::ComputePipelineState> pipeline = make_pipeline(device, library.get(), kernel);

  std::lock_guard<std::mutex> lock(c.mutex);
  LibraryEntry* entry = find_entry(c, key, kernel.source, math_mode);
  if (entry == nullptr) {
    auto created = std::make_unique<LibraryEntry>();
    created->source = kernel.source;
    created->math_mode = math_mode;
    created->library = library;
    entry = created.get();
    c.libraries[key].push_back(std::move(created));
  }
  if (MTL::ComputePipelineState* existing = find_pipeline(*entry, kernel.entry_name)) {
    return existing;  // another thread finished first
  }
  entry->pipelines.emplace_back(kernel.entry_name, pipeline);
  return pipeline.get();
}

}  // namespace jk::metal
