// jitkernel cuda_kernel "test_fun": generated code; user code follows the #line "header" and #line "source" markers.
// Fixed-width integer types (NVRTC has no <cstdint>; same types as CCCL's).
using int8_t = signed char;
using int16_t = signed short;
using int32_t = signed int;
using int64_t = signed long long;
using uint8_t = unsigned char;
using uint16_t = unsigned short;
using uint32_t = unsigned int;
using uint64_t = unsigned long long;
using intptr_t = signed long long;
using uintptr_t = unsigned long long;
#ifdef __NVCC_DIAG_PRAGMA_SUPPORT__
#pragma nv_diagnostic push
#pragma nv_diag_suppress 177
#endif
#define WARP_SIZE 32
#define MAX_NDIM 10

namespace jitkernel {
// Shape (int32) and strides (int64, in elements) of an input, passed by value
// with MAX_NDIM entries; the first ndim are meaningful.
template <typename T>
struct DimArray {
  T values[MAX_NDIM];
  __host__ __device__ constexpr const T* data() const { return values; }
  __host__ __device__ constexpr T* data() { return values; }
  __host__ __device__ constexpr const T& operator[](int i) const { return values[i]; }
  __host__ __device__ constexpr T& operator[](int i) { return values[i]; }
  __host__ __device__ static constexpr int size() { return MAX_NDIM; }
  __host__ __device__ constexpr const T* begin() const { return values; }
  __host__ __device__ constexpr const T* end() const { return values + MAX_NDIM; }
};
using Shape = DimArray<int32_t>;
using Strides = DimArray<int64_t>;

// MLX's `inf`, a constant rather than a macro (a local `inf` may shadow it).
inline constexpr float inf = __builtin_bit_cast(float, 0x7f800000);

// Memory offset (in elements) of the row-major element index `elem`.
template <typename IdxT = int64_t>
__host__ __device__ inline IdxT elem_to_loc(IdxT elem, const int* shape,
                                            const int64_t* strides, int ndim) {
  IdxT offset = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    IdxT extent = static_cast<IdxT>(shape[d]);
    offset += (elem % extent) * static_cast<IdxT>(strides[d]);
    elem /= extent;
  }
  return offset;
}
template <typename IdxT = int64_t>
__host__ __device__ inline IdxT elem_to_loc(IdxT elem, const Shape& shape,
                                            const Strides& strides, int ndim) {
  return elem_to_loc<IdxT>(elem, shape.data(), strides.data(), ndim);
}
}  // namespace jitkernel
using namespace jitkernel;
#ifdef __NVCC_DIAG_PRAGMA_SUPPORT__
#pragma nv_diagnostic pop
#endif
extern "C" __global__ void test_fun_a9f08c05fd63d5e9(
    const float* a,
    uint32_t* out) {
#line 1 "source"
out[0] = blockDim.x;
}
