// The kernel spec's one function (kernel_spec.hpp).
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

}  // namespace jk
