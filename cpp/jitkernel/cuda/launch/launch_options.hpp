// Launch options beyond grid/threadgroup/shared memory: cooperative launches
// (grid-wide sync needs every threadgroup resident at once) and thread-block
// clusters (Hopper), each checked against the device and the function's
// occupancy before the launch, and turned into cuLaunchKernelEx attributes.
// Also the function's attributes and occupancy for kernel.attributes().
#pragma once

#include <cstdint>

#include "jitkernel/core/array_view.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"

namespace jk::cuda {

struct LaunchGeometry;

// The attributes of one launch: filled by launch_attributes, read by cuLaunchKernelEx.
struct LaunchAttributes {
  CUlaunchAttribute items[2]{};
  unsigned count = 0;
};

// Checks a cooperative and/or cluster launch of `function` on `device` with
// `shared_memory` dynamic bytes (already set on the function) and fills
// `out`. ArgumentError("grid") when a cooperative grid cannot be co-resident
// (naming the largest one), ArgumentError("cluster") for clusters the device
// or the function cannot run.
void launch_attributes(CUfunction function, const char* kernel_name, int device, const LaunchGeometry& g,
                       int shared_memory, bool cooperative, const Dim3& cluster, LaunchAttributes& out);

// What cuFuncGetAttribute and the occupancy API say of `function` for blocks
// of `threads` threads with `shared_memory` dynamic bytes.
struct FunctionAttributes {
  int registers_per_thread = 0;
  int static_shared_memory = 0;
  int dynamic_shared_memory = 0;
  int max_dynamic_shared_memory = 0;
  int max_threads_per_block = 0;
  int local_memory_per_thread = 0;
  int const_memory = 0;
  int ptx_version = 0;
  int binary_version = 0;
  int active_blocks_per_sm = 0;
  int max_threads_per_sm = 0;  // of the device, for the occupancy fraction
  int multiprocessor_count = 0;
};
FunctionAttributes function_attributes(CUfunction function, int device, int threads, int shared_memory);

}  // namespace jk::cuda
