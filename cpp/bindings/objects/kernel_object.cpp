// `_core.KernelBase` (see kernel_object.hpp): the type both factories' kernel
// objects share, its construction for either backend and its call: keyword
// parsing in the type's call slot -> the shared conversion with the backend's
// memory policy -> engine -> results back. A call's argument storage is
// reused by the next call on the same thread.
#include "objects/kernel_object.hpp"

#include <atomic>
#include <memory>
#include <utility>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "call/call_form.hpp"
#include "call/call_slot.hpp"
#include "call/compile_options.hpp"
#include "call/launch_options.hpp"
#include "call/template_args.hpp"
#include "call/traced_call.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

Kernel& named_kernel(PyKernel& self) {
  if (!self.kernel)
    throw ArgumentError("inputs", "this kernel was made without input_names/output_names: pass "
                                  "inputs and outputs as dicts keyed by name");
  return *self.kernel;
}
const Kernel& named_kernel(const PyKernel& self) { return named_kernel(const_cast<PyKernel&>(self)); }

Kernel& cuda_kernel_of(PyKernel& self, const char* method) {
  if (self.kind != KernelKind::Cuda)
    throw ArgumentError(method, std::string(method) + "() is for CUDA kernels; this is a Metal kernel");
  return named_kernel(self);
}
const Kernel& cuda_kernel_of(const PyKernel& self, const char* method) {
  return cuda_kernel_of(const_cast<PyKernel&>(self), method);
}

CallSignature signature(const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl) {
  named_kernel(self);
  auto in = describe_inputs(inputs, &self.input_names, true);
  auto dtypes = output_dtypes_arg(output_dtypes, &self.output_names);
  return signature_of(in, dtypes, template_args(tmpl));
}

GeneratedKernel generate(const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl) {
  return named_kernel(self).generate(signature(self, inputs, output_dtypes, tmpl));
}

namespace {

PyTypeObject* g_kernel_type = nullptr;

const char* factory_name(const PyKernel& self) {
  return self.kind == KernelKind::Cuda ? "cuda_kernel" : "metal_kernel";
}

// Converts a call's arguments (everything but the launch itself).
template <KernelKind K>
void convert(const PyKernel& self, const CallArgs& args, KernelCall& call, ConvertedCall& conv) {
  call.template_args = template_args(args.tmpl);
  CallInputs in{args, K == KernelKind::Cuda ? Memory::Device : Memory::Host};
  in.input_names = &self.input_names;
  in.output_names = &self.output_names;
  in.widen_int_scalars = true;
  convert_call(in, call, conv);
}

}  // namespace

void convert_cuda_call(const PyKernel& self, const CallArgs& args, KernelCall& call, ConvertedCall& conv) {
  convert<KernelKind::Cuda>(self, args, call, conv);
  launch_options_into(args.cooperative, args.cluster, call.launch);
}

namespace {

// cooperative= / cluster= are CUDA launch options: a Metal call takes None
// only, and clears what a CUDA call left in the reused `launch`.
void metal_launch_options(const CallArgs& args, LaunchConfig& launch) {
  if (!args.cooperative.is_none())
    throw ArgumentError("cooperative", "Metal kernels have no cooperative launches: not supported; expected None, "
                                       "got " + repr_text(args.cooperative));
  if (!args.cluster.is_none())
    throw ArgumentError("cluster", "Metal kernels have no thread-block clusters: not supported; expected None, "
                                   "got " + repr_text(args.cluster));
  launch.cooperative = false;
  launch.cluster = Dim3{0, 0, 0};
}

// A list-form call on the backend K.
template <KernelKind K>
nb::object call_as(PyKernel& self, const CallArgs& args) {
  if constexpr (K == KernelKind::Cuda) {
    reject_traced_inputs(args.inputs);
    if (self.has_vjp && torch_autograd_needed(args.inputs)) throw TracedArgument(Framework::Torch, "inputs", "");
  }
  const bool show_source = verbose_arg(args.verbose);
  Kernel& kernel = named_kernel(self);
  ScratchLease lease;
  KernelCall& kc = (*lease).kc;
  ConvertedCall& conv = (*lease).conv;
  if constexpr (K == KernelKind::Cuda) {
    convert_cuda_call(self, args, kc, conv);
  } else {
    metal_launch_options(args, kc.launch);
    try {
      convert<K>(self, args, kc, conv);
    } catch (const TracedArgument& e) {
      // Metal calls are never recorded by a framework: the error itself, not the traced path.
      throw ArgumentTypeError(e);
    }
  }
  if (show_source) {
    GeneratedKernel generated = kernel.generate(signature_of(kc.inputs, kc.output_dtypes, kc.template_args));
    if constexpr (K == KernelKind::Cuda)
      nb::print(nb::str(generated.source.c_str()));
    else
      print_metal_source(kernel.spec(), generated);
  }
  std::vector<OwnedArray> results = kernel(kc);
  if constexpr (K == KernelKind::Cuda) return wrap_outputs(std::move(results), conv);
  else return wrap_host_outputs(std::move(results), conv);
  // The lease ends here: consumed DLPack tensors are released after the launch.
}

// A call. The dict form (inputs, output_shapes, output_dtypes or outputs
// keyed by name) is turned into lists by call_form.cpp, then comes back here.
nb::object call(PyKernel& self, const CallArgs& args) {
  if (is_dict_form(args))
    return call_by_name(&call, self, self.input_names, self.output_names, factory_name(self), args);
  return self.kind == KernelKind::Cuda ? call_as<KernelKind::Cuda>(self, args)
                                       : call_as<KernelKind::Metal>(self, args);
}

// While a precompile session runs (python/jitkernel/_fleet/precompile.py), every
// call takes the Python path, which compiles instead of launching; the only
// cost to other calls is this one load.
std::atomic<bool> g_calls_to_python{false};

}  // namespace

bool calls_go_to_python() { return g_calls_to_python.load(std::memory_order_relaxed); }

namespace {

// The direct call of call_slot.hpp: the list form straight into `call`'s C++
// (no second argument dispatch); kernels made without names take the Python
// path (it picks the engine for the call's names).
nb::object direct_call(PyObject* self, const CallArgs& args) {
  if (calls_go_to_python()) return nb::object();
  if (!nb::inst_ready(self) || !nb::inst_ptr<PyKernel>(self)->kernel) return nb::object();
  return call(*nb::inst_ptr<PyKernel>(self), args);
}

PyType_Slot kKernelSlots[] = {{Py_tp_call, reinterpret_cast<void*>(call_slot)}, {0, nullptr}};

KernelKind kind_arg(const std::string& backend) {
  if (backend == "cuda") return KernelKind::Cuda;
  if (backend == "metal") return KernelKind::Metal;
  throw ArgumentError("backend", "expected 'cuda' or 'metal', got '" + backend + "'");
}

// KernelBase(backend, ...): a kernel on the CUDA or Metal backend, or (no
// names) a front whose calls go to the Python subclass's _call_general.
// shared_memory / compile_options are CUDA's, atomic_outputs / math_mode Metal's.
void init_kernel(nb::pointer_and_handle<PyKernel> target, const std::string& backend, std::string name,
                 std::optional<std::vector<std::string>> input_names,
                 std::optional<std::vector<std::string>> output_names, std::string source, std::string header,
                 bool ensure_row_contiguous, int shared_memory, nb::handle compile_options, bool atomic_outputs,
                 const std::string& math_mode) {
  PyKernel* self = target.p;
  const KernelKind kind = kind_arg(backend);
  KernelSpec spec;
  if (kind == KernelKind::Cuda) {
    // checked even without names; cuda_kernel applied JITKERNEL_CHECKED to the options once, when it was made
    spec.cuda_options = compile_options_arg(compile_options);
    spec.shared_memory = shared_memory;
  } else {
    spec.atomic_outputs = atomic_outputs;
    spec.math_mode = math_mode_arg(math_mode);
  }
  if (!input_names || !output_names) {  // names come with each call (dict form)
    new (self) PyKernel{std::nullopt, {}, {}, kind};
    enable_vectorcall(target.h.ptr(), &self->vectorcall);
    return;
  }
  spec.name = std::move(name);
  spec.input_names = *input_names;
  spec.output_names = *output_names;
  spec.source = std::move(source);
  spec.header = std::move(header);
  spec.ensure_row_contiguous = ensure_row_contiguous;
  const Backend& engine = kind == KernelKind::Cuda ? cuda_backend() : metal_backend();
  new (self) PyKernel{Kernel(std::move(spec), engine), std::move(*input_names), std::move(*output_names), kind};
  enable_vectorcall(target.h.ptr(), &self->vectorcall);
}

// The argument conversion of a call without the launch (to measure binding overhead).
void convert_only(const PyKernel& self, nb::handle inputs, nb::handle output_shapes, nb::handle output_dtypes,
                  nb::handle grid, nb::handle threadgroup, nb::handle tmpl, nb::handle init_value,
                  nb::handle stream, nb::handle outputs) {
  ScratchLease lease;
  const CallArgs args{inputs, output_shapes, output_dtypes, grid, threadgroup, tmpl, init_value, stream, outputs,
                      Py_False, nb::none(), nb::none()};
  if (self.kind == KernelKind::Cuda)
    convert<KernelKind::Cuda>(self, args, (*lease).kc, (*lease).conv);
  else
    convert<KernelKind::Metal>(self, args, (*lease).kc, (*lease).conv);
}

void expose_python_call(nb::type_object cls, nb::handle fn) {
  // Writes cls.__dict__["__call__"] without type.__setattr__, which would
  // point tp_call at the Python function: CPython keeps calling the C slot,
  // while TorchDynamo, which reads __call__ from the class dict to trace a
  // call, finds the Python function (python/jitkernel/_frameworks/traced_call.py).
  auto* tp = reinterpret_cast<PyTypeObject*>(cls.ptr());
  if (!PyType_IsSubtype(tp, g_kernel_type) || !(PyType_GetFlags(tp) & Py_TPFLAGS_HEAPTYPE))
    throw nb::type_error("_expose_python_call: expected a Python subclass of KernelBase");
  nb::object dict = nb::steal(api::type_dict(tp));
  if (!dict.is_valid() || PyDict_SetItemString(dict.ptr(), "__call__", fn.ptr()) != 0) throw nb::python_error();
  PyType_Modified(tp);
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  set_direct_call(&direct_call);
  auto cls = nb::class_<PyKernel>(
      m, "KernelBase",
      "The C++ kernel object behind jitkernel.cuda_kernel and jitkernel.metal_kernel (internal; "
      "jitkernel.CudaKernel and jitkernel.MetalKernelFunction subclass it). Calling it with keyword "
      "arguments runs the kernel.",
      nb::type_slots(kKernelSlots));
  cls.def("__init__", &init_kernel, "backend"_a, "name"_a, "input_names"_a.none(), "output_names"_a.none(),
          "source"_a, "header"_a, "ensure_row_contiguous"_a, "shared_memory"_a = 0,
          "compile_options"_a.none() = nb::none(), "atomic_outputs"_a = false, "math_mode"_a = "safe")
      .def("_source",
           [](const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl,
              bool with_utils) {
             GeneratedKernel k = generate(self, inputs, output_dtypes, tmpl);
             // Metal's text without its metal_utils preamble is MLX's; CUDA has one text.
             return with_utils || k.display_source.empty() ? k.source : k.display_source;
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(), "with_utils"_a = true)
      .def("_entry_name",
           [](const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl) {
             return generate(self, inputs, output_dtypes, tmpl).entry_name;
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none())
      .def_prop_rw(
          "_has_vjp", [](const PyKernel& self) { return self.has_vjp; },
          [](PyKernel& self, bool on) { self.has_vjp = on; },
          "Whether calls that torch autograd records take the Python path (internal: kernel.vjp sets it).")
      .def("_convert", &convert_only, "inputs"_a.none(), "output_shapes"_a.none(), "output_dtypes"_a.none(),
           "grid"_a.none(), "threadgroup"_a.none(), "template"_a.none(), "init_value"_a.none(),
           "stream"_a.none(), "outputs"_a.none(),
           "Argument conversion of a call without the launch (to measure binding overhead).");
  def_positional_call<&call, PyKernel>(cls);
  bind_cuda_methods(cls);
  bind_metal_methods(cls);
  bind_bound_call(m, cls);
  g_kernel_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  m.attr("KernelBase") = api::callable_class(cls, api::vectorcall_offset<PyKernel>(cls), call_slot,
                                             "_KernelBasePlain");

  m.def("_expose_python_call", &expose_python_call, "cls"_a, "fn"_a,
        "Shows `fn` as cls.__call__ to Python introspection, keeping the C call slot (internal).");
  m.def(
      "_calls_to_python", [](bool on) { g_calls_to_python.store(on); }, "on"_a,
      "Sends every kernel call to the Python path (_call_general): precompile sessions (internal).");
}

const Registration reg(order::kernel, "kernel", bind);

}  // namespace
}  // namespace jk::py
