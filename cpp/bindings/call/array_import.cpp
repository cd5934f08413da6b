// Array import: each array argument as an ArrayView the core can launch
// with. Host arrays (NumPy, ml_dtypes, host DLPack) are viewed at once;
// device arrays are classified first and imported once the launch stream is
// known (through DLPack with that stream, or read directly for torch tensors
// on torch's current stream), or refused where the backend reads host memory.
#include <limits>
#include <utility>

#include "objects/array.hpp"
#include "call/convert_detail.hpp"
#include "call/traced_call.hpp"
#include "objects/dtypes.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {
namespace {

// ---------------------------------------------------------------------------
// Host arrays.

// A NumPy (or ml_dtypes) array as a host view: the buffer protocol (cheap),
// else __array_interface__ (NumPy refuses buffers of ml_dtypes' bfloat16).
ArrayView numpy_view(nb::handle arr, const char* argument, const ItemRef& where) {
  ArrayView v;
  v.device = kHostDevice;
  v.dtype = dtype_arg(attr_of(arr, "dtype", argument, where), argument, where);
  const auto itemsize = static_cast<std::int64_t>(dtype_size(v.dtype));
  auto byte_strides = [&](std::int64_t bytes) {
    if (bytes % itemsize != 0)
      throw ArgumentError(argument, where.prefix() + "its strides (" + std::to_string(bytes) +
                                        " bytes) are not a multiple of its itemsize; copy it with "
                                        "numpy.ascontiguousarray first");
    return bytes / itemsize;
  };
  Py_buffer view;
  if (PyObject_GetBuffer(arr.ptr(), &view, PyBUF_STRIDES) == 0) {
    // The array object (alive in the caller's arguments) keeps the memory valid.
    v.data = view.buf;
    v.shape.assign(view.shape, view.shape + view.ndim);
    v.strides.reserve(view.ndim);
    for (int i = 0; i < view.ndim; ++i) v.strides.push_back(byte_strides(view.strides[i]));
    const bool itemsize_ok = view.itemsize == itemsize;
    PyBuffer_Release(&view);
    if (!itemsize_ok)
      throw ArgumentTypeError(argument, where.prefix() + "its itemsize does not match " +
                                            dtype_name(v.dtype));
    return v;
  }
  PyErr_Clear();
  nb::object ai = attr_of(arr, "__array_interface__", argument, where);
  auto entry = [&](const char* key) {
    PyObject* e = PyDict_Check(ai.ptr()) ? PyDict_GetItemString(ai.ptr(), key) : nullptr;
    return e ? nb::borrow(e) : nb::none();
  };
  auto malformed = [&](const char* what) {
    return ArgumentTypeError(argument, where.prefix() + "its __array_interface__ is malformed (" +
                                           what + ")");
  };
  nb::object data = entry("data");
  std::int64_t address = 0;
  if (!PyTuple_Check(data.ptr()) || api::tuple_size(data.ptr()) < 1 ||
      int_value(api::tuple_item(data.ptr(), 0), &address) != IntResult::Ok || address < 0)
    throw malformed("'data' must be a (pointer, read_only) tuple");
  v.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
  shape_into(entry("shape"), argument, where, v.shape, "__array_interface__['shape']");
  nb::object strides = entry("strides");
  if (strides.is_none()) {
    v.strides = row_major_strides(v.shape);
    return v;
  }
  if (!(PyTuple_Check(strides.ptr()) || PyList_Check(strides.ptr())) ||
      static_cast<std::size_t>(api::seq_size(strides.ptr())) != v.shape.size())
    throw malformed("'strides' must be None or one int per dimension");
  for_each_item(strides, argument, [&](std::size_t, nb::handle s) {
    std::int64_t bytes = 0;
    if (int_value(s, &bytes) != IntResult::Ok) throw malformed("'strides' must be ints");
    v.strides.push_back(byte_strides(bytes));
  });
  return v;
}

// ---------------------------------------------------------------------------
// Device arrays.

// __dlpack__(stream=..., max_version=(1, 0)) when the type accepts it (learned
// once per type), else the pre-1.0 form.
nb::object call_dlpack(nb::handle obj, TypeInfo& info, nb::handle stream) {
  using namespace nb::literals;
  nb::object method = obj.attr("__dlpack__");
  if (info.versioned_dlpack != 0) {
    try {
      nb::object capsule = method("stream"_a = stream, "max_version"_a = nb::make_tuple(1, 0));
      info.versioned_dlpack = 1;
      return capsule;
    } catch (nb::python_error& e) {
      if (!e.matches(PyExc_TypeError)) throw;
      // A pre-1.0 producer (or another TypeError, which the retry raises again).
      if (info.versioned_dlpack == -1) info.versioned_dlpack = 0;
    }
  }
  return method("stream"_a = stream);
}

}  // namespace

// Tensor.is_neg(t), through the cached unbound method (no bound-method object per call).
bool torch_is_neg(nb::handle t) {
  FrameworkCache& fc = framework_cache();
  if (!fc.torch_is_neg.is_valid())
    fc.torch_is_neg = nb::module_::import_("torch").attr("Tensor").attr("is_neg");
  PyObject* r = api::call_one(fc.torch_is_neg.ptr(), t.ptr());
  if (r == nullptr) throw nb::python_error();
  const int truth = PyObject_IsTrue(r);
  Py_DECREF(r);
  if (truth < 0) throw nb::python_error();
  return truth == 1;
}


// Consumes the DLPack export of `obj` (ordered on `stream` for device arrays).
ImportedTensor dlpack_import(nb::handle obj, TypeInfo& info, std::optional<std::uintptr_t> stream,
                             Borrowed& borrowed, const char* argument, const ItemRef& where) {
  nb::object stream_value =
      stream ? nb::object(nb::int_(dlpack::stream_argument(*stream))) : nb::none();
  nb::object capsule;
  try {
    capsule = call_dlpack(obj, info, stream_value);
  } catch (nb::python_error& e) {
    throw ArgumentError(argument, where.prefix() + "exporting it through DLPack failed (" +
                                      python_error_text(e) + ")");
  }
  borrowed.imports.emplace_back();
  return import_capsule(capsule, borrowed.imports.back(), argument, where);
}

namespace {

// __dlpack_device__() as (device_type, device_id): a tuple of two ints, each
// in 0..2**31-1 (DLDevice's int32 fields).
std::pair<int, int> dlpack_device(nb::handle obj, const char* argument, const ItemRef& where) {
  nb::object dev;
  try {
    dev = obj.attr("__dlpack_device__")();
  } catch (nb::python_error& e) {
    throw ArgumentError(argument, where.prefix() + "__dlpack_device__() failed (" +
                                      python_error_text(e) + ")");
  }
  auto complaint = [&] {
    return where.prefix() + "__dlpack_device__() returned " + repr_text(dev) +
           "; expected a (device_type, device_id) tuple of two ints";
  };
  PyObject* t = dev.ptr();
  if (!PyTuple_Check(t) || api::tuple_size(t) != 2) throw ArgumentTypeError(argument, complaint());
  std::int64_t v[2];
  for (Py_ssize_t i = 0; i < 2; ++i) {
    const IntResult r = int_value(api::tuple_item(t, i), &v[i]);
    if (r == IntResult::NotInt) throw ArgumentTypeError(argument, complaint());
    if (r == IntResult::Overflow || v[i] < 0 || v[i] > std::numeric_limits<std::int32_t>::max())
      throw ArgumentError(argument, complaint() + " in 0..2**31-1");
  }
  return {static_cast<int>(v[0]), static_cast<int>(v[1])};
}

// An exact torch.Tensor read through its attributes instead of DLPack: valid
// when the launch runs on torch's current stream (no ordering needed). Returns
// false for tensors DLPack must handle (sparse/other layouts, complex: conj bits).
bool torch_view(nb::handle t, int device, const char* argument, const ItemRef& where,
                ArrayView* out) {
  FrameworkCache& fc = framework_cache();
  if (!fc.torch_strided.is_valid())
    fc.torch_strided = nb::module_::import_("torch").attr("strided");
  if (!nb::object(t.attr("layout")).is(fc.torch_strided)) return false;
  DType dtype = dtype_arg(t.attr("dtype"), argument, where);
  if (dtype == DType::Complex64) return false;
  ArrayView& v = *out;
  v.dtype = dtype;
  v.device = device;
  nb::tuple shape = nb::cast<nb::tuple>(t.attr("shape"));
  nb::tuple strides = nb::cast<nb::tuple>(t.attr("stride")());
  v.shape.clear();
  v.strides.clear();
  for (std::size_t i = 0; i < shape.size(); ++i) {
    v.shape.push_back(PyLong_AsLongLong(shape[i].ptr()));
    v.strides.push_back(PyLong_AsLongLong(strides[i].ptr()));
  }
  if (PyErr_Occurred()) throw nb::python_error();
  v.data = reinterpret_cast<void*>(nb::cast<std::uintptr_t>(t.attr("data_ptr")()));
  return true;
}

// A torch tensor on a CUDA device is recorded in `pending` (true); others
// (host tensors) are left to DLPack (false).
bool classify_torch_device_tensor(nb::handle item, std::size_t index, TypeInfo& info, const char* argument,
                                  const ItemRef& where, std::vector<PendingArray>& pending) {
  // data_ptr() and DLPack (even torch's __dlpack__) both drop the lazy
  // negation of a view like z.conj().imag: its raw memory holds -values.
  if (torch_is_neg(item))
    throw ArgumentError(argument, where.prefix() + "the tensor has its negative bit set (a "
                                                   "lazily negated view such as "
                                                   "z.conj().imag); call .resolve_neg() first");
  // The exchange API describes the tensor in one C call; anything it
  // declines (or a host tensor) takes the attribute / DLPack path. A
  // torch.func transform's wrapper (vmap's BatchedTensor, grad's
  // GradTrackingTensor) is an exact torch.Tensor without memory: the
  // exchange API declines it, and it is asked for only then.
  if (info.exchange) {
    dlpack::Tensor dl{};
    if (info.exchange->dltensor_from_py_object_no_sync(item.ptr(), &dl) != 0) {
      PyErr_Clear();
      if (torch_transform_wrapper(item)) throw TracedArgument(info.framework, argument, where.prefix());
    } else if (dl.device.device_type == dlpack::kCUDA) {
      pending.push_back({index, nb::borrow(item), &info, dl.device.device_id, true, dl});
      return true;
    }
  } else if (torch_transform_wrapper(item)) {
    throw TracedArgument(info.framework, argument, where.prefix());
  }
  if (PyObject_IsTrue(nb::object(item.attr("is_cuda")).ptr()) == 1) {
    pending.push_back({index, nb::borrow(item), &info, nb::cast<int>(item.attr("get_device")())});
    return true;
  }
  return false;
}

}  // namespace

// Classification of one array argument (input or `outputs=` entry) that is not
// a scalar: host arrays are converted at once; device arrays are recorded in
// `pending` for import once the stream is known. Returns the framework of a
// device array, or Framework::None for host arrays.
Framework classify_array(nb::handle item, std::size_t index, const char* argument,
                         const ItemRef& where, Borrowed& borrowed, std::vector<PendingArray>& pending,
                         ArrayView* host_view, bool* is_host) {
  *is_host = false;
  if (is_jk_array(item)) {
    pending.push_back({index, nb::borrow(item), nullptr, jk_array_ptr(item)->array.view.device});
    return Framework::JitKernel;
  }
  TypeInfo& info = classify(item, argument, where);
  if (info.kind == Kind::Traced) throw TracedArgument(info.framework, argument, where.prefix());
  switch (info.kind) {
    case Kind::NumpyArray:
      *host_view = numpy_view(item, argument, where);
      borrowed.objects.push_back(nb::borrow(item));  // the view reads its memory
      *is_host = true;
      return Framework::None;
    case Kind::HostArray: {
      nb::object arr;
      try {
        FrameworkCache& fc = framework_cache();
        if (!fc.numpy_asarray.is_valid())
          fc.numpy_asarray = nb::module_::import_("numpy").attr("asarray");
        arr = fc.numpy_asarray(item);
      } catch (nb::python_error& e) {
        throw ArgumentTypeError(argument, where.prefix() + "cannot read " + type_text(item) +
                                              " as an array (" + python_error_text(e) + ")");
      }
      *host_view = numpy_view(arr, argument, where);
      borrowed.objects.push_back(std::move(arr));
      *is_host = true;
      return Framework::None;
    }
    case Kind::TorchTensor:
      if (classify_torch_device_tensor(item, index, info, argument, where, pending)) return info.framework;
      [[fallthrough]];  // CPU (or other-device) tensors: DLPack decides
    case Kind::DLPack: {
      auto [type, id] = dlpack_device(item, argument, where);
      if (type == dlpack::kCUDA || type == dlpack::kCUDAManaged) {
        pending.push_back({index, nb::borrow(item), &info, id});
        return info.framework == Framework::None ? Framework::Other : info.framework;
      }
      // Host memory, or a device jitkernel rejects: import_capsule says which.
      ImportedTensor t = dlpack_import(item, info, std::nullopt, borrowed, argument, where);
      *host_view = std::move(t.view);
      *is_host = true;
      return Framework::None;
    }
    case Kind::CudaArrayInterface:
      pending.push_back({index, nb::borrow(item), &info, cai_classify(item, argument, where)});
      return info.framework == Framework::None ? Framework::Other : info.framework;
    default:
      throw ArgumentTypeError(
          argument, where.prefix() + "expected an array (anything with __dlpack__ or "
                                     "__cuda_array_interface__: PyTorch, CuPy, JAX, Numba, jitkernel; "
                                     "or a NumPy array)" +
                        (std::string(argument) == "inputs" ? " or a Python scalar" : "") +
                        ", got " + type_text(item));
  }
}

// Imports a pending device array for a launch on `stream` into `out` (whose
// vectors' capacity is reused). Returns whether the array is read-only.
bool import_pending(const PendingArray& p, std::uintptr_t stream, bool direct_read,
                    Borrowed& borrowed, const char* argument, const ItemRef& where, ArrayView& out) {
  if (!p.info) {  // jk.Array: order the launch after the stream that produced it
    const PyArray* a = jk_array_ptr(p.obj);
    if (a->stream != stream)
      cuda::stream_wait(a->array.view.device, reinterpret_cast<cuda::CUstream>(stream),
                        reinterpret_cast<cuda::CUstream>(a->stream));
    out = a->array.view;
    return false;
  }
  if (direct_read && p.info->kind == Kind::TorchTensor) {
    // Complex tensors go through DLPack, which honours their conj bit.
    if (p.has_dltensor && p.dltensor.dtype.code != dlpack::kComplexCode &&
        view_from_dltensor(p.dltensor, out))
      return false;
    if (torch_view(p.obj, p.device, argument, where, &out)) return false;
  }
  if (p.info->kind == Kind::CudaArrayInterface) return cai_import(p.obj, p.device, stream, argument, where, out);
  ImportedTensor t = dlpack_import(p.obj, *p.info, stream, borrowed, argument, where);
  out = std::move(t.view);
  return t.read_only;
}

void refuse_device_array(nb::handle item, const char* argument, const ItemRef& where) {
  throw ArgumentTypeError(argument, where.prefix() + "expected an array in CPU memory (NumPy, PyTorch CPU "
                                                     "tensors, ...), got a device array (" + type_text(item) + ")");
}

bool host_read_only(nb::handle item) {
  // NumPy-style arrays say so in flags.writeable; other host arrays count as writable.
  bool read_only = false;
  if (PyObject* flags = PyObject_GetAttrString(item.ptr(), "flags")) {
    if (PyObject* writeable = PyObject_GetAttrString(flags, "writeable")) {
      read_only = PyObject_IsTrue(writeable) == 0;
      Py_DECREF(writeable);
    }
    Py_DECREF(flags);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return read_only;
}

}  // namespace jk::py
