// Argument conversion shared by the kernel factories (see convert.hpp): what
// each Python value is, where its memory lives, which stream the launch uses,
// and how results go back to Python.
#include "convert.hpp"

#include <cstring>
#include <limits>
#include <unordered_map>
#include <utility>

#include "array.hpp"
#include "dtypes.hpp"
#include "hooks.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {
namespace {

// ---------------------------------------------------------------------------
// What a Python type is, decided once per type by `_arrays.classify_type`.

enum class Kind : std::uint8_t {
  Unknown,
  Bool,         // bool subclasses other than bool itself
  Int,          // int subclasses (IntEnum, ...)
  Float,        // float subclasses (not NumPy's float64: that is a NumpyScalar)
  Complex,
  NumpyScalar,  // numpy.generic, ml_dtypes scalars
  NumpyArray,   // numpy.ndarray: buffer protocol, __array_interface__ for ml_dtypes
  TorchTensor,  // exactly torch.Tensor / torch.nn.Parameter: read directly when safe
  DLPack,       // anything else with __dlpack__ / __dlpack_device__
  HostArray,    // __array_interface__ / __array__ only: converted with numpy.asarray
};

}  // namespace

struct TypeInfo {
  Kind kind = Kind::Unknown;
  Framework framework = Framework::Other;
  std::int8_t versioned_dlpack = -1;  // __dlpack__(max_version=) accepted: -1 unknown, 0 no, 1 yes
  const dlpack::ExchangeAPI* exchange = nullptr;  // torch tensors: the type's DLPack C exchange API
  // A weak reference to the type whose callback drops this entry when the
  // type dies, so that the cache holds only live types (and a type's address,
  // once freed, never finds another type's entry). Null: a strong reference
  // instead (only if the weak one could not be made).
  PyObject* watch = nullptr;
};

namespace {

constexpr const char* kFrameworkNames[kNumFrameworks] = {"none", "numpy", "torch", "cupy",
                                                          "jax",  "jitkernel", "other"};

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

// Per-framework Python callables, looked up on first use.
struct FrameworkCache {
  nb::object stream_getter[kNumFrameworks];
  bool stream_getter_known[kNumFrameworks] = {};
  nb::object converter[kNumFrameworks];
  bool converter_known[kNumFrameworks] = {};
  nb::object torch_capsule_converter;  // DLPack capsule -> torch.Tensor
  nb::object torch_strided;
  nb::object torch_is_neg;  // torch.Tensor.is_neg (unbound)
};

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

FrameworkCache& framework_cache() {
  static auto* cache = new FrameworkCache();
  return *cache;
}

void clear_convert_caches() {
  auto& types = type_cache();
  auto entries = std::move(types);  // releasing may run callbacks that look in the cache
  types.clear();
  for (auto& [tp, info] : entries) release_entry(tp, info);
  framework_cache() = FrameworkCache();
}

std::string python_error_text(nb::python_error& e) {
  std::string name = reinterpret_cast<PyTypeObject*>(e.type().ptr())->tp_name;
  std::string text;
  if (PyObject* str = PyObject_Str(e.value().ptr())) {
    if (const char* c = PyUnicode_AsUTF8(str)) text = c;
    Py_DECREF(str);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text.empty() ? name : name + ": " + text;
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

TypeInfo& classify(nb::handle obj, const char* argument, const ItemRef& where) {
  auto& cache = type_cache();
  auto it = cache.find(Py_TYPE(obj.ptr()));
  if (it != cache.end()) return it->second;
  return classify_new(obj, argument, where);
}

// obj.<name>, or ArgumentTypeError naming `argument` when reading it raises.
// (nanobind's attr() keeps the name's Python string: no string per call.)
nb::object attr_of(nb::handle obj, const char* name, const char* argument, const ItemRef& where) {
  try {
    return obj.attr(name);
  } catch (nb::python_error& e) {
    throw ArgumentTypeError(argument, where.prefix() + "reading its ." + name + " failed (" +
                                          python_error_text(e) + ")");
  }
}

std::string count_noun(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

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
  if (!PyTuple_Check(data.ptr()) || PyTuple_GET_SIZE(data.ptr()) < 1 ||
      int_value(PyTuple_GET_ITEM(data.ptr(), 0), &address) != IntResult::Ok || address < 0)
    throw malformed("'data' must be a (pointer, read_only) tuple");
  v.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
  shape_into(entry("shape"), argument, where, v.shape, "__array_interface__['shape']");
  nb::object strides = entry("strides");
  if (strides.is_none()) {
    v.strides = row_major_strides(v.shape);
    return v;
  }
  if (!(PyTuple_Check(strides.ptr()) || PyList_Check(strides.ptr())) ||
      static_cast<std::size_t>(PySequence_Fast_GET_SIZE(strides.ptr())) != v.shape.size())
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
  if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2) throw ArgumentTypeError(argument, complaint());
  std::int64_t v[2];
  for (Py_ssize_t i = 0; i < 2; ++i) {
    const IntResult r = int_value(PyTuple_GET_ITEM(t, i), &v[i]);
    if (r == IntResult::NotInt) throw ArgumentTypeError(argument, complaint());
    if (r == IntResult::Overflow || v[i] < 0 || v[i] > std::numeric_limits<std::int32_t>::max())
      throw ArgumentError(argument, complaint() + " in 0..2**31-1");
  }
  return {static_cast<int>(v[0]), static_cast<int>(v[1])};
}

// Tensor.is_neg(t), through the cached unbound method (no bound-method object per call).
bool torch_is_neg(nb::handle t) {
  FrameworkCache& fc = framework_cache();
  if (!fc.torch_is_neg.is_valid())
    fc.torch_is_neg = nb::module_::import_("torch").attr("Tensor").attr("is_neg");
  PyObject* r = PyObject_CallOneArg(fc.torch_is_neg.ptr(), t.ptr());
  if (r == nullptr) throw nb::python_error();
  const int truth = PyObject_IsTrue(r);
  Py_DECREF(r);
  if (truth < 0) throw nb::python_error();
  return truth == 1;
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

nb::handle output_converter(Framework fw) {
  FrameworkCache& fc = framework_cache();
  const int i = static_cast<int>(fw);
  if (!fc.converter_known[i]) {
    fc.converter[i] = hook(hooks().output_converter, "output_converter")(kFrameworkNames[i]);
    fc.converter_known[i] = true;
  }
  return fc.converter[i];
}

// torch's importer for a bare capsule (torch._C._from_dlpack when present):
// torch.from_dlpack first probes the capsule for __dlpack__, a failed
// attribute lookup that costs more than the import itself.
nb::handle torch_capsule_converter() {
  FrameworkCache& fc = framework_cache();
  if (!fc.torch_capsule_converter.is_valid())
    fc.torch_capsule_converter =
        hook(hooks().output_converter, "output_converter")("torch_capsule");
  return fc.torch_capsule_converter;
}

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
  switch (info.kind) {
    case Kind::NumpyArray:
      *host_view = numpy_view(item, argument, where);
      borrowed.objects.push_back(nb::borrow(item));  // the view reads its memory
      *is_host = true;
      return Framework::None;
    case Kind::HostArray: {
      nb::object arr;
      try {
        arr = hook(hooks().host_array, "host_array")(item);
      } catch (nb::python_error& e) {
        throw ArgumentTypeError(argument, where.prefix() + "cannot read " + type_text(item) +
                                              " as an array (" + python_error_text(e) + ")");
      }
      *host_view = numpy_view(arr, argument, where);
      borrowed.objects.push_back(std::move(arr));
      *is_host = true;
      return Framework::None;
    }
    case Kind::TorchTensor: {
      // data_ptr() and DLPack (even torch's __dlpack__) both drop the lazy
      // negation of a view like z.conj().imag: its raw memory holds -values.
      if (torch_is_neg(item))
        throw ArgumentError(argument, where.prefix() + "the tensor has its negative bit set (a "
                                                       "lazily negated view such as "
                                                       "z.conj().imag); call .resolve_neg() first");
      // The exchange API describes the tensor in one C call; anything it
      // declines (or a host tensor) takes the attribute / DLPack path below.
      if (info.exchange) {
        dlpack::Tensor dl{};
        if (info.exchange->dltensor_from_py_object_no_sync(item.ptr(), &dl) != 0) {
          PyErr_Clear();
        } else if (dl.device.device_type == dlpack::kCUDA) {
          pending.push_back({index, nb::borrow(item), &info, dl.device.device_id, true, dl});
          return Framework::Torch;
        }
      }
      if (PyObject_IsTrue(nb::object(item.attr("is_cuda")).ptr()) == 1) {
        pending.push_back({index, nb::borrow(item), &info, nb::cast<int>(item.attr("get_device")())});
        return Framework::Torch;
      }
    }
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
    default:
      throw ArgumentTypeError(
          argument, where.prefix() + "expected an array (anything with __dlpack__: PyTorch, "
                                     "CuPy, JAX, jitkernel; or a NumPy array)" +
                        (std::string(argument) == "inputs" ? " or a Python scalar" : "") +
                        ", got " + type_text(item));
  }
}

// Imports a pending device array for a launch on `stream` into `out` (whose
// vectors' capacity is reused). Returns whether the array is read-only.
bool import_pending(const PendingArray& p, std::uintptr_t stream, bool torch_direct,
                    Borrowed& borrowed, const char* argument, const ItemRef& where, ArrayView& out) {
  if (!p.info) {  // jk.Array: order the launch after the stream that produced it
    const PyArray* a = jk_array_ptr(p.obj);
    if (a->stream != stream)
      cuda::stream_wait(a->array.view.device, reinterpret_cast<cuda::CUstream>(stream),
                        reinterpret_cast<cuda::CUstream>(a->stream));
    out = a->array.view;
    return false;
  }
  if (torch_direct && p.info->kind == Kind::TorchTensor) {
    // Complex tensors go through DLPack, which honours their conj bit.
    if (p.has_dltensor && p.dltensor.dtype.code != dlpack::kComplexCode &&
        view_from_dltensor(p.dltensor, out))
      return false;
    if (torch_view(p.obj, p.device, argument, where, &out)) return false;
  }
  ImportedTensor t = dlpack_import(p.obj, *p.info, stream, borrowed, argument, where);
  out = std::move(t.view);
  return t.read_only;
}

// The ArrayView alternative of a reused input slot (keeping its capacity).
ArrayView& array_slot(cuda::KernelInput& slot) {
  if (!std::holds_alternative<ArrayView>(slot)) slot.emplace<ArrayView>();
  return std::get<ArrayView>(slot);
}

}  // namespace

// The exchange API of the first pending torch tensor that came through it.
const dlpack::ExchangeAPI* first_exchange_api(const std::vector<PendingArray>& pending) {
  for (const PendingArray& p : pending)
    if (p.info && p.info->framework == Framework::Torch) return p.has_dltensor ? p.info->exchange : nullptr;
  return nullptr;
}

// ---------------------------------------------------------------------------
// Small parsers.

std::size_t sequence_arg(nb::handle value, const char* argument, const char* expected) {
  if (!value.is_valid() || !(PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())))
    throw ArgumentTypeError(argument, std::string("expected ") + expected + ", got " +
                                          (value.is_valid() ? type_text(value) : "nothing"));
  return static_cast<std::size_t>(PySequence_Fast_GET_SIZE(value.ptr()));
}

IntResult int_value(nb::handle value, std::int64_t* out) {
  PyObject* o = value.ptr();
  if (PyBool_Check(o)) return IntResult::NotInt;
  nb::object index;
  if (!PyLong_Check(o)) {
    // NumPy integers (NumPy bools refuse __index__).
    if (!PyIndex_Check(o)) return IntResult::NotInt;
    PyObject* i = PyNumber_Index(o);
    if (!i) {
      PyErr_Clear();
      return IntResult::NotInt;
    }
    index = nb::steal(i);
    o = i;
  }
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow) return IntResult::Overflow;
  if (x == -1 && PyErr_Occurred()) throw nb::python_error();
  *out = x;
  return IntResult::Ok;
}

Dim3 dim3_arg(nb::handle value, const char* argument) {
  static const char* const expected = "a tuple of 3 positive ints (x, y, z)";
  std::size_t n = sequence_arg(value, argument, expected);
  if (n != 3)
    throw ArgumentError(argument, std::string("expected ") + expected + ", got " +
                                      count_noun(n, "value"));
  std::int64_t v[3];
  for_each_item(value, argument, [&](std::size_t i, nb::handle item) {
    IntResult r = int_value(item, &v[i]);
    if (r == IntResult::NotInt)
      throw ArgumentTypeError(argument, std::string("expected ") + expected + "; entry " +
                                            std::to_string(i) + " is " + type_text(item));
    if (r == IntResult::Overflow || v[i] <= 0)
      throw ArgumentError(argument, std::string("expected ") + expected + "; entry " +
                                        std::to_string(i) + " is " +
                                        repr_text(item));
  });
  return Dim3{v[0], v[1], v[2]};
}

std::vector<std::int64_t> shape_arg(nb::handle value, const char* argument, const ItemRef& where,
                                    const char* attr) {
  std::vector<std::int64_t> shape;
  shape_into(value, argument, where, shape, attr);
  return shape;
}

void shape_into(nb::handle value, const char* argument, const ItemRef& where,
                std::vector<std::int64_t>& shape, const char* attr) {
  if (!(PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())))
    throw ArgumentTypeError(argument, where.prefix() + (attr ? std::string(attr) + " must" : "a shape must") +
                                          " be a tuple or list of non-negative ints, got " +
                                          (attr ? repr_text(value) : type_text(value)));
  auto dim = [&](std::size_t i) {
    return attr ? std::string(attr) + "[" + std::to_string(i) + "]" : "dimension " + std::to_string(i);
  };
  shape.clear();
  std::int64_t total = 1;
  for_each_item(value, argument, [&](std::size_t i, nb::handle item) {
    std::int64_t d = 0;
    IntResult r = int_value(item, &d);
    if (r == IntResult::NotInt)
      throw ArgumentTypeError(argument, where.prefix() + dim(i) + " must be an int, got " +
                                            type_text(item));
    if (r == IntResult::Overflow || d < 0)
      throw ArgumentError(argument, where.prefix() + dim(i) + " is " + repr_text(item) +
                                        "; dimensions must be non-negative ints");
    if (d != 0 && total > std::numeric_limits<std::int64_t>::max() / 16 / d)
      throw ArgumentError(argument, where.prefix() + "the shape has too many elements");
    total *= d;
    shape.push_back(d);
  });
}

std::optional<double> init_value_arg(nb::handle value) {
  if (!value.is_valid() || value.is_none()) return std::nullopt;
  PyObject* o = value.ptr();
  bool real = PyFloat_Check(o) || PyLong_Check(o);  // bool included
  if (!real && !is_jk_array(value) &&
      classify(value, "init_value", ItemRef{}).kind == Kind::NumpyScalar) {
    // NumPy bool/int/float scalars and ml_dtypes floats (kind 'V'), not complex.
    nb::object kind = attr_of(attr_of(value, "dtype", "init_value", ItemRef{}), "kind", "init_value",
                              ItemRef{});
    const char* k = PyUnicode_Check(kind.ptr()) ? PyUnicode_AsUTF8(kind.ptr()) : nullptr;
    if (!k) PyErr_Clear();
    real = k && k[0] != 0 && k[1] == 0 && std::strchr("biufV", k[0]) != nullptr;
  }
  if (!real)
    throw ArgumentTypeError("init_value", "expected a number (the value every output is filled "
                                          "with) or None, got " +
                                              type_text(value));
  double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw ArgumentError("init_value", repr_text(value) +
                                          " cannot be converted to a float");
  }
  return d;
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

bool scalar_value(nb::handle value, bool widen_int, const char* argument, const ItemRef& where,
                  Scalar* out) {
  PyObject* o = value.ptr();
  PyTypeObject* tp = Py_TYPE(o);
  Kind kind;
  if (tp == &PyBool_Type) kind = Kind::Bool;
  else if (tp == &PyLong_Type) kind = Kind::Int;
  else if (tp == &PyFloat_Type) kind = Kind::Float;
  else if (tp == &PyComplex_Type) kind = Kind::Complex;
  else if (is_jk_array(value)) return false;
  else kind = classify(value, argument, where).kind;

  switch (kind) {
    case Kind::Bool:
      *out = Scalar::of<bool>(DType::Bool, PyObject_IsTrue(o) == 1);
      return true;
    case Kind::Int: {
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (x == -1 && PyErr_Occurred()) throw nb::python_error();
      if (overflow)
        throw ArgumentError(argument, where.prefix() + "the integer " +
                                          repr_text(value) +
                                          " does not fit in int64");
      if (x >= std::numeric_limits<std::int32_t>::min() &&
          x <= std::numeric_limits<std::int32_t>::max()) {
        *out = Scalar::of<std::int32_t>(DType::Int32, static_cast<std::int32_t>(x));
      } else if (widen_int) {
        *out = Scalar::of<std::int64_t>(DType::Int64, x);
      } else {
        throw ArgumentError(argument, where.prefix() + "the integer " + std::to_string(x) +
                                          " does not fit in int32 (Python ints pass as int32); "
                                          "pass numpy.int64(" + std::to_string(x) +
                                          ") for a 64-bit parameter");
      }
      return true;
    }
    case Kind::Float: {
      double d = PyFloat_AsDouble(o);
      if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
      *out = Scalar::of<float>(DType::Float32, static_cast<float>(d));
      return true;
    }
    case Kind::Complex: {
      Py_complex c = PyComplex_AsCComplex(o);
      if (c.real == -1.0 && PyErr_Occurred()) throw nb::python_error();
      float parts[2] = {static_cast<float>(c.real), static_cast<float>(c.imag)};
      Scalar s;
      s.dtype = DType::Complex64;
      std::memcpy(s.bytes, parts, sizeof(parts));
      *out = s;
      return true;
    }
    case Kind::NumpyScalar: {
      DType d = dtype_arg(attr_of(value, "dtype", argument, where), argument, where);
      nb::object bytes;
      try {
        bytes = attr_of(value, "tobytes", argument, where)();
      } catch (nb::python_error& e) {
        throw ArgumentTypeError(argument, where.prefix() + "reading the scalar's bytes failed (" +
                                              python_error_text(e) + ")");
      }
      char* data = nullptr;
      Py_ssize_t n = 0;
      if (!PyBytes_Check(bytes.ptr()) || PyBytes_AsStringAndSize(bytes.ptr(), &data, &n) != 0)
        throw ArgumentTypeError(argument, where.prefix() + type_text(value) +
                                              ".tobytes() did not return bytes");
      if (static_cast<std::size_t>(n) != dtype_size(d) || n > 8)
        throw ArgumentTypeError(argument, where.prefix() + "a " + type_text(value) + " scalar of " +
                                              std::to_string(n) + " bytes cannot pass as " +
                                              dtype_name(d));
      Scalar s;
      s.dtype = d;
      std::memcpy(s.bytes, data, static_cast<std::size_t>(n));
      *out = s;
      return true;
    }
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------
// Outputs' dtypes and the signature-only path.

std::vector<DType> output_dtypes_arg(nb::handle output_dtypes,
                                     const std::vector<std::string>* names) {
  std::vector<DType> dtypes;
  output_dtypes_into(output_dtypes, names, dtypes);
  return dtypes;
}

void output_dtypes_into(nb::handle output_dtypes, const std::vector<std::string>* names,
                        std::vector<DType>& dtypes) {
  std::size_t n = sequence_arg(output_dtypes, "output_dtypes", "a list of dtypes, one per output");
  if (names && n != names->size())
    throw ArgumentError("output_dtypes", "expected " + count_noun(names->size(), "dtype") +
                                             " (output_names: " + joined(*names) + "), got " +
                                             std::to_string(n));
  dtypes.clear();
  for_each_item(output_dtypes, "output_dtypes", [&](std::size_t i, nb::handle item) {
    dtypes.push_back(dtype_arg(item, "output_dtypes", ItemRef{"output", i, names}));
  });
}

static std::size_t checked_input_count(nb::handle inputs, const std::vector<std::string>* names) {
  std::size_t n = sequence_arg(inputs, "inputs", "a list of arrays and scalars");
  if (names && n != names->size())
    throw ArgumentError("inputs", "expected " + count_noun(names->size(), "input") +
                                      " (input_names: " + joined(*names) + "), got " +
                                      std::to_string(n));
  return n;
}

std::vector<cuda::KernelInput> describe_inputs(nb::handle inputs,
                                               const std::vector<std::string>* names,
                                               bool widen_int_scalars) {
  checked_input_count(inputs, names);
  std::vector<cuda::KernelInput> out;
  Borrowed borrowed;
  for_each_item(inputs, "inputs", [&](std::size_t i, nb::handle item) {
    ItemRef where{"input", i, names};
    Scalar s;
    if (scalar_value(item, widen_int_scalars, "inputs", where, &s)) {
      out.emplace_back(s);
      return;
    }
    std::vector<PendingArray> pending;
    ArrayView view;
    bool is_host = false;
    classify_array(item, i, "inputs", where, borrowed, pending, &view, &is_host);
    if (!is_host) {
      // Device array: its dtype and shape are all a signature needs.
      const PendingArray& p = pending.back();
      if (!p.info) {
        view = jk_array_ptr(p.obj)->array.view;
      } else if (nb::hasattr(p.obj, "dtype") && nb::hasattr(p.obj, "shape")) {
        view.dtype = dtype_arg(attr_of(p.obj, "dtype", "inputs", where), "inputs", where);
        shape_into(attr_of(p.obj, "shape", "inputs", where), "inputs", where, view.shape, ".shape");
        view.strides = row_major_strides(view.shape);
        view.device = p.device;
      } else {
        view = dlpack_import(p.obj, *p.info, std::nullopt, borrowed, "inputs", where).view;
      }
      view.data = nullptr;
    }
    out.emplace_back(std::move(view));
  });
  return out;
}

ArrayView host_array_view(nb::handle item, const char* argument, const ItemRef& where,
                          Borrowed& borrowed, bool* read_only) {
  std::vector<PendingArray> pending;
  ArrayView view;
  bool is_host = false;
  classify_array(item, 0, argument, where, borrowed, pending, &view, &is_host);
  if (!is_host)
    throw ArgumentTypeError(argument, where.prefix() + "expected an array in CPU memory (NumPy, "
                                                       "PyTorch CPU tensors, ...), got a device "
                                                       "array (" + type_text(item) + ")");
  // NumPy-style arrays say so in flags.writeable; other host arrays count as writable.
  *read_only = false;
  if (PyObject* flags = PyObject_GetAttrString(item.ptr(), "flags")) {
    if (PyObject* writeable = PyObject_GetAttrString(flags, "writeable")) {
      *read_only = PyObject_IsTrue(writeable) == 0;
      Py_DECREF(writeable);
    }
    Py_DECREF(flags);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  return view;
}

// ---------------------------------------------------------------------------
// The whole call.

void convert_call(const CallInputs& in, cuda::CallArguments& args, ConvertedCall& out) {
  const auto* in_names = in.input_names;
  const auto* out_names = in.output_names;
  out.release();
  std::vector<PendingArray>& pending = out.pending;

  // outputs= (imported once the stream is known).
  const bool have_provided = in.outputs.is_valid() && !in.outputs.is_none();
  std::size_t n_provided = 0;
  if (have_provided) {
    n_provided = sequence_arg(in.outputs, "outputs", "a list of device arrays, one per output");
    out.provided_outputs = in.outputs;
  }

  // Output shapes and dtypes (may be omitted when outputs= gives them).
  const bool have_shapes = in.output_shapes.is_valid() && !in.output_shapes.is_none();
  const bool have_dtypes = in.output_dtypes.is_valid() && !in.output_dtypes.is_none();
  if (!have_shapes && !have_provided)
    throw ArgumentTypeError("output_shapes", "required: a list with one shape per output");
  if (!have_dtypes && !have_provided)
    throw ArgumentTypeError("output_dtypes", "required: a list with one dtype per output");
  if (have_shapes) {
    std::size_t n = sequence_arg(in.output_shapes, "output_shapes",
                                 "a list of shapes (tuples of ints), one per output");
    if (out_names && n != out_names->size())
      throw ArgumentError("output_shapes", "expected " + count_noun(out_names->size(), "shape") +
                                               " (output_names: " + joined(*out_names) +
                                               "), got " + std::to_string(n));
    args.output_shapes.resize(n);
    for_each_item(in.output_shapes, "output_shapes", [&](std::size_t i, nb::handle item) {
      shape_into(item, "output_shapes", ItemRef{"output", i, out_names}, args.output_shapes[i]);
    });
  } else {
    args.output_shapes.clear();
  }
  if (have_dtypes) {
    output_dtypes_into(in.output_dtypes, out_names, args.output_dtypes);
  } else {
    args.output_dtypes.clear();
  }
  if (have_shapes && have_dtypes && args.output_shapes.size() != args.output_dtypes.size())
    throw ArgumentError("output_dtypes", "has " + std::to_string(args.output_dtypes.size()) +
                                             " entries but output_shapes has " +
                                             std::to_string(args.output_shapes.size()) +
                                             "; give one shape and one dtype per output");
  const std::size_t n_outputs = have_shapes ? args.output_shapes.size()
                                : have_dtypes ? args.output_dtypes.size()
                                : out_names   ? out_names->size()
                                              : n_provided;
  if (have_provided && n_provided != n_outputs)
    throw ArgumentError("outputs", "expected " + count_noun(n_outputs, "array") +
                                       " (one per output), got " + std::to_string(n_provided));

  args.launch.grid = dim3_arg(in.grid, "grid");
  args.launch.threadgroup = dim3_arg(in.threadgroup, "threadgroup");
  args.init_value = init_value_arg(in.init_value);
  const std::optional<std::uintptr_t> explicit_stream = stream_arg(in.stream);

  // Inputs: scalars and host arrays now, device arrays once the stream is known.
  const std::size_t n_inputs = checked_input_count(in.inputs, in_names);
  args.inputs.resize(n_inputs);
  Framework framework = Framework::None;
  int framework_device = 0;
  for_each_item(in.inputs, "inputs", [&](std::size_t i, nb::handle item) {
    ItemRef where{"input", i, in_names};
    Scalar s;
    if (scalar_value(item, in.widen_int_scalars, "inputs", where, &s)) {
      args.inputs[i] = s;
      return;
    }
    ArrayView host;
    bool is_host = false;
    Framework fw = classify_array(item, i, "inputs", where, out.borrowed, pending, &host, &is_host);
    if (is_host) {
      args.inputs[i] = std::move(host);
      return;
    }
    if (framework == Framework::None) {
      framework = fw;
      framework_device = pending.back().device;
    }
    array_slot(args.inputs[i]);  // filled below
  });

  // The launch stream.
  out.framework = framework;
  nb::object stream_owner;  // a stream object that outputs allocated on it must keep alive
  if (explicit_stream) {
    args.launch.stream = *explicit_stream;
    if (!PyLong_Check(in.stream.ptr())) stream_owner = nb::borrow(in.stream);
  } else if (framework == Framework::Torch || framework == Framework::CuPy) {
    const dlpack::ExchangeAPI* api =
        framework == Framework::Torch ? first_exchange_api(pending) : nullptr;
    void* current = nullptr;
    if (api != nullptr && api->current_work_stream(dlpack::kCUDA, framework_device, &current) == 0) {
      args.launch.stream = reinterpret_cast<std::uintptr_t>(current);
      out.exchange = api;
    } else {
      if (api != nullptr) PyErr_Clear();
      args.launch.stream = framework_current_stream(framework, framework_device, &stream_owner);
    }
    out.stream_is_framework_current = true;
  } else {
    args.launch.stream = 0;
  }
  // Handles 0, 1 and 2 are default streams, which are never destroyed.
  args.launch.stream_keepalive =
      stream_owner.is_valid() && args.launch.stream > 2 ? python_owner(stream_owner) : nullptr;
  const std::uintptr_t stream = args.launch.stream;
  out.stream = stream;
  const bool torch_direct = out.stream_is_framework_current && framework == Framework::Torch;

  for (const PendingArray& p : pending) {
    ItemRef where{"input", p.index, in_names};
    import_pending(p, stream, torch_direct, out.borrowed, "inputs", where,
                   std::get<ArrayView>(args.inputs[p.index]));
  }

  // Caller-provided outputs: device arrays only, writable.
  if (have_provided) {
    args.provided_outputs.resize(n_provided);
    for_each_item(in.outputs, "outputs", [&](std::size_t j, nb::handle item) {
      ItemRef where{"output", j, out_names};
      ArrayView host;
      bool is_host = false;
      if (!is_jk_array(item)) {
        TypeInfo& info = classify(item, "outputs", where);
        if (info.framework == Framework::Jax)
          throw ArgumentError("outputs", where.prefix() + "JAX arrays are immutable and cannot "
                                                          "be written by a kernel; omit outputs= "
                                                          "to get new JAX arrays");
        if (info.kind == Kind::NumpyArray || info.kind == Kind::HostArray)
          throw ArgumentTypeError("outputs", where.prefix() + "outputs= takes CUDA device "
                                                              "arrays, got host memory (" +
                                                                 type_text(item) + ")");
      }
      classify_array(item, j, "outputs", where, out.borrowed, pending, &host, &is_host);
      if (is_host)
        throw ArgumentTypeError("outputs", where.prefix() + "outputs= takes CUDA device arrays, "
                                                            "got host memory (" +
                                                               type_text(item) + ")");
      // The entry stays in `pending` (holding the array) until the launch is enqueued.
      const bool read_only = import_pending(pending.back(), stream, torch_direct, out.borrowed,
                                            "outputs", where, args.provided_outputs[j]);
      if (read_only) throw ArgumentError("outputs", where.prefix() + "the array is read-only");
    });
    if (!have_shapes) {
      args.output_shapes.resize(n_provided);
      for (std::size_t j = 0; j < n_provided; ++j) args.output_shapes[j] = args.provided_outputs[j].shape;
    }
    if (!have_dtypes)
      for (const auto& v : args.provided_outputs) args.output_dtypes.push_back(v.dtype);
  } else {
    args.provided_outputs.clear();
  }
}

nb::list wrap_outputs(std::vector<cuda::OwnedArray>&& results, const ConvertedCall& call) {
  if (call.provided_outputs.is_valid()) {  // the caller's arrays, in a new list
    PyObject* seq = call.provided_outputs.ptr();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    nb::list given = nb::steal<nb::list>(PyList_New(n));
    if (!given.is_valid()) throw nb::python_error();
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
      Py_INCREF(item);
      PyList_SET_ITEM(given.ptr(), i, item);
    }
    return given;
  }
  nb::list out;
  const Framework fw = call.framework;
  nb::handle converter;
  if (fw == Framework::Torch || fw == Framework::CuPy || fw == Framework::Jax)
    converter = output_converter(fw);
  const bool converter_valid = converter.is_valid() && !converter.is_none();
  // Torch on its own current stream: hand over a capsule (no stream ordering
  // needed, skipping the protocol's round trips). Otherwise the framework
  // calls jk.Array.__dlpack__ with its stream, which orders it after ours.
  const bool capsule_direct = fw == Framework::Torch && call.stream_is_framework_current;
  if (converter_valid && capsule_direct) converter = torch_capsule_converter();
  if (capsule_direct && call.exchange != nullptr) {
    // Straight into torch tensors through its exchange API (no capsule, no Python call).
    for (auto& r : results) {
      dlpack::ManagedTensorVersioned* managed = export_managed(r);
      void* tensor = nullptr;
      // The callee owns `managed` from here, whatever it returns.
      if (call.exchange->managed_tensor_to_py_object_no_sync(managed, &tensor) != 0 || !tensor) {
        if (!PyErr_Occurred())
          PyErr_SetString(PyExc_RuntimeError, "torch's DLPack exchange API could not wrap an output");
        throw nb::python_error();
      }
      out.append(nb::steal(static_cast<PyObject*>(tensor)));
    }
    return out;
  }
  for (auto& r : results) {
    if (converter_valid && capsule_direct) {
      out.append(converter(export_capsule(r, false)));
      continue;
    }
    nb::object arr = nb::cast(PyArray{std::move(r), call.stream});
    out.append(converter_valid ? converter(arr) : arr);
  }
  return out;
}

void raise_sequence_changed(const char* argument) {
  throw ArgumentError(argument, "the list changed while jitkernel was reading it (a method of one "
                                "of its items changed it); pass a list that stays as it is "
                                "during the call");
}

std::string type_text(nb::handle obj) {
  PyTypeObject* tp = Py_TYPE(obj.ptr());
  auto text_attr = [&](const char* name) {
    std::string out;
    if (PyObject* v = PyObject_GetAttrString(reinterpret_cast<PyObject*>(tp), name)) {
      if (PyUnicode_Check(v))
        if (const char* c = PyUnicode_AsUTF8(v)) out = c;
      Py_DECREF(v);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    return out;
  };
  std::string qual = text_attr("__qualname__");
  if (qual.empty()) qual = tp->tp_name;
  std::string mod = text_attr("__module__");
  return mod.empty() || mod == "builtins" ? qual : mod + "." + qual;
}

std::string repr_text(nb::handle obj) {
  std::string out;
  if (PyObject* r = PyObject_Repr(obj.ptr())) {
    if (const char* c = PyUnicode_AsUTF8(r)) out = c;
    Py_DECREF(r);
  }
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return "<" + type_text(obj) + " object>";
  }
  return out.size() > 200 ? out.substr(0, 200) + "..." : out;
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
