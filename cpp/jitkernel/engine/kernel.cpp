// Kernel::operator(): one call through the engine. A repeated call builds its
// plan key in a reused thread-local buffer, finds the plan (one compare or
// one hash lookup), reads the device's compiled kernel from it and hands the
// launch to the backend. Codegen runs once per plan key; compiling and
// loading once per plan and device (the backends' content-keyed caches dedup
// across kernels); every argument check runs before any GPU work. A first
// load that succeeds is also where the call record (JITKERNEL_RECORD) learns
// of a signature.
#include "jitkernel/engine/kernel.hpp"

#include <utility>

#include "jitkernel/engine/record_file.hpp"
#include "jitkernel/engine/validate_call.hpp"

namespace jk {

Kernel::Kernel(KernelSpec spec, const Backend& backend)
    : spec_(std::move(spec)), backend_(backend), plans_(std::make_unique<PlanCache>()) {
  backend_.validate_spec(spec_);
}

GeneratedKernel Kernel::generate(const CallSignature& signature) const {
  return backend_.generate(spec_, signature);
}

LaunchPlan& Kernel::plan_for(const KernelCall& call) {
  thread_local std::string key;
  plan_key(key, call, backend_.size_changes_code());
  LaunchPlan* plan = plans_->find(key);
  if (plan == nullptr) {
    // Codegen validates the signature (counts, dtypes, template args) before any GPU work.
    plan = plans_->add(key, generate(signature_of(call.inputs, call.output_dtypes, call.template_args)));
  }
  return *plan;
}

CompiledKernel Kernel::compiled_on(LaunchPlan& plan, int device, const KernelCall& call) {
  CompiledKernel compiled{plan.compiled_on(device)};
  if (compiled.handle == nullptr) {
    compiled = backend_.compile_or_load(spec_, plan.kernel, device);
    plan.remember(device, compiled);
    record_call(spec_, backend_, signature_of(call.inputs, call.output_dtypes, call.template_args));
  }
  return compiled;
}

CompiledKernel Kernel::load(const KernelCall& call, int device) {
  return compiled_on(plan_for(call), device, call);
}

std::vector<OwnedArray> Kernel::operator()(const KernelCall& call) { return launch_on(plan_for(call), call); }

std::vector<OwnedArray> Kernel::launch_on(LaunchPlan& plan, const KernelCall& call) {
  const LaunchConfig& given = call.launch;
  LaunchConfig spec_memory;  // the launch with the spec's shared_memory (only built when it differs)
  const LaunchConfig* launch = &given;
  if (!call.shared_memory_given && given.shared_memory != spec_.shared_memory) {
    spec_memory = given;
    spec_memory.shared_memory = spec_.shared_memory;
    launch = &spec_memory;
  }
  const int device = validate_call(backend_, call, *launch, spec_.ensure_row_contiguous);
  // Compile and load before the launch, so that a CompileError leaves nothing
  // enqueued (outputs= untouched by init_value).
  const CompiledKernel compiled = compiled_on(plan, device, call);
  return backend_.launch(spec_, plan.kernel, compiled, call, *launch, device);
}

}  // namespace jk
