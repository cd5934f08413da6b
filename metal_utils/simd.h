// jitkernel metal_utils: simd_shuffle, simd_shuffle_down, simd_shuffle_up and
// simd_shuffle_and_fill_up for the types metal:: lacks: 64-bit integers
// (moved as two 32-bit lanes), bool and complex64_t.

// 64-bit integers move as two 32-bit lanes.
#define JK_SIMD_SHUFFLE_64(T)                                                              \
  inline T simd_shuffle(T data, uint16_t lane) {                                           \
    return as_type<T>(metal::simd_shuffle(as_type<uint2>(data), lane));                    \
  }                                                                                        \
  inline T simd_shuffle_down(T data, uint16_t delta) {                                     \
    return as_type<T>(metal::simd_shuffle_down(as_type<uint2>(data), delta));              \
  }                                                                                        \
  inline T simd_shuffle_up(T data, uint16_t delta) {                                       \
    return as_type<T>(metal::simd_shuffle_up(as_type<uint2>(data), delta));                \
  }                                                                                        \
  inline T simd_shuffle_and_fill_up(T data, T filling, uint16_t delta) {                   \
    return as_type<T>(                                                                     \
        metal::simd_shuffle_and_fill_up(as_type<uint2>(data), as_type<uint2>(filling), delta)); \
  }
JK_SIMD_SHUFFLE_64(uint64_t)
JK_SIMD_SHUFFLE_64(int64_t)
#undef JK_SIMD_SHUFFLE_64

// bool moves as a 32-bit lane.
inline bool simd_shuffle(bool data, uint16_t lane) {
  return metal::simd_shuffle(static_cast<uint32_t>(data), lane) != 0;
}
inline bool simd_shuffle_down(bool data, uint16_t delta) {
  return metal::simd_shuffle_down(static_cast<uint32_t>(data), delta) != 0;
}
inline bool simd_shuffle_up(bool data, uint16_t delta) {
  return metal::simd_shuffle_up(static_cast<uint32_t>(data), delta) != 0;
}
inline bool simd_shuffle_and_fill_up(bool data, bool filling, uint16_t delta) {
  return metal::simd_shuffle_and_fill_up(static_cast<uint32_t>(data),
                                         static_cast<uint32_t>(filling), delta) != 0;
}

// complex64_t moves as its two floats.
inline complex64_t simd_shuffle(complex64_t data, uint16_t lane) {
  return complex64_t(metal::simd_shuffle(data.real, lane), metal::simd_shuffle(data.imag, lane));
}
inline complex64_t simd_shuffle_down(complex64_t data, uint16_t delta) {
  return complex64_t(metal::simd_shuffle_down(data.real, delta),
                     metal::simd_shuffle_down(data.imag, delta));
}
inline complex64_t simd_shuffle_up(complex64_t data, uint16_t delta) {
  return complex64_t(metal::simd_shuffle_up(data.real, delta),
                     metal::simd_shuffle_up(data.imag, delta));
}
inline complex64_t simd_shuffle_and_fill_up(complex64_t data, complex64_t filling, uint16_t delta) {
  return complex64_t(metal::simd_shuffle_and_fill_up(data.real, filling.real, delta),
                     metal::simd_shuffle_and_fill_up(data.imag, filling.imag, delta));
}
