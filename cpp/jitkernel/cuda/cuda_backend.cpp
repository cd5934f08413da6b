// The CUDA backend (engine/backend.hpp): codegen by codegen/cuda_signature,
// compile-or-load through the content-keyed binary and module caches
// (module_cache.hpp), and the launch: prepare the call (launch.hpp), pack the
// parameters on the stack in the order codegen declared them, and
// cuLaunchKernelEx. Nothing here synchronises, but for checked kernels
// (checked_launch.hpp), a debug mode that waits for each launch.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/core/blocking.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"
#include "jitkernel/cuda/launch/checked_launch.hpp"
#include "jitkernel/cuda/launch/launch.hpp"
#include "jitkernel/cuda/nvrtc/compile_cache.hpp"
#include "jitkernel/cuda/binary/module_loader.hpp"
#include "jitkernel/cuda/launch/param_pack.hpp"
#include "jitkernel/engine/backend.hpp"

namespace jk::cuda {
namespace {

[[noreturn]] void internal_error(const std::string& what) {
  throw Error("internal error: generated parameter layout does not match the call (" + what + ")");
}

const ArrayView* array_at(const PreparedCall& call, int index) {
  if (index < 0 || index >= static_cast<int>(call.input_count())) internal_error("input index");
  return call.input_array(static_cast<std::size_t>(index));
}

// jitkernel::checked_ptr<T> (codegen/checked_accessors.cpp): the element
// offsets a strided view may reach are [lo, hi); a row-contiguous array's
// are [0, size).
struct CheckedArg {
  void* base;
  void* ptr;
  long long lo;
  long long hi;
  int id;
  int pad;
};
static_assert(sizeof(CheckedArg) == 40, "CheckedArg must match jitkernel::checked_ptr");

CheckedArg checked_arg(const ArrayView& a, int id) {
  CheckedArg arg{a.data, a.data, 0, 0, id, 0};
  if (a.size() == 0) return arg;
  arg.hi = 1;
  for (int d = 0; d < a.ndim(); ++d) {
    const long long reach = (a.shape[d] - 1) * a.strides[d];
    (reach < 0 ? arg.lo : arg.hi) += reach;
  }
  return arg;
}

// Which outputs checked mode poisons: those allocated for this call, unless init_value fills them.
std::vector<const ArrayView*> poisoned_outputs(const KernelCall& call, const PreparedCall& prepared) {
  std::vector<const ArrayView*> out;
  if (call.init_value || (!call.provided_outputs.empty() && !call.outputs_allocated)) return out;
  for (std::size_t i = 0; i < prepared.output_count(); ++i) out.push_back(&prepared.output(i));
  return out;
}

// Packs the parameters in the order codegen declared them.
void pack_params(const GeneratedKernel& kernel, const PreparedCall& call, ParamPack& pack) {
  for (const ParamSlot& slot : kernel.params) {
    switch (slot.kind) {
      case ParamKind::InputData: {
        const ArrayView* array = array_at(call, slot.index);
        if (array == nullptr) internal_error("pointer slot for a scalar");
        if (kernel.options.checked) {
          pack.add(checked_arg(*array, slot.index));
          break;
        }
        void* data = array->data;
        pack.add(data);
        break;
      }
      case ParamKind::InputScalar: {
        if (slot.index < 0 || slot.index >= static_cast<int>(call.input_count())) {
          internal_error("input index");
        }
        const Scalar* scalar = call.input_scalar(static_cast<std::size_t>(slot.index));
        if (scalar == nullptr) internal_error("scalar slot for an array");
        const std::size_t size = dtype_size(scalar->dtype);
        pack.add_bytes(scalar->bytes, size, size);
        break;
      }
      case ParamKind::InputShape: {
        std::int32_t shape[kMaxNdim] = {};
        if (const ArrayView* array = array_at(call, slot.index)) {
          if (array->ndim() > kMaxNdim) internal_error("shape of more than kMaxNdim dims");
          for (int d = 0; d < array->ndim(); ++d) {
            if (array->shape[d] > std::numeric_limits<std::int32_t>::max()) {
              throw ArgumentError("inputs", "inputs[" + std::to_string(slot.index) + "] has " +
                                                std::to_string(array->shape[d]) + " elements in dimension " +
                                                std::to_string(d) + ", more than the int32 shape kernels "
                                                "receive can hold");
            }
            shape[d] = static_cast<std::int32_t>(array->shape[d]);
          }
        }
        pack.add(shape);
        break;
      }
      case ParamKind::InputStrides: {
        std::int64_t strides[kMaxNdim] = {};
        if (const ArrayView* array = array_at(call, slot.index)) {
          if (array->ndim() > kMaxNdim) internal_error("strides of more than kMaxNdim dims");
          for (int d = 0; d < array->ndim(); ++d) strides[d] = array->strides[d];
        }
        pack.add(strides);
        break;
      }
      case ParamKind::InputNdim: {
        const ArrayView* array = array_at(call, slot.index);
        int ndim = array ? array->ndim() : 0;
        pack.add(ndim);
        break;
      }
      case ParamKind::OutputData: {
        if (slot.index < 0 || slot.index >= static_cast<int>(call.output_count())) {
          internal_error("output index");
        }
        const ArrayView& out = call.output(static_cast<std::size_t>(slot.index));
        if (kernel.options.checked) {
          pack.add(checked_arg(out, static_cast<int>(call.input_count()) + slot.index));
          break;
        }
        void* data = out.data;
        pack.add(data);
        break;
      }
    }
  }
}

class CudaBackend final : public Backend {
 public:
  const char* name() const override { return "cuda"; }
  bool available(std::string* reason) const override {
    if (cuda_available() && device_count() > 0) return true;
    if (reason != nullptr) *reason = "no CUDA driver or no CUDA device on this machine";
    return false;
  }
  void validate_spec(const KernelSpec& spec) const override { codegen::validate_cuda_kernel_spec(spec); }
  bool size_changes_code() const override { return false; }
  GeneratedKernel generate(const KernelSpec& spec, const CallSignature& signature) const override {
    return codegen::generate_cuda_kernel(spec, signature);
  }

  std::string misplaced_output(std::size_t index, const ArrayView& output) const override {
    if (output.device != kHostDevice) return {};
    return "outputs[" + std::to_string(index) + "] is a host array; kernels write device memory: pass "
           "a CUDA array (PyTorch, CuPy, JAX, jitkernel.Array)";
  }
  int resolve_device(const KernelCall& call) const override { return cuda::resolve_device(call); }

  // First use of a plan on a device: compile (or find the cubin) and load it
  // with the caller's runtime stepped aside (the GIL released). Two threads
  // may both get here for one plan: both compile, the binary and module
  // caches keep one result, and both get the same function.
  CompiledKernel compile_or_load(const KernelSpec&, const GeneratedKernel& kernel, int device) const override {
    DeviceGuard guard(device);
    BlockingSection unlocked;
    auto cubin = compile_kernel_cached(kernel, device_info(device).arch);
    return CompiledKernel{get_function(load_module(device, *cubin), kernel.entry_name)};
  }

  std::vector<OwnedArray> launch(const KernelSpec& spec, const GeneratedKernel& kernel, CompiledKernel compiled,
                                 const KernelCall& call, const LaunchConfig& launch,
                                 int device) const override {
    DeviceGuard guard(device);
    PreparedCall prepared = prepare_call(call, launch, spec.ensure_row_contiguous, device);
    prepared.cooperative = prepared.cooperative || kernel.grid_sync;
    ParamPack pack;
    pack_params(kernel, prepared, pack);
    const auto function = static_cast<CUfunction>(compiled.handle);
    std::vector<const ArrayView*> poisoned;
    std::optional<CheckedLaunchLock> serial;  // until the launch's report is read
    if (kernel.options.checked) {
      serial.emplace(function);
      poisoned = poisoned_outputs(call, prepared);
      checked_before_launch(function, prepared, poisoned);
    }
    launch_function(function, kernel.entry_name.c_str(), prepared, launch.shared_memory, pack.pointers());
    if (kernel.options.checked) checked_after_launch(function, spec, prepared, poisoned);
    return std::move(prepared.outputs);
  }

  OwnedArray allocate(int device, DType dtype, const std::vector<std::int64_t>& shape,
                      std::uintptr_t stream) const override {
    DeviceGuard guard(device);
    return allocate_array(device, dtype, shape, reinterpret_cast<CUstream>(stream));
  }
};

}  // namespace
}  // namespace jk::cuda

namespace jk {

const Backend& cuda_backend() {
  static const cuda::CudaBackend backend;
  return backend;
}

}  // namespace jk
