// jitkernel cuda_kernel "helper": generated code; user code follows the #line "header" and #line "source" markers.
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
// Cooperative groups: jitkernel's definitions of the part of the CUDA API this
// kernel uses (this_grid, this_thread_block), in place of <cooperative_groups.h>.
namespace cooperative_groups {
class thread_block;
class grid_group;
__device__ thread_block this_thread_block();
__device__ grid_group this_grid();

// The threads of the calling thread's block; ranks run x fastest, then y, z.
class thread_block {
  friend __device__ thread_block this_thread_block();
  __device__ thread_block() {}

 public:
  static __device__ __forceinline__ void sync() { __syncthreads(); }
  static __device__ __forceinline__ unsigned int num_threads() {
    return blockDim.x * blockDim.y * blockDim.z;
  }
  static __device__ __forceinline__ unsigned int size() { return num_threads(); }
  static __device__ __forceinline__ unsigned int thread_rank() {
    return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  }
  static __device__ __forceinline__ dim3 group_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  static __device__ __forceinline__ dim3 thread_index() { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  static __device__ __forceinline__ dim3 dim_threads() { return dim3(blockDim.x, blockDim.y, blockDim.z); }
  static __device__ __forceinline__ dim3 group_dim() { return dim_threads(); }
};

// All threads of the launch: blocks ranked x fastest, then y, z; a thread's
// rank is its block's rank times the block size plus its rank in the block.
// (No grid-wide sync here: that needs a cooperative launch and the real header.)
class grid_group {
  friend __device__ grid_group this_grid();
  __device__ grid_group() {}

 public:
  static __device__ __forceinline__ unsigned long long num_blocks() {
    return static_cast<unsigned long long>(gridDim.x) * gridDim.y * gridDim.z;
  }
  static __device__ __forceinline__ unsigned long long block_rank() {
    return (static_cast<unsigned long long>(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x +
           blockIdx.x;
  }
  static __device__ __forceinline__ unsigned long long num_threads() {
    return num_blocks() * thread_block::num_threads();
  }
  static __device__ __forceinline__ unsigned long long size() { return num_threads(); }
  static __device__ __forceinline__ unsigned long long thread_rank() {
    return block_rank() * thread_block::num_threads() + thread_block::thread_rank();
  }
  static __device__ __forceinline__ dim3 block_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  static __device__ __forceinline__ dim3 dim_blocks() { return dim3(gridDim.x, gridDim.y, gridDim.z); }
  static __device__ __forceinline__ dim3 group_dim() { return dim_blocks(); }
  // In threads: the grid's extent and the calling thread's 3-D index in it.
  static __device__ __forceinline__ dim3 dim_threads() {
    return dim3(gridDim.x * blockDim.x, gridDim.y * blockDim.y, gridDim.z * blockDim.z);
  }
  static __device__ __forceinline__ dim3 thread_index() {
    return dim3(blockIdx.x * blockDim.x + threadIdx.x, blockIdx.y * blockDim.y + threadIdx.y,
                blockIdx.z * blockDim.z + threadIdx.z);
  }
};

__device__ __forceinline__ thread_block this_thread_block() { return thread_block(); }
__device__ __forceinline__ grid_group this_grid() { return grid_group(); }

template <class Group>
__device__ __forceinline__ void sync(const Group& g) { g.sync(); }
template <class Group>
__device__ __forceinline__ auto thread_rank(const Group& g) -> decltype(g.thread_rank()) {
  return g.thread_rank();
}
template <class Group>
__device__ __forceinline__ auto group_size(const Group& g) -> decltype(g.num_threads()) {
  return g.num_threads();
}
}  // namespace cooperative_groups
namespace cg = cooperative_groups;
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
#line 1 "header"

            template <typename T>
            __device__ T do_exp(T x) {
                return exp(x);
            }
            
#line 148 "helper.cu"
extern "C" __global__ void helper_5fe1186379121558(
    const float* a,
    float* out1) {
#line 1 "source"

                auto elem = cooperative_groups::this_grid().thread_rank();
                out1[elem] = do_exp(a[elem]);
            
}
