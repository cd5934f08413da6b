// The C++ implementation of jitkernel's torch ops (jitkernel::launch,
// launch_vjp and launch_into, whose schemas torch_library.hpp holds; defined
// by python/jitkernel/_frameworks/torch_ops.py, or by register_torch_library
// in a program without Python) for torch's CUDA dispatch key, registered through libtorch's
// stable C ABI. A compiled graph's call then goes from the dispatcher straight
// into the engine: no Python on the path, so the same registration also serves
// programs that run without Python (AOTInductor).
#pragma once

#include <string>
#include <vector>

namespace jk::torch_op {

// Registers the implementations (once per process; later calls do nothing).
// `libraries`: paths of the loaded libtorch_cpu and libtorch_cuda. Error when
// libtorch lacks the ABI (torch < 2.10, or without CUDA); the ops must be
// defined already.
void register_op_kernels(const std::vector<std::string>& libraries);

}  // namespace jk::torch_op
