// Compiled Metal code, cached for the life of the process: one MTL::Library
// per distinct (full source text, math mode) and one compute pipeline per
// kernel function in it. Kernels whose generated text is identical compile
// once; a changed header, body, template value or dtype is a new text, so a
// stale library is never reused.
#pragma once

#include "jitkernel/codegen/metal_signature.hpp"
#include "jitkernel/metal/device.hpp"

namespace jk::metal {

// The pipeline of kernel.entry_name in kernel.source compiled with
// `math_mode`, compiled on first request (the GIL is released meanwhile).
// Throws CompileError with Metal's log mapped to the user's lines when the
// source does not compile or link; nothing is cached then. Thread-safe; the
// pipeline lives as long as the process.
MTL::ComputePipelineState* kernel_pipeline(const MetalDevice& device,
                                           const GeneratedKernel& kernel,
                                           MetalMathMode math_mode);

}  // namespace jk::metal
