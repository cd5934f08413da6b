// Non-owning description of an array in memory: the currency every stage
// passes around. Device arrays carry their CUDA device ordinal; host arrays
// (NumPy) carry device == kHostDevice and are uploaded by the launcher.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "jitkernel/core/dtype.hpp"

namespace jk {

inline constexpr int kHostDevice = -1;
// Largest ndim for which name_shape / name_strides can be passed (MLX: MAX_NDIM).
inline constexpr int kMaxNdim = 10;

struct ArrayView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  int device = kHostDevice;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // in elements, one per dim

  int ndim() const { return static_cast<int>(shape.size()); }
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  std::size_t nbytes() const { return static_cast<std::size_t>(size()) * dtype_size(dtype); }
  bool row_contiguous() const {
    std::int64_t expected = 1;
    for (int i = ndim() - 1; i >= 0; --i) {
      if (shape[i] != 1 && strides[i] != expected) return false;
      expected *= shape[i];
    }
    return true;
  }
};

inline std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t s = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

// A value passed to a kernel by value (Python scalars in `inputs`, `scalars=`
// of precompiled kernels). `bytes` holds the value in the C type of `dtype`.
struct Scalar {
  DType dtype = DType::Int32;
  alignas(8) unsigned char bytes[8] = {};

  template <typename T>
  static Scalar of(DType dtype, T value) {
    static_assert(sizeof(T) <= 8, "scalar too large");
    Scalar s;
    s.dtype = dtype;
    std::memcpy(s.bytes, &value, sizeof(T));
    return s;
  }
};

struct Dim3 {
  std::int64_t x = 1, y = 1, z = 1;
};

}  // namespace jk
