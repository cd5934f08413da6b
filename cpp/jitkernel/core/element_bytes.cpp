// Number -> element bytes conversions (element_bytes.hpp).
#include "jitkernel/core/element_bytes.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "jitkernel/core/errors.hpp"

namespace jk {
namespace {

// x / 2^shift rounded to nearest, ties to even.
std::uint64_t shift_round_even(std::uint64_t x, int shift) {
  if (shift <= 0) return x;
  if (shift >= 64) return 0;  // x < 2^53: below half of 2^64
  std::uint64_t q = x >> shift;
  std::uint64_t r = x & ((std::uint64_t{1} << shift) - 1);
  std::uint64_t half = std::uint64_t{1} << (shift - 1);
  if (r > half || (r == half && (q & 1))) ++q;
  return q;
}

std::string format_number(double value) {
  char buffer[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::uint64_t encode_integer(double value, int bits, bool is_signed, DType dtype,
                             const char* argument) {
  double t = std::trunc(value);
  double lo = is_signed ? -std::ldexp(1.0, bits - 1) : 0.0;
  double hi = std::ldexp(1.0, is_signed ? bits - 1 : bits);  // exclusive
  if (!std::isfinite(value) || t < lo || t >= hi) {
    throw ArgumentError(argument, format_number(value) + " does not fit in " +
                                          dtype_name(dtype));
  }
  std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  if (is_signed) return static_cast<std::uint64_t>(static_cast<std::int64_t>(t)) & mask;
  return static_cast<std::uint64_t>(t) & mask;
}

}  // namespace

std::uint64_t encode_float(double value, int exp_bits, int mant_bits) {
  std::uint64_t d;
  std::memcpy(&d, &value, sizeof d);
  const std::uint64_t sign = (d >> 63) << (exp_bits + mant_bits);
  const int exp_d = static_cast<int>((d >> 52) & 0x7FF);
  const std::uint64_t mant_d = d & ((std::uint64_t{1} << 52) - 1);
  const std::uint64_t exp_max = (std::uint64_t{1} << exp_bits) - 1;
  const std::uint64_t mant_mask = (std::uint64_t{1} << mant_bits) - 1;
  if (exp_d == 0x7FF) {  // inf / NaN (quiet)
    return sign | (exp_max << mant_bits) | (mant_d ? std::uint64_t{1} << (mant_bits - 1) : 0);
  }
  if (exp_d == 0) return sign;  // zero, or a double subnormal: below every target's range
  const int bias = (1 << (exp_bits - 1)) - 1;
  int e = exp_d - 1023 + bias;  // biased exponent in the target format
  const std::uint64_t sig = (std::uint64_t{1} << 52) | mant_d;
  if (e >= 1) {
    std::uint64_t m = shift_round_even(sig, 52 - mant_bits);
    if (m >> (mant_bits + 1)) {  // rounding carried into a new leading bit
      m >>= 1;
      ++e;
    }
    if (e >= static_cast<int>(exp_max)) return sign | (exp_max << mant_bits);  // overflow: inf
    return sign | (static_cast<std::uint64_t>(e) << mant_bits) | (m & mant_mask);
  }
  // Subnormal in the target; a carry to 1 << mant_bits is the smallest normal.
  return sign | shift_round_even(sig, 52 - mant_bits + 1 - e);
}

std::uint64_t encode_element(DType dtype, double value, const char* argument) {
  switch (dtype) {
    case DType::Bool: return value != 0 ? 1 : 0;
    case DType::Int8: return encode_integer(value, 8, true, dtype, argument);
    case DType::Int16: return encode_integer(value, 16, true, dtype, argument);
    case DType::Int32: return encode_integer(value, 32, true, dtype, argument);
    case DType::Int64: return encode_integer(value, 64, true, dtype, argument);
    case DType::UInt8: return encode_integer(value, 8, false, dtype, argument);
    case DType::UInt16: return encode_integer(value, 16, false, dtype, argument);
    case DType::UInt32: return encode_integer(value, 32, false, dtype, argument);
    case DType::UInt64: return encode_integer(value, 64, false, dtype, argument);
    case DType::Float16: return encode_float(value, 5, 10);
    case DType::BFloat16: return encode_float(value, 8, 7);
    case DType::Float32: return encode_float(value, 8, 23);
    case DType::Float64: {
      std::uint64_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      return bits;
    }
    case DType::Complex64: return encode_float(value, 8, 23);  // (value, 0): imaginary bits zero
  }
  throw Error("internal error: unknown dtype");
}

}  // namespace jk
