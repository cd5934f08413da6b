// The Metal runtime: what metal_backend.cpp calls on Apple builds to compile
// and run a kernel codegen generated, on the system's default Metal GPU,
// with CPU arrays as inputs and CPU-visible shared-storage buffers as
// outputs, waiting for it. Built only on Apple (CMakeLists.txt). This header
// names no metal-cpp type, so callers need no Apple headers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "jitkernel/engine/generated_kernel.hpp"
#include "jitkernel/engine/kernel_call.hpp"
#include "jitkernel/engine/kernel_spec.hpp"

namespace jk::metal {

// Whether a Metal GPU can be used. When not, and `reason` is given, it
// receives why (no Metal device on this machine, ...).
bool available(std::string* reason = nullptr);

// The memory of one output: a shared-storage MTL::Buffer, readable and
// writable by the CPU. It is released when the last owner goes, so whatever
// views data() (a NumPy array) must hold one.
class SharedBuffer : public Buffer {
 public:
  // Takes over one reference to `mtl_buffer` (an MTL::Buffer*).
  SharedBuffer(void* mtl_buffer, void* contents, std::size_t nbytes)
      : buffer_(mtl_buffer), contents_(contents), nbytes_(nbytes) {}
  ~SharedBuffer() override;
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;

  void* data() const override { return contents_; }
  std::size_t nbytes() const override { return nbytes_; }

 private:
  void* buffer_;
  void* contents_;
  std::size_t nbytes_;
};

// The compute pipeline (an MTL::ComputePipelineState*) of kernel.entry_name
// in kernel.source compiled with the spec's math mode, compiled once per
// (source, math mode) (CompileError with Metal's log, lines pointing into the
// user's source). Lives as long as the process.
void* compile_pipeline(const KernelSpec& spec, const GeneratedKernel& kernel);

// Runs a call engine/validate_call.hpp accepted: binds every parameter in
// kernel.params order, fills outputs with init_value, dispatches `grid`
// threads in threadgroups of min(threadgroup, grid) after checking them
// against the pipeline's limit, and returns once the GPU has finished
// (jk::Error when it failed). Returns the outputs it allocated, in order
// (empty when the call provided them). Thread-safe.
std::vector<OwnedArray> launch(const KernelSpec& spec, const GeneratedKernel& kernel, void* pipeline,
                               const KernelCall& call);

// A new row-contiguous array in a shared-storage buffer.
OwnedArray allocate_shared(DType dtype, const std::vector<std::int64_t>& shape);

}  // namespace jk::metal
