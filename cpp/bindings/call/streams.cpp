// Streams: which stream a launch runs on. The `stream=` argument (an int
// handle or a stream object), else the current stream of the inputs'
// framework; and Python owners that keep a stream object alive for as long
// as the core holds the launch.
#include <limits>
#include <string>
#include <utility>

#include "call/convert_detail.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

// A strong reference to a Python object, as an opaque owner the core can hold
// (DeviceBuffer::keep_alive). Released with the GIL taken, and not at all once
// the interpreter is finalizing.
std::shared_ptr<void> python_owner(nb::handle obj) {
  PyObject* p = obj.ptr();
  Py_INCREF(p);
  return std::shared_ptr<void>(p, [](void* q) {
    if (!Py_IsInitialized() || api::finalizing()) return;
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(static_cast<PyObject*>(q));
    PyGILState_Release(state);
  });
}

// torch's current stream through its C function (no Stream object per call),
// else torch.cuda.current_stream(device).cuda_stream (older torch). torch's
// streams come from pools that are never destroyed: no owner needed.
std::uintptr_t torch_current_stream(int device, nb::object* /*owner*/) {
  FrameworkCache& fc = framework_cache();
  if (!fc.torch_current_stream.is_valid()) {
    nb::object torch = loaded_module("torch");
    if (!torch.is_valid()) return 0;
    nb::object c = torch.attr("_C");
    fc.torch_current_stream = nb::hasattr(c, "_cuda_getCurrentRawStream")
                                  ? c.attr("_cuda_getCurrentRawStream")
                                  : nb::none();
  }
  if (!fc.torch_current_stream.is_none())
    return nb::cast<std::uintptr_t>(fc.torch_current_stream(device));
  nb::object torch = loaded_module("torch");
  if (!torch.is_valid()) return 0;
  return nb::cast<std::uintptr_t>(torch.attr("cuda").attr("current_stream")(device).attr("cuda_stream"));
}

namespace {

// CuPy's current Stream object on `device` (the object, not just its handle:
// outputs allocated on it keep it alive, and a CuPy stream can be destroyed
// while arrays allocated on it live on).
nb::object cupy_current_stream_object(int device) {
  FrameworkCache& fc = framework_cache();
  if (!fc.cupy_current_stream.is_valid()) {
    nb::object cupy = loaded_module("cupy");
    if (!cupy.is_valid()) return nb::none();
    fc.cupy_current_stream = cupy.attr("cuda").attr("get_current_stream");
  }
  try {
    return fc.cupy_current_stream(device);
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
  }
  // CuPy < 12: no device argument; ask inside `with cupy.cuda.Device(device)`.
  nb::object scope = loaded_module("cupy").attr("cuda").attr("Device")(device);
  scope.attr("__enter__")();
  nb::object current;
  try {
    current = fc.cupy_current_stream();
  } catch (...) {
    scope.attr("__exit__")(nb::none(), nb::none(), nb::none());
    throw;
  }
  scope.attr("__exit__")(nb::none(), nb::none(), nb::none());
  return current;
}

}  // namespace

// CuPy's current stream on `device`; `*owner` keeps its Stream object alive.
std::uintptr_t cupy_current_stream(int device, nb::object* owner) {
  nb::object current = cupy_current_stream_object(device);
  if (current.is_none()) return 0;
  std::uintptr_t handle = nb::cast<std::uintptr_t>(current.attr("ptr"));
  *owner = std::move(current);
  return handle;
}

// The framework's current stream on `device` (0, the legacy default stream,
// for frameworks without one); `*owner` keeps a stream object alive.
std::uintptr_t framework_current_stream(Framework fw, int device, nb::object* owner) {
  const FrameworkRow& row = framework_row(fw);
  return row.current_stream != nullptr ? row.current_stream(device, owner) : 0;
}

// The exchange API of the first pending array of `fw`, when it came through it.
const dlpack::ExchangeAPI* first_exchange_api(const std::vector<PendingArray>& pending, Framework fw) {
  for (const PendingArray& p : pending)
    if (p.info && p.info->framework == fw) return p.has_dltensor ? p.info->exchange : nullptr;
  return nullptr;
}

const FrameworkRow* stream_framework(const std::string& root) {
  for (int i = 0; i < kNumFrameworks; ++i) {
    const FrameworkRow& row = framework_row(static_cast<Framework>(i));
    for (const char* const* m = row.stream_modules; *m != nullptr; ++m)
      if (root == *m) return &row;
  }
  return nullptr;
}

namespace {

// A stream handle: an int in [0, 2**64) (a CUstream is a pointer).
std::uintptr_t stream_handle_value(nb::handle value) {
  PyObject* o = value.ptr();
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (x == -1 && PyErr_Occurred()) throw nb::python_error();
    if (overflow == 0 && x >= 0) return static_cast<std::uintptr_t>(x);
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(o);
      if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) &&
          u <= std::numeric_limits<std::uintptr_t>::max())
        return static_cast<std::uintptr_t>(u);
      PyErr_Clear();
    }
  }
  throw ArgumentError("stream", "a stream handle is a non-negative int below 2**64, got " +
                                    repr_text(value));
}

}  // namespace

namespace {

// handle.__index__() as a stream handle; `source` names where it came from.
std::uintptr_t checked_handle(nb::handle handle, const std::string& source) {
  PyObject* index = PyNumber_Index(handle.ptr());
  if (index == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
    PyErr_Clear();
    throw ArgumentTypeError("stream", source + " gave " + repr_text(handle) + ", not an int handle");
  }
  nb::object value = nb::steal(index);
  try {
    return stream_handle_value(value);
  } catch (ArgumentError&) {
    throw ArgumentError("stream", source + " gave " + repr_text(value) +
                                      "; a stream handle is a non-negative int below 2**64");
  }
}

// The handle of a stream object: __cuda_stream__ (cuda.core's protocol), a
// torch stream's .cuda_stream, a CuPy stream's .ptr, or an int-like (NumPy ints).
std::uintptr_t stream_object_handle(nb::handle obj) {
  std::optional<nb::object> proto = optional_attr(obj, "__cuda_stream__");
  if (proto && !proto->is_none()) {
    nb::object value = PyCallable_Check(proto->ptr()) ? (*proto)() : *proto;
    if (!PyTuple_Check(value.ptr()) || api::tuple_size(value.ptr()) != 2)
      throw ArgumentTypeError("stream", "__cuda_stream__ must give (version, handle), got " +
                                            repr_text(value));
    return checked_handle(api::tuple_item(value.ptr(), 1), "__cuda_stream__");
  }
  nb::handle type = obj.type();
  nb::object module = type.attr("__module__");
  std::string root;
  if (PyUnicode_Check(module.ptr())) {
    root = nb::cast<std::string>(module);
    root = root.substr(0, root.find('.'));
  }
  if (const FrameworkRow* row = stream_framework(root))
    if (auto handle = optional_attr(obj, row->stream_handle_attr))
      return checked_handle(*handle, std::string(row->stream_text) + " ." + row->stream_handle_attr);
  if (!PyBool_Check(obj.ptr()) && optional_attr(type, "__index__")) return checked_handle(obj, "stream");
  throw ArgumentTypeError("stream", "expected None, an int stream handle, an object with "
                                    "__cuda_stream__ (cuda.core), a torch.cuda.Stream or a CuPy "
                                    "Stream; got " + nb::cast<std::string>(nb::str(module)) + "." +
                                    nb::cast<std::string>(nb::str(type.attr("__qualname__"))));
}

bool is_jitkernel_error(nb::python_error& e) {
  nb::object errors = loaded_module("jitkernel._errors");
  return errors.is_valid() && e.matches(errors.attr("JitKernelError"));
}

}  // namespace

std::optional<std::uintptr_t> stream_arg(nb::handle value) {
  if (!value.is_valid() || value.is_none()) return std::nullopt;
  if (PyBool_Check(value.ptr()))
    throw ArgumentTypeError("stream", "expected a stream (int handle, an object with "
                                      "__cuda_stream__, torch.cuda.Stream, cupy Stream), got bool");
  if (PyLong_Check(value.ptr())) return stream_handle_value(value);
  // Whatever a stream object does wrong (a protocol method that raises, a
  // result of the wrong type) is an error naming `stream`.
  try {
    return stream_object_handle(value);
  } catch (nb::python_error& e) {
    if (is_jitkernel_error(e)) throw;
    throw ArgumentTypeError("stream", "reading the stream object (" +
                                          nb::cast<std::string>(nb::str(value.type().attr("__qualname__"))) +
                                          ") failed (" + python_error_text(e) + ")");
  }
}

}  // namespace jk::py
