// CudaKernel: the C++ cuda_kernel. Each kernel object caches launch plans keyed
// by a compact binary signature of the call (input kinds/dtypes/ndims, output
// dtypes, template args): a repeated call builds that key in a reused
// thread-local buffer, does one hash lookup, reads the device's CUfunction
// from the plan, packs the parameters on the stack and launches. Codegen runs
// once per signature; NVRTC once per distinct source text and architecture
// (module_cache); module loads once per binary and device.
#include "jitkernel/cuda/cuda_kernel.hpp"

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "jitkernel/core/blocking.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/hash.hpp"
#include "jitkernel/cuda/binary/module_loader.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/nvrtc/compile_cache.hpp"
#include "jitkernel/cuda/param_pack.hpp"

namespace jk::cuda {
namespace {

// Devices whose CUfunction a plan keeps inline; calls on higher ordinals
// still work, through the (locked) module cache.
constexpr int kPlanDevices = 32;

struct Plan {
  Plan(std::string k, GeneratedKernel generated) : key(std::move(k)), kernel(std::move(generated)) {
    for (auto& f : functions) f.store(nullptr, std::memory_order_relaxed);
  }
  const std::string key;  // build_key() of the calls it serves
  const GeneratedKernel kernel;
  std::atomic<CUfunction> functions[kPlanDevices];
};

template <typename T>
void append_raw(std::string& key, T value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Everything describe_call() captures, as bytes.
void build_key(std::string& key, const KernelCall& call) {
  key.clear();
  append_raw<std::uint32_t>(key, static_cast<std::uint32_t>(call.args.inputs.size()));
  for (const KernelInput& input : call.args.inputs) {
    if (const auto* array = std::get_if<ArrayView>(&input)) {
      key.push_back('a');
      key.push_back(static_cast<char>(array->dtype));
      append_raw<std::int32_t>(key, array->ndim());
    } else {
      key.push_back('s');
      key.push_back(static_cast<char>(std::get<Scalar>(input).dtype));
    }
  }
  append_raw<std::uint32_t>(key, static_cast<std::uint32_t>(call.args.output_dtypes.size()));
  for (DType dtype : call.args.output_dtypes) key.push_back(static_cast<char>(dtype));
  append_raw<std::uint32_t>(key, static_cast<std::uint32_t>(call.template_args.size()));
  for (const TemplateArg& t : call.template_args) {
    key.push_back(static_cast<char>(t.kind));
    append_raw<std::uint32_t>(key, static_cast<std::uint32_t>(t.name.size()));
    key += t.name;
    if (t.kind == TemplateArg::Kind::DType) {
      key.push_back(static_cast<char>(t.dtype));
    } else {
      append_raw<std::int64_t>(key, t.int_value);
    }
  }
}

[[noreturn]] void internal_error(const std::string& what) {
  throw Error("internal error: generated parameter layout does not match the call (" + what + ")");
}

const ArrayView* array_at(const PreparedCall& call, int index) {
  if (index < 0 || index >= static_cast<int>(call.input_count())) internal_error("input index");
  return call.input_array(static_cast<std::size_t>(index));
}

// Packs the parameters in the order codegen declared them.
void pack_params(const GeneratedKernel& kernel, const PreparedCall& call, ParamPack& pack) {
  for (const ParamSlot& slot : kernel.params) {
    switch (slot.kind) {
      case ParamKind::InputPointer: {
        const ArrayView* array = array_at(call, slot.index);
        if (array == nullptr) internal_error("pointer slot for a scalar");
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
      case ParamKind::OutputPointer: {
        if (slot.index < 0 || slot.index >= static_cast<int>(call.output_count())) {
          internal_error("output index");
        }
        void* data = call.output(static_cast<std::size_t>(slot.index)).data;
        pack.add(data);
        break;
      }
    }
  }
}

}  // namespace

struct CudaKernel::Impl {
  explicit Impl(CudaKernelSpec s) : spec(std::move(s)) {}

  // The plan for `key`: the one used last when the key matches (a compare,
  // no lock: plans live as long as the kernel), else a locked hash lookup.
  Plan* find(const std::string& key) {
    Plan* last = last_used.load(std::memory_order_acquire);
    if (last != nullptr && last->key == key) return last;
    Plan* found = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = plans.find(key);
      if (it != plans.end()) found = it->second.get();
    }
    if (found != nullptr) last_used.store(found, std::memory_order_release);
    return found;
  }

  Plan* add(const std::string& key, GeneratedKernel kernel) {
    auto plan = std::make_unique<Plan>(key, std::move(kernel));
    Plan* added = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      added = plans.try_emplace(key, std::move(plan)).first->second.get();  // first insert wins
    }
    last_used.store(added, std::memory_order_release);
    return added;
  }

  // The plan's function on `device`: compiled (content-cached) and loaded on first use.
  static CUfunction function_for(Plan& plan, int device) {
    if (device >= 0 && device < kPlanDevices) {
      if (CUfunction f = plan.functions[device].load(std::memory_order_acquire)) return f;
    }
    // First use on this device: compile (or find the cubin) and load it with
    // the caller's runtime stepped aside (the GIL released). Two threads may
    // both get here for one plan: both compile, the binary cache and the module
    // cache keep one result, and both store the same function.
    CUfunction f = nullptr;
    {
      BlockingSection unlocked;
      auto cubin = compile_kernel_cached(plan.kernel, device_info(device).arch);
      f = get_function(load_module(device, *cubin), plan.kernel.entry_name);
    }
    if (device >= 0 && device < kPlanDevices) plan.functions[device].store(f, std::memory_order_release);
    return f;
  }

  const CudaKernelSpec spec;
  std::mutex mutex;
  std::unordered_map<std::string, std::unique_ptr<Plan>, StringHash> plans;
  std::atomic<Plan*> last_used{nullptr};
};

CallSignature describe_call(const std::vector<KernelInput>& inputs,
                            const std::vector<DType>& output_dtypes,
                            const std::vector<TemplateArg>& template_args) {
  CallSignature signature;
  signature.inputs.reserve(inputs.size());
  for (const KernelInput& input : inputs) {
    InputSignature s;
    if (const auto* array = std::get_if<ArrayView>(&input)) {
      s.dtype = array->dtype;
      s.ndim = array->ndim();
    } else {
      s.is_scalar = true;
      s.dtype = std::get<Scalar>(input).dtype;
    }
    signature.inputs.push_back(s);
  }
  signature.output_dtypes = output_dtypes;
  signature.template_args = template_args;
  return signature;
}

CudaKernel::CudaKernel(CudaKernelSpec spec) {
  validate_cuda_kernel_spec(spec);
  impl_ = std::make_unique<Impl>(std::move(spec));
}

CudaKernel::~CudaKernel() = default;
CudaKernel::CudaKernel(CudaKernel&&) noexcept = default;

const CudaKernelSpec& CudaKernel::spec() const { return impl_->spec; }

GeneratedKernel CudaKernel::generate(const CallSignature& signature) const {
  return generate_cuda_kernel(impl_->spec, signature);
}

std::string CudaKernel::compile(const CallSignature& signature, const std::string& arch,
                                CompileTarget target) const {
  return compile_kernel_persistent(generate(signature), arch, target);
}

std::vector<OwnedArray> CudaKernel::operator()(const KernelCall& call) {
  Impl& impl = *impl_;
  thread_local std::string key;
  build_key(key, call);
  Plan* plan = impl.find(key);
  if (plan == nullptr) {
    // Codegen validates the signature (counts, dtypes, template args) before
    // any GPU work.
    plan = impl.add(key, generate_cuda_kernel(impl.spec, describe_call(call.args.inputs,
                                                                       call.args.output_dtypes,
                                                                       call.template_args)));
  }
  const LaunchConfig& given = call.args.launch;
  LaunchConfig spec_memory;  // the launch with the spec's shared_memory (only built when it differs)
  const LaunchConfig* launch = &given;
  if (!call.shared_memory_given && given.shared_memory != impl.spec.shared_memory) {
    spec_memory = given;
    spec_memory.shared_memory = impl.spec.shared_memory;
    launch = &spec_memory;
  }
  // Compile and load before prepare_call, so that a CompileError leaves
  // nothing enqueued (outputs= untouched by init_value).
  const int device = validate_call(call.args, *launch);
  DeviceGuard guard(device);
  CUfunction function = Impl::function_for(*plan, device);
  PreparedCall prepared = prepare_call(call.args, *launch, impl.spec.ensure_row_contiguous, device);
  ParamPack pack;
  pack_params(plan->kernel, prepared, pack);
  launch_function(function, plan->kernel.entry_name.c_str(), prepared, launch->shared_memory, pack.pointers());
  return std::move(prepared.outputs);
}

}  // namespace jk::cuda
