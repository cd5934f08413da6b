// The `_core.DType` class, its singletons and dtype-like conversion (see
// dtypes.hpp). The table itself lives in core/dtype.cpp.
#include "dtypes.hpp"

#include <stdexcept>
#include <utility>
#include <vector>

#include "hooks.hpp"

namespace jk::py {

PyTypeObject* g_dtype_type = nullptr;

namespace {

PyObject* g_singletons[kNumDTypes] = {};  // borrowed; owned by the module's attributes

// Identity cache of foreign dtype-likes -> DType (strong references, bounded).
constexpr std::size_t kMaxCached = 128;
std::vector<std::pair<PyObject*, DType>>& identity_cache() {
  static auto* cache = new std::vector<std::pair<PyObject*, DType>>();
  return *cache;
}

void clear_identity_cache() {
  auto& cache = identity_cache();
  for (auto& entry : cache) Py_DECREF(entry.first);
  cache.clear();
}

std::string repr(const PyDType& d) { return std::string("jitkernel.") + dtype_name(d.value); }

void bind(nb::module_& m) {
  auto cls = nb::class_<PyDType>(m, "DType", nb::is_final(),
                      "A jitkernel element type (jk.float32, jk.bfloat16, ...). "
                      "`jk.dtype(x)` converts NumPy/PyTorch/JAX dtypes and names to one.")
      .def_prop_ro("name", [](const PyDType& d) { return dtype_name(d.value); },
                   "Public name: 'float32', 'bfloat16', ...")
      .def_prop_ro("itemsize", [](const PyDType& d) { return dtype_size(d.value); },
                   "Bytes per element.")
      .def_prop_ro("cuda_type", [](const PyDType& d) { return dtype_info(d.value).cuda_type; },
                   "The type's spelling in generated CUDA ('__half', 'float', ...).")
      .def_prop_ro("dlpack",
                   [](const PyDType& d) {
                     const DTypeInfo& info = dtype_info(d.value);
                     return nb::make_tuple(info.dlpack_code, info.dlpack_bits, 1);
                   },
                   "(type code, bits, lanes) in DLPack.")
      .def("__repr__", &repr)
      .def("__str__", [](const PyDType& d) { return dtype_name(d.value); })
      .def("__eq__", [](const PyDType& a, const PyDType& b) { return a.value == b.value; })
      .def("__eq__", [](const PyDType&, nb::handle) { return false; })
      .def("__ne__", [](const PyDType& a, const PyDType& b) { return a.value != b.value; })
      .def("__ne__", [](const PyDType&, nb::handle) { return true; })
      .def("__hash__", [](const PyDType& d) { return 0x6a6b00 + static_cast<int>(d.value); })
      .def("__reduce__", [](const PyDType& d) {
        return nb::make_tuple(nb::module_::import_("jitkernel").attr("dtype"),
                              nb::make_tuple(dtype_name(d.value)));
      });

  g_dtype_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  nb::list all;
  for (int i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    nb::object obj = nb::cast(PyDType{d});
    g_singletons[i] = obj.ptr();
    std::string attr = dtype_name(d);
    if (attr == "bool") attr = "bool_";  // `bool` would shadow the builtin
    m.attr(attr.c_str()) = obj;
    all.append(obj);
  }
  m.attr("dtypes") = nb::tuple(all);
  m.def("dtype_from_name",
        [](const std::string& name) -> nb::object {
          auto d = dtype_from_name(name);
          return d ? nb::borrow(dtype_object(*d)) : nb::none();
        },
        nb::arg("name"), "The dtype named `name` ('float32', 'half', ...), or None.");
  on_clear_caches(&clear_identity_cache);
}

const Registration reg(order::dtypes, "dtypes", bind);

}  // namespace

nb::handle dtype_object(DType dtype) { return g_singletons[static_cast<int>(dtype)]; }

DType dtype_arg(nb::handle obj, const char* argument, const ItemRef& where) {
  if (is_jk_dtype(obj)) return nb::inst_ptr<PyDType>(obj)->value;
  for (const auto& entry : identity_cache())
    if (entry.first == obj.ptr()) return entry.second;
  DType d;
  nb::object result =
      hook(hooks().normalize_dtype, "normalize_dtype")(obj, argument, where.str());
  if (!nb::isinstance<PyDType>(result))
    throw std::runtime_error("jitkernel: _dtypes._normalize returned a non-dtype");
  d = nb::inst_ptr<PyDType>(result)->value;
  auto& cache = identity_cache();
  if (cache.size() < kMaxCached) {
    Py_INCREF(obj.ptr());
    cache.emplace_back(obj.ptr(), d);
  }
  return d;
}

}  // namespace jk::py
