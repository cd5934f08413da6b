// What nvcc gives a kernel without an #include and NVRTC does not: the math
// macros of <math.h> (INFINITY, NAN, HUGE_VALF, M_PI, ...) and the limits of
// <float.h>, <limits.h> and <stdint.h> (FLT_MAX, INT_MAX, INT32_MAX, ...).
// Each is defined only when the user code mentions it and does not #define it
// itself, behind #ifndef (a header the preamble includes may have defined
// it), so kernels that use none of them get no extra text. CUDART_* math
// constants come from the toolkit's <math_constants.h>, a header of macros
// only, included when one is mentioned.
#include <string>
#include <string_view>

#include "jitkernel/codegen/codegen_detail.hpp"

namespace jk::codegen {
namespace {

struct MacroDefinition {
  std::string_view name;
  std::string_view value;
};

// Values as C's headers define them on Linux x86-64 / aarch64 (LP64).
// INFINITY and NAN are constant expressions, usable in constexpr code.
constexpr MacroDefinition kMacros[] = {
    {"INFINITY", "(__builtin_bit_cast(float, 0x7f800000U))"},
    {"NAN", "(__builtin_bit_cast(float, 0x7fc00000U))"},
    {"HUGE_VALF", "(__builtin_bit_cast(float, 0x7f800000U))"},
    {"HUGE_VAL", "(__builtin_bit_cast(double, 0x7ff0000000000000ULL))"},
    {"M_E", "2.7182818284590452354"},
    {"M_LOG2E", "1.4426950408889634074"},
    {"M_LOG10E", "0.43429448190325182765"},
    {"M_LN2", "0.69314718055994530942"},
    {"M_LN10", "2.30258509299404568402"},
    {"M_PI", "3.14159265358979323846"},
    {"M_PI_2", "1.57079632679489661923"},
    {"M_PI_4", "0.78539816339744830962"},
    {"M_1_PI", "0.31830988618379067154"},
    {"M_2_PI", "0.63661977236758134308"},
    {"M_2_SQRTPI", "1.12837916709551257390"},
    {"M_SQRT2", "1.41421356237309504880"},
    {"M_SQRT1_2", "0.70710678118654752440"},
    {"FLT_MAX", "3.40282346638528859811704183484516925e+38F"},
    {"FLT_MIN", "1.17549435082228750796873653722224568e-38F"},
    {"FLT_EPSILON", "1.19209289550781250000000000000000000e-7F"},
    {"FLT_TRUE_MIN", "1.40129846432481707092372958328991613e-45F"},
    {"FLT_MANT_DIG", "24"},
    {"FLT_DIG", "6"},
    {"FLT_MAX_EXP", "128"},
    {"FLT_MIN_EXP", "(-125)"},
    {"DBL_MAX", "1.79769313486231570814527423731704357e+308"},
    {"DBL_MIN", "2.22507385850720138309023271733240406e-308"},
    {"DBL_EPSILON", "2.22044604925031308084726333618164062e-16"},
    {"DBL_TRUE_MIN", "4.94065645841246544176568792868221372e-324"},
    {"DBL_MANT_DIG", "53"},
    {"DBL_DIG", "15"},
    {"DBL_MAX_EXP", "1024"},
    {"DBL_MIN_EXP", "(-1021)"},
    {"CHAR_BIT", "8"},
    {"SCHAR_MIN", "(-128)"},
    {"SCHAR_MAX", "127"},
    {"UCHAR_MAX", "255"},
    {"CHAR_MIN", "(-128)"},
    {"CHAR_MAX", "127"},
    {"SHRT_MIN", "(-32768)"},
    {"SHRT_MAX", "32767"},
    {"USHRT_MAX", "65535"},
    {"INT_MIN", "(-2147483647 - 1)"},
    {"INT_MAX", "2147483647"},
    {"UINT_MAX", "4294967295U"},
    {"LONG_MIN", "(-9223372036854775807L - 1)"},
    {"LONG_MAX", "9223372036854775807L"},
    {"ULONG_MAX", "18446744073709551615UL"},
    {"LLONG_MIN", "(-9223372036854775807LL - 1)"},
    {"LLONG_MAX", "9223372036854775807LL"},
    {"ULLONG_MAX", "18446744073709551615ULL"},
    {"INT8_MIN", "(-128)"},
    {"INT8_MAX", "127"},
    {"UINT8_MAX", "255"},
    {"INT16_MIN", "(-32768)"},
    {"INT16_MAX", "32767"},
    {"UINT16_MAX", "65535"},
    {"INT32_MIN", "(-2147483647 - 1)"},
    {"INT32_MAX", "2147483647"},
    {"UINT32_MAX", "4294967295U"},
    {"INT64_MIN", "(-9223372036854775807LL - 1)"},
    {"INT64_MAX", "9223372036854775807LL"},
    {"UINT64_MAX", "18446744073709551615ULL"},
    {"SIZE_MAX", "18446744073709551615UL"},
};

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

}  // namespace

bool mentions_math_constants(const std::string& id) {
  // CUDART_INF_FP16 / _BF16 come with cuda_fp16.h / cuda_bf16.h; CUDART_CB is the runtime API's.
  return starts_with(id, "CUDART_") && !ends_with(id, "_FP16") && !ends_with(id, "_BF16") &&
         id != "CUDART_CB";
}

std::string nvcc_macros_text(const SourceScan& scan) {
  std::string out;
  for (const MacroDefinition& m : kMacros) {
    std::string name(m.name);
    if (!scan.has(name) || scan.declares(name)) continue;
    out += "#ifndef " + name + "\n#define " + name + " ";
    out += m.value;
    out += "\n#endif\n";
  }
  return out;
}

}  // namespace jk::codegen
