// Timing work on a stream with a pair of CUDA events, and asking whether a
// stream is being captured into a CUDA graph: what autotuning needs of the
// driver (python/jitkernel/_fleet/autotune.py times each candidate
// configuration with it, and never tunes while a graph is captured).
#pragma once

#include "jitkernel/cuda/driver/driver_api.hpp"

namespace jk::cuda {

// Two timing events on `device`, destroyed with the object. start() and
// stop() record them on a stream; elapsed_ms() waits for the second and
// returns the time between them. Every driver result is checked (CudaError).
class EventTimer {
 public:
  explicit EventTimer(int device);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void start(CUstream stream);
  void stop(CUstream stream);
  // Milliseconds between the last start() and stop(); waits for stop's event.
  float elapsed_ms();

 private:
  int device_;
  CUevent begin_ = nullptr;
  CUevent end_ = nullptr;
};

// Whether work launched on `stream` (of `device`) is being captured into a
// CUDA graph now (capture active or invalidated).
bool stream_capturing(CUstream stream, int device);

}  // namespace jk::cuda
