// The last stage's input: one kernel call, as every front builds it (the
// Python bindings, the C++ API, later compiled-graph ops): array views and
// scalars, what the outputs are (or the caller's own arrays), template
// arguments, launch geometry and stream. Backend-neutral: the backend that
// runs it decides where memory must live. Also the arrays a launch returns.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "jitkernel/core/array_view.hpp"
#include "jitkernel/engine/template_arg.hpp"

namespace jk {

using KernelInput = std::variant<ArrayView, Scalar>;

struct LaunchConfig {
  Dim3 grid;         // in threads, as MLX
  Dim3 threadgroup;  // threads per block (clamped to grid per dimension)
  int shared_memory = 0;  // CUDA dynamic shared memory bytes
  // CUDA: launch cooperatively (grid-wide sync); also set when the kernel's
  // source syncs the grid (GeneratedKernel::grid_sync).
  bool cooperative = false;
  // CUDA thread-block cluster in threadgroups (sm_90+); 0 x 0 x 0 = none.
  Dim3 cluster{0, 0, 0};
  bool has_cluster() const { return cluster.x != 0; }
  std::uintptr_t stream = 0;  // CUstream handle; 0 = legacy default stream (Metal: unused)
  // Owner of `stream` (e.g. the Python stream object), attached to every
  // output allocated on it so the stream outlives the outputs' stream-ordered
  // free. Empty when the stream needs no owner (default streams, raw handles).
  std::shared_ptr<void> stream_keepalive;
};

struct KernelCall {
  std::vector<KernelInput> inputs;
  std::vector<std::vector<std::int64_t>> output_shapes;
  std::vector<DType> output_dtypes;
  std::vector<ArrayView> provided_outputs;  // outputs=: empty, or one per output
  // provided_outputs were allocated for this call by a framework's allocator
  // (not given by the caller): checked mode poisons them like its own.
  bool outputs_allocated = false;
  std::optional<double> init_value;         // fills every output before the kernel runs
  std::vector<TemplateArg> template_args;
  LaunchConfig launch;
  // false: the kernel spec's shared_memory replaces launch.shared_memory.
  bool shared_memory_given = false;
  // Precompiled kernels have no spec: their calls say it (a Kernel uses its spec's).
  bool ensure_row_contiguous = true;
};

// Memory an output array lives in (CUDA: a stream-ordered device allocation;
// Metal: a shared-storage buffer). Released when the last owner drops it.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() const = 0;
  virtual std::size_t nbytes() const = 0;
};

// An array backed by a Buffer (outputs, uploads, contiguous copies).
// `buffer` is null for arrays the caller provided (outputs=).
struct OwnedArray {
  std::shared_ptr<Buffer> buffer;
  ArrayView view;
};

}  // namespace jk
