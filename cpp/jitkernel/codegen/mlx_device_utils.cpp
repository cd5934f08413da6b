// MLX's CUDA device utilities that kernels written for mx.fast.cuda_kernel
// call (same names, signatures and results as MLX's): vectorized loads and
// stores through AlignedVector, Limits<T>, elem_to_loc_nd and the
// multi-stride elem_to_loc, complex_t. Each group is written into the
// preamble only when the user code mentions one of its names and declares
// none of them itself (a header with its own AlignedVector keeps it, with no
// ambiguity). Written without CCCL: the several-locations forms return a
// small aggregate (structured bindings work) unless the kernel already has
// cuda::std, where they return cuda::std::tuple as MLX's do; complex_t is
// cuda::std::complex as in MLX, so only kernels that name it pay for
// <cuda/std/complex>.
#include <string>
#include <string_view>

#include "jitkernel/codegen/codegen_detail.hpp"

namespace jk::codegen {
namespace {

constexpr std::string_view kVectorNames[] = {
    "AlignedVector", "load_vector", "store_vector", "unsafe_load_vector", "unsafe_store_vector",
    "is_aligned",
};
constexpr std::string_view kLimitsNames[] = {"Limits"};
constexpr std::string_view kLocNames[] = {"elem_to_loc_nd", "elem_to_loc"};
constexpr std::string_view kComplexNames[] = {
    "complex_t", "complex64_t", "complex128_t", "is_complex", "is_complex_v",
};

template <std::size_t N>
bool wanted(const SourceScan& scan, const std::string_view (&names)[N]) {
  bool mentioned = false;
  for (auto n : names) {
    std::string name(n);
    if (scan.declares(name)) return false;
    mentioned = mentioned || scan.has(name);
  }
  return mentioned;
}

constexpr const char* kVector = R"(// MLX's vectorized loads and stores: N elements of T moved as one access
// when the pointer is aligned to N * sizeof(T), element by element otherwise.
template <typename T, int N>
struct alignas(sizeof(T) * N) AlignedVector {
  T val[N];
  __host__ __device__ T& operator[](int i) { return val[i]; }
  __host__ __device__ T operator[](int i) const { return val[i]; }
};
template <int N, typename T>
__host__ __device__ inline bool is_aligned(T* p) {
  return reinterpret_cast<uintptr_t>(p) % (N * sizeof(T)) == 0;
}
template <int N, typename T>
__device__ inline AlignedVector<T, N> unsafe_load_vector(const T* p, uint32_t offset) {
  return reinterpret_cast<const AlignedVector<T, N>*>(p)[offset];
}
// Vector `offset` of p: elements offset * N ... offset * N + N - 1; with
// `size`, elements at or past it read `fallback`; with `stride`, element k is
// p[stride * k].
template <int N, typename T>
__device__ inline AlignedVector<T, N> load_vector(const T* p, uint32_t offset) {
  if (is_aligned<N>(p)) return unsafe_load_vector<N>(p, offset);
  AlignedVector<T, N> v;
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = p[offset * N + i];
  return v;
}
template <int N, typename T, typename SizeT>
__device__ inline AlignedVector<T, N> load_vector(const T* p, uint32_t offset, SizeT size,
                                                  int64_t stride, T fallback) {
  if (stride == 1 && is_aligned<N>(p) && (offset + 1) * N <= size) {
    return unsafe_load_vector<N>(p, offset);
  }
  AlignedVector<T, N> v;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    v[i] = offset * N + i < size ? p[stride * (offset * N + i)] : fallback;
  }
  return v;
}
template <int N, typename T, typename SizeT>
__device__ inline AlignedVector<T, N> load_vector(const T* p, uint32_t offset, SizeT size, T fallback) {
  return load_vector<N>(p, offset, size, int64_t(1), fallback);
}
template <int N, typename T>
__device__ inline void unsafe_store_vector(T* p, uint32_t offset, const AlignedVector<T, N>& v) {
  reinterpret_cast<AlignedVector<T, N>*>(p)[offset] = v;
}
// Stores vector `offset`; with `size`, elements at or past it are not written.
template <int N, typename T>
__device__ inline void store_vector(T* p, uint32_t offset, const AlignedVector<T, N>& v) {
  if (is_aligned<N>(p)) {
    unsafe_store_vector<N>(p, offset, v);
    return;
  }
#pragma unroll
  for (int i = 0; i < N; ++i) p[offset * N + i] = v[i];
}
template <int N, typename T, typename SizeT>
__device__ inline void store_vector(T* p, uint32_t offset, const AlignedVector<T, N>& v, SizeT size,
                                    int64_t stride) {
  if (stride == 1 && is_aligned<N>(p) && (offset + 1) * N <= size) {
    unsafe_store_vector<N>(p, offset, v);
    return;
  }
  for (int i = 0; i < N && offset * N + i < size; ++i) p[stride * (offset * N + i)] = v[i];
}
template <int N, typename T, typename SizeT>
__device__ inline void store_vector(T* p, uint32_t offset, const AlignedVector<T, N>& v, SizeT size) {
  store_vector<N>(p, offset, v, size, int64_t(1));
}
)";

constexpr const char* kLimits = R"(// MLX's Limits<T>: max()/min() are the largest and smallest values (the
// infinities for floating types), finite_max()/finite_min() the finite ones.
template <typename T>
struct IntegerLimits {
  static constexpr bool is_signed = T(-1) < T(0);
  static constexpr __host__ __device__ T max() {
    return is_signed ? T((1ull << (sizeof(T) * 8 - 1)) - 1) : T(~0ull);
  }
  static constexpr __host__ __device__ T min() { return is_signed ? T(-max() - 1) : T(0); }
};
template <typename T, typename = void>
struct Limits {
  static constexpr __host__ __device__ T max() { return IntegerLimits<T>::max(); }
  static constexpr __host__ __device__ T min() { return IntegerLimits<T>::min(); }
  static constexpr __host__ __device__ T finite_max() { return max(); }
  static constexpr __host__ __device__ T finite_min() { return min(); }
};
template <typename T, typename Bits, Bits kInf, Bits kFiniteMax, Bits kSign>
struct FloatLimits {
  static constexpr __host__ __device__ T max() { return __builtin_bit_cast(T, kInf); }
  static constexpr __host__ __device__ T min() { return __builtin_bit_cast(T, Bits(kInf | kSign)); }
  static constexpr __host__ __device__ T finite_max() { return __builtin_bit_cast(T, kFiniteMax); }
  static constexpr __host__ __device__ T finite_min() {
    return __builtin_bit_cast(T, Bits(kFiniteMax | kSign));
  }
};
template <>
struct Limits<float> : FloatLimits<float, uint32_t, 0x7f800000u, 0x7f7fffffu, 0x80000000u> {};
template <>
struct Limits<double> : FloatLimits<double, uint64_t, 0x7ff0000000000000ull, 0x7fefffffffffffffull,
                                    0x8000000000000000ull> {};
template <>
struct Limits<bool> {
  static constexpr __host__ __device__ bool max() { return true; }
  static constexpr __host__ __device__ bool min() { return false; }
  static constexpr __host__ __device__ bool finite_max() { return true; }
  static constexpr __host__ __device__ bool finite_min() { return false; }
};
)";

// Limits of the 16-bit float types, from their raw bits (constexpr).
constexpr const char* kHalfLimits = R"(template <>
struct Limits<__half> {
  static constexpr __host__ __device__ __half max() { return __half(__half_raw{0x7c00}); }
  static constexpr __host__ __device__ __half min() { return __half(__half_raw{0xfc00}); }
  static constexpr __host__ __device__ __half finite_max() { return __half(__half_raw{0x7bff}); }
  static constexpr __host__ __device__ __half finite_min() { return __half(__half_raw{0xfbff}); }
};
)";
constexpr const char* kBf16Limits = R"(template <>
struct Limits<__nv_bfloat16> {
  static constexpr __host__ __device__ __nv_bfloat16 max() { return __nv_bfloat16(__nv_bfloat16_raw{0x7f80}); }
  static constexpr __host__ __device__ __nv_bfloat16 min() { return __nv_bfloat16(__nv_bfloat16_raw{0xff80}); }
  static constexpr __host__ __device__ __nv_bfloat16 finite_max() {
    return __nv_bfloat16(__nv_bfloat16_raw{0x7f7f});
  }
  static constexpr __host__ __device__ __nv_bfloat16 finite_min() {
    return __nv_bfloat16(__nv_bfloat16_raw{0xff7f});
  }
};
)";

// Locations of one element in two or three arrays of the same shape.
constexpr const char* kLightLocs = R"(template <typename IdxT>
struct Locations2 { IdxT a, b; };
template <typename IdxT>
struct Locations3 { IdxT a, b, c; };
template <typename IdxT>
__host__ __device__ inline Locations2<IdxT> make_locations(IdxT a, IdxT b) { return {a, b}; }
template <typename IdxT>
__host__ __device__ inline Locations3<IdxT> make_locations(IdxT a, IdxT b, IdxT c) { return {a, b, c}; }
)";
constexpr const char* kTupleLocs = R"(template <typename IdxT>
using Locations2 = cuda::std::tuple<IdxT, IdxT>;
template <typename IdxT>
using Locations3 = cuda::std::tuple<IdxT, IdxT, IdxT>;
template <typename IdxT>
__host__ __device__ inline Locations2<IdxT> make_locations(IdxT a, IdxT b) { return {a, b}; }
template <typename IdxT>
__host__ __device__ inline Locations3<IdxT> make_locations(IdxT a, IdxT b, IdxT c) { return {a, b, c}; }
)";

constexpr const char* kLocs = R"(// MLX's elem_to_loc_nd (the number of dimensions a template argument) and
// the forms giving an element's location in two or three arrays at once.
template <int NDIM, typename IdxT = int64_t>
__host__ __device__ inline IdxT elem_to_loc_nd(IdxT elem, const int* shape, const int64_t* strides) {
  IdxT loc = 0;
#pragma unroll
  for (int d = NDIM - 1; d >= 0; --d) {
    loc += (elem % shape[d]) * IdxT(strides[d]);
    elem /= shape[d];
  }
  return loc;
}
template <int NDIM, typename IdxT = int64_t>
__host__ __device__ inline Locations2<IdxT> elem_to_loc_nd(IdxT elem, const int* shape, const int64_t* a,
                                                           const int64_t* b) {
  IdxT la = 0, lb = 0;
#pragma unroll
  for (int d = NDIM - 1; d >= 0; --d) {
    IdxT i = elem % shape[d];
    la += i * IdxT(a[d]);
    lb += i * IdxT(b[d]);
    elem /= shape[d];
  }
  return make_locations(la, lb);
}
template <int NDIM, typename IdxT = int64_t>
__host__ __device__ inline Locations3<IdxT> elem_to_loc_nd(IdxT elem, const int* shape, const int64_t* a,
                                                           const int64_t* b, const int64_t* c) {
  IdxT la = 0, lb = 0, lc = 0;
#pragma unroll
  for (int d = NDIM - 1; d >= 0; --d) {
    IdxT i = elem % shape[d];
    la += i * IdxT(a[d]);
    lb += i * IdxT(b[d]);
    lc += i * IdxT(c[d]);
    elem /= shape[d];
  }
  return make_locations(la, lb, lc);
}
template <typename IdxT = int64_t>
__host__ __device__ inline Locations2<IdxT> elem_to_loc(IdxT elem, const int* shape, const int64_t* a,
                                                        const int64_t* b, int ndim) {
  IdxT la = 0, lb = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    IdxT i = elem % shape[d];
    la += i * IdxT(a[d]);
    lb += i * IdxT(b[d]);
    elem /= shape[d];
  }
  return make_locations(la, lb);
}
template <typename IdxT = int64_t>
__host__ __device__ inline Locations3<IdxT> elem_to_loc(IdxT elem, const int* shape, const int64_t* a,
                                                        const int64_t* b, const int64_t* c, int ndim) {
  IdxT la = 0, lb = 0, lc = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    IdxT i = elem % shape[d];
    la += i * IdxT(a[d]);
    lb += i * IdxT(b[d]);
    lc += i * IdxT(c[d]);
    elem /= shape[d];
  }
  return make_locations(la, lb, lc);
}
)";

constexpr const char* kComplex = R"(// MLX's complex_t (cuda::std::complex) with the comparisons and % MLX adds.
template <typename T>
using complex_t = cuda::std::complex<T>;
using complex64_t = complex_t<float>;
using complex128_t = complex_t<double>;
template <typename T>
struct is_complex : cuda::std::false_type {};
template <typename T>
struct is_complex<cuda::std::complex<T>> : cuda::std::true_type {};
template <typename T>
inline constexpr bool is_complex_v = is_complex<T>::value;
// Lexicographic order: real part first, then imaginary part.
template <typename T>
__host__ __device__ inline bool operator>(complex_t<T> x, complex_t<T> y) {
  return x.real() > y.real() || (x.real() == y.real() && x.imag() > y.imag());
}
template <typename T>
__host__ __device__ inline bool operator<(complex_t<T> x, complex_t<T> y) { return y > x; }
template <typename T>
__host__ __device__ inline bool operator<=(complex_t<T> x, complex_t<T> y) { return !(x > y); }
template <typename T>
__host__ __device__ inline bool operator>=(complex_t<T> x, complex_t<T> y) { return !(x < y); }
// Floored remainder of the real and imaginary parts separately.
template <typename T>
__host__ __device__ inline complex_t<T> operator%(complex_t<T> x, complex_t<T> y) {
  return {x.real() - floor(x.real() / y.real()) * y.real(), x.imag() - floor(x.imag() / y.imag()) * y.imag()};
}
)";
constexpr const char* kComplexLimits = R"(template <typename T>
struct Limits<complex_t<T>> {
  static constexpr __host__ __device__ complex_t<T> max() { return {Limits<T>::max(), Limits<T>::max()}; }
  static constexpr __host__ __device__ complex_t<T> min() { return {Limits<T>::min(), Limits<T>::min()}; }
};
)";

}  // namespace

MlxUtils detect_mlx_utils(const SourceScan& scan) {
  MlxUtils u;
  u.vector_io = wanted(scan, kVectorNames);
  u.limits = wanted(scan, kLimitsNames);
  u.locations = scan.has("elem_to_loc_nd") && !scan.declares("elem_to_loc_nd");
  u.locations = u.locations || (scan.has("elem_to_loc") && wanted(scan, kLocNames));
  u.complex = wanted(scan, kComplexNames);
  return u;
}

std::string mlx_utils_text(const MlxUtils& u, bool fp16, bool bf16, bool cuda_std) {
  std::string out;
  if (u.vector_io) out += kVector;
  if (u.complex) out += kComplex;
  if (u.limits) {
    out += kLimits;
    if (fp16) out += kHalfLimits;
    if (bf16) out += kBf16Limits;
    if (u.complex) out += kComplexLimits;
  }
  if (u.locations) {
    out += cuda_std ? kTupleLocs : kLightLocs;
    out += kLocs;
  }
  return out;
}

}  // namespace jk::codegen
