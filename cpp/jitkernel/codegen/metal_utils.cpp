// metal_utils_preamble(): the metal_utils/*.h headers, embedded at build time
// (CMakeLists.txt runs cmake/embed_metal_utils.cmake, which writes
// metal_utils_text.inc as one string literal, files in their listed order).
#include "jitkernel/codegen/metal_signature.hpp"

namespace jk::codegen {

std::string_view metal_utils_preamble() {
  static constexpr char kText[] =
#include "metal_utils_text.inc"
      ;
  return std::string_view(kText, sizeof(kText) - 1);
}

}  // namespace jk::codegen
