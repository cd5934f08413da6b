// jitkernel's own helper kernels, compiled with NVRTC on first use (once per
// architecture), loaded once per device, and launched on the caller's stream:
//  - a strided gather into a row-contiguous array, per element size (1, 2, 4,
//    8 bytes), for ensure_row_contiguous;
//  - an 8-byte fill, for init_value on 8-byte dtypes (smaller patterns use
//    cuMemsetD8/16/32Async).
// Shapes and strides travel by value; nothing is allocated or synchronised.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "jitkernel/cuda/driver/driver_api.hpp"

namespace jk::cuda {

// Most dimensions the strided copy takes (after merging contiguous dims).
inline constexpr int kBuiltinMaxNdim = 16;

// dst[i] = src[offset of row-major index i], for `count` = prod(shape)
// elements of `elem_size` bytes (1, 2, 4 or 8); strides in elements, may be
// negative. shape/strides have at most kBuiltinMaxNdim entries.
void launch_strided_copy(int device, CUstream stream, const void* src, void* dst,
                         std::size_t elem_size, const std::vector<std::int64_t>& shape,
                         const std::vector<std::int64_t>& strides);

// Writes `pattern` to `count` consecutive 8-byte elements at `dst` (8-byte aligned).
void launch_fill8(int device, CUstream stream, void* dst, std::size_t count, std::uint64_t pattern);

// The builtin program's source (for tests: it must compile for every arch).
const char* builtin_kernels_source();

}  // namespace jk::cuda
