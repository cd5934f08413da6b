// One call site of the torch op (jitkernel::launch / launch_into): the
// engine's Kernel rebuilt from the op's kernel text and its call record (the
// two string arguments, engine/call_record.hpp), and how the op's other
// arguments fill a KernelCall: array views in order, the unfixed sizes
// (grid, threadgroup, output extents) then the unfixed int scalars from
// `ints`, the unfixed float scalars from `floats`. Nothing here knows torch:
// torch_kernels.cpp reads the tensors and allocates the outputs. Calls live in
// a process-wide registry keyed by their two texts, for the process. A
// precompiled kernel's text (backend "precompiled") makes a call of its
// binary's entry point instead of an engine Kernel: its by-value scalars (the
// record's last inputs) are kept apart from the KernelCall's inputs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cuda/launch/recorded_target.hpp"
#include "jitkernel/engine/call_record.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace jk::torch_op {

// The op's arguments after the two texts, read from the dispatcher's stack.
struct OpArguments {
  std::vector<ArrayView> arrays;
  std::vector<std::int64_t> ints;
  std::vector<double> floats;
};

class OpCall {
 public:
  // Decodes both texts (ArgumentError("kernel" | "call", ...)), builds the kernel.
  OpCall(std::string_view kernel_text, std::string_view call_text);

  bool has_texts(std::string_view kernel_text, std::string_view call_text) const {
    return kernel_text == kernel_text_ && call_text == call_text_;
  }

  // Checks the arguments against the record (counts, each array's dtype and
  // rank: an ArgumentError naming the input) and fills the calling thread's
  // KernelCall: inputs, geometry, the outputs' shapes and dtypes. The caller
  // then sets the outputs (provided_outputs) and the stream, and runs it.
  KernelCall& prepare(const OpArguments& args);

  Kernel& kernel() { return target_->kernel(); }  // a generated kernel's (verbose() is false for a precompiled one)
  bool verbose() const { return call_.verbose; }
  // Launches a prepared call; the record fixes its signature, so its plan is found once.
  void launch(const KernelCall& call);

 private:
  // The calling thread's call of this site: the KernelCall, and a precompiled kernel's by-value scalars.
  struct ThreadCall {
    KernelCall call;
    std::vector<Scalar> scalars;
  };
  ThreadCall& thread_call();

  const std::string kernel_text_;
  const std::string call_text_;
  RecordedCall call_;
  KernelCall template_;
  std::unique_ptr<cuda::RecordedTarget> target_;  // made from template_ (which it may change)
  std::vector<std::int64_t> sizes_;  // grid, threadgroup, output extents; kUnfixed: from `ints`
  std::size_t n_arrays_ = 0, n_ints_ = 0, n_floats_ = 0, n_size_slots_ = 0;
};

// The registered call of these texts, made on first use.
OpCall& op_call(std::string_view kernel_text, std::string_view call_text);

}  // namespace jk::torch_op
