// Source, compilation, loading and launching of jitkernel's helper kernels
// (see builtin_kernels.hpp). Grid-stride loops keep the grid small; index
// arithmetic is 64-bit throughout.
#include "jitkernel/cuda/memory/builtin_kernels.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/binary/module_loader.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/nvrtc/compile.hpp"
#include "jitkernel/cuda/nvrtc/compile_cache.hpp"
#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"

namespace jk::cuda {
namespace {

constexpr const char* kSource = R"(// jitkernel builtin kernels
struct JkDims {
  long long v[16];
};

// Index math in I: 32-bit division is several times cheaper than 64-bit.
template <typename T, typename I>
__device__ void jk_copy_strided_as(const T* __restrict__ src, T* __restrict__ dst, long long count,
                                   int ndim, const JkDims& shape, const JkDims& strides) {
  const I n = (I)count;
  const I step = (I)gridDim.x * blockDim.x;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
    I rest = i;
    long long offset = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const I extent = (I)shape.v[d];
      offset += (long long)(rest % extent) * strides.v[d];
      rest /= extent;
    }
    dst[i] = src[offset];
  }
}

template <typename T>
__device__ void jk_copy_strided(const T* __restrict__ src, T* __restrict__ dst, long long count,
                                int ndim, const JkDims& shape, const JkDims& strides) {
  if (count <= 0x7fffffffLL) {
    jk_copy_strided_as<T, unsigned int>(src, dst, count, ndim, shape, strides);
  } else {
    jk_copy_strided_as<T, long long>(src, dst, count, ndim, shape, strides);
  }
}

extern "C" __global__ void jk_copy_strided_1(const unsigned char* src, unsigned char* dst,
                                             long long count, int ndim, JkDims shape,
                                             JkDims strides) {
  jk_copy_strided(src, dst, count, ndim, shape, strides);
}
extern "C" __global__ void jk_copy_strided_2(const unsigned short* src, unsigned short* dst,
                                             long long count, int ndim, JkDims shape,
                                             JkDims strides) {
  jk_copy_strided(src, dst, count, ndim, shape, strides);
}
extern "C" __global__ void jk_copy_strided_4(const unsigned int* src, unsigned int* dst,
                                             long long count, int ndim, JkDims shape,
                                             JkDims strides) {
  jk_copy_strided(src, dst, count, ndim, shape, strides);
}
extern "C" __global__ void jk_copy_strided_8(const unsigned long long* src, unsigned long long* dst,
                                             long long count, int ndim, JkDims shape,
                                             JkDims strides) {
  jk_copy_strided(src, dst, count, ndim, shape, strides);
}

// out[b][r][c] = src[b * batch_stride + r + c * col_stride]: a batch of 2-D
// transposes, the layout ensure_row_contiguous meets for x.T / x.mT views.
// 64x64 tiles through shared memory, blocks of 64 x 8 threads (8 elements per
// thread in flight), so that both the reads (along r, where the source is
// contiguous) and the writes (along c) are coalesced; full tiles skip the
// bounds checks.
#define JK_TILE 64
#define JK_TILE_ROWS 8
template <typename T>
__device__ void jk_transpose(const T* __restrict__ src, T* __restrict__ dst, long long rows,
                             long long cols, long long col_stride, long long batch_stride,
                             long long batches) {
  __shared__ T tile[JK_TILE][JK_TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long c0 = (long long)blockIdx.x * JK_TILE;
  const long long in_step = (long long)JK_TILE_ROWS * col_stride;
  const long long out_step = (long long)JK_TILE_ROWS * cols;
  for (long long b = blockIdx.z; b < batches; b += gridDim.z) {
    for (long long r0 = (long long)blockIdx.y * JK_TILE; r0 < rows;
         r0 += (long long)gridDim.y * JK_TILE) {
      const bool full = r0 + JK_TILE <= rows && c0 + JK_TILE <= cols;
      const T* in = src + b * batch_stride + (r0 + tx) + (c0 + ty) * col_stride;
      if (full) {
#pragma unroll
        for (int j = 0; j < JK_TILE; j += JK_TILE_ROWS) {
          tile[ty + j][tx] = *in;
          in += in_step;
        }
      } else {
        for (int j = 0; j < JK_TILE; j += JK_TILE_ROWS) {
          if (r0 + tx < rows && c0 + ty + j < cols) tile[ty + j][tx] = *in;
          in += in_step;
        }
      }
      __syncthreads();
      T* out = dst + (b * rows + r0 + ty) * cols + c0 + tx;
      if (full) {
#pragma unroll
        for (int j = 0; j < JK_TILE; j += JK_TILE_ROWS) {
          *out = tile[tx][ty + j];
          out += out_step;
        }
      } else {
        for (int j = 0; j < JK_TILE; j += JK_TILE_ROWS) {
          if (r0 + ty + j < rows && c0 + tx < cols) *out = tile[tx][ty + j];
          out += out_step;
        }
      }
      __syncthreads();
    }
  }
}

#define JK_TRANSPOSE(SUFFIX, T)                                                              \
  extern "C" __global__ void jk_transpose_##SUFFIX(const T* src, T* dst, long long rows,     \
                                                   long long cols, long long col_stride,     \
                                                   long long batch_stride, long long batches) { \
    jk_transpose(src, dst, rows, cols, col_stride, batch_stride, batches);                   \
  }
JK_TRANSPOSE(1, unsigned char)
JK_TRANSPOSE(2, unsigned short)
JK_TRANSPOSE(4, unsigned int)
JK_TRANSPOSE(8, unsigned long long)

extern "C" __global__ void jk_fill_8(unsigned long long* dst, long long count,
                                     unsigned long long value) {
  long long step = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += step) {
    dst[i] = value;
  }
}
)";

struct JkDims {
  long long v[kBuiltinMaxNdim];
};
static_assert(sizeof(JkDims) == 8 * kBuiltinMaxNdim, "JkDims must match the device struct");

struct BuiltinFunctions {
  CUfunction copy[4] = {};       // by log2(element size)
  CUfunction transpose[4] = {};  // by log2(element size)
  CUfunction fill8 = nullptr;
};

constexpr unsigned kThreads = 256;
constexpr long long kTile = 64, kTileRows = 8;  // JK_TILE, JK_TILE_ROWS of the transpose
constexpr long long kMaxBlocks = 65535;

// Compiled once per architecture, loaded once per device.
const BuiltinFunctions& functions(int device) {
  static std::mutex mutex;
  static auto* cubins = new std::map<std::string, std::string>;             // arch -> cubin
  static auto* per_device = new std::map<int, std::unique_ptr<BuiltinFunctions>>;
  resolve_toolkit();  // before the lock: resolving may run Python (toolkit_provider.hpp)
  std::lock_guard<std::mutex> lock(mutex);
  auto it = per_device->find(device);
  if (it != per_device->end()) return *it->second;

  const std::string& arch = device_info(device).arch;
  auto cubin = cubins->find(arch);
  if (cubin == cubins->end()) {
    cubin = cubins->emplace(arch, compile_source_persistent(kSource, "jitkernel_builtins.cu", arch,
                                                            CompileTarget::Cubin)).first;
  }
  CUmodule module = load_module(device, cubin->second);
  auto fns = std::make_unique<BuiltinFunctions>();
  fns->copy[0] = get_function(module, "jk_copy_strided_1");
  fns->copy[1] = get_function(module, "jk_copy_strided_2");
  fns->copy[2] = get_function(module, "jk_copy_strided_4");
  fns->copy[3] = get_function(module, "jk_copy_strided_8");
  fns->transpose[0] = get_function(module, "jk_transpose_1");
  fns->transpose[1] = get_function(module, "jk_transpose_2");
  fns->transpose[2] = get_function(module, "jk_transpose_4");
  fns->transpose[3] = get_function(module, "jk_transpose_8");
  fns->fill8 = get_function(module, "jk_fill_8");
  return *per_device->emplace(device, std::move(fns)).first->second;
}

void launch_1d(CUfunction function, const char* name, CUstream stream, long long count,
               void** params) {
  long long blocks = std::min<long long>((count + kThreads - 1) / kThreads, kMaxBlocks);
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>(std::max<long long>(blocks, 1));
  config.gridDimY = 1;
  config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = 1;
  config.blockDimZ = 1;
  config.sharedMemBytes = 0;
  config.hStream = stream;
  config.attrs = nullptr;
  config.numAttrs = 0;
  check(driver().cuLaunchKernelEx(&config, function, params, nullptr),
        (std::string("launching jitkernel's ") + name).c_str());
  note_kernel_launch(name);
}

// The tiled transpose, when the (collapsed) layout is a batch of transposes:
// the last dim strided, the one before it contiguous in the source, and at
// most one batch dim before them. Returns false for any other layout.
bool launch_transpose(int device, CUstream stream, const void* src, void* dst, int which,
                      const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides) {
  const std::size_t n = shape.size();
  if (n < 2 || n > 3 || strides[n - 2] != 1 || strides[n - 1] == 1) return false;
  long long rows = shape[n - 2], cols = shape[n - 1], col_stride = strides[n - 1];
  long long batches = n == 3 ? shape[0] : 1, batch_stride = n == 3 ? strides[0] : 0;
  if (rows <= 0 || cols <= 0 || batches <= 0) return true;  // nothing to copy
  if ((cols + kTile - 1) / kTile > 0x7fffffffLL) return false;  // more column tiles than grid.x holds
  CUfunction function = functions(device).transpose[which];
  DeviceGuard guard(device);
  CUlaunchConfig config{};
  config.gridDimX = static_cast<unsigned>((cols + kTile - 1) / kTile);
  config.gridDimY = static_cast<unsigned>(std::min<long long>((rows + kTile - 1) / kTile, kMaxBlocks));
  config.gridDimZ = static_cast<unsigned>(std::min<long long>(batches, kMaxBlocks));
  config.blockDimX = kTile;
  config.blockDimY = kTileRows;
  config.blockDimZ = 1;
  config.hStream = stream;
  void* params[] = {&src, &dst, &rows, &cols, &col_stride, &batch_stride, &batches};
  const char* name = "builtin transpose (ensure_row_contiguous)";
  check(driver().cuLaunchKernelEx(&config, function, params, nullptr),
        (std::string("launching jitkernel's ") + name).c_str());
  note_kernel_launch(name);
  return true;
}

}  // namespace

const char* builtin_kernels_source() { return kSource; }

void launch_strided_copy(int device, CUstream stream, const void* src, void* dst,
                         std::size_t elem_size, const std::vector<std::int64_t>& shape,
                         const std::vector<std::int64_t>& strides) {
  int which = elem_size == 1 ? 0 : elem_size == 2 ? 1 : elem_size == 4 ? 2 : elem_size == 8 ? 3 : -1;
  if (which < 0 || shape.size() != strides.size() ||
      shape.size() > static_cast<std::size_t>(kBuiltinMaxNdim)) {
    throw Error("internal error: unsupported strided copy (element size " +
                std::to_string(elem_size) + ", " + std::to_string(shape.size()) + " dims)");
  }
  if (launch_transpose(device, stream, src, dst, which, shape, strides)) return;
  long long count = 1;
  JkDims dims{}, steps{};
  for (std::size_t d = 0; d < shape.size(); ++d) {
    dims.v[d] = shape[d];
    steps.v[d] = strides[d];
    count *= shape[d];
  }
  if (count <= 0) return;
  CUfunction function = functions(device).copy[which];
  DeviceGuard guard(device);
  int ndim = static_cast<int>(shape.size());
  void* params[] = {&src, &dst, &count, &ndim, &dims, &steps};
  launch_1d(function, "builtin strided copy (ensure_row_contiguous)", stream, count, params);
}

void launch_fill8(int device, CUstream stream, void* dst, std::size_t count, std::uint64_t pattern) {
  if (count == 0) return;
  CUfunction function = functions(device).fill8;
  DeviceGuard guard(device);
  long long n = static_cast<long long>(count);
  unsigned long long value = pattern;
  void* params[] = {&dst, &n, &value};
  launch_1d(function, "builtin fill (init_value)", stream, n, params);
}

}  // namespace jk::cuda
