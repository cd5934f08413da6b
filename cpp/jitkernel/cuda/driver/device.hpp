// Per-device state: the primary context (retained once, made current before
// every driver call on that device), the attributes launch checks need, and
// the exact architecture name NVRTC compiles for ("sm_90a" on Hopper).
#pragma once

#include <string>

#include "jitkernel/cuda/driver/driver_api.hpp"

namespace jk::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  std::string arch;  // "sm_90a" for 9.0, "sm_100a" for 10.0, else "sm_XY"
  int max_threads_per_block = 0;
  int max_block_dim[3] = {0, 0, 0};
  int max_grid_dim[3] = {0, 0, 0};
  int max_shared_memory_per_block = 0;        // without opt-in (48 KiB)
  int max_shared_memory_per_block_optin = 0;  // with cuFuncSetAttribute
  int multiprocessor_count = 0;
  int max_threads_per_multiprocessor = 0;
  bool cooperative_launch = false;  // cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE
  bool cluster_launch = false;      // thread-block clusters (compute capability 9.0+)
};

int device_count();  // 0 when no driver / no device; never throws
// Throws ArgumentError("device", ...) for an ordinal out of range.
const DeviceInfo& device_info(int ordinal);
// Makes the device's primary context current on this thread (cheap when it already is).
void make_current(int ordinal);
// Makes `ordinal` current for a scope and then restores the context that was
// current before (when there was one), so that calling jitkernel never
// changes the current device PyTorch/CuPy see on this thread. Used at every
// entry point that touches a device; nested uses are cheap.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  CUcontext previous_ = nullptr;
};

// Architecture name for a compute capability, e.g. (9,0) -> "sm_90a".
std::string arch_for(int cc_major, int cc_minor);

// Waits for all work on the device; faults surface as KernelFault.
void synchronize(int ordinal);

}  // namespace jk::cuda
