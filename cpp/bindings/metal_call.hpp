// The hook between the metal_kernel binding (metal.cpp: argument checks and
// code generation, on every OS) and the Metal runtime (Apple only): a
// validated call, and the two functions the runtime provides. Builds without
// the Metal backend (JITKERNEL_HAVE_METAL undefined, i.e. everything but
// macOS) use metal.cpp's stand-ins, which report Metal as unavailable.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "bindings.hpp"
#include "jitkernel/codegen/metal_signature.hpp"
#include "jitkernel/core/array_view.hpp"

namespace jk::py {

// One metal_kernel call, checked (everything but the arrays' memory) and
// with its source generated. The Python handles are borrowed from the call.
struct MetalCall {
  const codegen::MetalKernelSpec* spec;
  codegen::GeneratedMetalKernel kernel;  // bind buffers from kernel.bindings
  nb::handle inputs;   // list of the input arrays / scalars, in input_names order
  std::vector<codegen::MetalInputDescription> input_descriptions;  // dtype, shape per input
  std::vector<std::vector<std::int64_t>> output_shapes;
  std::vector<DType> output_dtypes;
  nb::handle outputs;  // the caller's outputs= list (one array per output), or null
  Dim3 grid;           // in threads (dispatchThreads)
  Dim3 threadgroup;
  std::optional<double> init_value;
};

#ifdef JITKERNEL_HAVE_METAL
// Provided by the Metal runtime's binding (Apple only).
// True when a Metal device can be used (never raises).
bool metal_runtime_available();
// Launches `call`, waits for it, and returns the outputs as a list.
nb::object launch_metal(const MetalCall& call);
#endif

}  // namespace jk::py
