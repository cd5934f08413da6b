// The CUDA launch path shared by cuda_kernel (cuda_backend.cpp) and
// precompiled_cuda_kernel: resolve the device, bring inputs to it (upload NumPy, make strided inputs
// contiguous when asked), allocate or check outputs, apply init_value, check
// grid/threadgroup/shared memory against the device, and cuLaunchKernelEx.
// Nothing here synchronises or allocates outside the stream, so launches can
// be captured in CUDA graphs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jitkernel/core/array_view.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"
#include "jitkernel/cuda/memory/memory.hpp"
#include "jitkernel/engine/kernel_call.hpp"

namespace jk::cuda {

// Block/grid sizes from a thread-count grid: block = min(threadgroup, grid),
// blocks = ceil(grid / block).
struct LaunchGeometry {
  unsigned grid[3];
  unsigned block[3];
};

// cuLaunchKernelEx's configuration for `g` (no attributes): what a launch and
// the occupancy queries about it (launch_options.cpp) both describe.
CUlaunchConfig launch_config(const LaunchGeometry& g, int shared_memory, CUstream stream);

// Inputs on the device, outputs ready to be written, and the launch geometry.
// Inputs are not copied: the prepared call reads the call's own inputs (which
// must outlive it) except where a host array was uploaded or a strided array
// made contiguous; those replacements live in `temporaries` and are freed
// stream-ordered when this is destroyed, which is safe right after the launch
// has been enqueued.
struct PreparedCall {
  int device = 0;
  CUstream stream = nullptr;
  LaunchGeometry geometry{};
  bool cooperative = false;  // LaunchConfig::cooperative, or the kernel syncs the grid
  Dim3 cluster{0, 0, 0};     // LaunchConfig::cluster
  std::vector<OwnedArray> outputs;   // allocated outputs; empty when the call provided them
  std::vector<OwnedArray> temporaries;

  std::size_t input_count() const { return inputs_ ? inputs_->size() : 0; }
  // Input `i` as the kernel reads it: an array on `device` (null for scalars).
  const ArrayView* input_array(std::size_t i) const {
    if (!replaced_.empty() && replaced_[i] >= 0) return &temporaries[replaced_[i]].view;
    return std::get_if<ArrayView>(&(*inputs_)[i]);
  }
  const Scalar* input_scalar(std::size_t i) const { return std::get_if<Scalar>(&(*inputs_)[i]); }
  std::size_t output_count() const { return provided_ ? provided_->size() : outputs.size(); }
  const ArrayView& output(std::size_t i) const {
    return provided_ ? (*provided_)[i] : outputs[i].view;
  }

 private:
  friend PreparedCall prepare_call(const KernelCall&, const LaunchConfig&, bool, int);
  const std::vector<KernelInput>* inputs_ = nullptr;
  const std::vector<ArrayView>* provided_ = nullptr;  // outputs=, when given
  std::vector<int> replaced_;  // per input: index into temporaries or -1; empty when none
};

// The device a call runs on (for a call engine/validate_call.hpp accepted):
// that of the device inputs, else of outputs=, else of the stream, else 0.
// ArgumentError for inputs (or outputs=) on different devices.
int resolve_device(const KernelCall& args);

// For a call validate_call accepted (`device` is what it returned): checks
// the launch geometry against the device's limits, then uploads/copies
// inputs, allocates or checks outputs, fills init_value. `launch` and
// `ensure_row_contiguous` stand in for args.launch / args.ensure_row_contiguous
// (cuda_kernel takes them partly from its spec). The caller holds a
// DeviceGuard for `device` across prepare_call and launch_function (one
// context check per call instead of one per step).
PreparedCall prepare_call(const KernelCall& args, const LaunchConfig& launch,
                          bool ensure_row_contiguous, int device);

// The launch geometry of `config` on `device`. Throws ArgumentError("grid"/
// "threadgroup"/"shared_memory") against the device's limits.
LaunchGeometry launch_geometry(const LaunchConfig& config, int device);

// Sets the function's max dynamic shared memory attribute to at least
// `bytes` (remembered per function, only ever raised); ArgumentError
// ("shared_memory") when the device cannot give that much.
void ensure_dynamic_shared_memory(CUfunction function, const char* kernel_name, int bytes, int device);

// Sets the function's max dynamic shared memory when needed (remembered per
// function and only ever raised, so a concurrent launch with a larger amount
// never sees it lowered under it) and launches with the prepared call's
// device, stream and geometry, cooperatively and/or in clusters as the
// prepared call says (launch_options.hpp checks those first). `kernel_name` is used in error messages and
// fault reports. The caller holds a DeviceGuard for the prepared call's device.
void launch_function(CUfunction function, const char* kernel_name, const PreparedCall& prepared,
                     int shared_memory, void** params);

}  // namespace jk::cuda
