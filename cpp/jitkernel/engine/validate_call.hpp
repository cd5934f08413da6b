// The one argument validator of a kernel call, shared by every backend and
// by precompiled kernels: everything that needs no GPU (grid, threadgroup and
// shared memory signs, output counts and shapes, init_value range, outputs=
// dtypes/shapes/layout, and where outputs= live as the backend says), before
// anything is enqueued. Typed errors name the argument.
#pragma once

#include "jitkernel/engine/backend.hpp"

namespace jk {

// Checks `call` with `launch` standing in for call.launch (a kernel's spec
// may supply shared memory). Then asks the backend where the call runs:
// returns that device.
int validate_call(const Backend& backend, const KernelCall& call, const LaunchConfig& launch);

}  // namespace jk
