// The kernel call's keyword parsing for tp_call and vectorcall (see
// call_slot.hpp), and `_core._call_keywords` / `_call_required` /
// `_reraise_pending` for the Python paths that mirror it.
#include "call/call_slot.hpp"

#include <exception>
#include <string>

#include "call/convert.hpp"
#include "services/hooks.hpp"
#include "call/traced_call.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {
namespace {

DirectCall g_direct_call = nullptr;

struct CallSlotCache {
  PyObject* keywords[kNumCallKeywords] = {};  // interned
  PyObject* reraise = nullptr;                // _core._reraise_pending
  PyObject* general_name = nullptr;           // "_call_general"
  PyObject* traced_name = nullptr;            // "_call_traced"
};

// A C++ exception caught in the call slot, handed to nanobind's exception
// translation by calling _core._reraise_pending, which rethrows it.
thread_local std::exception_ptr t_pending_exception;

void reraise_pending() {
  std::exception_ptr p = std::move(t_pending_exception);
  t_pending_exception = nullptr;
  if (p) std::rethrow_exception(p);
}

CallSlotCache& call_slot_cache() {
  static CallSlotCache cache;
  return cache;
}

void clear_call_slot_cache() {
  CallSlotCache& c = call_slot_cache();
  for (PyObject*& k : c.keywords) Py_CLEAR(k);
  Py_CLEAR(c.reraise);
  Py_CLEAR(c.general_name);
  Py_CLEAR(c.traced_name);
}

bool init_call_slot_cache(CallSlotCache& c) {
  for (int i = 0; i < kNumCallKeywords; ++i)
    if (!(c.keywords[i] = PyUnicode_InternFromString(kCallKeywords[i].name))) return false;
  c.general_name = PyUnicode_InternFromString("_call_general");
  c.traced_name = PyUnicode_InternFromString("_call_traced");
  PyObject* module = PyImport_ImportModule("jitkernel._core");
  if (module == nullptr) return false;
  c.reraise = PyObject_GetAttrString(module, "_reraise_pending");
  Py_DECREF(module);
  return c.general_name != nullptr && c.traced_name != nullptr && c.reraise != nullptr;
}

int keyword_index(const CallSlotCache& c, PyObject* key) {
  for (int i = 0; i < kNumCallKeywords; ++i)
    if (key == c.keywords[i]) return i;
  for (int i = 0; i < kNumCallKeywords; ++i)  // keys built at run time are not interned
    if (PyUnicode_Check(key) && PyUnicode_Compare(key, c.keywords[i]) == 0) return i;
  return -1;
}

// The kernel's type name for messages, read only when one is raised.
std::string type_name(PyObject* self) { return api::type_name(Py_TYPE(self)); }

// Stores one keyword argument into its field of `args`; an unknown keyword
// is an ArgumentTypeError naming it.
void store_keyword(const CallSlotCache& c, PyObject* self, PyObject* key, PyObject* value, CallArgs& args) {
  const int i = keyword_index(c, key);
  if (i >= 0) {
    args.*kCallKeywords[i].field = value;
    return;
  }
  const char* utf8 = PyUnicode_Check(key) ? api::utf8(key) : nullptr;
  if (utf8 == nullptr) PyErr_Clear();
  const std::string name = utf8 ? std::string(utf8) : repr_text(key);
  std::string accepted;
  for (const CallKeyword& k : kCallKeywords) accepted += std::string(accepted.empty() ? "" : ", ") + k.name;
  throw ArgumentTypeError(name, type_name(self) + ".__call__() got an unexpected keyword argument '" +
                                    name + "' (it takes " + accepted + ")");
}

// Positional arguments are an ArgumentTypeError (a kernel call takes keywords only).
void reject_positional(PyObject* self, Py_ssize_t count) {
  if (count != 0)
    throw ArgumentTypeError(kCallKeywords[0].name, type_name(self) +
                                                  ".__call__() takes keyword arguments only (inputs=..., "
                                                  "grid=..., threadgroup=..., ...), got " +
                                                  std::to_string(count) + " positional");
}

// After the keywords are stored: missing required ones are an
// ArgumentTypeError, the others get their defaults.
void finish_keywords(PyObject* self, CallArgs& args) {
  for (const CallKeyword& k : kCallKeywords) {
    nb::handle& value = args.*k.field;
    if (value.is_valid()) continue;
    if (k.required)
      throw ArgumentTypeError(k.name, type_name(self) + ".__call__() missing required keyword argument '" +
                                          k.name + "'");
    value = call_keyword_default(k);
  }
}

// The call once its keywords are read (`read` fills `args`): straight into
// the kernel type's C++, else the Python paths (kernels made without names;
// traced arrays, autograd), which take the keywords positionally.
template <typename Read>
PyObject* run_call(PyObject* self, Read&& read) {
  CallSlotCache& c = call_slot_cache();
  if (c.reraise == nullptr && !init_call_slot_cache(c)) return nullptr;
  CallArgs args;
  PyObject* python_path = c.general_name;
  try {
    read(c, args);
    finish_keywords(self, args);
    nb::object result = g_direct_call(self, args);
    if (result.is_valid()) return result.release().ptr();
  } catch (const TracedArgument&) {
    python_path = c.traced_name;  // traced arrays, or autograd: the framework records the call
  } catch (...) {
    return translate_current_exception();
  }
  // values[0] is self (the slot vectorcall may use), then the keywords in order.
  PyObject* values[1 + kNumCallKeywords] = {self};
  for (int i = 0; i < kNumCallKeywords; ++i) values[1 + i] = (args.*kCallKeywords[i].field).ptr();
  PyObject* method = PyObject_GetAttr(self, python_path);
  if (method == nullptr) return nullptr;
  PyObject* result = PyObject_Vectorcall(method, values + 1, kNumCallKeywords | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                         nullptr);
  Py_DECREF(method);
  return result;
}

}  // namespace

// kernel(**kwargs) and calls from C: the keywords come as a dict.
PyObject* call_slot(PyObject* self, PyObject* args, PyObject* kwargs) {
  return run_call(self, [&](const CallSlotCache& c, CallArgs& call) {
    reject_positional(self, args != nullptr ? api::tuple_size(args) : 0);
    if (kwargs == nullptr) return;
    Py_ssize_t pos = 0;
    PyObject *key = nullptr, *value = nullptr;
    while (PyDict_Next(kwargs, &pos, &key, &value)) store_keyword(c, self, key, value, call);
  });
}

namespace {

// kernel(inputs=..., grid=..., ...) written out: CPython passes the keyword
// names as a tuple of interned strings, so no dict is built for the call.
PyObject* call_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf, PyObject* kwnames) {
  return run_call(self, [&](const CallSlotCache& c, CallArgs& call) {
    const Py_ssize_t positional = PyVectorcall_NARGS(nargsf);
    reject_positional(self, positional);
    const Py_ssize_t n = kwnames != nullptr ? api::tuple_size(kwnames) : 0;
    for (Py_ssize_t i = 0; i < n; ++i)
      store_keyword(c, self, api::tuple_item(kwnames, i), args[positional + i], call);
  });
}

}  // namespace

PyObject* translate_current_exception() {
  try {
    throw;
  } catch (nb::python_error& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    CallSlotCache& c = call_slot_cache();
    if (c.reraise == nullptr && !init_call_slot_cache(c)) return nullptr;
    t_pending_exception = std::current_exception();
    Py_XDECREF(PyObject_CallNoArgs(c.reraise));  // sets the translated Python error
    return nullptr;
  }
}

void enable_vectorcall(PyObject* obj, vectorcallfunc* slot) {
  api::enable_instance_vectorcall(obj, slot, call_vectorcall, call_slot);
}


void set_direct_call(DirectCall call) { g_direct_call = call; }

namespace {

void bind(nb::module_& m) {
  on_clear_caches(&clear_call_slot_cache);
  // The call's keywords, the required ones and the defaults, for the Python
  // paths that mirror the call slot (_frameworks/traced_call.py: TorchDynamo's path).
  nb::list keywords, required, defaults;
  for (const CallKeyword& k : kCallKeywords) {
    keywords.append(k.name);
    if (k.required) required.append(k.name);
    defaults.append(call_keyword_default(k));
  }
  m.attr("_call_keywords") = nb::tuple(keywords);
  m.attr("_call_required") = nb::tuple(required);
  m.attr("_call_defaults") = nb::tuple(defaults);
  m.def("_reraise_pending", &reraise_pending,
        "Raises the C++ exception a kernel call stored (internal: runs nanobind's translation).");
}

const Registration reg(order::kernel, "call_slot", bind);

}  // namespace
}  // namespace jk::py
