// The engine's kernel: a spec, the backend that runs it and its plan cache.
// The C++ API of cuda_kernel / metal_kernel; every front (the Python
// bindings, compiled-graph ops) builds a KernelCall and calls it.
//
//   jk::Kernel k({.name = "myexp", .input_names = {"inp"}, .output_names = {"out"},
//                 .source = body}, jk::cuda_backend());
//   std::vector<jk::OwnedArray> outs = k(call);   // call: jk::KernelCall
#pragma once

#include <memory>
#include <vector>

#include "jitkernel/engine/backend.hpp"
#include "jitkernel/engine/launch_plan.hpp"

namespace jk {

class Kernel {
 public:
  // Validates the spec (ArgumentError naming the bad argument).
  Kernel(KernelSpec spec, const Backend& backend);

  const KernelSpec& spec() const { return spec_; }
  const Backend& backend() const { return backend_; }

  // The exact text that would be compiled for this signature. No GPU needed.
  GeneratedKernel generate(const CallSignature& signature) const;

  // Generates (once per plan key), validates, compiles and loads (once per
  // plan and device), then launches. Returns the outputs it allocated, in
  // output_names order; empty when call.provided_outputs gave them.
  std::vector<OwnedArray> operator()(const KernelCall& call);

  // Generates, compiles and loads the plan of `call` on `device` without
  // launching (the call's data pointers are not read), so that later calls
  // of that signature on that device are plan-cache hits: what a front does
  // before its launches may be captured in a CUDA graph (XLA's handler),
  // or kernel.attributes() reads the loaded function.
  CompiledKernel load(const KernelCall& call, int device);

  // The plan `call` runs on (generated once per plan key), and a launch on a
  // plan found before: what operator() does after its lookup (validation,
  // compile-or-load on the device, launch). A front that fixes a call's
  // signature (the Python bound call) finds its plan once; each call it
  // launches on it must have that signature (dtypes, ndims, template).
  LaunchPlan& plan_for(const KernelCall& call);
  std::vector<OwnedArray> launch_on(LaunchPlan& plan, const KernelCall& call);

 private:
  CompiledKernel compiled_on(LaunchPlan& plan, int device, const KernelCall& call);

  const KernelSpec spec_;
  const Backend& backend_;
  std::unique_ptr<PlanCache> plans_;
};

}  // namespace jk
