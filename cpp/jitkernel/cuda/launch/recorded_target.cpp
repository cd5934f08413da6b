// A recorded call site's kernel (recorded_target.hpp).
#include "jitkernel/cuda/launch/recorded_target.hpp"

#include "jitkernel/engine/backend.hpp"
#include "jitkernel/engine/call_signature.hpp"

namespace jk::cuda {

RecordedTarget::RecordedTarget(const RecordedKernel& kernel, const RecordedCall& record, KernelCall& call,
                               const char* argument) {
  if (kernel.binary) {
    // check_kernel_call: the arrays come first, the by-value scalars last.
    const std::size_t n_arrays = record.array_input_count();
    for (std::size_t i = n_arrays; i < call.inputs.size(); ++i) scalars_.push_back(std::get<Scalar>(call.inputs[i]));
    call.inputs.resize(n_arrays);
    precompiled_ = std::make_unique<PrecompiledEntry>(recorded_entry(kernel, argument));
    check_precompiled(*precompiled_, call, scalars_);
    return;
  }
  KernelSpec spec = kernel.spec;
  spec.input_names = record.input_names;  // the names the call was made with (the factory may have had none)
  spec.output_names = record.output_names;
  kernel_ = std::make_unique<Kernel>(std::move(spec), cuda_backend());
  // The signature: the template's inputs with each array's rank from the record (a site may leave extents open).
  std::vector<KernelInput> inputs = call.inputs;
  for (std::size_t i = 0; i < inputs.size() && i < record.inputs.size(); ++i) {
    auto* v = std::get_if<ArrayView>(&inputs[i]);
    if (v != nullptr && record.inputs[i].shape) v->shape.assign(record.inputs[i].shape->size(), 1);
  }
  kernel_->generate(signature_of(inputs, call.output_dtypes, call.template_args));
}

void RecordedTarget::load(const KernelCall& call, int device) {
  if (precompiled_) load_precompiled(*precompiled_, device);
  else kernel_->load(call, device);
}

void RecordedTarget::launch(const KernelCall& call, const std::vector<Scalar>& scalars) {
  if (precompiled_) {
    precompiled_cuda_kernel(*precompiled_, call, scalars);  // the outputs are provided
    return;
  }
  LaunchPlan* plan = plan_.load(std::memory_order_acquire);
  if (plan == nullptr) {
    plan = &kernel_->plan_for(call);  // plans live as long as the kernel
    plan_.store(plan, std::memory_order_release);
  }
  kernel_->launch_on(*plan, call);
}

}  // namespace jk::cuda
