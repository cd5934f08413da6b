// The Metal runtime's C++ API: runs a kernel that codegen generated
// (generate_metal_kernel) on the system's default Metal GPU, with CPU arrays
// as inputs and CPU-visible shared-storage buffers as outputs, and waits for
// it. Built only on Apple (CMakeLists.txt), where cpp/bindings/metal_runtime.cpp
// calls it. This header names no metal-cpp type, so callers need no Apple
// headers.
//
//   jk::metal::MetalCall call;            // inputs, output shapes/dtypes, grid, threadgroup, ...
//   auto generated = jk::codegen::generate_metal_kernel(spec, description);
//   std::vector<jk::metal::MetalOutput> outs = jk::metal::launch(spec, generated, call);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "jitkernel/codegen/metal_signature.hpp"
#include "jitkernel/core/array_view.hpp"

namespace jk::metal {

// Whether a Metal GPU can be used. When not, and `reason` is given, it
// receives why (no Metal device on this machine, ...).
bool available(std::string* reason = nullptr);

// An input: an array in CPU memory (any strides, device == kHostDevice) or a
// scalar by value. The same variant as jk::cuda::KernelInput, so the
// bindings' converted inputs move over as they are.
using MetalInput = std::variant<ArrayView, Scalar>;

// One call's arguments. ensure_row_contiguous and the math mode come from the spec.
struct MetalCall {
  std::vector<MetalInput> inputs;
  std::vector<std::vector<std::int64_t>> output_shapes;
  std::vector<DType> output_dtypes;
  // outputs=: empty, or one row-contiguous CPU array per output, which the
  // kernel writes in place (what it holds before is what the kernel reads).
  std::vector<ArrayView> provided_outputs;
  std::optional<double> init_value;  // fills every output before the kernel runs
  Dim3 grid;         // threads in x, y, z (dispatchThreads)
  Dim3 threadgroup;  // threads per threadgroup; min(threadgroup, grid) is used per dimension
};

// The memory of one output: a shared-storage MTL::Buffer, readable and
// writable by the CPU. It is released when the last shared_ptr goes, so
// whatever views data() (a NumPy array) must hold one.
class SharedBuffer {
 public:
  // Takes over one reference to `mtl_buffer` (an MTL::Buffer*).
  SharedBuffer(void* mtl_buffer, void* contents, std::size_t nbytes)
      : buffer_(mtl_buffer), contents_(contents), nbytes_(nbytes) {}
  ~SharedBuffer();
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;

  void* data() const { return contents_; }
  std::size_t nbytes() const { return nbytes_; }

 private:
  void* buffer_;
  void* contents_;
  std::size_t nbytes_;
};

struct MetalOutput {
  std::shared_ptr<SharedBuffer> buffer;  // null for outputs= arrays (view is the caller's array)
  ArrayView view;                        // row-contiguous, in buffer's memory
};

// Checks the call (ArgumentError / ArgumentTypeError naming the argument,
// before any GPU work), compiles kernel.source once per (source, math mode)
// (CompileError with Metal's log, lines pointing into the user's source),
// binds every buffer in kernel.bindings order, fills outputs with
// init_value, dispatches `grid` threads in threadgroups of
// min(threadgroup, grid) after checking them against the pipeline's limit,
// and returns once the GPU has finished (jk::Error when it failed). Outputs
// come back in output order. Thread-safe.
std::vector<MetalOutput> launch(const codegen::MetalKernelSpec& spec,
                                const codegen::GeneratedMetalKernel& kernel, const MetalCall& call);

}  // namespace jk::metal
