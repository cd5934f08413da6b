// The out-of-line parts of python_api.hpp: the CPython calls whose limited-API
// form takes more than a line (a type's name and namespace, shutdown, instance
// vectorcall), one definition per build.
#include "python_api.hpp"

#include <array>
#include <atomic>
#include <deque>
#include <vector>

#include "bindings.hpp"

namespace jk::py::api {

std::string type_name(PyTypeObject* tp) {
#if defined(Py_LIMITED_API)
  std::string out;
  if (PyObject* name = PyType_GetName(tp)) {
    if (const char* c = utf8(name)) out = c;
    Py_DECREF(name);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return out;
#else
  return tp->tp_name;
#endif
}

PyObject* type_dict(PyTypeObject* tp) {
#if defined(Py_LIMITED_API)
  // A heap type's namespace is where `type` keeps its instances' __dict__.
  return PyObject_GenericGetDict(reinterpret_cast<PyObject*>(tp), nullptr);
#else
  return Py_XNewRef(tp->tp_dict);
#endif
}

namespace {

#if defined(Py_LIMITED_API)
std::atomic<bool> g_finalizing{false};
#endif

void bind(nb::module_& m) {
#if defined(Py_LIMITED_API)
  m.attr("_limited_api") = true;
  nb::module_::import_("atexit").attr("register")(
      nb::cpp_function([] { g_finalizing.store(true); }, nb::name("_mark_finalizing")));
#else
  m.attr("_limited_api") = false;
#endif
}

const Registration reg(order::hooks, "python_api", bind);

}  // namespace

#if defined(Py_LIMITED_API)
bool finalizing() { return g_finalizing.load(); }
#elif PY_VERSION_HEX >= 0x030D0000
bool finalizing() { return Py_IsFinalizing(); }
#else
bool finalizing() { return _Py_IsFinalizing(); }
#endif

bool gil_held() {
#if defined(Py_LIMITED_API)
  if (PyGILState_GetThisThreadState() == nullptr) return false;
  const PyGILState_STATE state = PyGILState_Ensure();
  PyGILState_Release(state);
  return state == PyGILState_LOCKED;
#else
  return PyGILState_Check() != 0;
#endif
}

void enable_instance_vectorcall(PyObject* obj, vectorcallfunc* slot, vectorcallfunc fn, ternaryfunc tp_call) {
  *slot = fn;
#if !defined(Py_LIMITED_API)
  PyTypeObject* tp = Py_TYPE(obj);
  if ((tp->tp_flags & Py_TPFLAGS_HAVE_VECTORCALL) || tp->tp_call != tp_call) return;
  const auto offset = reinterpret_cast<char*>(slot) - reinterpret_cast<char*>(obj);
  if (offset <= 0 || offset + static_cast<Py_ssize_t>(sizeof(vectorcallfunc)) > tp->tp_basicsize) return;
  tp->tp_vectorcall_offset = offset;
  tp->tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL;
  PyType_Modified(tp);
#else
  (void)obj;
  (void)tp_call;
#endif
}

nb::object callable_class(nb::handle cls, Py_ssize_t offset, ternaryfunc tp_call, const char* plain_name) {
#if !defined(Py_LIMITED_API)
  (void)offset;
  (void)tp_call;
  (void)plain_name;
  return nb::borrow(cls);
#else
  // The type stubs describe `cls` (the subclasses add vectorcall only), so that both builds' stubs are the same:
  // the stub build imports the module from a stand-in package that says so (cpp/CMakeLists.txt).
  nb::object package = nb::module_::import_("sys").attr("modules").attr("get")("jitkernel");
  if (!package.is_none() && nb::hasattr(package, "_stubgen")) return nb::borrow(cls);
  // `plain`: cls subclassed as a class statement does it (nanobind's supported way: a GC heap type).
  nb::handle meta(reinterpret_cast<PyObject*>(Py_TYPE(cls.ptr())));
  nb::dict ns;
  ns["__module__"] = cls.attr("__module__");
  ns["__slots__"] = nb::tuple();  // no __dict__ or __weakref__: those stay for the Python subclasses to choose
  nb::object plain = meta(plain_name, nb::make_tuple(cls), ns);
  // The member tables, for as long as the process runs (the types keep pointers into them).
  static std::deque<std::array<PyMemberDef, 2>> tables;
  PyMemberDef* members = tables.emplace_back().data();
  members[0] = PyMemberDef{"__vectorcalloffset__", Py_T_PYSSIZET, offset, Py_READONLY, nullptr};
  PyType_Slot slots[] = {{Py_tp_call, reinterpret_cast<void*>(tp_call)}, {Py_tp_members, members}, {0, nullptr}};
  // Its subclass with vectorcall, the same size (basicsize 0) and GC (inherited). nanobind fills in the
  // record of a subclass it did not make on first use.
  const std::string name = nb::cast<std::string>(cls.attr("__module__")) + "." +
                           nb::cast<std::string>(cls.attr("__name__"));
  PyType_Spec spec = {name.c_str(), 0, 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL,
                      slots};
  nb::object made = nb::steal(PyType_FromMetaclass(reinterpret_cast<PyTypeObject*>(meta.ptr()), nullptr, &spec,
                                                   plain.ptr()));
  if (!made.is_valid()) throw nb::python_error();
  nb::setattr(made, "__doc__", cls.attr("__doc__"));
  return made;
#endif
}

PyObject* call_through_vectorcall(PyObject* self, vectorcallfunc fn, PyObject* args, PyObject* kwargs) {
#if !defined(Py_LIMITED_API)
  (void)fn;
  return PyVectorcall_Call(self, args, kwargs);
#else
  const Py_ssize_t n = PyTuple_Size(args);
  const Py_ssize_t nk = kwargs != nullptr ? PyDict_Size(kwargs) : 0;
  if (n < 0 || nk < 0) return nullptr;
  std::vector<PyObject*> stack(static_cast<std::size_t>(n + nk));  // borrowed from args and kwargs
  for (Py_ssize_t i = 0; i < n; ++i) stack[static_cast<std::size_t>(i)] = PyTuple_GetItem(args, i);
  nb::object kwnames;
  if (nk > 0) {
    kwnames = nb::steal(PyTuple_New(nk));
    if (!kwnames.is_valid()) return nullptr;
    Py_ssize_t pos = 0, j = 0;
    PyObject *key = nullptr, *value = nullptr;
    while (j < nk && PyDict_Next(kwargs, &pos, &key, &value)) {
      if (PyTuple_SetItem(kwnames.ptr(), j, Py_NewRef(key)) != 0) return nullptr;
      stack[static_cast<std::size_t>(n + j++)] = value;
    }
  }
  return fn(self, stack.data(), static_cast<std::size_t>(n), kwnames.ptr());
#endif
}

}  // namespace jk::py::api
