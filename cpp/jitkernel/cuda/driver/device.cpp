// Per-device state: attributes read once for all devices (launch checks read
// them lock-free afterwards), primary contexts retained on first use and kept
// for the life of the process, and make_current, which costs one
// cuCtxGetCurrent when the right context is already current.
#include "jitkernel/cuda/driver/device.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/stage_clock.hpp"

namespace jk::cuda {
namespace {

struct Devices {
  std::vector<DeviceInfo> infos;
  std::vector<CUdevice> handles;
  std::mutex mutex;                   // guards contexts
  std::vector<CUcontext> contexts;    // retained primary contexts (null until first use)
};

int attribute(const DriverApi& api, CUdevice_attribute attr, CUdevice dev, const char* what) {
  int value = 0;
  check(api.cuDeviceGetAttribute(&value, attr, dev), what);
  return value;
}

std::unique_ptr<Devices> load_devices() {
  const DriverApi& api = driver();
  StageTimer timer(Stage::DeviceAttributes);
  auto d = std::make_unique<Devices>();
  int count = 0;
  check(api.cuDeviceGetCount(&count), "counting CUDA devices");
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    check(api.cuDeviceGet(&dev, i), "opening a CUDA device");
    DeviceInfo info;
    info.ordinal = i;
    char name[256] = {};
    check(api.cuDeviceGetName(name, sizeof(name) - 1, dev), "reading the device name");
    info.name = name;
    const char* what = "reading device attributes";
    info.cc_major = attribute(api, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev, what);
    info.cc_minor = attribute(api, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev, what);
    info.arch = arch_for(info.cc_major, info.cc_minor);
    info.max_threads_per_block = attribute(api, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev, what);
    info.max_block_dim[0] = attribute(api, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, dev, what);
    info.max_block_dim[1] = attribute(api, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, dev, what);
    info.max_block_dim[2] = attribute(api, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, dev, what);
    info.max_grid_dim[0] = attribute(api, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, dev, what);
    info.max_grid_dim[1] = attribute(api, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, dev, what);
    info.max_grid_dim[2] = attribute(api, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, dev, what);
    info.max_shared_memory_per_block =
        attribute(api, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, dev, what);
    info.max_shared_memory_per_block_optin =
        attribute(api, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev, what);
    if (info.max_shared_memory_per_block_optin < info.max_shared_memory_per_block) {
      info.max_shared_memory_per_block_optin = info.max_shared_memory_per_block;
    }
    info.multiprocessor_count = attribute(api, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev, what);
    info.max_threads_per_multiprocessor =
        attribute(api, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev, what);
    info.cooperative_launch = attribute(api, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev, what) != 0;
    info.cluster_launch = info.cc_major >= 9 && attribute(api, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev, what) != 0;
    d->infos.push_back(std::move(info));
    d->handles.push_back(dev);
  }
  d->contexts.assign(count, nullptr);
  return d;
}

Devices& devices() {
  // Built once (thread-safe); a failed load throws and is retried next time.
  // Never destroyed, like the contexts it holds.
  static Devices* d = load_devices().release();
  return *d;
}

Devices& checked_devices(int ordinal) {
  Devices& d = devices();
  if (ordinal < 0 || ordinal >= static_cast<int>(d.infos.size())) {
    throw ArgumentError("device", "CUDA device " + std::to_string(ordinal) +
                                      " does not exist: this machine has " +
                                      std::to_string(d.infos.size()) + " CUDA device(s)");
  }
  return d;
}

CUcontext primary_context(int ordinal) {
  Devices& d = checked_devices(ordinal);
  std::lock_guard<std::mutex> lock(d.mutex);
  CUcontext& ctx = d.contexts[ordinal];
  if (ctx == nullptr) {
    StageTimer timer(Stage::ContextRetain);
    check(driver().cuDevicePrimaryCtxRetain(&ctx, d.handles[ordinal]),
          "retaining the device's primary context");
  }
  return ctx;
}

}  // namespace

int device_count() {
  try {
    if (!cuda_available()) return 0;
    return static_cast<int>(devices().infos.size());
  } catch (...) {
    return 0;
  }
}

const DeviceInfo& device_info(int ordinal) { return checked_devices(ordinal).infos[ordinal]; }

namespace {
// Makes the device's primary context current, given what is current now;
// returns whether it had to switch.
bool switch_to(int ordinal, CUcontext current) {
  thread_local int tl_ordinal = -1;
  thread_local CUcontext tl_context = nullptr;
  if (ordinal != tl_ordinal || tl_context == nullptr) {
    tl_context = primary_context(ordinal);
    tl_ordinal = ordinal;
  }
  if (current == tl_context) return false;
  check(driver().cuCtxSetCurrent(tl_context), "making the device's context current");
  return true;
}

CUcontext current_context() {
  CUcontext current = nullptr;
  if (driver().cuCtxGetCurrent(&current) != CUDA_SUCCESS) return nullptr;
  return current;
}
}  // namespace

void make_current(int ordinal) {
  // Other libraries (PyTorch, CuPy) may have switched this thread's context
  // since our last call, so compare with what is current now.
  switch_to(ordinal, current_context());
}

DeviceGuard::DeviceGuard(int ordinal) {
  // One driver call when the device is already current (the usual case):
  // nothing to switch now or to restore later.
  CUcontext current = current_context();
  if (switch_to(ordinal, current)) previous_ = current;
}

DeviceGuard::~DeviceGuard() {
  if (previous_ == nullptr) return;  // nothing was current: leave ours (harmless)
  const DriverApi& api = driver();
  CUcontext now = nullptr;
  if (api.cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != previous_) api.cuCtxSetCurrent(previous_);
}

std::string arch_for(int cc_major, int cc_minor) {
  std::string arch = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  // Architecture-specific variants (wgmma, tcgen05, ...) where the exact chip is known.
  if (cc_minor == 0 && (cc_major == 9 || cc_major == 10 || cc_major == 12)) arch += "a";
  return arch;
}

void synchronize(int ordinal) {
  DeviceGuard guard(ordinal);
  check(driver().cuCtxSynchronize(), ("synchronizing CUDA device " + std::to_string(ordinal)).c_str());
}

}  // namespace jk::cuda
