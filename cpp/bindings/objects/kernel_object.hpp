// `_core.KernelBase`, the one kernel type of both JIT factories (as MLX's
// PyCustomKernelFunction serves metal_kernel and cuda_kernel): a spec on a
// backend, called through the C call slot (call/call_slot.hpp) and the shared
// conversion with that backend's memory policy. jitkernel.CudaKernel and
// jitkernel.MetalKernelFunction (python/jitkernel/_kernels/) subclass it.
// kernel_object.cpp defines the type and the call; what only one backend has
// (CUDA's compile() and attributes(), Metal's buffers() and verbose text)
// lives in cuda_kernel.cpp / metal_kernel.cpp, which add their methods
// through the hooks below.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "call/convert.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace jk::py {

enum class KernelKind : std::uint8_t { Cuda, Metal };

// Empty `kernel` for a kernel made without input/output names: its calls go
// to the Python subclass's _call_general (the dict form).
struct PyKernel {
  std::optional<Kernel> kernel;  // on cuda_backend() or metal_backend()
  std::vector<std::string> input_names, output_names;  // for messages
  KernelKind kind = KernelKind::Cuda;
  // A backward is attached (kernel.vjp, CUDA): calls that torch autograd must
  // record take the Python path (traced_call.hpp).
  bool has_vjp = false;
  // How CPython calls this instance (call_slot.hpp's enable_vectorcall).
  vectorcallfunc vectorcall = nullptr;
};

// The engine's kernel; ArgumentError when the kernel was made without names.
Kernel& named_kernel(PyKernel& self);
const Kernel& named_kernel(const PyKernel& self);
// The kernel of a CUDA-only method (`method` for the message); ArgumentError
// for Metal kernels.
Kernel& cuda_kernel_of(PyKernel& self, const char* method);
const Kernel& cuda_kernel_of(const PyKernel& self, const char* method);

// The signature of a source()-like query (inputs as the code generator sees
// them) and the code it generates.
CallSignature signature(const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl);
GeneratedKernel generate(const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl);

// The argument storage of one call, reused by the next call on the same
// thread (ConvertedCall): steady-state calls allocate nothing for their
// arguments. A call made while another is converting on the same thread (a
// Python callback calling a kernel) gets storage of its own.
struct CallScratch {
  KernelCall kc;
  ConvertedCall conv;
  bool busy = false;
};

class ScratchLease {
 public:
  ScratchLease() {
    thread_local CallScratch shared;
    if (!shared.busy) {
      scratch_ = &shared;
    } else {
      own_ = std::make_unique<CallScratch>();
      scratch_ = own_.get();
    }
    scratch_->busy = true;
  }
  // Drops the call's references to Python objects and streams (after the launch).
  ~ScratchLease() {
    scratch_->conv.release();
    scratch_->kc.launch.stream_keepalive.reset();
    scratch_->kc.template_args.clear();
    scratch_->busy = false;
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  CallScratch& operator*() { return *scratch_; }

 private:
  CallScratch* scratch_ = nullptr;
  std::unique_ptr<CallScratch> own_;
};

// A CUDA list-form call's arguments converted into `call` / `conv` (no
// launch): the eager call and the bound call (bound_call.cpp) share it.
void convert_cuda_call(const PyKernel& self, const CallArgs& args, KernelCall& call, ConvertedCall& conv);

// Whether a precompile session sends every kernel call to the Python path
// (python/jitkernel/_fleet/precompile.py), which compiles instead of launching.
bool calls_go_to_python();

// Metal's half of the type (metal_kernel.cpp): the spec's Metal fields from
// the factory, verbose=True's text, and its methods.
MetalMathMode math_mode_arg(const std::string& mode);
void print_metal_source(const KernelSpec& spec, const GeneratedKernel& kernel);
void bind_metal_methods(nb::class_<PyKernel>& cls);
// CUDA's half (cuda_kernel.cpp).
void bind_cuda_methods(nb::class_<PyKernel>& cls);
// kernel.bind() and its `_core.BoundCall` type (bound_call.cpp).
void bind_bound_call(nb::module_& m, nb::class_<PyKernel>& cls);

}  // namespace jk::py
