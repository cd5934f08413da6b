// The CUDA call options beyond MLX's (cooperative=, cluster=), shared by
// cuda_kernel and precompiled_cuda_kernel, and kernel.attributes()' dict.
#pragma once

#include "bindings.hpp"
#include "jitkernel/cuda/launch/launch_options.hpp"
#include "jitkernel/engine/kernel_call.hpp"

namespace jk::py {

// cooperative: None / True / False; cluster: None or 3 positive ints
// (threadgroups per cluster). Typed errors name the argument; the device
// checks come at launch (cuda/launch/launch_options.cpp).
void launch_options_into(nb::handle cooperative, nb::handle cluster, LaunchConfig& launch);

// The dict kernel.attributes() returns for `a` (blocks of `threads` threads).
nb::dict attributes_dict(const cuda::FunctionAttributes& a, int threads);

}  // namespace jk::py
