// Device arrays that offer only __cuda_array_interface__ (Numba, PyCUDA,
// older libraries; versions 2 and 3): read into an ArrayView on the same
// footing as a DLPack import. The dict is validated before any CUDA call (so
// a malformed one is an error even without a GPU); the producer's stream
// (version 3) is waited on by the launch stream, as the protocol asks.
#include <cstring>
#include <string>

#include "call/convert_detail.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"
#include "jitkernel/cuda/memory/memory.hpp"

namespace jk::py {
namespace {

// The DType of a NumPy typestr such as "<f4" or "|b1"; ArgumentTypeError otherwise.
DType typestr_dtype(nb::handle value, const char* argument, const ItemRef& where) {
  const char* text = PyUnicode_Check(value.ptr()) ? api::utf8(value.ptr()) : nullptr;
  if (text == nullptr) PyErr_Clear();
  const std::string ts = text ? text : "";
  auto bad = [&](const std::string& why) {
    return ArgumentTypeError(argument, where.prefix() + "its __cuda_array_interface__ typestr " +
                                           repr_text(value) + " " + why);
  };
  if (ts.size() < 3 || std::strchr("<>|=", ts[0]) == nullptr) throw bad("is not a NumPy typestr such as '<f4'");
  const std::string digits = ts.substr(2);
  if (digits.find_first_not_of("0123456789") != std::string::npos) throw bad("is not a NumPy typestr such as '<f4'");
  const int size = std::stoi(digits);
  if (ts[0] == '>' && size > 1) throw bad("is big-endian; GPUs read little-endian data");
  const char kinds[] = {'i', 'u', 'f', 'V', 'c', 'x', 'b'};  // by DLPack type code
  for (int d = 0; d < kNumDTypes; ++d) {
    const DTypeInfo& info = dtype_info(static_cast<DType>(d));
    if (info.size == size && info.dlpack_code < sizeof(kinds) && kinds[info.dlpack_code] == ts[1] &&
        static_cast<DType>(d) != DType::BFloat16)
      return static_cast<DType>(d);
  }
  throw bad("names no dtype jitkernel supports (bool, int8-64, uint8-64, float16/32/64, complex64)");
}

}  // namespace

CaiArray cai_read(nb::handle obj, const char* argument, const ItemRef& where) {
  nb::object cai = attr_of(obj, "__cuda_array_interface__", argument, where);
  auto malformed = [&](const std::string& what) {
    return ArgumentTypeError(argument, where.prefix() + "its __cuda_array_interface__ is malformed (" + what + ")");
  };
  if (!PyDict_Check(cai.ptr())) throw malformed("expected a dict, got " + type_text(cai));
  auto entry = [&](const char* key) {
    PyObject* e = PyDict_GetItemString(cai.ptr(), key);
    return e ? nb::borrow(e) : nb::object();
  };
  CaiArray out;
  std::int64_t version = 0;
  nb::object v = entry("version");
  if (!v.is_valid() || int_value(v, &version) != IntResult::Ok) throw malformed("'version' must be an int");
  if (version < 2 || version > 3)
    throw ArgumentError(argument, where.prefix() + "its __cuda_array_interface__ has version " +
                                      std::to_string(version) + "; jitkernel reads versions 2 and 3");
  nb::object mask = entry("mask");
  if (mask.is_valid() && !mask.is_none())
    throw ArgumentError(argument, where.prefix() + "its __cuda_array_interface__ has a mask; masked arrays are "
                                                   "not supported: pass the data without a mask");
  ArrayView& view = out.view;
  view.dtype = typestr_dtype(entry("typestr"), argument, where);
  nb::object data = entry("data");
  std::int64_t address = 0;
  if (!data.is_valid() || !PyTuple_Check(data.ptr()) || api::tuple_size(data.ptr()) != 2 ||
      int_value(api::tuple_item(data.ptr(), 0), &address) != IntResult::Ok || address < 0)
    throw malformed("'data' must be a (pointer, read_only) tuple");
  view.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
  out.read_only = PyObject_IsTrue(api::tuple_item(data.ptr(), 1)) == 1;
  nb::object shape = entry("shape");
  if (!shape.is_valid()) throw malformed("'shape' is missing");
  shape_into(shape, argument, where, view.shape, "__cuda_array_interface__['shape']");
  nb::object strides = entry("strides");
  view.strides.clear();
  if (!strides.is_valid() || strides.is_none()) {
    view.strides = row_major_strides(view.shape);
  } else {
    if (!(PyTuple_Check(strides.ptr()) || PyList_Check(strides.ptr())) ||
        static_cast<std::size_t>(api::seq_size(strides.ptr())) != view.shape.size())
      throw malformed("'strides' must be None or one int per dimension");
    const auto itemsize = static_cast<std::int64_t>(dtype_size(view.dtype));
    for_each_item(strides, argument, [&](std::size_t, nb::handle s) {
      std::int64_t bytes = 0;
      if (int_value(s, &bytes) != IntResult::Ok) throw malformed("'strides' must be ints");
      if (bytes % itemsize != 0) throw malformed("'strides' are not multiples of the itemsize");
      view.strides.push_back(bytes / itemsize);
    });
  }
  nb::object stream = entry("stream");
  if (version >= 3 && stream.is_valid() && !stream.is_none()) {
    std::int64_t handle = 0;
    if (int_value(stream, &handle) != IntResult::Ok || handle < 0) throw malformed("'stream' must be None or an int");
    if (handle == 0)
      throw malformed("'stream' is 0, which the protocol disallows (ambiguous): the producer must give 1 for "
                      "the legacy default stream");
    out.stream = static_cast<std::uintptr_t>(handle);
  }
  return out;
}

int cai_classify(nb::handle obj, const char* argument, const ItemRef& where) {
  const CaiArray array = cai_read(obj, argument, where);  // validated before any CUDA call
  if (array.read_only && std::string(argument) == "outputs")
    throw ArgumentError(argument, where.prefix() + "the array is read-only (its __cuda_array_interface__ "
                                                   "data flag says so)");
  const cuda::DriverApi& api = cuda::driver();
  if (array.view.data == nullptr) return 0;  // zero-size arrays may give 0
  int ordinal = -1;
  const cuda::CUresult r = api.cuPointerGetAttribute(&ordinal, cuda::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                                     reinterpret_cast<cuda::CUdeviceptr>(array.view.data));
  if (r != cuda::CUDA_SUCCESS || ordinal < 0)
    throw ArgumentError(argument, where.prefix() + "its __cuda_array_interface__ pointer is not CUDA device "
                                                   "memory (" + cuda::describe_result(r) + ")");
  return ordinal;
}

bool cai_import(nb::handle obj, int device, std::uintptr_t stream, const char* argument, const ItemRef& where,
                ArrayView& out) {
  CaiArray a = cai_read(obj, argument, where);
  if (a.stream && *a.stream != stream)
    cuda::stream_wait(device, reinterpret_cast<cuda::CUstream>(stream), reinterpret_cast<cuda::CUstream>(*a.stream));
  a.view.device = device;
  out = std::move(a.view);
  return a.read_only;
}

}  // namespace jk::py
