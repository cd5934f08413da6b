// The CPython calls whose fast form (a macro or a struct field) is not in the
// limited API, each with one name for both builds. A 3.10 / 3.11 wheel (and a
// full-API build on 3.12+) keeps the macros on the launch path; the cp312-abi3
// wheel, compiled with Py_LIMITED_API (nanobind's STABLE_ABI), calls the
// stable functions instead. Every file in cpp/bindings/ uses these rather
// than testing Py_LIMITED_API itself, so the two builds differ here only.
//
// Callers pass what the macros require (a list or a tuple where named, an
// index inside it); the limited forms check again, and the setters then
// return -1 with a Python error set.
#pragma once

#include <Python.h>
#include <nanobind/nanobind.h>

#include <string>

namespace jk::py::api {

#if defined(Py_LIMITED_API)
inline Py_ssize_t tuple_size(PyObject* t) { return PyTuple_Size(t); }
inline PyObject* tuple_item(PyObject* t, Py_ssize_t i) { return PyTuple_GetItem(t, i); }  // borrowed
inline Py_ssize_t list_size(PyObject* l) { return PyList_Size(l); }
inline PyObject* list_item(PyObject* l, Py_ssize_t i) { return PyList_GetItem(l, i); }  // borrowed
// Fills an item of a new tuple / list (steals `v`); 0, or -1 with an error set.
[[nodiscard]] inline int tuple_fill(PyObject* t, Py_ssize_t i, PyObject* v) { return PyTuple_SetItem(t, i, v); }
[[nodiscard]] inline int list_fill(PyObject* l, Py_ssize_t i, PyObject* v) { return PyList_SetItem(l, i, v); }
inline char* bytes_data(PyObject* b) { return PyBytes_AsString(b); }
inline Py_ssize_t bytes_size(PyObject* b) { return PyBytes_Size(b); }
#else
inline Py_ssize_t tuple_size(PyObject* t) { return PyTuple_GET_SIZE(t); }
inline PyObject* tuple_item(PyObject* t, Py_ssize_t i) { return PyTuple_GET_ITEM(t, i); }
inline Py_ssize_t list_size(PyObject* l) { return PyList_GET_SIZE(l); }
inline PyObject* list_item(PyObject* l, Py_ssize_t i) { return PyList_GET_ITEM(l, i); }
[[nodiscard]] inline int tuple_fill(PyObject* t, Py_ssize_t i, PyObject* v) {
  PyTuple_SET_ITEM(t, i, v);
  return 0;
}
[[nodiscard]] inline int list_fill(PyObject* l, Py_ssize_t i, PyObject* v) {
  PyList_SET_ITEM(l, i, v);
  return 0;
}
inline char* bytes_data(PyObject* b) { return PyBytes_AS_STRING(b); }
inline Py_ssize_t bytes_size(PyObject* b) { return PyBytes_GET_SIZE(b); }
#endif

// PySequence_Fast_GET_SIZE / _GET_ITEM: `s` is a list or a tuple.
inline Py_ssize_t seq_size(PyObject* s) { return PyList_Check(s) ? list_size(s) : tuple_size(s); }
inline PyObject* seq_item(PyObject* s, Py_ssize_t i) {  // borrowed
  return PyList_Check(s) ? list_item(s, i) : tuple_item(s, i);
}

// PyObject_CallOneArg (not in the limited API): the same vectorcall, which is.
inline PyObject* call_one(PyObject* fn, PyObject* arg) {
#if defined(Py_LIMITED_API)
  PyObject* args[2] = {nullptr, arg};  // args[0]: room for a bound method's self
  return PyObject_Vectorcall(fn, args + 1, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr);
#else
  return PyObject_CallOneArg(fn, arg);
#endif
}

// PyUnicode_AsUTF8 (limited only from 3.13): the same call with no size.
inline const char* utf8(PyObject* s) { return PyUnicode_AsUTF8AndSize(s, nullptr); }

// A complex number's parts (`o` passes PyComplex_Check); false with an error set.
inline bool complex_parts(PyObject* o, double* real, double* imag) {
#if defined(Py_LIMITED_API)
  *real = PyComplex_RealAsDouble(o);
  if (*real == -1.0 && PyErr_Occurred()) return false;
  *imag = PyComplex_ImagAsDouble(o);
  return !(*imag == -1.0 && PyErr_Occurred());
#else
  const Py_complex c = PyComplex_AsCComplex(o);
  *real = c.real;
  *imag = c.imag;
  return !(c.real == -1.0 && PyErr_Occurred());
#endif
}

// The type's name for messages: tp_name, or under the limited API its
// __name__ (PyType_GetName), which is the same for classes made by a class
// statement or type() (kernel classes, exceptions); "" if it cannot be read.
std::string type_name(PyTypeObject* tp);

// A heap type's namespace (tp_dict), a new reference; nullptr with an error set.
PyObject* type_dict(PyTypeObject* tp);

// An instance of `tp` from its tp_alloc (zeroed, one reference); nullptr with an error set.
inline PyObject* type_alloc(PyTypeObject* tp) {
#if defined(Py_LIMITED_API)
  auto alloc = reinterpret_cast<allocfunc>(PyType_GetSlot(tp, Py_tp_alloc));
  return alloc != nullptr ? alloc(tp, 0) : nullptr;
#else
  return tp->tp_alloc(tp, 0);
#endif
}

// Whether the interpreter is shutting down (then no Python object may be
// touched from a C++ destructor). The limited API has no Py_IsFinalizing: an
// atexit hook (python_api.cpp) marks the start of shutdown instead, a little
// earlier than CPython's own flag.
bool finalizing();

// Whether the calling thread holds the GIL (PyGILState_Check). The limited API
// has no such test: a thread with no Python thread state holds no GIL, and
// for one with a state PyGILState_Ensure says whether it had the GIL already
// (taking it for a moment where it had not).
bool gil_held();

// Makes CPython call `obj` through `fn`, stored in `slot` (a field of the
// instance), if its type's call slot is `tp_call` (a subclass defining its
// own __call__ is left alone). Under the full API the offset is written into
// the type on its first instance. The limited API cannot change a type once
// made: there the type already has vectorcall (callable_class below) and
// only `fn` is stored.
void enable_instance_vectorcall(PyObject* obj, vectorcallfunc* slot, vectorcallfunc fn, ternaryfunc tp_call);

// The class Python sees for `cls`, a nanobind class whose instances keep
// their vectorcall function at `offset` (vectorcall_offset): `cls` itself
// under the full API. The limited API can give a type vectorcall only when
// it makes it (PyType_FromMetaclass: Py_TPFLAGS_HAVE_VECTORCALL and the
// __vectorcalloffset__ member), so there it is a subclass made so, of a plain
// subclass (`plain_name`) made as a class statement makes one (nanobind's
// supported way: a GC heap type, zeroed, so a call before __init__ finds a
// null function and CPython takes `tp_call`). Python subclasses that define
// no __call__ inherit the flag and the offset.
nanobind::object callable_class(nanobind::handle cls, Py_ssize_t offset, ternaryfunc tp_call, const char* plain_name);

// The offset of `T::vectorcall` in a nanobind instance of `cls`, measured on
// one that is allocated and never constructed.
template <typename T>
Py_ssize_t vectorcall_offset(nanobind::handle cls) {
  nanobind::object probe = nanobind::inst_alloc(cls);
  return reinterpret_cast<char*>(&nanobind::inst_ptr<T>(probe)->vectorcall) - reinterpret_cast<char*>(probe.ptr());
}

// tp_call for a type whose instances are called through `fn` (see above):
// PyVectorcall_Call, or under the limited API the same conversion (the
// arguments tuple and keywords dict into one vectorcall of `fn`).
PyObject* call_through_vectorcall(PyObject* self, vectorcallfunc fn, PyObject* args, PyObject* kwargs);

}  // namespace jk::py::api
