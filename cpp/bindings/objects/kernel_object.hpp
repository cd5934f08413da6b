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

// Metal's half of the type (metal_kernel.cpp): the spec's Metal fields from
// the factory, verbose=True's text, and its methods.
MetalMathMode math_mode_arg(const std::string& mode);
void print_metal_source(const KernelSpec& spec, const GeneratedKernel& kernel);
void bind_metal_methods(nb::class_<PyKernel>& cls);
// CUDA's half (cuda_kernel.cpp).
void bind_cuda_methods(nb::class_<PyKernel>& cls);

}  // namespace jk::py
