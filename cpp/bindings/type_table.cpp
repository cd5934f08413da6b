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

#include "convert_detail.hpp"
#include "hooks.hpp"
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

// The framework a module's top-level package names; a type's __module__ is
// only a claim: an object is a framework's only while that framework is
// loaded (its streams and converters are looked up in it).
constexpr std::pair<const char*, Framework> kFrameworkRoots[] = {
    {"torch", Framework::Torch}, {"cupy", Framework::CuPy},       {"cupyx", Framework::CuPy},
    {"jax", Framework::Jax},     {"jaxlib", Framework::Jax},      {"numpy", Framework::NumPy},
    {"ml_dtypes", Framework::NumPy}, {"jitkernel", Framework::JitKernel},
};

bool type_has(PyTypeObject* tp, const char* name) {
  return optional_attr(reinterpret_cast<PyObject*>(tp), name).has_value();
}

// The top-level package of the type's __module__ ("" when it has none).
std::string module_root(PyTypeObject* tp) {
  auto module = optional_attr(reinterpret_cast<PyObject*>(tp), "__module__");
  if (!module || !PyUnicode_Check(module->ptr())) return {};
  const char* text = PyUnicode_AsUTF8(module->ptr());
  if (text == nullptr) throw nb::python_error();
  return std::string(text, std::strcspn(text, "."));
}

Framework framework_of(PyTypeObject* tp) {
  const std::string root = module_root(tp);
  for (const auto& [name, fw] : kFrameworkRoots)
    if (root == name) return loaded_module(name).is_valid() ? fw : Framework::Other;
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

// Kind and framework of objects of type `tp`.
TypeInfo detect(PyTypeObject* tp) {
  FrameworkCache& fc = framework_cache();
  TypeInfo info;
  info.framework = Framework::None;
  // numpy.generic first: numpy.float64 subclasses float.
  if (derives(tp, framework_type(fc.numpy_generic, "numpy", "generic"))) {
    info.kind = Kind::NumpyScalar;
    info.framework = Framework::NumPy;
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
  if (derives(tp, framework_type(fc.numpy_ndarray, "numpy", "ndarray"))) {
    info.kind = Kind::NumpyArray;
    info.framework = Framework::NumPy;
    return info;
  }
  info.framework = framework_of(tp);
  PyTypeObject* tensor = framework_type(fc.torch_tensor, "torch", "Tensor");
  if (info.framework == Framework::Torch &&
      (tp == tensor || tp == framework_type(fc.torch_parameter, "torch", "nn.Parameter"))) {
    info.kind = Kind::TorchTensor;
    info.exchange = exchange_api_of(reinterpret_cast<PyObject*>(tp));
  } else if (derives(tp, tensor)) {
    // Subclasses (FakeTensor while torch traces, FunctionalTensor, wrappers that
    // define __torch_dispatch__) hold no memory we may read: the call goes
    // through jitkernel's torch.library op instead (traced_call.hpp).
    info.kind = Kind::Traced;
    info.framework = Framework::Torch;
  } else if (derives(tp, framework_type(fc.jax_tracer, "jax", "core.Tracer"))) {
    info.kind = Kind::Traced;
    info.framework = Framework::Jax;
  } else if (type_has(tp, "__dlpack__") && type_has(tp, "__dlpack_device__")) {
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
