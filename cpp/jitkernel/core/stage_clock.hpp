// Where a process's first calls spend their time: a process-wide clock of the
// cold, once-per-process (or once-per-kernel) stages (loading the driver,
// finding the toolkit, loading NVRTC, compile keys, the disk cache, NVRTC,
// module loads, the memory pool's setup). Only cold paths are timed, never a
// launch. Each stage records its self time: a stage that runs inside another
// (the toolkit search inside loading NVRTC) is subtracted from the outer one,
// so the stages of one thread add up to no more than the wall time. Times of
// work done on a helper thread are counted too (they may overlap the caller's).
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

namespace jk {

enum class Stage : int {
  DriverLoad,        // dlopen libcuda + cuInit + entry points
  DeviceAttributes,  // reading every device's attributes once
  ContextRetain,     // cuDevicePrimaryCtxRetain
  ToolkitSearch,     // finding NVRTC and the headers (the resolver)
  NvrtcLoad,         // dlopen NVRTC (and its preloads) + nvrtcVersion
  CompilerIdentity,  // NVRTC's build identity for compile keys
  CompileKey,        // the compile key, the include closure included
  DiskLookup,        // reading and verifying a disk-cache entry
  DiskStore,         // writing a disk-cache entry (write, rename, eviction)
  NvrtcCreate,       // nvrtcCreateProgram
  NvrtcCompile,      // nvrtcCompileProgram
  NvrtcGetBinary,    // nvrtcGetCUBIN / GetPTX (+ sizes, log)
  ModuleLoad,        // cuModuleLoadData
  FunctionLookup,    // cuModuleGetFunction
  PoolSetup,         // the device's default memory pool configured
  FirstAlloc,        // the first stream-ordered allocation on a device
  Count
};

const char* stage_name(Stage stage);

struct StageTotal {
  const char* name;
  std::int64_t nanoseconds;
  std::int64_t count;
};

// Every stage's totals since the process started (or the last reset), in
// enum order; with `reset`, set them back to zero.
std::vector<StageTotal> stage_snapshot(bool reset);

// Times its scope as `stage` (self time: nested StageTimers are subtracted).
class StageTimer {
 public:
  explicit StageTimer(Stage stage);
  ~StageTimer();
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

 private:
  Stage stage_;
  StageTimer* parent_;
  std::chrono::steady_clock::time_point start_;
  std::int64_t nested_ns_ = 0;
};

}  // namespace jk
