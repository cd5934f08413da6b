// jitkernel's torch ops as torch's dispatcher knows them: their schemas (the
// one definition: Python's torch.library registration reads it through
// _core._torch_op_schemas) and, for a C++ program that runs without Python,
// their definition plus the CUDA implementation of op_kernels.hpp. Such a
// program (an AOTInductor package loaded by torch's AOTIModelPackageLoader)
// calls register_torch_library() once before loading the package: the
// package's proxy executor then finds jitkernel::launch and friends in the
// dispatcher, and the kernels compile on first use (NVRTC, or a cache tier
// that already holds them).
#pragma once

#include <string>
#include <vector>

namespace jk::torch_op {

struct OpSchema {
  const char* name;       // e.g. "launch"
  const char* signature;  // "(str kernel, ...) -> Tensor[]"
};

// launch, launch_vjp and launch_into, in that order.
const std::vector<OpSchema>& op_schemas();

// Defines the ops in namespace "jitkernel" and registers their CUDA
// implementation (once per process). `libraries`: as load_abi (none: the
// program's own libtorch). Error naming what is missing when libtorch lacks
// the stable ABI, or when the ops are defined already (a Python process, where
// `import jitkernel` defines them).
void register_torch_library(const std::vector<std::string>& libraries = {});

}  // namespace jk::torch_op
