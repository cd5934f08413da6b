// The type table: what each Python type passed as an argument is (scalar,
// NumPy array, torch tensor, DLPack producer, ...) and which framework owns
// it, read from the type object (its MRO and module, compared with the
// frameworks' own types) once per type and cached until the type dies, as
// nanobind's ndarray import does; plus the frameworks' loaded modules the
// other stages look functions up in.
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "call/convert_detail.hpp"
#include "services/hooks.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

nb::object loaded_module(const char* name) {
  PyObject* m = PyImport_GetModule(nb::str(name).ptr());
  if (m == nullptr && PyErr_Occurred()) throw nb::python_error();
  return m ? nb::steal(m) : nb::object();
}

std::optional<nb::object> optional_attr(nb::handle obj, const char* name) {
  PyObject* v = PyObject_GetAttrString(obj.ptr(), name);
  if (v != nullptr) return nb::steal(v);
  if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw nb::python_error();
  PyErr_Clear();
  return std::nullopt;
}

namespace {

bool type_has(PyTypeObject* tp, const char* name) {
  return optional_attr(reinterpret_cast<PyObject*>(tp), name).has_value();
}

// The top-level package of the type's __module__ ("" when it has none).
std::string module_root(PyTypeObject* tp) {
  auto module = optional_attr(reinterpret_cast<PyObject*>(tp), "__module__");
  if (!module || !PyUnicode_Check(module->ptr())) return {};
  const char* text = api::utf8(module->ptr());
  if (text == nullptr) throw nb::python_error();
  return std::string(text, std::strcspn(text, "."));
}

// The framework whose row lists the top-level package of the type's module;
// a type's __module__ is only a claim: an object is a framework's only while
// that framework is loaded (its streams and converters are looked up in it).
Framework framework_of(PyTypeObject* tp) {
  const std::string root = module_root(tp);
  for (int i = 0; i < kNumFrameworks; ++i) {
    const FrameworkRow& row = framework_row(static_cast<Framework>(i));
    for (const char* const* m = row.modules; *m != nullptr; ++m)
      if (root == *m)
        return loaded_module(*m).is_valid() ? static_cast<Framework>(i) : Framework::Other;
  }
  return Framework::Other;
}

// `cached`, or module.<path> looked up now (when the module is loaded).
PyTypeObject* framework_type(nb::object& cached, const char* module, const char* path) {
  if (!cached.is_valid()) {
    nb::object m = loaded_module(module);
    if (!m.is_valid()) return nullptr;
    nb::object v = m;
    for (const char *p = path, *dot; p != nullptr; p = dot ? dot + 1 : nullptr) {
      dot = std::strchr(p, '.');
      v = v.attr(std::string(p, dot ? static_cast<std::size_t>(dot - p) : std::strlen(p)).c_str());
    }
    if (!PyType_Check(v.ptr())) return nullptr;
    cached = std::move(v);
  }
  return reinterpret_cast<PyTypeObject*>(cached.ptr());
}

bool derives(PyTypeObject* tp, PyTypeObject* base) { return base && PyType_IsSubtype(tp, base); }

// The type at `path` in framework `i`'s module (null: none, or not loaded).
PyTypeObject* row_type(nb::object& cached, int i, const char* path) {
  return path ? framework_type(cached, framework_row(static_cast<Framework>(i)).modules[0], path) : nullptr;
}

// The framework whose row's type (scalar_type, host_array_type) `tp` derives from, or None.
template <typename Slot, typename Path>
Framework derives_from_row(PyTypeObject* tp, Slot slot, Path path) {
  FrameworkCache& fc = framework_cache();
  for (int i = 0; i < kNumFrameworks; ++i)
    if (derives(tp, row_type(fc.types[i].*slot, i, framework_row(static_cast<Framework>(i)).*path)))
      return static_cast<Framework>(i);
  return Framework::None;
}

// A tensor type read directly (exactly a row's tensor type), or traced (a
// subclass of one, or a row's tracer type): sets the kind and framework.
bool detect_tensor(PyTypeObject* tp, TypeInfo& info) {
  FrameworkCache& fc = framework_cache();
  if (info.framework != Framework::None && info.framework != Framework::Other) {
    const int i = static_cast<int>(info.framework);
    const FrameworkRow& row = framework_row(info.framework);
    for (int k = 0; k < 2; ++k) {
      if (tp == row_type(fc.types[i].tensor[k], i, row.tensor_types[k])) {
        info.kind = Kind::TorchTensor;
        info.exchange = exchange_api_of(reinterpret_cast<PyObject*>(tp));
        return true;
      }
    }
  }
  // Subclasses (FakeTensor while torch traces, FunctionalTensor, wrappers that
  // define __torch_dispatch__) hold no memory we may read: the call goes
  // through jitkernel's torch.library op instead (traced_call.hpp).
  for (int i = 0; i < kNumFrameworks; ++i) {
    const FrameworkRow& row = framework_row(static_cast<Framework>(i));
    if (derives(tp, row_type(fc.types[i].tensor[0], i, row.tensor_types[0])) ||
        derives(tp, row_type(fc.types[i].tracer, i, row.tracer_type))) {
      info.kind = Kind::Traced;
      info.framework = static_cast<Framework>(i);
      return true;
    }
  }
  return false;
}

// Kind and framework of objects of type `tp`.
TypeInfo detect(PyTypeObject* tp) {
  using Types = FrameworkCache::Types;
  TypeInfo info;
  // Scalar types first: numpy.float64 subclasses float.
  info.framework = derives_from_row(tp, &Types::scalar, &FrameworkRow::scalar_type);
  if (info.framework != Framework::None) {
    info.kind = Kind::NumpyScalar;
    return info;
  }
  constexpr std::pair<PyTypeObject*, Kind> kPython[] = {
      {&PyBool_Type, Kind::Bool}, {&PyLong_Type, Kind::Int},
      {&PyFloat_Type, Kind::Float}, {&PyComplex_Type, Kind::Complex}};
  for (const auto& [base, kind] : kPython) {
    if (PyType_IsSubtype(tp, base)) {
      info.kind = kind;
      return info;
    }
  }
  info.framework = derives_from_row(tp, &Types::host_array, &FrameworkRow::host_array_type);
  if (info.framework != Framework::None) {
    info.kind = Kind::NumpyArray;
    return info;
  }
  info.framework = framework_of(tp);
  if (detect_tensor(tp, info)) return info;
  if (type_has(tp, "__dlpack__") && type_has(tp, "__dlpack_device__")) {
    info.kind = Kind::DLPack;
  } else if (type_has(tp, "__cuda_array_interface__")) {
    info.kind = Kind::CudaArrayInterface;
  } else if (type_has(tp, "__array_interface__") || type_has(tp, "__array__")) {
    info.kind = Kind::HostArray;
  }
  return info;
}

// Every live type seen as an argument (entries leave with their types; see
// TypeInfo::watch). Node-based: a TypeInfo& stays valid until its own type dies.
std::unordered_map<PyTypeObject*, TypeInfo>& type_cache() {
  static auto* cache = new std::unordered_map<PyTypeObject*, TypeInfo>();
  return *cache;
}

void release_entry(PyTypeObject* tp, TypeInfo& info) {
  if (info.watch)
    Py_DECREF(info.watch);
  else
    Py_DECREF(reinterpret_cast<PyObject*>(tp));
}

// The weak reference's callback; `self` is the type's address as an int.
PyObject* drop_dead_type(PyObject* self, PyObject* /*weakref*/) {
  auto* tp = static_cast<PyTypeObject*>(PyLong_AsVoidPtr(self));
  auto& cache = type_cache();
  auto it = cache.find(tp);
  if (it != cache.end() && it->second.watch) {
    PyObject* watch = it->second.watch;
    cache.erase(it);
    Py_DECREF(watch);  // the weakref may go now: CPython holds what it still needs
  }
  Py_RETURN_NONE;
}

PyMethodDef kDropDeadType = {"_drop_dead_type", &drop_dead_type, METH_O, nullptr};

// A weak reference to `tp` that removes its entry when `tp` dies, or null.
PyObject* watch_type(PyTypeObject* tp) {
  PyObject* address = PyLong_FromVoidPtr(tp);
  PyObject* callback = address ? PyCFunction_New(&kDropDeadType, address) : nullptr;
  Py_XDECREF(address);
  PyObject* ref = callback ? PyWeakref_NewRef(reinterpret_cast<PyObject*>(tp), callback) : nullptr;
  Py_XDECREF(callback);
  if (!ref) PyErr_Clear();
  return ref;
}

}  // namespace

FrameworkCache& framework_cache() {
  static auto* cache = new FrameworkCache();
  return *cache;
}

namespace {

void clear_convert_caches() {
  auto& types = type_cache();
  auto entries = std::move(types);  // releasing may run callbacks that look in the cache
  types.clear();
  for (auto& [tp, info] : entries) release_entry(tp, info);
  framework_cache() = FrameworkCache();
}

// What objects of this type are; entered into the cache once per type.
[[gnu::noinline]] TypeInfo& classify_new(nb::handle obj, const char* argument, const ItemRef& where) {
  PyTypeObject* tp = Py_TYPE(obj.ptr());
  nb::handle type(reinterpret_cast<PyObject*>(tp));
  TypeInfo info;
  try {
    info = detect(tp);
  } catch (nb::python_error& e) {
    throw ArgumentTypeError(argument, where.prefix() + "cannot tell what a " + type_text(obj) +
                                          " is (" + python_error_text(e) + ")");
  }
  // The lookups ran Python code (a metaclass's __getattr__), which may have
  // classified this type already.
  auto& cache = type_cache();
  auto it = cache.find(tp);
  if (it != cache.end()) return it->second;
  info.watch = watch_type(tp);
  if (!info.watch) Py_INCREF(type.ptr());
  return cache.emplace(tp, info).first->second;
}

}  // namespace

TypeInfo& classify(nb::handle obj, const char* argument, const ItemRef& where) {
  auto& cache = type_cache();
  auto it = cache.find(Py_TYPE(obj.ptr()));
  if (it != cache.end()) return it->second;
  return classify_new(obj, argument, where);
}

namespace {
void bind(nb::module_& m) {
  on_clear_caches(&clear_convert_caches);
  m.def("_type_cache_size", [] { return type_cache().size(); },
        "How many Python types the argument conversion has cached (internal: tests).");
}
const Registration reg(order::hooks, "convert", bind);
}  // namespace

}  // namespace jk::py
