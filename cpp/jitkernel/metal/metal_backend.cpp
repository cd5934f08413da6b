// The Metal backend (engine/backend.hpp). Built on every OS: code
// generation (codegen/metal_signature) and the checks that need no GPU run
// anywhere, so metal_kernel(...).source(...) and argument errors work on
// Linux too; compiling and launching go to the Metal runtime (runtime.hpp),
// which only Apple builds have (JITKERNEL_HAVE_METAL). Elsewhere they throw
// MetalNotAvailable.
#include <cstdint>
#include <limits>
#include <exception>
#include <string>

#include "jitkernel/codegen/metal_signature.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/engine/backend.hpp"
#ifdef JITKERNEL_HAVE_METAL
#include "jitkernel/metal/runtime.hpp"
#endif

namespace jk::metal {
namespace {

constexpr const char* kNotBuilt =
    "Metal kernels need macOS on Apple silicon (this jitkernel was built without its Metal backend); "
    "metal_kernel(...) and kernel.source(...) work everywhere, calling a kernel does not";

#ifdef JITKERNEL_HAVE_METAL
bool runtime_available(std::string* reason) {
  try {
    return metal::available(reason);
  } catch (const std::exception& e) {
    if (reason != nullptr) *reason = e.what();
    return false;
  }
}
void require_runtime() {
  std::string reason;
  if (!runtime_available(&reason)) throw MetalNotAvailable(reason);
}
#else
bool runtime_available(std::string* reason) {
  if (reason != nullptr) *reason = kNotBuilt;
  return false;
}
[[noreturn]] void require_runtime() { throw MetalNotAvailable(kNotBuilt); }
#endif

class MetalBackend final : public Backend {
 public:
  const char* name() const override { return "metal"; }
  bool available(std::string* reason) const override { return runtime_available(reason); }
  void validate_spec(const KernelSpec& spec) const override { codegen::validate_metal_kernel_spec(spec); }
  bool size_changes_code() const override { return true; }  // small inputs are `constant`
  GeneratedKernel generate(const KernelSpec& spec, const CallSignature& signature) const override {
    return codegen::generate_metal_kernel(spec, signature);
  }

  std::string misplaced_output(std::size_t index, const ArrayView& output) const override {
    if (output.device == kHostDevice) return {};
    return item_text("outputs", index) + " is in CUDA device memory; Metal kernels write arrays in CPU memory "
                                         "(NumPy, PyTorch CPU tensors, ...)";
  }

  // Apple GPUs read CPU memory; thread_position_in_grid is a uint3.
  int resolve_device(const KernelCall& call) const override {
    constexpr std::int64_t kMaxGrid = std::numeric_limits<std::uint32_t>::max();
    const Dim3& g = call.launch.grid;
    if (g.x > kMaxGrid || g.y > kMaxGrid || g.z > kMaxGrid) {
      throw ArgumentError("grid", dims_text(g) + " exceeds Metal's " + std::to_string(kMaxGrid) +
                                      " threads per dimension (thread_position_in_grid is a uint3)");
    }
    for (std::size_t i = 0; i < call.inputs.size(); ++i) {
      const auto* a = std::get_if<ArrayView>(&call.inputs[i]);
      if (a != nullptr && a->device != kHostDevice) {
        throw ArgumentError("inputs", item_text("inputs", i) + " is in CUDA device memory (cuda:" +
                                          std::to_string(a->device) +
                                          "); Metal kernels take arrays in CPU memory (NumPy, PyTorch CPU "
                                          "tensors, ...)");
      }
    }
    return 0;  // the system's default Metal device
  }

#ifdef JITKERNEL_HAVE_METAL
  CompiledKernel compile_or_load(const KernelSpec& spec, const GeneratedKernel& kernel, int) const override {
    require_runtime();
    return CompiledKernel{compile_pipeline(spec, kernel)};
  }
  std::vector<OwnedArray> launch(const KernelSpec& spec, const GeneratedKernel& kernel, CompiledKernel compiled,
                                 const KernelCall& call, const LaunchConfig&, int) const override {
    return metal::launch(spec, kernel, compiled.handle, call);
  }
  OwnedArray allocate(int, DType dtype, const std::vector<std::int64_t>& shape, std::uintptr_t) const override {
    require_runtime();
    return allocate_shared(dtype, shape);
  }
#else
  CompiledKernel compile_or_load(const KernelSpec&, const GeneratedKernel&, int) const override {
    require_runtime();
  }
  std::vector<OwnedArray> launch(const KernelSpec&, const GeneratedKernel&, CompiledKernel, const KernelCall&,
                                 const LaunchConfig&, int) const override {
    require_runtime();
  }
  OwnedArray allocate(int, DType, const std::vector<std::int64_t>&, std::uintptr_t) const override {
    require_runtime();
  }
#endif
};

}  // namespace
}  // namespace jk::metal

namespace jk {

const Backend& metal_backend() {
  static const metal::MetalBackend backend;
  return backend;
}

}  // namespace jk
