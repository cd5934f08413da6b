// Host-side conversion of a number to the bytes of one element of a dtype
// (init_value fills, scalars): integers truncate toward zero and must fit;
// float16 / bfloat16 / float32 round to nearest-even straight from double;
// bool is value != 0; complex64 is (value, 0).
#pragma once

#include <cstdint>

#include "jitkernel/core/dtype.hpp"

namespace jk {

// The element's bytes in the low dtype_size(dtype) bytes (little-endian).
// Throws ArgumentError(argument, ...) when an integer dtype cannot hold the
// value (out of range, NaN, infinite).
std::uint64_t encode_element(DType dtype, double value, const char* argument);

// Bits of `value` in a binary float format with `exp_bits` exponent and
// `mant_bits` mantissa bits (IEEE layout: subnormals, inf, quiet NaN),
// rounded to nearest, ties to even. (5, 10) is float16, (8, 7) bfloat16,
// (8, 23) float32.
std::uint64_t encode_float(double value, int exp_bits, int mant_bits);

}  // namespace jk
