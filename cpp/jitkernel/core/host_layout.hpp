// Layout arithmetic on strided arrays, shared by the backends: merging
// dimensions for copies, gathering a strided host array into contiguous
// memory, and the byte range an array's elements occupy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "jitkernel/core/array_view.hpp"

namespace jk {

// Drops size-1 dims and merges dims that are contiguous with each other, so
// copies loop over as few dims as possible. An empty result is one element.
void collapse_dims(std::vector<std::int64_t>& shape, std::vector<std::int64_t>& strides);

// Gathers a strided host array (no zero-size dims) into contiguous `dst`
// (row-major order, src.nbytes() bytes).
void pack_on_host(const ArrayView& src, unsigned char* dst);

// The bytes an array's elements occupy, relative to its data pointer:
// [begin, end), begin <= 0 (negative strides reach below data). {0, 0} for
// an array with no elements.
struct ByteSpan {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
};
ByteSpan byte_span(const ArrayView& array);

}  // namespace jk
