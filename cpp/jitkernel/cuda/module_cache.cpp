// The compiled-binary and loaded-module caches (see module_cache.hpp). Compiles
// run outside the lock (they take milliseconds to seconds); module loads run
// under it so that an image is never loaded twice on one device. Compiled
// binaries go through the disk cache (cache/disk_cache.hpp) keyed by
// cache/compile_key.hpp, which also keys the in-memory cache (so a kernel
// whose launch plan is built after one of its headers changed is compiled
// again); a binary is stored only when the key computed again after the
// compile is unchanged.
#include "jitkernel/cuda/module_cache.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <map>
#include <optional>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "jitkernel/cache/compile_key.hpp"
#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/key.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/hash.hpp"
#include "jitkernel/cuda/compiler.hpp"
#include "jitkernel/cuda/device.hpp"
#include "jitkernel/cuda/nvrtc_api.hpp"
#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"

namespace jk::cuda {
namespace {

constexpr int kJitErrorLogBuffer = 5;           // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSizeBytes = 6;  // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES

struct DigestHash {
  std::size_t operator()(const cache::Digest& d) const noexcept {
    return static_cast<std::size_t>(hash_bytes(d.data(), d.size()));
  }
};

struct BinaryCache {
  std::mutex mutex;
  std::unordered_map<cache::Digest, std::shared_ptr<const std::string>, DigestHash> entries;
};

struct ModuleCache {
  std::mutex mutex;
  // (SHA-256 of the image, device) -> module. A cryptographic digest: images
  // come from users too (precompiled_cuda_kernel), and two different images
  // sharing a module would run one's code for the other.
  std::map<std::pair<cache::Digest, int>, CUmodule> modules;
};

// Both never destroyed: modules stay loaded until the process exits.
BinaryCache& binary_cache() {
  static BinaryCache* cache = new BinaryCache;
  return *cache;
}

ModuleCache& module_cache() {
  static ModuleCache* cache = new ModuleCache;
  return *cache;
}

const char* target_name(CompileTarget target) {
  return target == CompileTarget::Cubin ? "cubin" : "ptx";
}

// The name NVRTC compiles the kernel under (compile_kernel's choice).
std::string nvrtc_program_name(const GeneratedKernel& kernel) {
  return kernel.program_name.empty() ? kernel.entry_name + ".cu" : kernel.program_name;
}

struct Compiled {
  std::string binary;
  // False when a file the key covers changed while NVRTC ran: the binary may
  // be of either version, so it is kept under no key.
  bool keyed = true;
};

// The disk cache, else `compile` (whose result is stored on disk if
// `rekey`, the key computed again after the compile, is still `key`). A
// compile whose key cannot cover what it reads (cache/compile_key.hpp)
// neither uses nor fills the disk cache, with one warning.
template <typename Rekey, typename Compile>
Compiled through_disk(const cache::CompileKey& key, const std::string& program_name, Rekey&& rekey,
                      Compile&& compile) {
  if (!key.not_covered.empty()) {
    if (cache::active_directory()) {
      cache::warn("not covered: " + key.not_covered,
                  "'" + program_name + "' is kept in memory only, not in the compile cache: " +
                      key.not_covered + ", so the cache cannot tell when that file changes");
    }
    return {compile(), true};
  }
  if (std::optional<std::string> hit = cache::load(key.digest)) return {std::move(*hit), true};
  Compiled out{compile(), true};
  out.keyed = rekey().digest == key.digest;
  if (out.keyed) cache::store(key.digest, out.binary);
  return out;
}

std::string identity_memo_key(const ToolkitPaths& paths) {
  std::string key = paths.nvrtc_library;
  for (const auto& pre : paths.nvrtc_preload) key += '\n' + pre;
  return key;
}

std::mutex g_identity_mutex;
std::unordered_map<std::string, std::string>& identity_memo() {
  static auto* memo = new std::unordered_map<std::string, std::string>;
  return *memo;
}

std::string with_preloads(std::string identity, const ToolkitPaths& paths) {
  for (const auto& pre : paths.nvrtc_preload) identity += "; " + cache::file_identity(pre);
  return identity;
}

// compile_key's fields besides the options (which its callers choose).
cache::CompileKey key_with_options(const std::string& source, const std::string& program_name,
                               const std::string& arch, CompileTarget target,
                               std::vector<std::string> options) {
  cache::CompileKeyInputs in;
  in.source = source;
  in.program_name = program_name;
  in.arch = arch;
  in.target = target_name(target);
  in.options = std::move(options);
  in.compiler = compiler_identity();
  in.include_dirs = toolkit_paths().include_dirs;
  return cache::compile_key_of(in);
}

}  // namespace

std::string library_identity(const ToolkitPaths& paths) {
  if (paths.nvrtc_library.find('/') == std::string::npos) return "";
  std::string identity = cache::file_identity(paths.nvrtc_library);
  return identity == "missing" ? "" : with_preloads(std::move(identity), paths);
}

void remember_compiler_identity(const ToolkitPaths& paths, std::string identity) {
  std::lock_guard<std::mutex> lock(g_identity_mutex);
  identity_memo().insert_or_assign(identity_memo_key(paths), std::move(identity));
}

std::string compiler_identity() {
  ToolkitPaths paths = toolkit_paths();
  const std::string memo_key = identity_memo_key(paths);
  {
    std::lock_guard<std::mutex> lock(g_identity_mutex);
    auto it = identity_memo().find(memo_key);
    if (it != identity_memo().end()) return it->second;
  }
  // By path without loading NVRTC; a soname (or a missing file) is
  // resolved by loading it and asking the loader which file it mapped.
  std::string identity = library_identity(paths);
  if (identity.empty()) {
    const NvrtcApi& api = nvrtc();  // CudaNotAvailable when it cannot be loaded
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(api.nvrtcVersion), &info) == 0 || info.dli_fname == nullptr)
      throw CudaNotAvailable("cannot tell which file NVRTC was loaded from (dladdr failed)");
    identity = with_preloads(cache::file_identity(info.dli_fname), paths);
  }
  std::lock_guard<std::mutex> lock(g_identity_mutex);
  return identity_memo().emplace(memo_key, std::move(identity)).first->second;
}

cache::CompileKey compile_key(const std::string& source, const std::string& program_name,
                              const std::string& arch, CompileTarget target) {
  return key_with_options(source, program_name, arch, target,
                          compile_options(arch, target, source));
}

cache::CompileKey compile_key(const GeneratedKernel& kernel, const std::string& arch,
                              CompileTarget target) {
  return key_with_options(kernel.source, nvrtc_program_name(kernel), arch, target,
                          compile_options(arch, target, kernel));
}

std::string compile_kernel_persistent(const GeneratedKernel& kernel, const std::string& arch,
                                      CompileTarget target) {
  return through_disk(
             compile_key(kernel, arch, target), nvrtc_program_name(kernel),
             [&] { return compile_key(kernel, arch, target); },
             [&] { return compile_kernel(kernel, arch, target); })
      .binary;
}

std::string compile_source_persistent(const std::string& source, const std::string& program_name,
                                      const std::string& arch, CompileTarget target) {
  return through_disk(
             compile_key(source, program_name, arch, target), program_name,
             [&] { return compile_key(source, program_name, arch, target); },
             [&] { return compile_source(source, program_name, arch, target); })
      .binary;
}

std::shared_ptr<const std::string> compile_kernel_cached(const GeneratedKernel& kernel,
                                                         const std::string& arch) {
  const cache::CompileKey key = compile_key(kernel, arch, CompileTarget::Cubin);
  BinaryCache& memory = binary_cache();
  {
    std::lock_guard<std::mutex> lock(memory.mutex);
    auto it = memory.entries.find(key.digest);
    if (it != memory.entries.end()) return it->second;
  }
  Compiled compiled = through_disk(
      key, nvrtc_program_name(kernel),
      [&] { return compile_key(kernel, arch, CompileTarget::Cubin); },
      [&] { return compile_kernel(kernel, arch, CompileTarget::Cubin); });
  auto cubin = std::make_shared<const std::string>(std::move(compiled.binary));
  if (!compiled.keyed) return cubin;
  std::lock_guard<std::mutex> lock(memory.mutex);
  return memory.entries.emplace(key.digest, std::move(cubin)).first->second;
}

CUmodule load_module(int device, const std::string& image) {
  const auto key = std::make_pair(cache::sha256(image), device);
  ModuleCache& cache = module_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.modules.find(key);
  if (it != cache.modules.end()) return it->second;

  const DriverApi& api = driver();
  DeviceGuard guard(device);
  char log[4096] = {};
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes};
  void* values[] = {log, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof(log) - 1))};
  CUmodule module = nullptr;
  // image.c_str() is NUL-terminated, as PTX text must be.
  CUresult r = api.cuModuleLoadDataEx(&module, image.c_str(), 2, options, values);
  if (r != CUDA_SUCCESS) {
    std::string what = "loading a module on CUDA device " + std::to_string(device);
    log[sizeof(log) - 1] = '\0';
    std::string jit_log = log;
    if (jit_log.empty()) check(r, what.c_str());  // also turns sticky faults into KernelFault
    what += " (driver log: " + jit_log + ")";
    check(r, what.c_str());
  }
  cache.modules.emplace(key, module);
  return module;
}

CUfunction get_function(CUmodule module, const std::string& name) {
  CUfunction function = nullptr;
  CUresult r = driver().cuModuleGetFunction(&function, module, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) {
    throw CudaError(r, "the module has no entry point named '" + name + "'");
  }
  check(r, ("looking up kernel '" + name + "'").c_str());
  return function;
}

}  // namespace jk::cuda
