// `_core.CudaKernelBase` (the Python front of the engine's Kernel on the CUDA
// backend; jitkernel.CudaKernel in python/jitkernel/_kernels/cuda_kernel.py
// subclasses it for kernels made without names) and `_core.compile_cuda`: the
// call (keyword parsing in the type's call slot -> convert -> engine ->
// wrap), source() and compile() without a GPU. Argument conversion lives in
// convert.cpp, the dict form in call_form.cpp.
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "call/call_form.hpp"
#include "call/call_slot.hpp"
#include "call/compile_options.hpp"
#include "call/convert.hpp"
#include "objects/dtypes.hpp"
#include "services/hooks.hpp"
#include "call/launch_options.hpp"
#include "call/template_args.hpp"
#include "call/traced_call.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/cuda/binary/module_loader.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/launch/launch.hpp"
#include "jitkernel/cuda/nvrtc/compile.hpp"
#include "jitkernel/cuda/nvrtc/compile_cache.hpp"
#include "jitkernel/engine/record_file.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace jk::py {
namespace {

// Empty `kernel` for a kernel made without input/output names: its calls go
// to the Python subclass's _call_general (the dict form).
struct PyCudaKernel {
  std::optional<Kernel> kernel;  // on cuda_backend()
  std::vector<std::string> input_names, output_names;  // for messages
  // A backward is attached (kernel.vjp): calls that torch autograd must record
  // take the Python path (traced_call.hpp).
  bool has_vjp = false;
  // How CPython calls this instance (call_slot.hpp's enable_vectorcall).
  vectorcallfunc vectorcall = nullptr;
};

PyTypeObject* g_kernel_type = nullptr;

Kernel& named_kernel(PyCudaKernel& self) {
  if (!self.kernel)
    throw ArgumentError("inputs", "this kernel was made without input_names/output_names: pass "
                                  "inputs and outputs as dicts keyed by name");
  return *self.kernel;
}
const Kernel& named_kernel(const PyCudaKernel& self) {
  return named_kernel(const_cast<PyCudaKernel&>(self));
}

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

cuda::CompileTarget target_arg(const std::string& target) {
  if (target == "cubin") return cuda::CompileTarget::Cubin;
  if (target == "ptx") return cuda::CompileTarget::Ptx;
  throw ArgumentError("target", "expected 'cubin' or 'ptx', got '" + target + "'");
}

// "sm_90a", "sm_80", "compute_90a" (PTX only), ...
void arch_arg(const std::string& arch, cuda::CompileTarget target) {
  auto digits_then_suffix = [](const std::string& s, std::size_t from) {
    std::size_t i = from;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    std::size_t n = i - from;
    if (n < 2 || n > 3) return false;
    return i == s.size() || (i + 1 == s.size() && (s[i] == 'a' || s[i] == 'f'));
  };
  bool ok = (arch.rfind("sm_", 0) == 0 && digits_then_suffix(arch, 3)) ||
            (target == cuda::CompileTarget::Ptx && arch.rfind("compute_", 0) == 0 &&
             digits_then_suffix(arch, 8));
  if (!ok)
    throw ArgumentError("arch", "expected a GPU architecture such as 'sm_90a' (H100/H200), "
                                "'sm_80' or 'sm_100a'" +
                                    std::string(target == cuda::CompileTarget::Ptx
                                                    ? " (or 'compute_90a' for PTX)"
                                                    : "") +
                                    ", got '" + arch + "'");
}

CallSignature signature(const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes,
                        nb::handle tmpl) {
  named_kernel(self);
  auto in = describe_inputs(inputs, &self.input_names, true);
  auto dtypes = output_dtypes_arg(output_dtypes, &self.output_names);
  return signature_of(in, dtypes, template_args(tmpl));
}

// Converts a call's arguments (everything but the launch itself).
void convert(const PyCudaKernel& self, const CallArgs& args, KernelCall& call, ConvertedCall& conv) {
  call.template_args = template_args(args.tmpl);
  CallInputs in{args};
  in.input_names = &self.input_names;
  in.output_names = &self.output_names;
  in.widen_int_scalars = true;
  convert_call(in, call, conv);
}

// A call. The dict form (inputs, output_shapes, output_dtypes or outputs
// keyed by name) is turned into lists by call_form.cpp, then comes back here.
nb::object call(PyCudaKernel& self, const CallArgs& args) {
  if (is_dict_form(args))
    return call_by_name(&call, self, self.input_names, self.output_names, "cuda_kernel", args);
  reject_traced_inputs(args.inputs);
  if (self.has_vjp && torch_autograd_needed(args.inputs))
    throw TracedArgument(Framework::Torch, "inputs", "");
  const bool show_source = verbose_arg(args.verbose);
  Kernel& kernel = named_kernel(self);
  ScratchLease lease;
  KernelCall& kc = (*lease).kc;
  ConvertedCall& conv = (*lease).conv;
  convert(self, args, kc, conv);
  launch_options_into(args.cooperative, args.cluster, kc.launch);
  if (show_source) {
    auto sig = signature_of(kc.inputs, kc.output_dtypes, kc.template_args);
    nb::print(nb::str(kernel.generate(sig).source.c_str()));
  }
  std::vector<OwnedArray> results = kernel(kc);
  return wrap_outputs(std::move(results), conv);
  // The lease ends here: consumed DLPack tensors are released after the launch.
}

// ---------------------------------------------------------------------------
// While a precompile session runs (python/jitkernel/_fleet/precompile.py), every
// call takes the Python path, which compiles instead of launching; the only
// cost to other calls is this one load.
std::atomic<bool> g_calls_to_python{false};

// The direct call of call_slot.hpp: the list form straight into `call`'s C++
// (no second argument dispatch); kernels made without names take the Python
// path (it picks the engine for the call's names).
nb::object direct_call(PyObject* self, const CallArgs& args) {
  if (g_calls_to_python.load(std::memory_order_relaxed)) return nb::object();
  if (!nb::inst_ready(self) || !nb::inst_ptr<PyCudaKernel>(self)->kernel) return nb::object();
  return call(*nb::inst_ptr<PyCudaKernel>(self), args);
}

PyType_Slot kKernelSlots[] = {{Py_tp_call, reinterpret_cast<void*>(call_slot)}, {0, nullptr}};

// CudaKernelBase(...): a kernel on the CUDA backend, or (no names) a front
// whose calls go to the Python subclass's _call_general.
void init_kernel(nb::pointer_and_handle<PyCudaKernel> target, std::string name, std::optional<std::vector<std::string>> input_names,
                 std::optional<std::vector<std::string>> output_names, std::string source, std::string header,
                 bool ensure_row_contiguous, int shared_memory, nb::handle compile_options) {
  PyCudaKernel* self = target.p;
  CudaCompileOptions options = compile_options_arg(compile_options);  // checked even without names
  if (!input_names || !output_names) {  // names come with each call (dict form)
    new (self) PyCudaKernel{std::nullopt, {}, {}};
    enable_vectorcall(target.h.ptr(), &self->vectorcall);
    return;
  }
  KernelSpec spec;
  spec.cuda_options = std::move(options);
  spec.name = std::move(name);
  spec.input_names = *input_names;
  spec.output_names = *output_names;
  spec.source = std::move(source);
  spec.header = std::move(header);
  spec.ensure_row_contiguous = ensure_row_contiguous;
  spec.shared_memory = shared_memory;
  new (self) PyCudaKernel{Kernel(std::move(spec), cuda_backend()), std::move(*input_names), std::move(*output_names)};
  enable_vectorcall(target.h.ptr(), &self->vectorcall);
}

GeneratedKernel generate(const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl) {
  return named_kernel(self).generate(signature(self, inputs, output_dtypes, tmpl));
}

// kernel.compile(...): cubin or PTX for `arch` without a GPU (through the disk cache).
nb::bytes compile_kernel(const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl,
                         const std::string& arch, const std::string& target) {
  cuda::CompileTarget t = target_arg(target);
  arch_arg(arch, t);
  GeneratedKernel kernel = generate(self, inputs, output_dtypes, tmpl);
  std::string binary;
  {
    nb::gil_scoped_release unlocked;  // other Python threads run during NVRTC
    binary = cuda::compile_kernel_persistent(kernel, arch, t);
  }
  return nb::bytes(binary.data(), binary.size());
}

// kernel.attributes(...): compiles and loads the kernel for this signature on
// `device` and reads what the driver says of it (launch_options.hpp).
nb::dict attributes(PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl,
                    nb::handle threadgroup, nb::handle shared_memory, int device) {
  Kernel& kernel = named_kernel(self);
  KernelCall kc;
  kc.inputs = describe_inputs(inputs, &self.input_names, true);
  kc.output_dtypes = output_dtypes_arg(output_dtypes, &self.output_names);
  kc.output_shapes.resize(kc.output_dtypes.size());
  kc.template_args = template_args(tmpl);
  int shared = kernel.spec().shared_memory;
  if (!shared_memory.is_none()) {
    std::int64_t bytes = 0;
    if (int_value(shared_memory, &bytes) != IntResult::Ok || bytes < 0 || bytes > INT32_MAX)
      throw ArgumentError("shared_memory", "expected a number of bytes >= 0, got " + repr_text(shared_memory));
    shared = static_cast<int>(bytes);
  }
  const cuda::DeviceInfo& info = cuda::device_info(device);
  int threads = 0;  // 0: the most the kernel allows
  if (!threadgroup.is_none()) {
    const Dim3 t = dim3_arg(threadgroup, "threadgroup");
    if (t.x * t.y * t.z > info.max_threads_per_block)
      throw ArgumentError("threadgroup", dims_text(t) + " has more threads than the device's " +
                                             std::to_string(info.max_threads_per_block) + " per block");
    threads = static_cast<int>(t.x * t.y * t.z);
  }
  const CompiledKernel compiled = kernel.load(kc, device);  // releases the GIL while compiling
  cuda::DeviceGuard guard(device);
  auto function = static_cast<cuda::CUfunction>(compiled.handle);
  cuda::ensure_dynamic_shared_memory(function, kernel.spec().name.c_str(), shared, device);
  const cuda::FunctionAttributes a = cuda::function_attributes(function, device, threads, shared);
  return attributes_dict(a, threads > 0 ? threads : a.max_threads_per_block);
}

// The argument conversion of a call without the launch (to measure binding overhead).
void convert_only(const PyCudaKernel& self, nb::handle inputs, nb::handle output_shapes, nb::handle output_dtypes,
                  nb::handle grid, nb::handle threadgroup, nb::handle tmpl, nb::handle init_value,
                  nb::handle stream, nb::handle outputs) {
  ScratchLease lease;
  const CallArgs args{inputs, output_shapes, output_dtypes, grid, threadgroup, tmpl, init_value, stream, outputs,
                      Py_False, nb::none(), nb::none()};
  convert(self, args, (*lease).kc, (*lease).conv);
}

nb::bytes compile_cuda(const std::string& source, const std::string& arch, const std::string& target,
                       const std::string& name, nb::handle compile_options) {
  cuda::CompileTarget t = target_arg(target);
  arch_arg(arch, t);
  const CudaCompileOptions options = compile_options_arg(compile_options);
  std::string binary;
  {
    nb::gil_scoped_release unlocked;
    binary = cuda::compile_source_persistent(source, name, arch, t, options);
  }
  return nb::bytes(binary.data(), binary.size());
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  set_direct_call(&direct_call);
  auto cls = nb::class_<PyCudaKernel>(
      m, "CudaKernelBase",
      "The C++ kernel object behind jitkernel.cuda_kernel (internal; jitkernel.CudaKernel "
      "subclasses it). Calling it with keyword arguments runs the kernel.",
      nb::type_slots(kKernelSlots));
  cls.def("__init__", &init_kernel, "name"_a, "input_names"_a.none(), "output_names"_a.none(), "source"_a,
          "header"_a, "ensure_row_contiguous"_a, "shared_memory"_a, "compile_options"_a.none())
      .def("_attributes", &attributes, "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(),
           "threadgroup"_a.none(), "shared_memory"_a.none(), "device"_a)
      .def("_source",
           [](const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl) {
             return generate(self, inputs, output_dtypes, tmpl).source;
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none())
      .def("_entry_name",
           [](const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl) {
             return generate(self, inputs, output_dtypes, tmpl).entry_name;
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none())
      .def("_compile", &compile_kernel, "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(),
           "arch"_a, "target"_a)
      .def_prop_rw(
          "_has_vjp", [](const PyCudaKernel& self) { return self.has_vjp; },
          [](PyCudaKernel& self, bool on) { self.has_vjp = on; },
          "Whether calls that torch autograd records take the Python path (internal: kernel.vjp sets it).")
      .def("_convert", &convert_only, "inputs"_a.none(), "output_shapes"_a.none(), "output_dtypes"_a.none(),
           "grid"_a.none(), "threadgroup"_a.none(), "template"_a.none(), "init_value"_a.none(),
           "stream"_a.none(), "outputs"_a.none(),
           "Argument conversion of a call without the launch (to measure binding overhead).");
  def_positional_call<&call, PyCudaKernel>(cls);
  g_kernel_type = reinterpret_cast<PyTypeObject*>(cls.ptr());

  m.def(
      "_expose_python_call",
      [](nb::type_object cls, nb::handle fn) {
        // Writes cls.__dict__["__call__"] without type.__setattr__, which would
        // point tp_call at the Python function: CPython keeps calling the C
        // slot, while TorchDynamo, which reads __call__ from the class dict to
        // trace a call, finds the Python function (python/jitkernel/_frameworks/traced_call.py).
        auto* tp = reinterpret_cast<PyTypeObject*>(cls.ptr());
        if (!PyType_IsSubtype(tp, g_kernel_type) || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE))
          throw nb::type_error("_expose_python_call: expected a Python subclass of CudaKernelBase");
        if (PyDict_SetItemString(tp->tp_dict, "__call__", fn.ptr()) != 0) throw nb::python_error();
        PyType_Modified(tp);
      },
      "cls"_a, "fn"_a, "Shows `fn` as cls.__call__ to Python introspection, keeping the C call slot (internal).");
  m.def(
      "_calls_to_python", [](bool on) { g_calls_to_python.store(on); }, "on"_a,
      "Sends every kernel call to the Python path (_call_general): precompile sessions (internal).");
  m.def(
      "_set_call_record", [](const std::string& path) { set_call_record_path(path); }, "path"_a,
      "Appends a JSON line per new (kernel, signature) to `path` ('' stops), as JITKERNEL_RECORD does.");
  m.def(
      "_call_record_line",
      [](const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl) {
        return call_record_line(named_kernel(self).spec(), signature(self, inputs, output_dtypes, tmpl));
      },
      "kernel"_a, "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(),
      "The JITKERNEL_RECORD line of a call with these arguments (internal, precompile's dedupe and tests).");
  m.def("compile_cuda", &compile_cuda, "source"_a, "arch"_a, "target"_a, "name"_a, "compile_options"_a.none(),
        "Compiles standalone CUDA source with NVRTC (no GPU needed); returns cubin or PTX bytes.");
}

const Registration reg(order::kernel, "kernel", bind);

}  // namespace
}  // namespace jk::py
