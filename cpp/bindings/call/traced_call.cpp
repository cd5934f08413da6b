// When a kernel with a backward must go through autograd (traced_call.hpp):
// one look at torch's grad mode, then at the inputs' requires_grad. Only
// kernels with a backward attached pay for it.
#include "call/traced_call.hpp"

#include "call/convert_detail.hpp"
#include "services/hooks.hpp"

namespace jk::py {
namespace {

nb::object& grad_enabled_function() {
  static auto* fn = new nb::object();  // torch.is_grad_enabled, found once torch is loaded
  return *fn;
}

// torch.Tensor once it has been looked up (the type table's torch row), else invalid.
nb::object& torch_tensor_type() {
  return framework_cache().types[static_cast<int>(Framework::Torch)].tensor[0];
}

bool requires_grad(nb::handle item) {
  const nb::object& tensor = torch_tensor_type();
  if (!tensor.is_valid() || !PyObject_TypeCheck(item.ptr(), reinterpret_cast<PyTypeObject*>(tensor.ptr())))
    return false;
  PyObject* flag = PyObject_GetAttrString(item.ptr(), "requires_grad");
  if (flag == nullptr) throw nb::python_error();
  const bool on = flag == Py_True;
  Py_DECREF(flag);
  return on;
}

nb::object& functorch_wrapped_function() {
  static auto* fn = new nb::object();  // torch._C._functorch.is_functorch_wrapped_tensor, found once needed
  return *fn;
}

}  // namespace

bool torch_transform_wrapper(nb::handle item) {
  nb::object& wrapped = functorch_wrapped_function();
  if (!wrapped.is_valid()) {
    nb::object torch = loaded_module("torch");
    if (!torch.is_valid()) return false;
    wrapped = torch.attr("_C").attr("_functorch").attr("is_functorch_wrapped_tensor");
  }
  PyObject* r = api::call_one(wrapped.ptr(), item.ptr());
  if (r == nullptr) throw nb::python_error();
  const bool on = r == Py_True;
  Py_DECREF(r);
  return on;
}

const char* traced_text(Framework fw) { return framework_row(fw).traced_text; }

void reject_traced_inputs(nb::handle inputs) {
  if (!PyList_Check(inputs.ptr()) && !PyTuple_Check(inputs.ptr())) return;
  PyObject* seq = inputs.ptr();
  const Py_ssize_t n = api::seq_size(seq);
  const PyObject* tensor = torch_tensor_type().ptr();
  for (Py_ssize_t i = 0; i < n; ++i) {
    // classify() may run an item's Python code, which may shorten the list
    if (api::seq_size(seq) != n) raise_sequence_changed("inputs");
    PyObject* item = api::seq_item(seq, i);
    PyTypeObject* tp = Py_TYPE(item);
    if (reinterpret_cast<PyObject*>(tp) == tensor || tp == &PyFloat_Type || tp == &PyLong_Type) continue;
    TypeInfo& info = classify(item, "inputs", ItemRef{"input", static_cast<std::size_t>(i), nullptr});
    if (info.kind == Kind::Traced) throw TracedArgument(info.framework, "inputs", "");
  }
}

bool torch_autograd_needed(nb::handle inputs) {
  nb::object torch = loaded_module("torch");
  if (!torch.is_valid()) return false;
  if (!torch_tensor_type().is_valid()) torch_tensor_type() = torch.attr("Tensor");
  nb::object& enabled = grad_enabled_function();
  if (!enabled.is_valid()) enabled = torch.attr("is_grad_enabled");
  if (enabled().ptr() != Py_True) return false;
  nb::object items = PyDict_Check(inputs.ptr()) ? nb::object(nb::borrow<nb::dict>(inputs).values())
                                                : nb::borrow(inputs);
  if (!PyList_Check(items.ptr()) && !PyTuple_Check(items.ptr())) return false;
  for (nb::handle item : items)
    if (requires_grad(item)) return true;
  return false;
}

namespace {
void bind(nb::module_& m) {
  on_clear_caches([] {
    grad_enabled_function() = nb::object();
    functorch_wrapped_function() = nb::object();
  });
  m.def("_quiet_leak_warnings", [] { nb::set_leak_warnings(false); },
        "Turns nanobind's exit-time leak report off (internal: after torch.compile, whose caches outlive us).");
}
const Registration reg(order::hooks, "traced_call", bind);
}  // namespace

}  // namespace jk::py
