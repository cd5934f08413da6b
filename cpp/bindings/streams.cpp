// Streams: which stream a launch runs on. The `stream=` argument (an int
// handle or a stream object), else the current stream of the inputs'
// framework; and Python owners that keep a stream object alive for as long
// as the core holds the launch.
#include <limits>
#include <utility>

#include "convert_detail.hpp"
#include "hooks.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

// A strong reference to a Python object, as an opaque owner the core can hold
// (DeviceBuffer::keep_alive). Released with the GIL taken, and not at all once
// the interpreter is finalizing.
std::shared_ptr<void> python_owner(nb::handle obj) {
  PyObject* p = obj.ptr();
  Py_INCREF(p);
  return std::shared_ptr<void>(p, [](void* q) {
#if PY_VERSION_HEX >= 0x030D0000
    if (!Py_IsInitialized() || Py_IsFinalizing()) return;
#else
    if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
#endif
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(static_cast<PyObject*>(q));
    PyGILState_Release(state);
  });
}

// The framework's current stream on `device`. The getter gives an int handle
// (torch: streams come from pools that are never destroyed) or a stream
// object (CuPy): then its `.ptr`, and `*owner` keeps that object alive.
std::uintptr_t framework_current_stream(Framework fw, int device, nb::object* owner) {
  FrameworkCache& fc = framework_cache();
  const int i = static_cast<int>(fw);
  if (!fc.stream_getter_known[i]) {
    fc.stream_getter[i] = hook(hooks().current_stream, "current_stream")(kFrameworkNames[i]);
    fc.stream_getter_known[i] = true;
  }
  if (fc.stream_getter[i].is_none()) return 0;
  nb::object current = fc.stream_getter[i](device);
  if (PyLong_Check(current.ptr())) return nb::cast<std::uintptr_t>(current);
  std::uintptr_t handle = nb::cast<std::uintptr_t>(current.attr("ptr"));
  *owner = std::move(current);
  return handle;
}

// The exchange API of the first pending torch tensor that came through it.
const dlpack::ExchangeAPI* first_exchange_api(const std::vector<PendingArray>& pending) {
  for (const PendingArray& p : pending)
    if (p.info && p.info->framework == Framework::Torch) return p.has_dltensor ? p.info->exchange : nullptr;
  return nullptr;
}

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

std::optional<std::uintptr_t> stream_arg(nb::handle value) {
  if (!value.is_valid() || value.is_none()) return std::nullopt;
  if (PyBool_Check(value.ptr()))
    throw ArgumentTypeError("stream", "expected a stream (int handle, an object with "
                                      "__cuda_stream__, torch.cuda.Stream, cupy Stream), got bool");
  if (PyLong_Check(value.ptr())) return stream_handle_value(value);
  // Protocol objects and framework streams (python/jitkernel/_streams.py, which checks them).
  return stream_handle_value(hook(hooks().stream_handle, "stream_handle")(value));
}

}  // namespace jk::py
