// The compile_options dict of cuda_kernel / compile_cuda as the engine's
// CudaCompileOptions (engine/kernel_spec.hpp), checked key by key.
#pragma once

#include "bindings.hpp"
#include "jitkernel/engine/kernel_spec.hpp"

namespace jk::py {

// None -> the defaults. A key that is unknown or has a value of the wrong
// type is an ArgumentError / ArgumentTypeError naming it; the values are
// then checked (cuda/nvrtc/compile_options.hpp) before any compile.
CudaCompileOptions compile_options_arg(nb::handle options);

}  // namespace jk::py
