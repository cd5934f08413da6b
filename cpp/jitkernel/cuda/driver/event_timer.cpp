// Event timing and the capture query for autotuning (event_timer.hpp).
#include "jitkernel/cuda/driver/event_timer.hpp"

#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/driver/device.hpp"

namespace jk::cuda {
namespace {

const DriverApi& timing_api() {
  const DriverApi& api = driver();
  if (api.cuEventSynchronize == nullptr || api.cuEventElapsedTime == nullptr)
    throw CudaNotAvailable("the CUDA driver lacks cuEventSynchronize / cuEventElapsedTime, which autotuning "
                           "times candidates with: update the NVIDIA driver");
  return api;
}

}  // namespace

EventTimer::EventTimer(int device) : device_(device) {
  const DriverApi& api = timing_api();
  DeviceGuard guard(device);
  check(api.cuEventCreate(&begin_, 0), "creating a CUDA timing event");
  const CUresult r = api.cuEventCreate(&end_, 0);
  if (r != CUDA_SUCCESS) {
    api.cuEventDestroy(begin_);  // the constructor fails: the destructor will not run
    begin_ = nullptr;
    check(r, "creating a CUDA timing event");
  }
}

EventTimer::~EventTimer() {
  // Nothing to do about a failure here (a destructor must not throw): the events are released either way.
  try {
    const DriverApi& api = driver();
    DeviceGuard guard(device_);
    if (begin_ != nullptr) api.cuEventDestroy(begin_);
    if (end_ != nullptr) api.cuEventDestroy(end_);
  } catch (...) {
  }
}

void EventTimer::start(CUstream stream) {
  DeviceGuard guard(device_);
  check(driver().cuEventRecord(begin_, stream), "recording a CUDA timing event");
}

void EventTimer::stop(CUstream stream) {
  DeviceGuard guard(device_);
  check(driver().cuEventRecord(end_, stream), "recording a CUDA timing event");
}

float EventTimer::elapsed_ms() {
  const DriverApi& api = timing_api();
  DeviceGuard guard(device_);
  check(api.cuEventSynchronize(end_), "waiting for a CUDA timing event");
  float ms = 0;
  check(api.cuEventElapsedTime(&ms, begin_, end_), "reading a CUDA timing event");
  return ms;
}

bool stream_capturing(CUstream stream, int device) {
  DeviceGuard guard(device);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  check(driver().cuStreamIsCapturing(stream, &status), "asking whether a stream is being captured");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

}  // namespace jk::cuda
