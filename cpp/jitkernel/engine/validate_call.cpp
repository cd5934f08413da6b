// validate_call (validate_call.hpp): the checks every backend shares, in the
// order users meet them: launch geometry signs, then outputs, then inputs
// that alias outputs, then the backend's own (memory, devices).
#include "jitkernel/engine/validate_call.hpp"

#include <cstdint>
#include <string>
#include <variant>

#include "jitkernel/core/element_bytes.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"

namespace jk {
namespace {

// Cluster dims against the grid (in threadgroups, after clamping the
// threadgroup to the grid as the launch does) and the hardware's ceiling of
// 16 threadgroups; the device's own limits are checked at launch.
void validate_cluster(const LaunchConfig& c) {
  const std::int64_t cluster[3] = {c.cluster.x, c.cluster.y, c.cluster.z};
  const std::int64_t grid[3] = {c.grid.x, c.grid.y, c.grid.z};
  const std::int64_t group[3] = {c.threadgroup.x, c.threadgroup.y, c.threadgroup.z};
  if (cluster[0] <= 0 || cluster[1] <= 0 || cluster[2] <= 0) {
    throw ArgumentError("cluster", "expected 3 positive ints (threadgroups per cluster in x, y, z), got " +
                                       dims_text(c.cluster));
  }
  const std::int64_t size = cluster[0] * cluster[1] * cluster[2];
  if (size > 16) {
    throw ArgumentError("cluster", dims_text(c.cluster) + " has " + std::to_string(size) +
                                       " threadgroups; a cluster holds at most 8 (portable) or 16 "
                                       "(non-portable, Hopper) threadgroups");
  }
  constexpr const char* axes[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    const std::int64_t block = group[i] < grid[i] ? group[i] : grid[i];
    const std::int64_t blocks = grid[i] / block + (grid[i] % block != 0);
    if (blocks % cluster[i] != 0) {
      throw ArgumentError("cluster", "the grid has " + std::to_string(blocks) + " threadgroups in " + axes[i] +
                                         ", not a multiple of the cluster's " + std::to_string(cluster[i]) +
                                         " (cluster=" + dims_text(c.cluster) + ")");
    }
  }
}

void validate_launch(const LaunchConfig& c) {
  if (c.grid.x <= 0 || c.grid.y <= 0 || c.grid.z <= 0) {
    throw ArgumentError("grid", "expected 3 positive ints (threads in x, y, z), got " + dims_text(c.grid));
  }
  if (c.threadgroup.x <= 0 || c.threadgroup.y <= 0 || c.threadgroup.z <= 0) {
    throw ArgumentError("threadgroup", "expected 3 positive ints (threads per block in x, y, z), got " +
                                           dims_text(c.threadgroup));
  }
  if (c.shared_memory < 0) {
    throw ArgumentError("shared_memory", "expected a number of bytes >= 0, got " +
                                             std::to_string(c.shared_memory));
  }
  if (c.has_cluster()) validate_cluster(c);
}

void validate_output_layout(const KernelCall& call) {
  const std::size_t n = call.output_dtypes.size();
  if (call.output_shapes.size() != n) {
    throw ArgumentError("output_shapes", "got " + std::to_string(call.output_shapes.size()) +
                                             " shapes for " + std::to_string(n) +
                                             " output_dtypes; give one shape and one dtype per output");
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (auto extent : call.output_shapes[i]) {
      if (extent < 0) {
        throw ArgumentError("output_shapes", "output " + std::to_string(i) + " has shape " +
                                                 shape_text(call.output_shapes[i]) +
                                                 "; dimensions must be >= 0");
      }
    }
  }
  if (call.init_value) {
    for (DType dtype : call.output_dtypes) encode_element(dtype, *call.init_value, "init_value");
  }
}

void validate_provided_outputs(const Backend& backend, const KernelCall& call) {
  if (call.provided_outputs.empty()) return;
  const std::size_t n = call.output_dtypes.size();
  if (call.provided_outputs.size() != n) {
    throw ArgumentError("outputs", "expected " + std::to_string(n) + " arrays (one per output), got " +
                                       std::to_string(call.provided_outputs.size()));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const ArrayView& out = call.provided_outputs[i];
    std::string misplaced = backend.misplaced_output(i, out);
    if (!misplaced.empty()) throw ArgumentError("outputs", misplaced);
    if (out.dtype != call.output_dtypes[i]) {
      throw ArgumentError("outputs", item_text("outputs", i) + " has dtype " + dtype_name(out.dtype) +
                                         " but output_dtypes[" + std::to_string(i) + "] is " +
                                         dtype_name(call.output_dtypes[i]));
    }
    if (out.shape != call.output_shapes[i]) {
      throw ArgumentError("outputs", item_text("outputs", i) + " has shape " + shape_text(out.shape) +
                                         " but output_shapes[" + std::to_string(i) + "] is " +
                                         shape_text(call.output_shapes[i]));
    }
    if (!out.row_contiguous()) {
      throw ArgumentError("outputs", item_text("outputs", i) + " is not row-contiguous (C order); kernels "
                                                               "write outputs densely: pass a contiguous array");
    }
    if (reinterpret_cast<std::uintptr_t>(out.data) % dtype_size(out.dtype) != 0) {
      throw ArgumentError("outputs", item_text("outputs", i) + "'s data pointer is not aligned to its element size");
    }
  }
}

// The bytes `v` can touch: [first, last) (empty for arrays of no elements).
struct ByteRange {
  std::uintptr_t first = 0, last = 0;
};
ByteRange byte_range(const ArrayView& v) {
  std::int64_t low = 0, high = 0;
  for (int d = 0; d < v.ndim(); ++d) {
    if (v.shape[d] == 0) return {};
    const std::int64_t reach = (v.shape[d] - 1) * v.strides[d];
    (reach < 0 ? low : high) += reach;
  }
  const auto base = reinterpret_cast<std::uintptr_t>(v.data);
  const auto itemsize = static_cast<std::int64_t>(dtype_size(v.dtype));
  return {base + static_cast<std::uintptr_t>(low * itemsize),
          base + static_cast<std::uintptr_t>(high * itemsize + itemsize)};
}

// An input that is also an output (in-place) must be read where the kernel
// writes: ensure_row_contiguous would hand the kernel a copy of a strided
// input instead, so a strided input that overlaps an output is refused.
void validate_aliasing(const KernelCall& call, bool ensure_row_contiguous) {
  if (!ensure_row_contiguous || call.provided_outputs.empty()) return;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const auto* in = std::get_if<ArrayView>(&call.inputs[i]);
    if (in == nullptr || in->row_contiguous()) continue;
    const ByteRange a = byte_range(*in);
    if (a.first == a.last) continue;
    for (std::size_t j = 0; j < call.provided_outputs.size(); ++j) {
      const ArrayView& out = call.provided_outputs[j];
      const ByteRange b = byte_range(out);
      if (out.device != in->device || b.first == b.last || a.last <= b.first || b.last <= a.first) continue;
      throw ArgumentError("inputs", item_text("inputs", i) + " shares memory with " + item_text("outputs", j) +
                                        " but is not row-contiguous: ensure_row_contiguous=True would "
                                        "give the kernel a copy of it, not the memory it writes. Pass a "
                                        "row-contiguous array, or make the kernel with "
                                        "ensure_row_contiguous=False to read the strided array in place");
    }
  }
}

}  // namespace

int validate_call(const Backend& backend, const KernelCall& call, const LaunchConfig& launch,
                  bool ensure_row_contiguous) {
  validate_launch(launch);
  validate_output_layout(call);
  validate_provided_outputs(backend, call);
  validate_aliasing(call, ensure_row_contiguous);
  return backend.resolve_device(call);
}

}  // namespace jk
