// The `jitkernel.Array` class (see array.hpp): shape/dtype/device, the DLPack
// producer protocol (ordering the consumer's stream after the producing one),
// __cuda_array_interface__ v3, and copies to NumPy.
#include "objects/array.hpp"

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/vector.h>

#include "call/dlpack.hpp"
#include "objects/dtypes.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"

namespace jk::py {

PyTypeObject* g_array_type = nullptr;

namespace {

nb::tuple shape_tuple(const ArrayView& v) {
  nb::list dims;
  for (auto s : v.shape) dims.append(s);
  return nb::tuple(dims);
}

// __dlpack__'s `stream`: None -> legacy default, 1 legacy, 2 per-thread,
// -1 no synchronisation, other values are stream handles (below 2**64).
std::optional<std::uintptr_t> consumer_stream(nb::handle stream) {
  if (stream.is_none()) return std::uintptr_t{0};
  if (PyBool_Check(stream.ptr()) || !PyLong_Check(stream.ptr()))
    throw nb::type_error("__dlpack__: stream must be None or an int");
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(stream.ptr(), &overflow);
  if (value == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow > 0) {
    const unsigned long long handle = PyLong_AsUnsignedLongLong(stream.ptr());
    if ((handle == static_cast<unsigned long long>(-1) && PyErr_Occurred()) ||
        handle > std::numeric_limits<std::uintptr_t>::max()) {
      PyErr_Clear();
      throw nb::value_error("__dlpack__: a stream handle must be below 2**64");
    }
    return static_cast<std::uintptr_t>(handle);
  }
  if (overflow < 0) value = -2;  // reported below
  if (value == -1) return std::nullopt;
  if (value == 0)
    throw nb::value_error("__dlpack__: stream=0 is ambiguous in DLPack; pass 1 for the legacy "
                          "default stream or 2 for the per-thread default stream");
  if (value < -1) throw nb::value_error("__dlpack__: stream must be -1, 1, 2 or a stream handle");
  return value == 1 ? 0 : static_cast<std::uintptr_t>(value);
}

// Item i of a tuple as an int (clamped to long long's range); TypeError
// with `message` for anything else, and never a read past the tuple's end.
long long tuple_int(nb::handle t, Py_ssize_t i, const char* message) {
  if (!PyTuple_Check(t.ptr()) || api::tuple_size(t.ptr()) <= i) throw nb::type_error(message);
  PyObject* item = api::tuple_item(t.ptr(), i);
  if (PyBool_Check(item) || !PyLong_Check(item)) throw nb::type_error(message);
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(item, &overflow);
  if (x == -1 && PyErr_Occurred()) throw nb::python_error();
  if (overflow != 0)
    return overflow > 0 ? std::numeric_limits<long long>::max() : std::numeric_limits<long long>::min();
  return x;
}

nb::object dlpack_method(const PyArray& self, nb::handle stream, nb::handle max_version,
                         nb::handle dl_device, nb::handle copy) {
  const ArrayView& v = self.array.view;
  if (!dl_device.is_none()) {
    static const char* const expected =
        "__dlpack__: dl_device must be a (device_type, device_id) tuple of two ints";
    if (!PyTuple_Check(dl_device.ptr()) || api::tuple_size(dl_device.ptr()) != 2)
      throw nb::type_error(expected);
    if (tuple_int(dl_device, 0, expected) != dlpack::kCUDA ||
        tuple_int(dl_device, 1, expected) != v.device)
      throw nb::buffer_error(("__dlpack__: the array is on CUDA device " +
                              std::to_string(v.device) + " and can only be exported there")
                                 .c_str());
  }
  if (!copy.is_none() && PyObject_IsTrue(copy.ptr()) == 1)
    throw nb::buffer_error("__dlpack__: jitkernel arrays are exported without copying; "
                           "copy=True is not supported");
  bool versioned = false;
  if (!max_version.is_none())
    versioned = tuple_int(max_version, 0, "__dlpack__: max_version must be a (major, minor) tuple of "
                                          "ints") >= 1;
  auto consumer = consumer_stream(stream);
  if (consumer && *consumer != self.stream) {
    cuda::stream_wait(v.device, reinterpret_cast<cuda::CUstream>(*consumer),
                      reinterpret_cast<cuda::CUstream>(self.stream));
  }
  return export_capsule(self.array, versioned);
}

// __cuda_array_interface__ typestr ("<f4", "|b1", ...); none for bfloat16.
std::string typestr(DType d) {
  const DTypeInfo& info = dtype_info(d);
  char kind;
  switch (info.dlpack_code) {
    case 0: kind = 'i'; break;
    case 1: kind = 'u'; break;
    case 2: kind = 'f'; break;
    case 5: kind = 'c'; break;
    case 6: kind = 'b'; break;
    default:
      throw nb::attribute_error(("__cuda_array_interface__ cannot describe " +
                                 std::string(info.name) + " arrays; use DLPack (__dlpack__)")
                                    .c_str());
  }
  return std::string(info.size == 1 ? "|" : "<") + kind + std::to_string(info.size);
}

nb::dict cuda_array_interface(const PyArray& self) {
  const ArrayView& v = self.array.view;
  std::string ts = typestr(v.dtype);
  nb::dict d;
  d["shape"] = shape_tuple(v);
  d["typestr"] = ts;
  nb::list descr;
  descr.append(nb::make_tuple("", ts));
  d["descr"] = descr;
  d["data"] = nb::make_tuple(reinterpret_cast<std::uintptr_t>(v.data), false);
  d["strides"] = nb::none();  // row-contiguous
  d["version"] = 3;
  d["stream"] = self.stream == 0 ? std::uintptr_t{1} : self.stream;
  return d;
}

// An uninitialised NumPy array of v's shape and dtype to download into
// (bfloat16 through ml_dtypes).
nb::object empty_host(const ArrayView& v) {
  using namespace nb::literals;
  nb::object dtype = nb::str(dtype_name(v.dtype));
  if (v.dtype == DType::BFloat16) {
    try {
      dtype = nb::module_::import_("ml_dtypes").attr("bfloat16");
    } catch (nb::python_error& e) {
      if (!e.matches(PyExc_ImportError)) throw;
      PyErr_SetString(PyExc_ModuleNotFoundError,
                      "copying a bfloat16 jitkernel.Array to NumPy needs ml_dtypes: pip install ml-dtypes");
      throw nb::python_error();
    }
  }
  return nb::module_::import_("numpy").attr("empty")(shape_tuple(v), "dtype"_a = dtype);
}

nb::object to_numpy(const PyArray& self) {
  const ArrayView& v = self.array.view;
  nb::object host = empty_host(v);
  if (v.nbytes() > 0) {
    nb::object data = host.attr("__array_interface__")["data"];
    auto ptr = nb::cast<std::uintptr_t>(data[0]);
    nb::gil_scoped_release release;  // waits for the producing stream
    cuda::download(v, reinterpret_cast<void*>(ptr), reinterpret_cast<cuda::CUstream>(self.stream));
  }
  return host;
}

std::string repr(const PyArray& self) {
  const ArrayView& v = self.array.view;
  std::string shape = "(";
  for (int i = 0; i < v.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(v.shape[i]);
  if (v.ndim() == 1) shape += ",";
  shape += ")";
  return "jitkernel.Array(shape=" + shape + ", dtype=" + dtype_name(v.dtype) +
         ", device=" + std::to_string(v.device) + ")";
}

void bind(nb::module_& m) {
  auto cls = nb::class_<PyArray>(m, "Array", nb::is_final(),
                      "A device array jitkernel allocated (kernel outputs when no input came "
                      "from PyTorch, CuPy or JAX). Shares memory through DLPack and "
                      "__cuda_array_interface__; numpy() / np.asarray() copy it to the host.\n\n"
                      "Made by kernel calls, not by hand: NumPy inputs are copied to the GPU and the "
                      "outputs come back as jk.Array, allocated on the launch stream and freed when "
                      "the last reference goes. Pass one to another kernel call as an input (no "
                      "copy), or to torch.from_dlpack / cupy.from_dlpack / jax.dlpack.from_dlpack "
                      "to share its memory. Row-major (C order).")
      .def_prop_ro("shape", [](const PyArray& a) { return shape_tuple(a.array.view); },
                   "The shape, a tuple of ints.")
      .def_prop_ro("dtype", [](const PyArray& a) { return dtype_object(a.array.view.dtype); },
                   "The element type, a jitkernel dtype (jk.float32, ...).")
      .def_prop_ro("device", [](const PyArray& a) { return a.array.view.device; },
                   "CUDA device ordinal.")
      .def_prop_ro("ndim", [](const PyArray& a) { return a.array.view.ndim(); },
                   "Number of dimensions.")
      .def_prop_ro("size", [](const PyArray& a) { return a.array.view.size(); },
                   "Number of elements.")
      .def_prop_ro("nbytes", [](const PyArray& a) { return a.array.view.nbytes(); },
                   "Size of the data in bytes.")
      .def_prop_ro("stream", [](const PyArray& a) { return a.stream; },
                   "Handle of the stream that produced the contents (0: legacy default).")
      .def("__dlpack__", &dlpack_method, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none(),
           "DLPack export; the consumer's `stream` is ordered after the producing stream.")
      .def("__dlpack_device__",
           [](const PyArray& a) { return nb::make_tuple(int(dlpack::kCUDA), a.array.view.device); },
           "(DLPack device type kDLCUDA, device ordinal).")
      .def_prop_ro("__cuda_array_interface__", &cuda_array_interface,
                   "Numba / CuPy's CUDA Array Interface (version 3) describing the device memory.")
      .def("numpy", &to_numpy, "Copies the array to a new NumPy array (waits for it).")
      .def("__array__",
           [](const PyArray& a, nb::handle dtype, nb::handle copy) {
             if (!copy.is_none() && PyObject_IsTrue(copy.ptr()) == 0)
               throw nb::value_error("a jitkernel.Array lives on the GPU: converting it to "
                                     "NumPy always copies (copy=False is impossible)");
             nb::object host = to_numpy(a);
             return dtype.is_none() ? host : host.attr("astype")(dtype);
           },
           nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none(),
           "np.asarray(a): a host copy (copy=False is an error: the data lives on the GPU).")
      .def("__repr__", &repr);
  g_array_type = reinterpret_cast<PyTypeObject*>(cls.ptr());

  // Tests of the protocols above on machines without a GPU: a jk.Array over
  // memory the caller owns and keeps alive (no buffer reference is held).
  m.def(
      "_array_view_for_tests",
      [](std::uintptr_t ptr, std::vector<std::int64_t> shape, nb::handle dtype, int device,
         std::uintptr_t stream) {
        PyArray a;
        a.array.view.data = reinterpret_cast<void*>(ptr);
        a.array.view.dtype = dtype_arg(dtype, "dtype");
        a.array.view.device = device;
        a.array.view.strides = row_major_strides(shape);
        a.array.view.shape = std::move(shape);
        a.stream = stream;
        return a;
      },
      nb::arg("ptr"), nb::arg("shape"), nb::arg("dtype"), nb::arg("device"), nb::arg("stream"),
      "A jk.Array over caller-owned memory (internal: for testing without a GPU).");
}

const Registration reg(order::array, "array", bind);

}  // namespace
}  // namespace jk::py
