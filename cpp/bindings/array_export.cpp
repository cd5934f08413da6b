// Array export: a launch's results back to Python: the caller's own
// `outputs=` arrays, the arrays the inputs' framework allocated
// (output_allocation.cpp), or jitkernel's pool outputs in the framework of
// the call's inputs (torch tensors through its DLPack exchange API or a
// capsule, JAX through its from_dlpack), jk.Array without one.
#include <utility>

#include "array.hpp"
#include "convert_detail.hpp"

namespace jk::py {
namespace {

// The framework's from_dlpack (jax.numpy's, else jax.dlpack's), which
// turns a jk.Array into the framework's array; None for other frameworks
// (their calls return jk.Array).
nb::object find_converter(Framework fw) {
  if (fw == Framework::Torch || fw == Framework::CuPy) {
    nb::object module = loaded_module(fw == Framework::Torch ? "torch" : "cupy");
    return module.is_valid() ? module.attr("from_dlpack") : nb::none();
  }
  if (fw != Framework::Jax) return nb::none();
  nb::object jnp = nb::module_::import_("jax.numpy");
  if (auto f = optional_attr(jnp, "from_dlpack")) return *f;
  return nb::module_::import_("jax.dlpack").attr("from_dlpack");
}

nb::handle output_converter(Framework fw) {
  nb::object& converter = framework_cache().converter[static_cast<int>(fw)];
  if (!converter.is_valid()) converter = find_converter(fw);
  return converter;
}

// torch's importer for a bare capsule (torch._C._from_dlpack when present):
// torch.from_dlpack first probes the capsule for __dlpack__, a failed
// attribute lookup that costs more than the import itself.
nb::handle torch_capsule_converter() {
  FrameworkCache& fc = framework_cache();
  if (!fc.torch_capsule_converter.is_valid()) {
    nb::object torch = loaded_module("torch");
    auto direct = optional_attr(torch.attr("_C"), "_from_dlpack");
    fc.torch_capsule_converter = direct ? *direct : torch.attr("from_dlpack");
  }
  return fc.torch_capsule_converter;
}

}  // namespace

nb::list wrap_outputs(std::vector<OwnedArray>&& results, const ConvertedCall& call) {
  if (call.provided_outputs.is_valid()) {  // the caller's arrays, in a new list
    PyObject* seq = call.provided_outputs.ptr();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    nb::list given = nb::steal<nb::list>(PyList_New(n));
    if (!given.is_valid()) throw nb::python_error();
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
      Py_INCREF(item);
      PyList_SET_ITEM(given.ptr(), i, item);
    }
    return given;
  }
  if (!call.allocated.empty()) {  // allocated by the inputs' framework (output_allocation.cpp)
    nb::list allocated = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(call.allocated.size())));
    if (!allocated.is_valid()) throw nb::python_error();
    for (std::size_t i = 0; i < call.allocated.size(); ++i)
      PyList_SET_ITEM(allocated.ptr(), static_cast<Py_ssize_t>(i), nb::object(call.allocated[i]).release().ptr());
    return allocated;
  }
  nb::list out;
  const Framework fw = call.framework;
  nb::handle converter;
  if (fw == Framework::Torch || fw == Framework::CuPy || fw == Framework::Jax)
    converter = output_converter(fw);
  const bool converter_valid = converter.is_valid() && !converter.is_none();
  // Torch on its own current stream: hand over a capsule (no stream ordering
  // needed, skipping the protocol's round trips). Otherwise the framework
  // calls jk.Array.__dlpack__ with its stream, which orders it after ours.
  const bool capsule_direct = fw == Framework::Torch && call.stream_is_framework_current;
  if (converter_valid && capsule_direct) converter = torch_capsule_converter();
  if (capsule_direct && call.exchange != nullptr) {
    // Straight into torch tensors through its exchange API (no capsule, no Python call).
    for (auto& r : results) {
      dlpack::ManagedTensorVersioned* managed = export_managed(r);
      void* tensor = nullptr;
      // The callee owns `managed` from here, whatever it returns.
      if (call.exchange->managed_tensor_to_py_object_no_sync(managed, &tensor) != 0 || !tensor) {
        if (!PyErr_Occurred())
          PyErr_SetString(PyExc_RuntimeError, "torch's DLPack exchange API could not wrap an output");
        throw nb::python_error();
      }
      out.append(nb::steal(static_cast<PyObject*>(tensor)));
    }
    return out;
  }
  for (auto& r : results) {
    if (converter_valid && capsule_direct) {
      out.append(converter(export_capsule(r, false)));
      continue;
    }
    nb::object arr = nb::cast(PyArray{std::move(r), call.stream});
    out.append(converter_valid ? converter(arr) : arr);
  }
  return out;
}

}  // namespace jk::py
