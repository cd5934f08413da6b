// Calls that leave the eager path. An array the core cannot read because a
// framework is tracing it (a torch.Tensor subclass such as FakeTensor or
// FunctionalTensor, a torch.func wrapper, a JAX tracer) makes the conversion
// throw TracedArgument; the kernel's call slot catches it and hands the whole
// call to the Python method `_call_traced` (python/jitkernel/_frameworks/traced_call.py), which records it
// as a torch.library op or an XLA FFI custom call. A kernel with a backward
// attached (kernel.vjp) also goes there when torch autograd must see the call.
#pragma once

#include <string>

#include "bindings.hpp"
#include "call/convert.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

// How a traced array of `fw` is described (its framework row's text).
const char* traced_text(Framework fw);

// Typed as ArgumentTypeError so that where it escapes (a front without
// `_call_traced`) the user still gets a clear error naming the argument.
class TracedArgument : public ArgumentTypeError {
 public:
  TracedArgument(Framework framework, const char* argument, const std::string& prefix)
      : ArgumentTypeError(argument, prefix + traced_text(framework)),
        framework_(framework) {}
  Framework framework() const { return framework_; }

 private:
  Framework framework_;
};

// Throws TracedArgument when an item of `inputs` (a list or tuple) is traced.
// Runs before any other argument is read: reading a symbolic size (a SymInt
// in a grid or shape) as an int would pin it to its current value.
void reject_traced_inputs(nb::handle inputs);

// True when `item`, an exact torch.Tensor, is a torch.func transform's
// wrapper (vmap's BatchedTensor, grad's GradTrackingTensor): it has no memory
// to read, and the call goes through the torch op, whose vmap rule and
// autograd formula torch.func applies. Asked only once a direct read failed.
bool torch_transform_wrapper(nb::handle item);

// True when torch autograd records operations (torch.is_grad_enabled()) and
// one of `inputs` (a list, or a dict's values) is a tensor that requires grad.
bool torch_autograd_needed(nb::handle inputs);

}  // namespace jk::py
