// The kernel spec's names of its math modes (kernel_spec.hpp).
#include "jitkernel/engine/kernel_spec.hpp"

namespace jk {

const char* metal_math_mode_name(MetalMathMode mode) {
  switch (mode) {
    case MetalMathMode::Safe: return "safe";
    case MetalMathMode::Relaxed: return "relaxed";
    case MetalMathMode::Fast: return "fast";
  }
  return "safe";
}

const char* cuda_math_mode_name(const CudaCompileOptions& options) {
  return options.fast_math ? "fast" : "safe";
}

}  // namespace jk
