// Loads libcuda.so.1 at run time (nothing links it), calls cuInit, and
// resolves every entry point of DriverApi through cuGetProcAddress at the
// CUDA 12.0 ABI, the ABI the declarations in driver_api.hpp follow (newer
// drivers keep serving it; CUDA 13 changed e.g. cuCtxGetDevice). Also turns
// driver error codes into jitkernel errors, naming the last kernel launched
// when the error is a sticky kernel fault.
#include "jitkernel/cuda/driver/driver_api.hpp"

#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/stage_clock.hpp"

namespace jk::cuda {
namespace {

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, std::uint64_t, int*);
using GetProcAddressV1 = CUresult (*)(const char*, void**, int, std::uint64_t);
using ErrorTextFn = CUresult (*)(CUresult, const char**);

constexpr int kAbiVersion = 12000;              // ABI of the DriverApi declarations
constexpr std::uint64_t kLegacyStreamFlag = 1;  // CU_GET_PROC_ADDRESS_LEGACY_STREAM: handle 0 = legacy stream

// Error-text lookups, set (from dlsym) before cuInit so even cuInit failures
// can be described; check() uses them without triggering a driver load.
ErrorTextFn g_error_name = nullptr;
ErrorTextFn g_error_string = nullptr;

struct LoadedDriver {
  DriverApi api{};
  std::string error;  // non-empty: why the driver cannot be used
  int device_count = 0;
};

std::string cuinit_failure(CUresult result) {
  std::string text = "CUDA is not usable: cuInit failed with " + describe_result(result);
  switch (result) {
    case CUDA_ERROR_NO_DEVICE:
      return text + ". No NVIDIA GPU is visible to this process: check nvidia-smi, "
                    "CUDA_VISIBLE_DEVICES, and (in a container) that GPUs were passed through.";
    case 35:  // CUDA_ERROR_INSUFFICIENT_DRIVER
      return text + ". The installed NVIDIA driver is older than this libcuda needs: update the driver.";
    case 34:  // CUDA_ERROR_STUB_LIBRARY
      return text + ". The libcuda.so.1 found is the CUDA toolkit's stub library, not a driver: "
                    "install the NVIDIA driver and keep the toolkit's stubs/ folder out of LD_LIBRARY_PATH.";
    case 803:  // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
      return text + ". libcuda.so.1 does not match the loaded NVIDIA kernel module (driver version "
                    "mismatch): reboot, or reinstall the driver so that both have the same version.";
    case 804:  // CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
      return text + ". A CUDA forward-compatibility libcuda is in use but this GPU does not support it: "
                    "remove the compat library from LD_LIBRARY_PATH or update the NVIDIA driver.";
    default:
      return text + ".";
  }
}

// cuGetProcAddress of the loaded driver: resolves `symbol` at the ABI of
// `introduced` (kAbiVersion for the classic entry points), never asking for
// more than the driver has (cuGetProcAddress rejects versions above the
// driver's); nullptr when the driver lacks it.
struct ProcResolver {
  GetProcAddressV2 get_v2 = nullptr;  // preferred when the driver has it
  GetProcAddressV1 get_v1 = nullptr;
  int driver_version = 0;

  void* operator()(const char* symbol, int introduced) const {
    int version = std::min(std::max(introduced, kAbiVersion), driver_version);
    void* fn = nullptr;
    CUresult r;
    if (get_v2 != nullptr) {
      int status = 0;
      r = get_v2(symbol, &fn, version, kLegacyStreamFlag, &status);
      if (status != 0) fn = nullptr;
    } else {
      r = get_v1(symbol, &fn, version, kLegacyStreamFlag);
    }
    return r == CUDA_SUCCESS ? fn : nullptr;
  }
};

// Fills every entry point of `a`; returns the required ones the driver
// lacks, comma-separated ("" when none).
std::string resolve_entry_points(const ProcResolver& resolve, DriverApi& a) {
  std::string missing;
  auto required = [&](auto& field, const char* symbol) {
    field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(resolve(symbol, kAbiVersion));
    if (field == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  auto optional = [&](auto& field, const char* symbol, int introduced) {
    field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(resolve(symbol, introduced));
  };
  required(a.cuInit, "cuInit");
  required(a.cuDriverGetVersion, "cuDriverGetVersion");
  required(a.cuGetErrorName, "cuGetErrorName");
  required(a.cuGetErrorString, "cuGetErrorString");
  required(a.cuDeviceGetCount, "cuDeviceGetCount");
  required(a.cuDeviceGet, "cuDeviceGet");
  required(a.cuDeviceGetName, "cuDeviceGetName");
  required(a.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  required(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  required(a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease");
  required(a.cuCtxGetCurrent, "cuCtxGetCurrent");
  required(a.cuCtxSetCurrent, "cuCtxSetCurrent");
  required(a.cuCtxSynchronize, "cuCtxSynchronize");
  required(a.cuModuleLoadData, "cuModuleLoadData");
  required(a.cuModuleLoadDataEx, "cuModuleLoadDataEx");
  required(a.cuModuleUnload, "cuModuleUnload");
  required(a.cuModuleGetFunction, "cuModuleGetFunction");
  optional(a.cuModuleGetFunctionCount, "cuModuleGetFunctionCount", 12040);
  optional(a.cuModuleEnumerateFunctions, "cuModuleEnumerateFunctions", 12040);
  optional(a.cuFuncGetName, "cuFuncGetName", 12030);
  required(a.cuFuncGetAttribute, "cuFuncGetAttribute");
  required(a.cuFuncSetAttribute, "cuFuncSetAttribute");
  optional(a.cuFuncGetParamInfo, "cuFuncGetParamInfo", 12040);
  required(a.cuLaunchKernelEx, "cuLaunchKernelEx");
  required(a.cuLaunchKernel, "cuLaunchKernel");
  required(a.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  required(a.cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters");
  required(a.cuMemAllocAsync, "cuMemAllocAsync");
  required(a.cuMemFreeAsync, "cuMemFreeAsync");
  required(a.cuMemAlloc, "cuMemAlloc");
  required(a.cuMemFree, "cuMemFree");
  required(a.cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool");
  required(a.cuMemPoolSetAttribute, "cuMemPoolSetAttribute");
  required(a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync");
  required(a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync");
  required(a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync");
  required(a.cuMemsetD8Async, "cuMemsetD8Async");
  required(a.cuMemsetD16Async, "cuMemsetD16Async");
  required(a.cuMemsetD32Async, "cuMemsetD32Async");
  required(a.cuPointerGetAttribute, "cuPointerGetAttribute");
  required(a.cuStreamSynchronize, "cuStreamSynchronize");
  required(a.cuStreamQuery, "cuStreamQuery");
  required(a.cuStreamIsCapturing, "cuStreamIsCapturing");
  required(a.cuStreamGetCtx, "cuStreamGetCtx");
  required(a.cuCtxGetDevice, "cuCtxGetDevice");
  required(a.cuEventCreate, "cuEventCreate");
  required(a.cuEventRecord, "cuEventRecord");
  required(a.cuEventDestroy, "cuEventDestroy");
  required(a.cuStreamWaitEvent, "cuStreamWaitEvent");
  optional(a.cuEventSynchronize, "cuEventSynchronize", kAbiVersion);
  optional(a.cuEventElapsedTime, "cuEventElapsedTime", kAbiVersion);
  optional(a.cuFuncGetModule, "cuFuncGetModule", 11000);
  optional(a.cuModuleGetGlobal, "cuModuleGetGlobal", 3020);
  return missing;
}

LoadedDriver load_driver() {
  LoadedDriver out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    out.error = std::string("CUDA driver not found (") + (why ? why : "libcuda.so.1: not found") +
                "): install the NVIDIA driver (https://www.nvidia.com/drivers) on a machine with an "
                "NVIDIA GPU; compiling kernels (source(), compile(), compile_cuda()) works without it";
    return out;
  }
  auto get_v2 = reinterpret_cast<GetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
  auto get_v1 = reinterpret_cast<GetProcAddressV1>(dlsym(lib, "cuGetProcAddress"));
  auto init = reinterpret_cast<CUresult (*)(unsigned int)>(dlsym(lib, "cuInit"));
  auto get_version = reinterpret_cast<CUresult (*)(int*)>(dlsym(lib, "cuDriverGetVersion"));
  g_error_name = reinterpret_cast<ErrorTextFn>(dlsym(lib, "cuGetErrorName"));
  g_error_string = reinterpret_cast<ErrorTextFn>(dlsym(lib, "cuGetErrorString"));
  if ((get_v2 == nullptr && get_v1 == nullptr) || init == nullptr || get_version == nullptr) {
    out.error = "the CUDA driver (libcuda.so.1) is too old: it lacks cuGetProcAddress; "
                "update the NVIDIA driver (CUDA 11.8 or newer)";
    return out;
  }
  int driver_version = 0;
  if (get_version(&driver_version) != CUDA_SUCCESS) driver_version = 0;
  if (CUresult r = init(0); r != CUDA_SUCCESS) {
    out.error = cuinit_failure(r);
    return out;
  }

  const ProcResolver resolve{get_v2, get_v1, driver_version};
  const std::string missing = resolve_entry_points(resolve, out.api);
  if (!missing.empty()) {
    out.error = "the CUDA driver (libcuda.so.1, CUDA " + std::to_string(driver_version / 1000) + "." +
                std::to_string(driver_version % 1000 / 10) + ") lacks entry points jitkernel needs (" +
                missing + "): update the NVIDIA driver (CUDA 11.8 or newer)";
    return out;
  }
  if (out.api.cuDeviceGetCount(&out.device_count) != CUDA_SUCCESS) out.device_count = 0;
  return out;
}

// Set in a child process forked after this one loaded the driver: the child
// holds a copy of the parent's CUDA state, which the driver does not support
// after fork, so every use there is refused with a clear error instead of
// failing (or hanging) somewhere inside the driver.
std::atomic<bool> g_forked_child{false};
void mark_forked_child() { g_forked_child.store(true, std::memory_order_relaxed); }

constexpr const char* kForkedChild =
    "CUDA cannot be used in this process: it was forked after its parent initialized CUDA, and the CUDA driver "
    "does not work in such a child. Start worker processes with the 'spawn' (or 'forkserver') start method: "
    "multiprocessing.set_start_method('spawn'), torch DataLoader(..., multiprocessing_context='spawn'); "
    "jitkernel kernels pickle, so they can be passed to such workers.";

const LoadedDriver& loaded_driver() {
  // Never destroyed: buffers and modules may be released during static destruction.
  static const LoadedDriver* loaded = [] {
    StageTimer timer(Stage::DriverLoad);
    auto* driver = new LoadedDriver(load_driver());
    if (driver->error.empty()) pthread_atfork(nullptr, nullptr, &mark_forked_child);
    return driver;
  }();
  return *loaded;
}

bool is_sticky_fault(CUresult r) {
  return r == CUDA_ERROR_ILLEGAL_ADDRESS || r == CUDA_ERROR_LAUNCH_TIMEOUT ||
         (r >= CUDA_ERROR_HARDWARE_STACK_ERROR && r <= CUDA_ERROR_LAUNCH_FAILED);
}

std::mutex g_last_kernel_mutex;
char g_last_kernel[256] = {};

}  // namespace

const DriverApi& driver() {
  const LoadedDriver& loaded = loaded_driver();
  if (!loaded.error.empty()) throw CudaNotAvailable(loaded.error);
  if (g_forked_child.load(std::memory_order_relaxed)) throw CudaNotAvailable(kForkedChild);
  return loaded.api;
}

bool cuda_available() {
  try {
    const LoadedDriver& loaded = loaded_driver();
    return loaded.error.empty() && loaded.device_count > 0 && !g_forked_child.load(std::memory_order_relaxed);
  } catch (...) {
    return false;
  }
}

std::string describe_result(CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (g_error_name == nullptr || g_error_name(result, &name) != CUDA_SUCCESS || name == nullptr) {
    name = nullptr;
  }
  if (g_error_string == nullptr || g_error_string(result, &text) != CUDA_SUCCESS || text == nullptr) {
    text = nullptr;
  }
  std::string out = name ? name : "CUDA error " + std::to_string(result);
  if (text != nullptr) out += std::string(" (") + text + ")";
  return out;
}

void check(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return;
  if (is_sticky_fault(result)) {
    std::string last;
    {
      std::lock_guard<std::mutex> lock(g_last_kernel_mutex);
      last = g_last_kernel;
    }
    std::string culprit = last.empty()
                              ? "no kernel had been launched by jitkernel (the fault comes from other "
                                "code in this process)"
                              : "the last kernel jitkernel launched was '" + last + "'";
    throw KernelFault(result, "kernel fault on device: " + describe_result(result) + " \u2014 " +
                                  culprit + " (reported while " + what +
                                  "); the CUDA context is unusable now: restart the process");
  }
  throw CudaError(result, std::string(what) + ": " + describe_result(result));
}

void note_kernel_launch(const char* name) {
  std::lock_guard<std::mutex> lock(g_last_kernel_mutex);
  std::strncpy(g_last_kernel, name, sizeof(g_last_kernel) - 1);
  g_last_kernel[sizeof(g_last_kernel) - 1] = '\0';
}

}  // namespace jk::cuda
