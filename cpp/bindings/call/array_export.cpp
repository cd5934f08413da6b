// Array export: a launch's results back to Python: the caller's own
// `outputs=` arrays, the arrays the inputs' framework allocated
// (output_allocation.cpp), or jitkernel's pool outputs in the framework of
// the call's inputs (torch tensors through its DLPack exchange API or a
// capsule, JAX through its from_dlpack), jk.Array without one. Host-memory
// calls (Metal) return NumPy arrays over the backend's buffers instead.
#include <memory>
#include <utility>

#include <nanobind/ndarray.h>

#include "objects/array.hpp"
#include "call/convert_detail.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

// The framework's own from_dlpack (torch.from_dlpack, cupy.from_dlpack).
nb::object module_from_dlpack(const FrameworkRow& row) {
  nb::object module = loaded_module(row.modules[0]);
  return module.is_valid() ? module.attr("from_dlpack") : nb::none();
}

// jax.numpy's from_dlpack, else jax.dlpack's.
nb::object jax_from_dlpack(const FrameworkRow& /*row*/) {
  nb::object jnp = nb::module_::import_("jax.numpy");
  if (auto f = optional_attr(jnp, "from_dlpack")) return *f;
  return nb::module_::import_("jax.dlpack").attr("from_dlpack");
}

// torch's importer for a bare capsule (torch._C._from_dlpack when present):
// torch.from_dlpack first probes the capsule for __dlpack__, a failed
// attribute lookup that costs more than the import itself.
nb::object torch_capsule_converter(const FrameworkRow& row) {
  nb::object torch = loaded_module(row.modules[0]);
  auto direct = optional_attr(torch.attr("_C"), "_from_dlpack");
  return direct ? *direct : torch.attr("from_dlpack");
}

namespace {

// The row's converter (a hook's result, found once), or an invalid handle
// for frameworks whose calls return jk.Array.
nb::handle cached_converter(nb::object* cache, nb::object (*find)(const FrameworkRow&), Framework fw) {
  if (find == nullptr) return nb::handle();
  nb::object& converter = cache[static_cast<int>(fw)];
  if (!converter.is_valid()) converter = find(framework_row(fw));
  return converter;
}

// The caller's outputs= arrays, in a new list.
nb::list provided_list(nb::handle provided) {
  PyObject* seq = provided.ptr();
  const Py_ssize_t n = api::seq_size(seq);
  nb::list given = nb::steal<nb::list>(PyList_New(n));
  if (!given.is_valid()) throw nb::python_error();
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (api::list_fill(given.ptr(), i, Py_NewRef(api::seq_item(seq, i))) != 0) throw nb::python_error();
  }
  return given;
}

// A NumPy array over an output's buffer; the array owns the buffer. NumPy has
// no bfloat16: those are exported as uint16 bits viewed as `bfloat16`.
nb::object numpy_output(OwnedArray&& out, const nb::object& bfloat16) {
  using Owner = std::shared_ptr<Buffer>;
  const ArrayView& v = out.view;
  std::vector<std::size_t> shape(v.shape.begin(), v.shape.end());
  const DTypeInfo& info = dtype_info(v.dtype);
  const bool is_bf16 = v.dtype == DType::BFloat16;
  const nb::dlpack::dtype dtype{static_cast<std::uint8_t>(is_bf16 ? 1 : info.dlpack_code), info.dlpack_bits, 1};
  auto* owner = new Owner(std::move(out.buffer));
  nb::capsule capsule(owner, [](void* p) noexcept { delete static_cast<Owner*>(p); });
  nb::object array = nb::cast(nb::ndarray<nb::numpy>(v.data, shape.size(), shape.data(), capsule, nullptr, dtype));
  return is_bf16 ? nb::object(array.attr("view")(bfloat16)) : array;
}

}  // namespace

nb::object bfloat16_numpy_dtype() {
  try {
    return nb::module_::import_("ml_dtypes").attr("bfloat16");
  } catch (nb::python_error&) {
    throw ArgumentError("output_dtypes", "bfloat16 outputs come back as NumPy arrays of "
                                         "ml_dtypes.bfloat16, and ml_dtypes is not installed: "
                                         "pip install ml-dtypes");
  }
}

nb::list wrap_host_outputs(std::vector<OwnedArray>&& results, const ConvertedCall& call) {
  if (call.provided_outputs.is_valid()) return provided_list(call.provided_outputs);
  nb::object bfloat16;  // found before the launch (convert_call), so this import succeeds
  nb::list out;
  for (OwnedArray& r : results) {
    if (r.view.dtype == DType::BFloat16 && !bfloat16.is_valid()) bfloat16 = bfloat16_numpy_dtype();
    out.append(numpy_output(std::move(r), bfloat16));
  }
  return out;
}

nb::list wrap_outputs(std::vector<OwnedArray>&& results, const ConvertedCall& call) {
  if (call.provided_outputs.is_valid()) return provided_list(call.provided_outputs);
  if (!call.allocated.empty()) {  // allocated by the inputs' framework (output_allocation.cpp)
    nb::list allocated = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(call.allocated.size())));
    if (!allocated.is_valid()) throw nb::python_error();
    for (std::size_t i = 0; i < call.allocated.size(); ++i)
      if (api::list_fill(allocated.ptr(), static_cast<Py_ssize_t>(i), nb::object(call.allocated[i]).release().ptr()))
        throw nb::python_error();
    return allocated;
  }
  nb::list out;
  const Framework fw = call.framework;
  const FrameworkRow& row = framework_row(fw);
  FrameworkCache& fc = framework_cache();
  nb::handle converter = cached_converter(fc.converter, row.find_converter, fw);
  const bool converter_valid = converter.is_valid() && !converter.is_none();
  // Torch on its own current stream: hand over a capsule (no stream ordering
  // needed, skipping the protocol's round trips). Otherwise the framework
  // calls jk.Array.__dlpack__ with its stream, which orders it after ours.
  const bool capsule_direct = row.direct_on_current_stream && call.stream_is_framework_current;
  if (converter_valid && capsule_direct)
    converter = cached_converter(fc.capsule_converter, row.find_capsule_converter, fw);
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
