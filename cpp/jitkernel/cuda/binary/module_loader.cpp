// The loaded-module cache of module_loader.hpp. Loads run under its lock so
// that an image is never loaded twice on one device; the driver's JIT error
// log is asked for, so that a PTX the driver rejects says why.
#include "jitkernel/cuda/binary/module_loader.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/stage_clock.hpp"
#include "jitkernel/cuda/driver/device.hpp"

namespace jk::cuda {
namespace {

constexpr int kJitErrorLogBuffer = 5;           // CU_JIT_ERROR_LOG_BUFFER
constexpr int kJitErrorLogBufferSizeBytes = 6;  // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES

struct ModuleCache {
  std::mutex mutex;
  // (SHA-256 of the image, device) -> module. A cryptographic digest: images
  // come from users too (precompiled_cuda_kernel), and two different images
  // sharing a module would run one's code for the other.
  std::map<std::pair<cache::Digest, int>, CUmodule> modules;
};

// Never destroyed: modules stay loaded until the process exits.
ModuleCache& module_cache() {
  static ModuleCache* cache = new ModuleCache;
  return *cache;
}

}  // namespace

CUmodule load_module(int device, const std::string& image) {
  const auto key = std::make_pair(cache::sha256(image), device);
  ModuleCache& cache = module_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.modules.find(key);
  if (it != cache.modules.end()) return it->second;

  const DriverApi& api = driver();
  DeviceGuard guard(device);
  StageTimer timer(Stage::ModuleLoad);
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
  StageTimer timer(Stage::FunctionLookup);
  CUresult r = driver().cuModuleGetFunction(&function, module, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) {
    throw CudaError(r, "the module has no entry point named '" + name + "'");
  }
  check(r, ("looking up kernel '" + name + "'").c_str());
  return function;
}

}  // namespace jk::cuda
