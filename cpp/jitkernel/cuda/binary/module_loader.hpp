// Loading compiled binaries (cubin, fatbin, PTX) into the driver as modules,
// shared by cuda_kernel and precompiled_cuda_kernel: one module per (binary
// content, device), so an image is loaded once per device however many
// kernels or calls use it. Modules stay loaded for the life of the process.
// Thread-safe.
#pragma once

#include <string>

#include "jitkernel/cuda/driver/driver_api.hpp"

namespace jk::cuda {

// Loads `image` (cubin, fatbin, or PTX text with or without a trailing NUL)
// on `device`, once per (SHA-256 of the bytes, device). Throws CudaError
// whose code() is the driver's (e.g. CUDA_ERROR_NO_BINARY_FOR_GPU,
// CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_INVALID_IMAGE) and whose
// message includes the driver's JIT log when there is one.
CUmodule load_module(int device, const std::string& image);

// The entry point `name` of a loaded module. Throws CudaError with code
// CUDA_ERROR_NOT_FOUND when the module has no such entry point.
CUfunction get_function(CUmodule module, const std::string& name);

}  // namespace jk::cuda
