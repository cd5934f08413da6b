// precompiled_cuda_kernel: launch PTX, cubin or fatbin built elsewhere,
// through the same launch path as cuda_kernel (launch.hpp).
#pragma once

#include <string>
#include <vector>

#include "jitkernel/cuda/launch.hpp"

namespace jk::cuda {

struct PrecompiledCall {
  std::string name;             // exact entry symbol
  std::string compiled_source;  // PTX text, cubin or fatbin bytes
  CallArguments args;
  std::vector<Scalar> scalars;  // passed after input and output pointers
};

std::vector<OwnedArray> precompiled_cuda_kernel(const PrecompiledCall& call);

}  // namespace jk::cuda
