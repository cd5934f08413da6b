// Device memory jitkernel owns: stream-ordered allocations (cuMemAllocAsync
// from the device's default pool, release threshold raised so the pool keeps
// memory) freed with cuMemFreeAsync on the same stream when the last owner
// drops it. Also host<->device copies and fills used around launches.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "jitkernel/core/array_view.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"
#include "jitkernel/engine/kernel_call.hpp"

namespace jk::cuda {

class DeviceBuffer : public Buffer {
 public:
  // Throws CudaError (out of memory etc.).
  static std::shared_ptr<DeviceBuffer> allocate(int device, std::size_t nbytes, CUstream stream);
  ~DeviceBuffer() override;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const override { return reinterpret_cast<void*>(ptr_); }
  int device() const { return device_; }
  std::size_t nbytes() const override { return nbytes_; }
  CUstream stream() const { return stream_; }

  // Keeps `owner` (opaque to the core; the bindings pass the Python stream
  // object the buffer was allocated on) alive until after the buffer has been
  // freed on its stream, so the stream cannot be destroyed first.
  void keep_alive(std::shared_ptr<void> owner) { keepalive_ = std::move(owner); }

 private:
  DeviceBuffer(int device, CUdeviceptr ptr, std::size_t nbytes, CUstream stream)
      : device_(device), ptr_(ptr), nbytes_(nbytes), stream_(stream) {}
  int device_;
  CUdeviceptr ptr_;
  std::size_t nbytes_;
  CUstream stream_;
  bool pooled_ = true;  // from the stream-ordered pool (else cuMemAlloc: freed with cuMemFree)
  std::shared_ptr<void> keepalive_;  // released after the destructor's free
};

// Allocates a row-contiguous array on `device`, ordered on `stream`.
// `stream_owner` (may be empty) is kept alive until after the free
// (DeviceBuffer::keep_alive).
OwnedArray allocate_array(int device, DType dtype, const std::vector<std::int64_t>& shape,
                          CUstream stream, std::shared_ptr<void> stream_owner = nullptr);
// Copies a host array (any strides) to a new row-contiguous device array.
OwnedArray upload(const ArrayView& host, int device, CUstream stream);
// Copies a strided device array to a new row-contiguous one on the stream.
OwnedArray make_row_contiguous(const ArrayView& array, CUstream stream);
// Fills a row-contiguous device array with `value` converted to its dtype.
void fill(const ArrayView& array, double value, CUstream stream);
// Copies a row-contiguous device array to host memory and waits for it.
void download(const ArrayView& array, void* host_dst, CUstream stream);
// Makes `waiter` wait for the work enqueued so far on `producer` (an event
// record + wait; nothing when they are the same stream). For DLPack export.
void stream_wait(int device, CUstream waiter, CUstream producer);

// Waits (at most a few seconds) until no helper thread is making a device's
// first pool allocation: called before exit, so that none is inside the
// driver while the process tears it down.
void wait_for_pool_warmup();

}  // namespace jk::cuda
