// Process-wide caches of compiled code, shared by cuda_kernel and
// precompiled_cuda_kernel:
//  - cubins compiled from generated kernels, keyed by their full content
//    (source text, options, architecture, NVRTC version, jitkernel version),
//    so kernels with identical text compile once;
//  - modules loaded per (binary content, device), so an image is loaded once
//    per device however many kernels or calls use it.
// Entries live for the life of the process. All functions are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/cuda/driver_api.hpp"

namespace jk::cuda {

// The cubin of `kernel` for `arch`, compiled on first request. Throws
// CompileError (nothing is cached then, so the library stays usable).
std::shared_ptr<const std::string> compile_kernel_cached(const GeneratedKernel& kernel,
                                                         const std::string& arch);

// Loads `image` (cubin, fatbin, or PTX text with or without a trailing NUL)
// on `device`, once per (hash of the bytes, size, device). Throws CudaError
// whose code() is the driver's (e.g. CUDA_ERROR_NO_BINARY_FOR_GPU,
// CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_INVALID_IMAGE) and whose
// message includes the driver's JIT log when there is one.
CUmodule load_module(int device, const std::string& image);

// The entry point `name` of a loaded module. Throws CudaError with code
// CUDA_ERROR_NOT_FOUND when the module has no such entry point.
CUfunction get_function(CUmodule module, const std::string& name);

}  // namespace jk::cuda
