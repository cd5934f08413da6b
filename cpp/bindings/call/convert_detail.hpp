// What the stages of the argument conversion share (convert.cpp and the
// files named by stage: type_table, call_arguments, array_import, streams,
// array_export). Internal: other binding files include convert.hpp only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "call/convert.hpp"
#include "call/framework_table.hpp"

namespace jk::py {

// ---------------------------------------------------------------------------
// The type table (type_table.cpp).

// What a Python type is, decided once per type from the type object itself
// (its MRO, module and the framework types it is or derives from).

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
  CudaArrayInterface,  // __cuda_array_interface__ only (Numba, PyCUDA): cuda_array_interface.cpp
  Traced,       // a torch.Tensor subclass (FakeTensor, FunctionalTensor, ...) or a JAX tracer
};

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

// The frameworks' own Python functions the stages call, looked up (in
// sys.modules, never imported) on first use and kept until exit.
struct FrameworkCache {
  // The types each row of the framework table names (framework_table.hpp).
  struct Types {
    nb::object scalar, host_array, tensor[2], tracer;
  } types[kNumFrameworks];
  nb::object numpy_asarray;
  nb::object torch_current_stream;  // torch._C._cuda_getCurrentRawStream, or None: torch.cuda.current_stream
  nb::object cupy_current_stream;   // cupy.cuda.get_current_stream
  nb::object converter[kNumFrameworks];          // jk.Array -> the framework's array (from_dlpack)
  nb::object capsule_converter[kNumFrameworks];  // DLPack capsule -> the framework's array
  nb::object torch_strided;
  nb::object torch_is_neg;  // torch.Tensor.is_neg (unbound)
  // Output allocation (output_allocation.cpp): torch.empty, cupy.ndarray, and
  // each dtype as the framework spells it (None: the framework lacks it).
  nb::object torch_empty, cupy_ndarray, cupy_get_device;
  nb::object torch_dtype[kNumDTypes], cupy_dtype[kNumDTypes];
};
FrameworkCache& framework_cache();

// Tensor.is_neg(t): a lazily negated view, whose raw memory holds -values (array_import.cpp).
bool torch_is_neg(nb::handle t);

// getattr(obj, name) when present; nullopt on AttributeError (as hasattr
// answers), other errors raised as nb::python_error.
std::optional<nb::object> optional_attr(nb::handle obj, const char* name);

// The module `name` when it is loaded (sys.modules), else an invalid object.
nb::object loaded_module(const char* name);

// What objects of obj's type are (the type's cache entry, made on first sight).
TypeInfo& classify(nb::handle obj, const char* argument, const ItemRef& where);

// ---------------------------------------------------------------------------
// Messages (call_arguments.cpp).

// "Type: text" of a Python exception, shortened; clears any error it raises.
std::string python_error_text(nb::python_error& e);
// obj.<name>, or ArgumentTypeError naming `argument` when reading it raises.
nb::object attr_of(nb::handle obj, const char* name, const char* argument, const ItemRef& where);
std::string count_noun(std::size_t n, const char* noun);    // "3 inputs"
std::string joined(const std::vector<std::string>& names);  // "a, b, c"

// ---------------------------------------------------------------------------
// Array import (array_import.cpp).

// Consumes the DLPack export of `obj` (ordered on `stream` for device arrays).
ImportedTensor dlpack_import(nb::handle obj, TypeInfo& info, std::optional<std::uintptr_t> stream,
                             Borrowed& borrowed, const char* argument, const ItemRef& where);
// Host arrays are viewed at once, device arrays recorded in `pending`; returns
// the framework of a device array, Framework::None for host arrays.
Framework classify_array(nb::handle item, std::size_t index, const char* argument,
                         const ItemRef& where, Borrowed& borrowed, std::vector<PendingArray>& pending,
                         ArrayView* host_view, bool* is_host);
// Imports a pending device array for a launch on `stream`; returns whether it is read-only.
bool import_pending(const PendingArray& p, std::uintptr_t stream, bool direct_read,
                    Borrowed& borrowed, const char* argument, const ItemRef& where, ArrayView& out);
// Memory::Host calls: the ArgumentTypeError for a device array, and whether a
// host array is read-only (flags.writeable False, as NumPy says).
[[noreturn]] void refuse_device_array(nb::handle item, const char* argument, const ItemRef& where);
bool host_read_only(nb::handle item);

// ---------------------------------------------------------------------------
// __cuda_array_interface__ (cuda_array_interface.cpp).

struct CaiArray {
  ArrayView view;  // device not set
  bool read_only = false;
  std::optional<std::uintptr_t> stream;  // version 3: the producer's stream, when it gave one
};
// Reads and validates obj.__cuda_array_interface__ (no CUDA call): typed
// errors naming `argument` for a bad version, typestr, data, shape, strides
// or stream, and for a mask.
CaiArray cai_read(nb::handle obj, const char* argument, const ItemRef& where);
// Validates it (read-only refused for outputs=) and returns the device its
// pointer lives on (ArgumentError when it is not device memory).
int cai_classify(nb::handle obj, const char* argument, const ItemRef& where);
// Reads it again for a launch on `stream` on `device`, making that stream wait
// for the producer's; returns whether it is read-only.
bool cai_import(nb::handle obj, int device, std::uintptr_t stream, const char* argument, const ItemRef& where,
                ArrayView& out);

// ---------------------------------------------------------------------------
// Streams (streams.cpp).

// A strong reference to a Python object as an opaque owner the core can hold.
std::shared_ptr<void> python_owner(nb::handle obj);
// The framework whose stream objects come from the package `root` (its row), or null.
const FrameworkRow* stream_framework(const std::string& root);
// The framework's current stream on `device`; `*owner` keeps a stream object alive.
std::uintptr_t framework_current_stream(Framework fw, int device, nb::object* owner);
// The exchange API of the first pending array of `fw`, when it came through it.
const dlpack::ExchangeAPI* first_exchange_api(const std::vector<PendingArray>& pending, Framework fw);

// ---------------------------------------------------------------------------
// Array export (array_export.cpp).

// ml_dtypes.bfloat16, the dtype of bfloat16 NumPy outputs (ArgumentError
// naming output_dtypes when ml_dtypes is not installed).
nb::object bfloat16_numpy_dtype();

// ---------------------------------------------------------------------------
// Output allocation (output_allocation.cpp).

// Allocates a call's outputs (no `outputs=` given) with the allocator of the
// inputs' framework on the launch stream: torch's caching allocator, CuPy's
// current allocator. They become args.provided_outputs (the engine then
// allocates nothing) and out.allocated (what wrap_outputs returns). Leaves
// both empty where jitkernel's own pool serves instead: jk.Array, NumPy, JAX
// and other inputs, and dtypes the framework lacks. `stream` is the call's
// stream= argument; `device` the inputs' device.
void allocate_framework_outputs(nb::handle stream, int device, KernelCall& args, ConvertedCall& out);

}  // namespace jk::py
