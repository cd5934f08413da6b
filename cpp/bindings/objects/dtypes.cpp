// The `_core.DType` class, its singletons and dtype-like conversion (see
// dtypes.hpp): names, NumPy and torch dtypes here, rarer dtype-likes and
// every error message by `_dtypes._normalize`. The table itself lives in core/dtype.cpp.
//
// DType is a plain CPython type (PyType_FromSpec), not a nanobind class: its
// singletons are process-lifetime constants like None, held by this file for
// good. Any Python structure may end up holding them, including ones that
// outlive interpreter teardown (pytest's session survives it when the
// hypothesis plugin and torch are both loaded, with parametrize values such
// as jk.float32 inside); as nanobind instances they were then reported as
// "nanobind: leaked instances" at exit although nothing here leaked.
#include "objects/dtypes.hpp"

#include <stdexcept>
#include <utility>
#include <vector>

#include "call/convert_detail.hpp"
#include "services/hooks.hpp"

namespace jk::py {

PyTypeObject* g_dtype_type = nullptr;

namespace {

// Strong references, never released: the singletons outlive every user.
PyObject* g_singletons[kNumDTypes] = {};

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

// ---- the DType type, slot by slot --------------------------------------------

DType value_of(PyObject* self) { return reinterpret_cast<DTypeObject*>(self)->value; }

PyObject* dtype_new(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError,
                  "jitkernel.DType cannot be instantiated: use jitkernel.float32 (and the other "
                  "jitkernel dtypes) or jitkernel.dtype(x)");
  return nullptr;
}

PyObject* dtype_repr(PyObject* self) {
  return PyUnicode_FromFormat("jitkernel.%s", dtype_name(value_of(self)));
}

PyObject* dtype_str(PyObject* self) { return PyUnicode_FromString(dtype_name(value_of(self))); }

Py_hash_t dtype_hash(PyObject* self) { return 0x6a6b00 + static_cast<int>(value_of(self)); }

// Equal only to the same dtype; any other object compares unequal (a NumPy or
// torch dtype is not a jitkernel dtype: convert with jitkernel.dtype first).
PyObject* dtype_richcompare(PyObject* self, PyObject* other, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  const bool equal = Py_TYPE(other) == g_dtype_type && value_of(other) == value_of(self);
  return PyBool_FromLong((op == Py_EQ) == equal);
}

PyObject* dtype_reduce(PyObject* self, PyObject*) {
  // Unpickles to the same singleton through jitkernel.dtype(name).
  PyObject* module = PyImport_ImportModule("jitkernel");
  if (!module) return nullptr;
  PyObject* fn = PyObject_GetAttrString(module, "dtype");
  Py_DECREF(module);
  if (!fn) return nullptr;
  return Py_BuildValue("(N(s))", fn, dtype_name(value_of(self)));
}

PyObject* get_name(PyObject* self, void*) { return dtype_str(self); }
PyObject* get_itemsize(PyObject* self, void*) {
  return PyLong_FromSize_t(dtype_size(value_of(self)));
}
PyObject* get_cuda_type(PyObject* self, void*) {
  return PyUnicode_FromString(dtype_info(value_of(self)).cuda_type);
}
PyObject* get_dlpack(PyObject* self, void*) {
  const DTypeInfo& info = dtype_info(value_of(self));
  return Py_BuildValue("(iii)", int(info.dlpack_code), int(info.dlpack_bits), 1);
}

// The NumPy dtype: NumPy reads a `.dtype` attribute wherever it takes a dtype,
// so np.zeros(3, jk.float32) and np.dtype(jk.bfloat16) work (bfloat16 needs
// ml_dtypes). Imports NumPy only when read.
PyObject* get_numpy_dtype(PyObject* self, void*) {
  try {
    const DType d = value_of(self);
    nb::object numpy = nb::module_::import_("numpy");
    nb::object spec = nb::str(dtype_name(d));
    if (d == DType::BFloat16) {
      nb::object ml_dtypes = nb::steal(PyImport_ImportModule("ml_dtypes"));
      if (!ml_dtypes.is_valid()) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "jk.bfloat16 has a NumPy dtype only with ml_dtypes: pip install ml-dtypes");
        return nullptr;
      }
      spec = ml_dtypes.attr("bfloat16");
    }
    return numpy.attr("dtype")(spec).release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
    return nullptr;
  } catch (const std::exception& e) {  // nothing may leave a C getter as a C++ exception
    PyErr_SetString(PyExc_TypeError, e.what());
    return nullptr;
  }
}

PyGetSetDef g_getset[] = {
    {"name", &get_name, nullptr, "Public name: 'float32', 'bfloat16', ...", nullptr},
    {"itemsize", &get_itemsize, nullptr, "Bytes per element.", nullptr},
    {"cuda_type", &get_cuda_type, nullptr,
     "The type's spelling in generated CUDA ('__half', 'float', ...).", nullptr},
    {"dlpack", &get_dlpack, nullptr, "(type code, bits, lanes) in DLPack.", nullptr},
    {"dtype", &get_numpy_dtype, nullptr,
     "The NumPy dtype (bfloat16: ml_dtypes'); NumPy takes jk dtypes wherever it takes a dtype.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMethodDef g_methods[] = {
    {"__reduce__", &dtype_reduce, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

char g_doc[] =
    "A jitkernel element type (jk.float32, jk.bfloat16, ...). "
    "`jk.dtype(x)` converts NumPy/PyTorch/JAX dtypes and names to one.";

PyType_Slot g_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(&dtype_new)},
    {Py_tp_repr, reinterpret_cast<void*>(&dtype_repr)},
    {Py_tp_str, reinterpret_cast<void*>(&dtype_str)},
    {Py_tp_hash, reinterpret_cast<void*>(&dtype_hash)},
    {Py_tp_richcompare, reinterpret_cast<void*>(&dtype_richcompare)},
    {Py_tp_getset, g_getset},
    {Py_tp_methods, g_methods},
    {Py_tp_doc, g_doc},
    {0, nullptr},
};

// Not subclassable (no Py_TPFLAGS_BASETYPE): the hot path checks the exact type.
#ifdef Py_TPFLAGS_IMMUTABLETYPE
constexpr unsigned int kTypeFlags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE;  // Python >= 3.10
#else
constexpr unsigned int kTypeFlags = Py_TPFLAGS_DEFAULT;
#endif
PyType_Spec g_spec = {"jitkernel._core.DType", sizeof(DTypeObject), 0, kTypeFlags, g_slots};

void bind(nb::module_& m) {
  if (g_dtype_type == nullptr) {  // once per process, even if the module is imported again
    PyObject* type = PyType_FromSpec(&g_spec);
    if (!type) throw nb::python_error();
    g_dtype_type = reinterpret_cast<PyTypeObject*>(type);  // this reference is never released
    for (int i = 0; i < kNumDTypes; ++i) {
      PyObject* obj = api::type_alloc(g_dtype_type);
      if (!obj) throw nb::python_error();
      reinterpret_cast<DTypeObject*>(obj)->value = static_cast<DType>(i);
      g_singletons[i] = obj;  // nor are these
    }
  }
  m.attr("DType") = nb::handle(reinterpret_cast<PyObject*>(g_dtype_type));
  nb::list all;
  for (int i = 0; i < kNumDTypes; ++i) {
    DType d = static_cast<DType>(i);
    nb::handle obj = g_singletons[i];
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

namespace {

std::optional<DType> dtype_named(nb::handle text) {
  const char* name = PyUnicode_Check(text.ptr()) ? api::utf8(text.ptr()) : nullptr;
  if (name == nullptr) {
    PyErr_Clear();
    return std::nullopt;
  }
  return dtype_from_name(name);
}

// isinstance(obj, <module>.<name>) when that module is loaded.
bool instance_of(nb::handle obj, const char* module, const char* name) {
  nb::object m = loaded_module(module);
  if (!m.is_valid()) return false;
  const int r = PyObject_IsInstance(obj.ptr(), nb::object(m.attr(name)).ptr());
  if (r < 0) throw nb::python_error();
  return r == 1;
}

// The dtype-likes read here: names, NumPy dtypes in this machine's byte
// order, torch dtypes. nullopt for anything else and for every error, which
// `_dtypes._normalize` words (and for exotic dtype-likes: scalar types, MLX
// and JAX objects, anything with a .dtype).
std::optional<DType> common_dtype(nb::handle obj) {
  if (PyUnicode_Check(obj.ptr())) return dtype_named(obj);
  if (instance_of(obj, "numpy", "dtype")) {
    if (!nb::cast<bool>(obj.attr("isnative"))) return std::nullopt;
    return dtype_named(obj.attr("name"));
  }
  if (instance_of(obj, "torch", "dtype")) {  // str() is "torch.float16"
    std::string text = nb::cast<std::string>(nb::str(obj));
    return dtype_from_name(text.substr(text.rfind('.') + 1));
  }
  return std::nullopt;
}

}  // namespace

DType dtype_arg(nb::handle obj, const char* argument, const ItemRef& where) {
  if (is_jk_dtype(obj)) return value_of(obj.ptr());
  for (const auto& entry : identity_cache())
    if (entry.first == obj.ptr()) return entry.second;
  std::optional<DType> common = common_dtype(obj);
  if (!common) {
    nb::object result =
        hook(hooks().normalize_dtype, "normalize_dtype")(obj, argument, where.str());
    if (!is_jk_dtype(result))
      throw std::runtime_error("jitkernel: _dtypes._normalize returned a non-dtype");
    common = value_of(result.ptr());
  }
  const DType d = *common;
  auto& cache = identity_cache();
  if (cache.size() < kMaxCached) {
    Py_INCREF(obj.ptr());
    cache.emplace_back(obj.ptr(), d);
  }
  return d;
}

}  // namespace jk::py
