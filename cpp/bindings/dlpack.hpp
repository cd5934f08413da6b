// DLPack on the C++ side: the structs of the DLPack specification come from
// the official dlpack.h, vendored unmodified in cpp/third_party/dlpack/
// (DLPack 1.3; its README says where it came from), and are given short names
// here; importing a producer's capsule into an ArrayView that stays valid
// while a DLPackImport owns it, and exporting jitkernel device arrays as
// capsules whose deleter keeps the device buffer alive.
#pragma once

#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "dlpack/dlpack.h"
#include "jitkernel/core/array_view.hpp"
#include "jitkernel/cuda/memory/memory.hpp"

namespace jk::py {
namespace dlpack {

// Short names for what the binding files use of the vendored header.
// The device types jitkernel tells apart (DLDeviceType).
inline constexpr DLDeviceType kCPU = kDLCPU;
inline constexpr DLDeviceType kCUDA = kDLCUDA;
inline constexpr DLDeviceType kCUDAHost = kDLCUDAHost;
inline constexpr DLDeviceType kROCM = kDLROCM;
inline constexpr DLDeviceType kCUDAManaged = kDLCUDAManaged;

using Tensor = DLTensor;
using ManagedTensor = DLManagedTensor;                    // capsule "dltensor"
using ManagedTensorVersioned = DLManagedTensorVersioned;  // capsule "dltensor_versioned" (DLPack >= 1.0)
inline constexpr std::uint64_t kFlagReadOnly = DLPACK_FLAG_BITMASK_READ_ONLY;
inline constexpr std::uint8_t kComplexCode = kDLComplex;  // DLDataType::code of complex types

// The C exchange API of DLPack >= 1.2: a function table a producer type
// offers as `type.__dlpack_c_exchange_api__` (a capsule named
// "dlpack_exchange_api"), converting its tensors to and from DLPack without
// Python calls.
using ExchangeAPI = DLPackExchangeAPI;

// The `stream` value to pass to a producer's __dlpack__ for a CUstream handle:
// the legacy default stream (handle 0) is spelled 1, as the spec asks.
inline std::intptr_t stream_argument(std::uintptr_t stream) {
  return stream == 0 ? 1 : static_cast<std::intptr_t>(stream);
}

}  // namespace dlpack

// Owns one consumed DLPack tensor: its capsule has been renamed
// "used_dltensor[_versioned]" and the producer's deleter runs when this is
// destroyed (callers destroy it after the launch has been enqueued).
class DLPackImport {
 public:
  DLPackImport() = default;
  ~DLPackImport() { reset(); }
  DLPackImport(DLPackImport&& o) noexcept : managed_(o.managed_), versioned_(o.versioned_) {
    o.managed_ = nullptr;
  }
  DLPackImport& operator=(DLPackImport&& o) noexcept;
  DLPackImport(const DLPackImport&) = delete;
  DLPackImport& operator=(const DLPackImport&) = delete;

  void reset();
  void adopt(void* managed, bool versioned) {
    reset();
    managed_ = managed;
    versioned_ = versioned;
  }

 private:
  void* managed_ = nullptr;
  bool versioned_ = false;
};

struct ImportedTensor {
  ArrayView view;            // device: CUDA ordinal, or kHostDevice for host memory
  bool read_only = false;    // only known for versioned capsules
};

// Takes the tensor out of a capsule returned by __dlpack__ (into `owner`) and
// describes it. Errors (unsupported dtype/device, bad capsule) are
// jk::ArgumentError/ArgumentTypeError naming `argument` and `where`.
ImportedTensor import_capsule(nb::handle capsule, DLPackImport& owner, const char* argument,
                              const ItemRef& where);

// The exchange API `type` offers, or null when it offers none jitkernel can use
// (absent, another major version, or missing the functions the launch path
// calls). Never raises.
const dlpack::ExchangeAPI* exchange_api_of(nb::handle type);

// `t` as an ArrayView when it is a CUDA device array of a dtype jitkernel
// supports, with a valid shape (the view's vectors are reused); else false.
bool view_from_dltensor(const dlpack::Tensor& t, ArrayView& view);

// An owning versioned DLPack tensor exporting `array` (a device array
// jitkernel owns): its deleter releases the buffer. For an exchange API's
// managed_tensor_to_py_object_no_sync, which takes ownership.
dlpack::ManagedTensorVersioned* export_managed(const OwnedArray& array);

// A new capsule ("dltensor", or "dltensor_versioned" when `versioned`) that
// exports `array` (a device array jitkernel owns). The capsule's manager
// holds a reference to the buffer until the consumer's deleter runs.
nb::object export_capsule(const OwnedArray& array, bool versioned);

}  // namespace jk::py
