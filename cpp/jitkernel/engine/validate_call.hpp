// The one argument validator of a kernel call, shared by every backend and
// by precompiled kernels: everything that needs no GPU (grid, threadgroup and
// shared memory signs, output counts and shapes, init_value range, outputs=
// dtypes/shapes/layout, where outputs= live as the backend says, and inputs
// that alias an output but would be read from a row-contiguous copy), before
// anything is enqueued. Typed errors name the argument.
#pragma once

#include "jitkernel/engine/backend.hpp"

namespace jk {

// Checks `call` with `launch` standing in for call.launch (a kernel's spec
// may supply shared memory) and `ensure_row_contiguous` for
// call.ensure_row_contiguous (a kernel's spec says it). Then asks the backend
// where the call runs: returns that device.
int validate_call(const Backend& backend, const KernelCall& call, const LaunchConfig& launch,
                  bool ensure_row_contiguous);

}  // namespace jk
