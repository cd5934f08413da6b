// The one interface between the engine and a GPU backend: generate,
// compile-or-load, launch, allocate. cuda/cuda_backend.cpp and
// metal/metal_backend.cpp implement it; the engine (engine/kernel.cpp) drives every
// call through it, so plan caching and argument validation exist once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jitkernel/engine/call_signature.hpp"
#include "jitkernel/engine/compiled_kernel.hpp"
#include "jitkernel/engine/generated_kernel.hpp"
#include "jitkernel/engine/kernel_call.hpp"
#include "jitkernel/engine/kernel_spec.hpp"

namespace jk {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "cuda" / "metal"
  // Whether kernels can run here (a driver and a device); never throws.
  // When not, and `reason` is given, it receives why.
  virtual bool available(std::string* reason = nullptr) const = 0;

  // ArgumentError naming the argument for names the backend's language
  // reserves, duplicates, a missing output, ...
  virtual void validate_spec(const KernelSpec& spec) const = 0;
  // Whether the generated code depends on InputSignature::small().
  virtual bool size_changes_code() const = 0;
  // The complete source for one signature (validates the signature:
  // counts, dtypes, template arguments). Pure text.
  virtual GeneratedKernel generate(const KernelSpec& spec, const CallSignature& signature) const = 0;

  // Where the call's memory must be (checked by validate_call, before any
  // GPU work): for outputs= entries, the backend's message when entry
  // `index` is in the wrong memory; empty when it is fine.
  virtual std::string misplaced_output(std::size_t index, const ArrayView& output) const = 0;
  // The backend's own checks of a call validate_call accepted (memory of
  // inputs, grid limits, mixed devices); returns the device it runs on.
  virtual int resolve_device(const KernelCall& call) const = 0;

  // Compiles (through the caches) and loads the kernel for `device`.
  virtual CompiledKernel compile_or_load(const KernelSpec& spec, const GeneratedKernel& kernel,
                                         int device) const = 0;
  // Brings inputs where the kernel reads them, allocates (or takes) outputs,
  // fills init_value, binds the parameters in `kernel.params` order and
  // launches with `launch` (the call's, with the spec's shared memory when
  // the call gave none). Returns the outputs it allocated, in order; empty
  // when the call provided them.
  virtual std::vector<OwnedArray> launch(const KernelSpec& spec, const GeneratedKernel& kernel,
                                         CompiledKernel compiled, const KernelCall& call,
                                         const LaunchConfig& launch, int device) const = 0;
  // A row-contiguous array on `device`, ordered on `stream` where the
  // backend has streams.
  virtual OwnedArray allocate(int device, DType dtype, const std::vector<std::int64_t>& shape,
                              std::uintptr_t stream) const = 0;
};

// The backends. The Metal one generates code everywhere; on builds without
// the Metal runtime (everything but macOS) its compile and launch throw
// BackendNotAvailable.
const Backend& cuda_backend();
const Backend& metal_backend();

}  // namespace jk
