// The compiled-binary and loaded-module caches (see module_cache.hpp). Compiles
// run outside the lock (they take milliseconds to seconds); module loads run
// under it so that an image is never loaded twice on one device.
#include "jitkernel/cuda/module_cache.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/hash.hpp"
#include "jitkernel/cuda/compiler.hpp"
#include "jitkernel/cuda/device.hpp"
#include "jitkernel/cuda/nvrtc_api.hpp"

#ifndef JITKERNEL_VERSION
#define JITKERNEL_VERSION "dev"
#endif

namespace jk::cuda {
namespace {

constexpr int kJitErrorLogBuffer = 5;           // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSizeBytes = 6;  // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES

struct BinaryCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const std::string>, StringHash> entries;
};

struct ModuleCache {
  std::mutex mutex;
  // (content hash, size, device) -> module
  std::map<std::tuple<std::uint64_t, std::size_t, int>, CUmodule> modules;
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

}  // namespace

std::shared_ptr<const std::string> compile_kernel_cached(const GeneratedKernel& kernel,
                                                         const std::string& arch) {
  auto [nvrtc_major, nvrtc_minor] = nvrtc_version();
  std::string key = "jitkernel " JITKERNEL_VERSION "\nnvrtc " + std::to_string(nvrtc_major) + "." +
                    std::to_string(nvrtc_minor) + "\narch " + arch + "\n";
  for (const auto& option : compile_options(arch, CompileTarget::Cubin)) key += option + "\n";
  key += '\0';
  key += kernel.source;

  BinaryCache& cache = binary_cache();
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.entries.find(key);
    if (it != cache.entries.end()) return it->second;
  }
  auto cubin = std::make_shared<const std::string>(compile_kernel(kernel, arch, CompileTarget::Cubin));
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.entries.emplace(std::move(key), std::move(cubin)).first->second;
}

CUmodule load_module(int device, const std::string& image) {
  auto key = std::make_tuple(hash_bytes(image.data(), image.size()), image.size(), device);
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
