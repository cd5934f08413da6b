// jitkernel metal_utils: the scalar types MLX kernel bodies name. First of the
// headers jitkernel prepends (in this order: types.h, complex.h, limits.h,
// indexing.h, simd.h) to every generated metal_kernel source; they are
// concatenated into one text, so none includes another.
#include <metal_stdlib>

using namespace metal;

#ifndef METAL_FUNC
#define METAL_FUNC inline __attribute__((__always_inline__))
#endif

// MLX spells half and bfloat (Metal 3.1, macOS 14) with fixed-width names.
typedef half float16_t;
typedef bfloat bfloat16_t;

// The raw bits of a bfloat16_t, and back.
inline uint16_t bfloat16_to_uint16(const bfloat16_t x) {
  return as_type<uint16_t>(x);
}

inline bfloat16_t uint16_to_bfloat16(const uint16_t x) {
  return as_type<bfloat16_t>(x);
}
