// Output allocation: the outputs of a call without `outputs=` come from the
// allocator of the framework that owns its inputs, so that the framework
// counts, caches and reuses that memory (torch.cuda.memory_allocated, CUDA
// graph pools, CuPy's memory pool) instead of competing with jitkernel's own
// pool. torch: its DLPack exchange API's allocator (torch >= 2.10), else
// torch.empty; CuPy: cupy.ndarray (its current allocator). Each allocates on
// the framework's current stream, so when the launch stream is another one
// it is made current around the allocation: the memory is then ordered on
// the stream that writes it, as a framework op run under that stream would
// be. See docs/allocation.md.
#include <cstdint>
#include <string>
#include <utility>

#include "call/convert_detail.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"

namespace jk::py {
namespace {

nb::object shape_tuple(const std::vector<std::int64_t>& shape) {
  nb::object t = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(shape.size())));
  if (!t.is_valid()) throw nb::python_error();
  for (std::size_t i = 0; i < shape.size(); ++i) {
    PyObject* d = PyLong_FromLongLong(shape[i]);
    if (d == nullptr) throw nb::python_error();
    if (api::tuple_fill(t.ptr(), static_cast<Py_ssize_t>(i), d) != 0) throw nb::python_error();
  }
  return t;
}

// A dense row-major view of new memory at `data`.
void dense_view(void* data, DType dtype, const std::vector<std::int64_t>& shape, int device,
                ArrayView& view) {
  view.data = data;
  view.dtype = dtype;
  view.device = device;
  view.shape = shape;
  view.strides = row_major_strides(shape);
}

// Enters a framework's stream context (`with obj:`) for the allocations of
// one call and leaves it when destroyed, even when an allocation raised.
class StreamScope {
 public:
  StreamScope() = default;
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;
  void enter(nb::object context) {
    context.attr("__enter__")();
    context_ = std::move(context);
  }
  ~StreamScope() {
    if (!context_.is_valid()) return;
    // An error already being raised (a C++ exception holding a fetched
    // Python error) is not disturbed by one from __exit__.
    PyObject* r = PyObject_CallMethod(context_.ptr(), "__exit__", "OOO", Py_None, Py_None, Py_None);
    if (r == nullptr) PyErr_Clear();
    Py_XDECREF(r);
  }

 private:
  nb::object context_;
};

// True when `obj`'s type comes from a package of `fw`'s stream objects.
bool stream_object_of(nb::handle obj, Framework fw) {
  std::optional<nb::object> module = optional_attr(obj.type(), "__module__");
  if (!module || !PyUnicode_Check(module->ptr())) return false;
  std::string name = nb::cast<std::string>(*module);
  return stream_framework(name.substr(0, name.find('.'))) == &framework_row(fw);
}

// ---------------------------------------------------------------------------
// torch.

// The exchange API the inputs came through, else torch.Tensor's (a first
// tensor read another way); null on torch < 2.10 or without an allocator entry.
const dlpack::ExchangeAPI* torch_allocator_api(const ConvertedCall& out) {
  static const dlpack::ExchangeAPI* tensor_api = nullptr;
  static bool looked = false;
  const dlpack::ExchangeAPI* api = first_exchange_api(out.pending, Framework::Torch);
  if (api == nullptr) {
    if (!looked) {
      nb::object torch = loaded_module("torch");
      if (torch.is_valid()) tensor_api = exchange_api_of(torch.attr("Tensor"));
      looked = true;
    }
    api = tensor_api;
  }
  return api != nullptr && api->managed_tensor_allocator != nullptr ? api : nullptr;
}

// The torch stream object for the launch stream: the stream= object itself
// when it is a torch stream, torch's default stream for the legacy default
// stream handles (0, 1), else a torch.cuda.ExternalStream over the handle.
nb::object torch_stream_object(nb::handle given, std::uintptr_t handle, int device) {
  nb::object cuda = loaded_module("torch").attr("cuda");
  if (given.is_valid() && !given.is_none() && !PyLong_Check(given.ptr()) &&
      PyObject_IsInstance(given.ptr(), nb::object(cuda.attr("Stream")).ptr()) == 1)
    return nb::borrow(given);
  if (PyErr_Occurred()) PyErr_Clear();
  if (handle <= 1) return cuda.attr("default_stream")(device);
  using namespace nb::literals;
  return cuda.attr("ExternalStream")(handle, "device"_a = device);
}

void set_allocation_error(void* ctx, const char* kind, const char* message) {
  *static_cast<std::string*>(ctx) = std::string(kind ? kind : "") + ": " + (message ? message : "");
}

// One tensor through the exchange API's allocator; invalid when it declined.
nb::object torch_allocate_c(const dlpack::ExchangeAPI& api, DType dtype,
                            const std::vector<std::int64_t>& shape, int device, ArrayView& view) {
  dlpack::Tensor prototype{};
  prototype.device = {dlpack::kCUDA, device};
  prototype.ndim = static_cast<std::int32_t>(shape.size());
  const DTypeInfo& info = dtype_info(dtype);
  prototype.dtype = {info.dlpack_code, info.dlpack_bits, 1};
  prototype.shape = const_cast<std::int64_t*>(shape.data());
  dlpack::ManagedTensorVersioned* managed = nullptr;
  std::string error;  // torch's message, unused: torch.empty raises its own error
  if (api.managed_tensor_allocator(&prototype, &managed, &error, &set_allocation_error) != 0 ||
      managed == nullptr) {
    if (PyErr_Occurred()) PyErr_Clear();
    return nb::object();
  }
  const dlpack::Tensor& t = managed->dl_tensor;
  const bool as_asked = view_from_dltensor(t, view) && view.dtype == dtype && view.shape == shape &&
                        view.device == device && view.row_contiguous();
  void* tensor = nullptr;
  // The callee owns `managed` from here, whatever it returns.
  if (api.managed_tensor_to_py_object_no_sync(managed, &tensor) != 0 || tensor == nullptr) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_RuntimeError, "torch's DLPack exchange API could not wrap an output");
    throw nb::python_error();
  }
  nb::object result = nb::steal(static_cast<PyObject*>(tensor));
  return as_asked ? result : nb::object();
}

// One tensor through torch.empty (torch < 2.10, or what the C allocator declined).
nb::object torch_allocate_py(DType dtype, const std::vector<std::int64_t>& shape, int device,
                             ArrayView& view) {
  FrameworkCache& fc = framework_cache();
  nb::object torch = loaded_module("torch");
  if (!fc.torch_empty.is_valid()) fc.torch_empty = torch.attr("empty");
  nb::object& torch_dtype = fc.torch_dtype[static_cast<int>(dtype)];
  if (!torch_dtype.is_valid()) torch_dtype = torch.attr(dtype_name(dtype));
  using namespace nb::literals;
  nb::object t = fc.torch_empty(shape_tuple(shape), "dtype"_a = torch_dtype, "device"_a = device);
  dense_view(reinterpret_cast<void*>(nb::cast<std::uintptr_t>(t.attr("data_ptr")())), dtype, shape,
             device, view);
  return t;
}

}  // namespace

void allocate_torch_outputs(nb::handle stream, int device, KernelCall& args, ConvertedCall& out) {
  const dlpack::ExchangeAPI* api = torch_allocator_api(out);
  StreamScope scope;
  if (!out.stream_is_framework_current) {
    // An explicit stream=: torch's current one already, or made current for the allocation.
    void* current = nullptr;
    std::uintptr_t torch_current = 0;
    if (api != nullptr && api->current_work_stream(dlpack::kCUDA, device, &current) == 0) {
      torch_current = reinterpret_cast<std::uintptr_t>(current);
    } else {
      if (PyErr_Occurred()) PyErr_Clear();
      nb::object unused;
      torch_current = torch_current_stream(device, &unused);
    }
    if (torch_current != out.stream) {
      nb::object stream_object = torch_stream_object(stream, out.stream, device);
      scope.enter(loaded_module("torch").attr("cuda").attr("stream")(stream_object));
    }
  }
  const std::size_t n = args.output_dtypes.size();
  args.provided_outputs.resize(n);
  out.allocated.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    nb::object t;
    if (api != nullptr)
      t = torch_allocate_c(*api, args.output_dtypes[i], args.output_shapes[i], device,
                           args.provided_outputs[i]);
    if (!t.is_valid())
      t = torch_allocate_py(args.output_dtypes[i], args.output_shapes[i], device, args.provided_outputs[i]);
    out.allocated.push_back(std::move(t));
  }
  args.outputs_allocated = true;
}

// ---------------------------------------------------------------------------
// CuPy.

namespace {

// The dtype as CuPy takes it (a NumPy dtype), or None when NumPy or CuPy lacks it.
nb::handle cupy_dtype(DType dtype) {
  FrameworkCache& fc = framework_cache();
  nb::object& d = fc.cupy_dtype[static_cast<int>(dtype)];
  if (!d.is_valid()) {
    try {
      d = nb::module_::import_("numpy").attr("dtype")(dtype_name(dtype));
    } catch (nb::python_error&) {
      d = nb::none();  // e.g. bfloat16 without ml_dtypes
    }
  }
  return d;
}

// The CuPy stream object for the launch stream (as torch_stream_object).
nb::object cupy_stream_object(nb::handle given, std::uintptr_t handle, int device) {
  if (given.is_valid() && !given.is_none() && !PyLong_Check(given.ptr()) &&
      stream_object_of(given, Framework::CuPy) && nb::hasattr(given, "__enter__"))
    return nb::borrow(given);
  nb::object cuda = loaded_module("cupy").attr("cuda");
  if (handle <= 1) return cuda.attr("Stream").attr("null");
  if (handle == 2) return cuda.attr("Stream").attr("ptds");
  return cuda.attr("ExternalStream")(handle, device);
}

}  // namespace

void allocate_cupy_outputs(nb::handle stream, int device, KernelCall& args, ConvertedCall& out) {
  const std::size_t n = args.output_dtypes.size();
  for (std::size_t i = 0; i < n; ++i)
    if (cupy_dtype(args.output_dtypes[i]).is_none()) return;  // jitkernel's pool serves the call
  FrameworkCache& fc = framework_cache();
  nb::object cupy = loaded_module("cupy");
  if (!fc.cupy_ndarray.is_valid()) {
    fc.cupy_ndarray = cupy.attr("ndarray");
    fc.cupy_get_device = cupy.attr("cuda").attr("runtime").attr("getDevice");
  }
  // CuPy allocates on its current device and that device's current stream.
  StreamScope device_scope, stream_scope;
  if (nb::cast<int>(fc.cupy_get_device()) != device)
    device_scope.enter(cupy.attr("cuda").attr("Device")(device));
  nb::object current;
  if (!out.stream_is_framework_current &&
      cupy_current_stream(device, &current) != out.stream)
    stream_scope.enter(cupy_stream_object(stream, out.stream, device));
  args.provided_outputs.resize(n);
  out.allocated.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const DType dtype = args.output_dtypes[i];
    nb::object a;
    try {
      a = fc.cupy_ndarray(shape_tuple(args.output_shapes[i]), cupy_dtype(dtype));
    } catch (nb::python_error& e) {
      // A dtype NumPy has but CuPy refuses: remembered, and jitkernel's pool serves.
      if (!e.matches(PyExc_TypeError) && !e.matches(PyExc_ValueError)) throw;
      fc.cupy_dtype[static_cast<int>(dtype)] = nb::none();
      args.provided_outputs.clear();
      out.allocated.clear();
      return;
    }
    const auto data = nb::cast<std::uintptr_t>(a.attr("data").attr("ptr"));
    dense_view(reinterpret_cast<void*>(data), dtype, args.output_shapes[i], device, args.provided_outputs[i]);
    out.allocated.push_back(std::move(a));
  }
  args.outputs_allocated = true;
}

void allocate_framework_outputs(nb::handle stream, int device, KernelCall& args, ConvertedCall& out) {
  out.allocated.clear();
  args.provided_outputs.clear();
  args.outputs_allocated = false;
  // Without a usable GPU the launch fails with CudaNotAvailable: allocate nothing first.
  if (args.output_dtypes.empty() || !cuda::cuda_available()) return;
  const FrameworkRow& row = framework_row(out.framework);
  if (row.allocate_outputs != nullptr) row.allocate_outputs(stream, device, args, out);
}

}  // namespace jk::py
