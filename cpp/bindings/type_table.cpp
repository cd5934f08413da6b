// The type table: what each Python type passed as an argument is (scalar,
// NumPy array, torch tensor, DLPack producer, ...) and which framework owns
// it, asked of `_arrays.classify_type` once per type and cached by type until
// the type dies; plus the per-framework Python callables the other stages
// look up once.
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "convert_detail.hpp"
#include "hooks.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {
namespace {

Kind kind_from(const std::string& s) {
  static const std::pair<const char*, Kind> kKinds[] = {
      {"bool", Kind::Bool},           {"int", Kind::Int},
      {"float", Kind::Float},         {"complex", Kind::Complex},
      {"numpy_scalar", Kind::NumpyScalar}, {"numpy_array", Kind::NumpyArray},
      {"torch_tensor", Kind::TorchTensor}, {"dlpack", Kind::DLPack},
      {"host_array", Kind::HostArray},
  };
  for (const auto& [name, kind] : kKinds)
    if (s == name) return kind;
  return Kind::Unknown;
}

Framework framework_from(const std::string& s) {
  for (int i = 0; i < kNumFrameworks; ++i)
    if (s == kFrameworkNames[i]) return static_cast<Framework>(i);
  return Framework::Other;
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

// What `_arrays.classify_type` says objects of this type are; entered into
// the cache once per type.
[[gnu::noinline]] TypeInfo& classify_new(nb::handle obj, const char* argument, const ItemRef& where) {
  PyTypeObject* tp = Py_TYPE(obj.ptr());
  nb::handle type(reinterpret_cast<PyObject*>(tp));
  nb::object r;
  try {
    r = hook(hooks().classify_type, "classify_type")(type);
  } catch (nb::python_error& e) {
    throw ArgumentTypeError(argument, where.prefix() + "cannot tell what a " + type_text(obj) +
                                          " is (" + python_error_text(e) + ")");
  }
  PyObject* t = r.ptr();
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(t, 0)) ||
      !PyUnicode_Check(PyTuple_GET_ITEM(t, 1)))
    throw std::runtime_error("jitkernel: _arrays.classify_type returned no (kind, framework) pair");
  TypeInfo info;
  info.kind = kind_from(nb::cast<std::string>(nb::handle(PyTuple_GET_ITEM(t, 0))));
  info.framework = framework_from(nb::cast<std::string>(nb::handle(PyTuple_GET_ITEM(t, 1))));
  if (info.kind == Kind::TorchTensor) info.exchange = exchange_api_of(type);
  // The hook ran Python code, which may have classified this type already.
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
