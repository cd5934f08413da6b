// Device memory and the copies/fills around launches. Allocations are
// stream-ordered (cuMemAllocAsync from the device's default pool, whose
// release threshold is raised once so freed memory stays cached) and freed
// with cuMemFreeAsync on the allocation stream. A process's first
// stream-ordered allocation costs the driver ~10 ms (once, whichever pool),
// while cuMemAlloc costs ~0.1 ms: so a device's first allocation starts a
// helper thread that makes that first pool allocation, and until it is done
// allocations come from cuMemAlloc (freed with cuMemFree). init_value is converted to the
// output dtype on the host (round-to-nearest-even for floating types) and
// written with cuMemsetD8/16/32Async, or a builtin kernel for 8-byte patterns.
#include "jitkernel/cuda/memory/memory.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "jitkernel/core/element_bytes.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/host_layout.hpp"
#include "jitkernel/core/stage_clock.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/memory/builtin_kernels.hpp"

namespace jk::cuda {
namespace {

// ---- stream-ordered allocation --------------------------------------------

enum PoolState : int { kUnknown = 0, kPools = 1, kNoPools = 2 };
constexpr int kMaxDevices = 256;
std::atomic<int> g_pool_state[kMaxDevices] = {};
std::mutex g_pool_mutex;
enum WarmState : int { kCold = 0, kWarming = 1, kWarm = 2 };
std::atomic<int> g_pool_warm[kMaxDevices] = {};  // the first pool allocation made (WarmState)

// Helper threads still making a first pool allocation; exit waits for them
// (wait_for_pool_warmup) so none is inside the driver while it shuts down.
// Never destroyed: a helper thread may still use it during static destruction
// (a C++ program that exits without waiting).
struct Warming {
  std::mutex mutex;
  std::condition_variable done;
  int count = 0;
};
Warming& warming() {
  static Warming* w = new Warming;
  return *w;
}

// Makes `device`'s first stream-ordered allocation (and frees it) on a
// helper thread, once; allocations meanwhile use cuMemAlloc. The thread
// touches only never-destroyed state; a failure leaves the pool cold and
// allocations keep working.
void warm_pool(int device) {
  int expected = kCold;
  if (!g_pool_warm[device].compare_exchange_strong(expected, kWarming)) return;
  {
    std::lock_guard<std::mutex> lock(warming().mutex);
    ++warming().count;
  }
  auto done = [device] {
    g_pool_warm[device].store(kWarm, std::memory_order_release);
    Warming& w = warming();
    std::lock_guard<std::mutex> lock(w.mutex);
    --w.count;
    w.done.notify_all();
  };
  try {
    std::thread([device, done] {
      try {
        StageTimer timer(Stage::FirstAlloc);
        const DriverApi& api = driver();
        DeviceGuard guard(device);
        CUdeviceptr p = 0;
        if (api.cuMemAllocAsync(&p, 256, nullptr) == CUDA_SUCCESS) api.cuMemFreeAsync(p, nullptr);
      } catch (...) {
      }
      done();
    }).detach();
  } catch (...) {  // no thread: the pool warms on this allocation
    done();
  }
}

bool capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return driver().cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
         status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// Whether an allocation on `device` (whose pools are in use) on `stream`
// should come from the pool now: once its first pool allocation was made,
// and always while `stream` is being captured into a CUDA graph (where
// cuMemAlloc is not allowed and the allocation must become a graph node).
bool pool_ready(int device, CUstream stream) {
  if (g_pool_warm[device].load(std::memory_order_acquire) == kWarm) return true;
  warm_pool(device);
  return g_pool_warm[device].load(std::memory_order_acquire) == kWarm || capturing(stream);
}

// Whether `device` supports cuMemAllocAsync; configures its default pool on
// first use. The device's context must be current.
bool uses_pools(int device) {
  if (device < 0 || device >= kMaxDevices) return false;
  int state = g_pool_state[device].load(std::memory_order_acquire);
  if (state != kUnknown) return state == kPools;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  state = g_pool_state[device].load(std::memory_order_relaxed);
  if (state != kUnknown) return state == kPools;
  StageTimer timer(Stage::PoolSetup);
  const DriverApi& api = driver();
  CUdevice dev = 0;
  check(api.cuDeviceGet(&dev, device), "opening a CUDA device");
  int supported = 0;
  check(api.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev),
        "reading device attributes");
  if (supported) {
    CUmemoryPool pool = nullptr;
    check(api.cuDeviceGetDefaultMemPool(&pool, dev), "getting the device's memory pool");
    std::uint64_t keep_everything = std::numeric_limits<std::uint64_t>::max();
    check(api.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_everything),
          "configuring the device's memory pool");
  }
  state = supported ? kPools : kNoPools;
  g_pool_state[device].store(state, std::memory_order_release);
  return state == kPools;
}

// prod(shape) * element size, with overflow and sign checks.
std::size_t checked_nbytes(DType dtype, const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  for (auto extent : shape) {
    if (extent < 0 || __builtin_mul_overflow(count, extent, &count)) {
      throw ArgumentError("output_shapes", "an output shape has a negative or too large dimension");
    }
  }
  std::int64_t nbytes = 0;
  if (__builtin_mul_overflow(count, static_cast<std::int64_t>(dtype_size(dtype)), &nbytes)) {
    throw ArgumentError("output_shapes", "an output shape is too large to allocate");
  }
  return static_cast<std::size_t>(nbytes);
}

struct EventHolder {
  CUevent event = nullptr;
  ~EventHolder() {
    try {
      if (event != nullptr) driver().cuEventDestroy(event);
    } catch (...) {  // a destructor reports nothing (a forked child, a driver gone)
    }
  }
};

}  // namespace

// ---- DeviceBuffer ----------------------------------------------------------

std::shared_ptr<DeviceBuffer> DeviceBuffer::allocate(int device, std::size_t nbytes,
                                                     CUstream stream) {
  if (nbytes == 0) return std::shared_ptr<DeviceBuffer>(new DeviceBuffer(device, 0, 0, stream));
  const DriverApi& api = driver();
  DeviceGuard guard(device);
  CUdeviceptr ptr = 0;
  const bool pools = uses_pools(device) && pool_ready(device, stream);
  CUresult r = pools ? api.cuMemAllocAsync(&ptr, nbytes, stream) : api.cuMemAlloc(&ptr, nbytes);
  if (r != CUDA_SUCCESS) {
    check(r, ("allocating " + std::to_string(nbytes) + " bytes on CUDA device " +
              std::to_string(device))
                 .c_str());
  }
  try {
    std::shared_ptr<DeviceBuffer> buffer(new DeviceBuffer(device, ptr, nbytes, stream));
    buffer->pooled_ = pools;
    return buffer;
  } catch (...) {
    if (pools) api.cuMemFreeAsync(ptr, stream); else api.cuMemFree(ptr);
    throw;
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ == 0) return;
  try {
    const DriverApi& api = driver();
    DeviceGuard guard(device_);
    // Errors are ignored: a destructor cannot report them, and they only
    // happen when the context is already broken or the process is exiting.
    if (pooled_) {
      api.cuMemFreeAsync(ptr_, stream_);
    } else {
      api.cuMemFree(ptr_);
    }
  } catch (...) {
  }
}

// ---- arrays, copies, fills ---------------------------------------------------

OwnedArray allocate_array(int device, DType dtype, const std::vector<std::int64_t>& shape,
                          CUstream stream, std::shared_ptr<void> stream_owner) {
  std::size_t nbytes = checked_nbytes(dtype, shape);
  OwnedArray out;
  std::shared_ptr<DeviceBuffer> buffer = DeviceBuffer::allocate(device, nbytes, stream);
  if (stream_owner) buffer->keep_alive(std::move(stream_owner));
  out.view.data = buffer->data();
  out.buffer = std::move(buffer);
  out.view.dtype = dtype;
  out.view.device = device;
  out.view.shape = shape;
  out.view.strides = row_major_strides(shape);
  return out;
}

OwnedArray upload(const ArrayView& host, int device, CUstream stream) {
  OwnedArray out = allocate_array(device, host.dtype, host.shape, stream);
  std::size_t nbytes = out.view.nbytes();
  if (nbytes == 0) return out;
  std::vector<unsigned char> packed;
  const void* src = host.data;
  if (!host.row_contiguous()) {
    packed.resize(nbytes);
    pack_on_host(host, packed.data());
    src = packed.data();
  }
  DeviceGuard guard(device);
  // From pageable memory the driver stages the bytes before returning, so
  // `packed` (and the caller's array) may go away right after this call.
  check(driver().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(out.view.data), src, nbytes, stream),
        "copying an input array to the device");
  return out;
}

OwnedArray make_row_contiguous(const ArrayView& array, CUstream stream) {
  OwnedArray out = allocate_array(array.device, array.dtype, array.shape, stream);
  if (out.view.nbytes() == 0) return out;
  std::size_t elem = dtype_size(array.dtype);
  // Copy in units the source pointer is aligned to (a complex64 view may be
  // only 4-byte aligned): each element becomes elem/unit trailing units.
  std::size_t unit = elem;
  auto address = reinterpret_cast<std::uintptr_t>(array.data);
  while (unit > 1 && address % unit != 0) unit /= 2;
  std::vector<std::int64_t> shape = array.shape, strides = array.strides;
  if (unit < elem) {
    std::int64_t k = static_cast<std::int64_t>(elem / unit);
    for (auto& s : strides) s *= k;
    shape.push_back(k);
    strides.push_back(1);
  }
  collapse_dims(shape, strides);
  if (shape.empty() || (shape.size() == 1 && strides[0] == 1)) {
    DeviceGuard guard(array.device);
    check(driver().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(out.view.data),
                                     reinterpret_cast<CUdeviceptr>(array.data), out.view.nbytes(),
                                     stream),
          "copying an input array on the device");
    return out;
  }
  if (shape.size() > static_cast<std::size_t>(kBuiltinMaxNdim)) {
    throw ArgumentError("inputs", "an input with " + std::to_string(shape.size()) +
                                      " non-mergeable strided dimensions cannot be made "
                                      "row-contiguous (at most " +
                                      std::to_string(kBuiltinMaxNdim) + ")");
  }
  launch_strided_copy(array.device, stream, array.data, out.view.data, unit, shape, strides);
  return out;
}

void fill(const ArrayView& array, double value, CUstream stream) {
  if (!array.row_contiguous()) {
    throw ArgumentError("outputs", "init_value can only fill row-contiguous outputs");
  }
  const std::size_t elem = dtype_size(array.dtype);
  const std::uint64_t bits = encode_element(array.dtype, value, "init_value");  // before any GPU work
  const auto count = static_cast<std::size_t>(array.size());
  if (count == 0) return;
  const auto ptr = reinterpret_cast<CUdeviceptr>(array.data);
  if (ptr % elem != 0) {
    throw ArgumentError("outputs", "an output's data pointer is not aligned to its element size");
  }
  const DriverApi& api = driver();
  DeviceGuard guard(array.device);
  bool bytes_equal = true;
  for (std::size_t i = 1; i < elem; ++i) {
    bytes_equal = bytes_equal && ((bits >> (8 * i)) & 0xFF) == (bits & 0xFF);
  }
  const char* what = "filling an output with init_value";
  if (bytes_equal) {
    check(api.cuMemsetD8Async(ptr, static_cast<unsigned char>(bits & 0xFF), count * elem, stream), what);
  } else if (elem == 2) {
    check(api.cuMemsetD16Async(ptr, static_cast<unsigned short>(bits), count, stream), what);
  } else if (elem == 4) {
    check(api.cuMemsetD32Async(ptr, static_cast<unsigned int>(bits), count, stream), what);
  } else if ((bits & 0xFFFFFFFFu) == (bits >> 32)) {
    check(api.cuMemsetD32Async(ptr, static_cast<unsigned int>(bits), 2 * count, stream), what);
  } else {
    launch_fill8(array.device, stream, array.data, count, bits);
  }
}

void download(const ArrayView& array, void* host_dst, CUstream stream) {
  if (!array.row_contiguous()) {
    throw ArgumentError("array", "only row-contiguous arrays can be copied to the host");
  }
  std::size_t nbytes = array.nbytes();
  if (nbytes == 0) return;
  if (array.device == kHostDevice) {
    std::memcpy(host_dst, array.data, nbytes);
    return;
  }
  const DriverApi& api = driver();
  DeviceGuard guard(array.device);
  check(api.cuMemcpyDtoHAsync(host_dst, reinterpret_cast<CUdeviceptr>(array.data), nbytes, stream),
        "copying an array to the host");
  check(api.cuStreamSynchronize(stream), "waiting for a copy to the host");
}

void stream_wait(int device, CUstream waiter, CUstream producer) {
  if (waiter == producer) return;
  const DriverApi& api = driver();
  DeviceGuard guard(device);
  EventHolder holder;
  constexpr unsigned kDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING
  check(api.cuEventCreate(&holder.event, kDisableTiming), "creating a CUDA event");
  check(api.cuEventRecord(holder.event, producer), "recording a CUDA event");
  check(api.cuStreamWaitEvent(waiter, holder.event, 0), "ordering streams");
  // Destroying a recorded event is fine: the driver releases it once it completes.
}

void wait_for_pool_warmup() {
  Warming& w = warming();
  std::unique_lock<std::mutex> lock(w.mutex);
  w.done.wait_for(lock, std::chrono::seconds(5), [&w] { return w.count == 0; });
}

}  // namespace jk::cuda
