// kernel.bind(...) and `_core.BoundCall`: a call for eager loops whose static
// part (output shapes and dtypes, grid, threadgroup, template, init_value,
// stream policy, launch options) is checked, and whose plan is generated,
// compiled and loaded, once at bind time; each call passes only its arrays
// (and scalars in their positions) and goes through the same conversion and
// engine call as kernel(...), with every array checked against what it was
// bound for (type, dtype, shape, strides, device) before the launch, so a
// changed size is an ArgumentError naming the input, never a launch on stale
// sizes. The bound call holds no reference to the example arrays.
#include <string>
#include <utility>
#include <vector>

#include "call/call_slot.hpp"
#include "call/traced_call.hpp"
#include "objects/kernel_object.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/engine/validate_call.hpp"

namespace jk::py {
namespace {

// What one array (input or outputs= entry) of the bound call must be.
struct BoundArray {
  bool scalar = false;
  nb::object type;         // the Python type (arrays only)
  std::string type_name;   // its "module.QualName", for messages
  DType dtype = DType::Float32;
  int device = kHostDevice;
  std::vector<std::int64_t> shape, strides;
};

struct PyBoundCall {
  nb::object kernel;  // the KernelBase instance
  // The call's static part, converted at bind time: output shapes and dtypes,
  // template arguments, init_value, grid, threadgroup and launch options.
  KernelCall fixed;
  // The plan of the bound signature, found once: it lives as long as the kernel, which this holds.
  LaunchPlan* plan = nullptr;
  nb::object stream;  // stream= as given (None: the inputs' framework's current stream on each call)
  std::vector<BoundArray> inputs, outputs;  // outputs: empty unless bound with outputs=
  vectorcallfunc vectorcall = nullptr;
};

PyObject* g_outputs_name = nullptr;  // interned "outputs"
PyObject* g_bound_type = nullptr;    // the BoundCall class Python sees (api::callable_class)

BoundArray describe(nb::handle item, const KernelInput& converted) {
  BoundArray b;
  if (const Scalar* s = std::get_if<Scalar>(&converted)) {
    b.scalar = true;
    b.dtype = s->dtype;
    return b;
  }
  const ArrayView& v = std::get<ArrayView>(converted);
  b.type = nb::borrow(reinterpret_cast<PyObject*>(Py_TYPE(item.ptr())));
  b.type_name = type_text(item);
  b.dtype = v.dtype;
  b.device = v.device;
  b.shape = v.shape;
  b.strides = v.strides;
  return b;
}

std::string device_text(int device) {
  return device == kHostDevice ? std::string("host memory") : "device " + std::to_string(device);
}

[[noreturn]] void mismatch(const char* argument, const ItemRef& where, const std::string& got,
                           const std::string& bound) {
  throw ArgumentError(argument, where.prefix() + got + " but the bound call was made for " + bound +
                                    " (bind again, or call the kernel itself, for other arrays)");
}

// One array of a call against what it was bound for: cheap compares, the
// message only when one differs.
void check_view(const BoundArray& b, nb::handle item, const ArrayView& v, const char* argument,
                const ItemRef& where) {
  if (reinterpret_cast<PyObject*>(Py_TYPE(item.ptr())) != b.type.ptr())
    mismatch(argument, where, "a " + type_text(item), "a " + b.type_name);
  if (v.dtype != b.dtype) mismatch(argument, where, std::string("dtype ") + dtype_name(v.dtype), dtype_name(b.dtype));
  if (v.shape != b.shape) mismatch(argument, where, "shape " + shape_text(v.shape), shape_text(b.shape));
  if (v.strides != b.strides)
    mismatch(argument, where, "strides " + shape_text(v.strides), "strides " + shape_text(b.strides));
  if (v.device != b.device) mismatch(argument, where, device_text(v.device), device_text(b.device));
}

// An input: a scalar keeps its dtype (its value may change), an array all of check_view.
void check_input(const BoundArray& b, nb::handle item, const KernelInput& converted, const ItemRef& where) {
  const Scalar* s = std::get_if<Scalar>(&converted);
  if (!b.scalar && !s) return check_view(b, item, std::get<ArrayView>(converted), "inputs", where);
  if (!b.scalar) mismatch("inputs", where, "a scalar", "an array");
  if (!s) mismatch("inputs", where, "an array (" + type_text(item) + ")", "a scalar");
  if (s->dtype != b.dtype)
    mismatch("inputs", where, std::string("a scalar of dtype ") + dtype_name(s->dtype),
             std::string("a scalar of dtype ") + dtype_name(b.dtype));
}

// The bound static part into a call's (reused) KernelCall: vector
// assignments keep the scratch's capacity.
void fixed_into(const KernelCall& fixed, KernelCall& kc) {
  kc.output_shapes = fixed.output_shapes;
  kc.output_dtypes = fixed.output_dtypes;
  kc.template_args = fixed.template_args;
  kc.init_value = fixed.init_value;
  kc.launch.grid = fixed.launch.grid;
  kc.launch.threadgroup = fixed.launch.threadgroup;
  kc.launch.cooperative = fixed.launch.cooperative;
  kc.launch.cluster = fixed.launch.cluster;
}

// Arrays a framework traces, and calls torch autograd must record, take the
// kernel's own call: a bound call runs eagerly only.
void eager_only(const PyKernel& kernel, nb::handle inputs, const char* what) {
  if (calls_go_to_python())
    throw ArgumentError("inputs", std::string(what) + " launches: not inside a precompile session, whose calls "
                                  "compile instead (call the kernel itself there)");
  try {
    reject_traced_inputs(inputs);
  } catch (const TracedArgument& e) {
    throw ArgumentTypeError("inputs", std::string(what) + " runs eagerly only; under torch.compile, "
                                      "torch.export or jax.jit call the kernel itself (kernel(inputs=..., ...)): " +
                                      e.what());
  }
  if (kernel.has_vjp && torch_autograd_needed(inputs))
    throw ArgumentError("inputs", std::string(what) + " does not record for torch autograd (the kernel has a "
                                  "vjp and an input requires grad): call the kernel itself");
}

// One call: the inputs (a tuple) and outputs= (null when not given).
nb::object run(const PyBoundCall& b, nb::handle inputs, nb::handle outputs) {
  PyKernel& self = *nb::inst_ptr<PyKernel>(b.kernel);
  eager_only(self, inputs, "a bound call");
  const bool with_outputs = outputs.is_valid() && !outputs.is_none();
  if (with_outputs != !b.outputs.empty())
    throw ArgumentError("outputs", b.outputs.empty()
                                       ? "this call was bound without outputs=: its outputs are allocated "
                                         "(bind with outputs=[...] to pass them)"
                                       : "this call was bound with outputs=: pass outputs=[...] on every call");
  const std::size_t n = b.inputs.size();  // convert_call checks the count against input_names
  ScratchLease lease;
  KernelCall& kc = (*lease).kc;
  ConvertedCall& conv = (*lease).conv;
  fixed_into(b.fixed, kc);
  const nb::handle none = nb::none();
  const CallArgs args{inputs, none, none, none, none, none, none, b.stream, with_outputs ? outputs : none,
                      Py_False, none, none};
  CallInputs in{args, Memory::Device};
  in.input_names = &self.input_names;
  in.output_names = &self.output_names;
  in.widen_int_scalars = true;
  convert_call_arrays(in, kc, conv);
  for (std::size_t i = 0; i < n; ++i)
    check_input(b.inputs[i], api::tuple_item(inputs.ptr(), i), kc.inputs[i], ItemRef{"input", i, &self.input_names});
  if (with_outputs) {
    // convert_call_arrays checked the count; a protocol method it ran may have changed the list since.
    if (static_cast<std::size_t>(api::seq_size(outputs.ptr())) != b.outputs.size())
      raise_sequence_changed("outputs");
    for (std::size_t j = 0; j < b.outputs.size(); ++j)
      check_view(b.outputs[j], api::seq_item(outputs.ptr(), j), kc.provided_outputs[j], "outputs",
                 ItemRef{"output", j, &self.output_names});
  }
  // Every array matched the bound signature, so the plan found at bind time is this call's.
  std::vector<OwnedArray> results = named_kernel(self).launch_on(*b.plan, kc);
  return wrap_outputs(std::move(results), conv);
}

// bound(*inputs, outputs=None): CPython's vectorcall; the inputs become one
// tuple (CPython's free list: no allocation in a steady loop).
PyObject* bound_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  try {
    const Py_ssize_t positional = PyVectorcall_NARGS(nargsf);
    nb::handle outputs;
    const Py_ssize_t nk = kwnames != nullptr ? api::tuple_size(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nk; ++i) {
      PyObject* key = api::tuple_item(kwnames, i);
      if (key != g_outputs_name && PyUnicode_Compare(key, g_outputs_name) != 0) {
        const char* name = api::utf8(key);
        if (name == nullptr) throw nb::python_error();
        throw ArgumentTypeError(name, "a bound call takes its inputs positionally and outputs= only, got the "
                                      "keyword '" + std::string(name) + "'");
      }
      outputs = args[positional + i];
    }
    nb::object inputs = nb::steal(PyTuple_New(positional));
    if (!inputs.is_valid()) return nullptr;
    for (Py_ssize_t i = 0; i < positional; ++i) {
      if (api::tuple_fill(inputs.ptr(), i, Py_NewRef(args[i])) != 0) return nullptr;
    }
    return run(*nb::inst_ptr<PyBoundCall>(self), inputs, outputs).release().ptr();
  } catch (...) {
    return translate_current_exception();
  }
}

// tp_call (bound(*args, **kwargs) from C, or with a dict of keywords).
PyObject* bound_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  return api::call_through_vectorcall(self, bound_vectorcall, args, kwargs);
}

PyType_Slot kBoundSlots[] = {{Py_tp_call, reinterpret_cast<void*>(bound_tp_call)}, {0, nullptr}};

// kernel.bind(...): converts an example call (no launch), validates it as the
// engine would, loads its plan on the call's device, and keeps what each
// later call's arrays must match.
nb::object bind_call(nb::handle kernel_obj, const CallArgs& args) {
  PyKernel& self = *nb::inst_ptr<PyKernel>(kernel_obj);
  Kernel& kernel = cuda_kernel_of(self, "bind");
  if (!PyList_Check(args.inputs.ptr()) && !PyTuple_Check(args.inputs.ptr()))
    throw ArgumentTypeError("inputs", "bind() takes inputs as a list in input_names order, got " +
                                          type_text(args.inputs));
  eager_only(self, args.inputs, "bind()");
  PyBoundCall b;
  b.kernel = nb::borrow(kernel_obj);
  {
    ScratchLease lease;
    KernelCall& kc = (*lease).kc;
    ConvertedCall& conv = (*lease).conv;
    convert_cuda_call(self, args, kc, conv);
    LaunchConfig launch = kc.launch;
    if (!kc.shared_memory_given) launch.shared_memory = kernel.spec().shared_memory;
    const int device = validate_call(kernel.backend(), kc, launch, kernel.spec().ensure_row_contiguous);
    kernel.load(kc, device);
    b.plan = &kernel.plan_for(kc);
    fixed_into(kc, b.fixed);
    for_each_item(args.inputs, "inputs",
                  [&](std::size_t i, nb::handle item) { b.inputs.push_back(describe(item, kc.inputs[i])); });
    if (!args.outputs.is_none())
      for_each_item(args.outputs, "outputs", [&](std::size_t j, nb::handle item) {
        b.outputs.push_back(describe(item, kc.provided_outputs[j]));
      });
    // The lease ends here: the example arrays are released.
  }
  b.stream = nb::borrow(args.stream);
  // An instance of the class Python sees (api::callable_class), made as nb::cast would.
  nb::object obj = nb::inst_alloc(g_bound_type);
  PyBoundCall* made = new (nb::inst_ptr<PyBoundCall>(obj)) PyBoundCall(std::move(b));
  nb::inst_mark_ready(obj);
  api::enable_instance_vectorcall(obj.ptr(), &made->vectorcall, bound_vectorcall, bound_tp_call);
  return obj;
}

}  // namespace

void bind_bound_call(nb::module_& m, nb::class_<PyKernel>& cls) {
  using namespace nb::literals;
  g_outputs_name = PyUnicode_InternFromString("outputs");
  auto bound = nb::class_<PyBoundCall>(m, "BoundCall",
                                       "A kernel call bound by kernel.bind(...): call it with the inputs "
                                       "positionally (arrays, and scalars in their positions) and outputs=[...] "
                                       "when it was bound with outputs=; returns what the kernel's call returns.",
                                       nb::type_slots(kBoundSlots))
                   .def_prop_ro("kernel", [](const PyBoundCall& b) { return b.kernel; },
                                "The kernel this call was bound from.");
  nb::object visible = api::callable_class(bound, api::vectorcall_offset<PyBoundCall>(bound), bound_tp_call,
                                           "_BoundCallPlain");
  m.attr("BoundCall") = visible;
  g_bound_type = visible.release().ptr();  // kept for the module's lifetime
  cls.def(
      "bind",
      [](nb::handle self, nb::handle inputs, nb::handle output_shapes, nb::handle output_dtypes, nb::handle grid,
         nb::handle threadgroup, nb::handle tmpl, nb::handle init_value, nb::handle stream, nb::handle outputs,
         nb::handle cooperative, nb::handle cluster) {
        return bind_call(self, CallArgs{inputs, output_shapes, output_dtypes, grid, threadgroup, tmpl, init_value,
                                        stream, outputs, Py_False, cooperative, cluster});
      },
      nb::kw_only(), "inputs"_a.none() = nb::none(), "output_shapes"_a.none() = nb::none(),
      "output_dtypes"_a.none() = nb::none(), "grid"_a.none() = nb::none(), "threadgroup"_a.none() = nb::none(),
      "template"_a.none() = nb::none(), "init_value"_a.none() = nb::none(), "stream"_a.none() = nb::none(),
      "outputs"_a.none() = nb::none(),
      "cooperative"_a.none() = nb::none(), "cluster"_a.none() = nb::none(),
      nb::sig("def bind(self, *, inputs: list[object], output_shapes: list[tuple[int, ...]] | None = None, "
              "output_dtypes: list[object] | None = None, grid: tuple[int, int, int], "
              "threadgroup: tuple[int, int, int], template: list[tuple[str, object]] | None = None, "
              "init_value: float | None = None, stream: object | None = None, outputs: list[object] | None = None, "
              "cooperative: bool | None = None, cluster: tuple[int, int, int] | None = None) -> BoundCall"),
      "Binds a call's static part once (output shapes and dtypes, grid, threadgroup, template, init_value, "
      "stream, launch options; the plan is compiled and loaded on the inputs' device). The BoundCall returned "
      "takes only the arrays: bound(*inputs) or bound(*inputs, outputs=[...]); each array must have the type, "
      "dtype, shape, strides and device of the example it replaces (else jk.ArgumentError naming it). The "
      "example arrays are not kept.");
}

}  // namespace jk::py
