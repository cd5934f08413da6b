// The layout helpers of host_layout.hpp.
#include "jitkernel/core/host_layout.hpp"

#include <cstring>

namespace jk {

void collapse_dims(std::vector<std::int64_t>& shape, std::vector<std::int64_t>& strides) {
  std::size_t out = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (out > 0 && strides[out - 1] == strides[d] * shape[d]) {
      shape[out - 1] *= shape[d];
      strides[out - 1] = strides[d];
    } else {
      shape[out] = shape[d];
      strides[out] = strides[d];
      ++out;
    }
  }
  shape.resize(out);
  strides.resize(out);
}

void pack_on_host(const ArrayView& src, unsigned char* dst) {
  const std::ptrdiff_t elem = static_cast<std::ptrdiff_t>(dtype_size(src.dtype));
  std::vector<std::int64_t> shape = src.shape, strides = src.strides;
  collapse_dims(shape, strides);
  const auto* base = static_cast<const unsigned char*>(src.data);
  if (shape.empty()) {
    std::memcpy(dst, base, elem);
    return;
  }
  const int outer = static_cast<int>(shape.size()) - 1;
  const std::int64_t inner_n = shape.back(), inner_stride = strides.back();
  std::vector<std::int64_t> index(outer, 0);
  std::ptrdiff_t offset = 0;  // bytes from base to the current row
  for (;;) {
    if (inner_stride == 1) {
      std::memcpy(dst, base + offset, inner_n * elem);
      dst += inner_n * elem;
    } else {
      for (std::int64_t i = 0; i < inner_n; ++i, dst += elem) {
        std::memcpy(dst, base + offset + i * inner_stride * elem, elem);
      }
    }
    int d = outer - 1;
    for (; d >= 0; --d) {
      offset += strides[d] * elem;
      if (++index[d] < shape[d]) break;
      offset -= strides[d] * shape[d] * elem;
      index[d] = 0;
    }
    if (d < 0) break;
  }
}

ByteSpan byte_span(const ArrayView& array) {
  ByteSpan span;
  std::int64_t lo = 0, hi = 0;  // element offsets of the lowest and highest element
  for (int d = 0; d < array.ndim(); ++d) {
    const std::int64_t extent = array.shape[d];
    if (extent == 0) return span;
    const std::int64_t reach = (extent - 1) * array.strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  const auto elem = static_cast<std::int64_t>(dtype_size(array.dtype));
  span.begin = lo * elem;
  span.end = (hi + 1) * elem;
  return span;
}

}  // namespace jk
