// What a recorded call site launches (the torch op's, torch_op/op_call.hpp;
// XLA's, xla/prepared_call.hpp): the kernel a kernel text describes
// (engine/call_record.hpp), made once for calls of one fixed signature --
// an engine Kernel whose plan is found on the first launch, or a
// precompiled binary's entry with the call's by-value scalars kept apart.
// Making it checks what a launch would (codegen of the signature; the
// binary's entry and parameter sizes), so errors reach the caller while
// tracing, before any GPU work.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "jitkernel/cuda/launch/precompiled_kernel.hpp"
#include "jitkernel/engine/call_record.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace jk::cuda {

class RecordedTarget {
 public:
  // `call` is the site's template: its inputs in the record's order, their
  // ranks as the record gives them. For a precompiled kernel the by-value
  // scalars (the record's last inputs) move from call.inputs to scalars().
  // `argument` names the text in errors.
  RecordedTarget(const RecordedKernel& kernel, const RecordedCall& record, KernelCall& call, const char* argument);

  bool precompiled() const { return precompiled_ != nullptr; }
  const std::vector<Scalar>& scalars() const { return scalars_; }
  // The generated kernel (not for a precompiled one).
  Kernel& kernel() { return *kernel_; }

  // Compiles (or finds) and loads the kernel on `device` without launching.
  void load(const KernelCall& call, int device);
  // Launches a call of the site's signature; `scalars`: a precompiled kernel's.
  void launch(const KernelCall& call, const std::vector<Scalar>& scalars);

 private:
  std::unique_ptr<Kernel> kernel_;
  std::unique_ptr<PrecompiledEntry> precompiled_;
  std::vector<Scalar> scalars_;
  std::atomic<LaunchPlan*> plan_{nullptr};  // the generated kernel's, found on the first launch
};

}  // namespace jk::cuda
