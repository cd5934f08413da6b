// Process-wide caches of compiled code, shared by cuda_kernel and
// precompiled_cuda_kernel:
//  - cubins compiled from generated kernels, keyed by their full content
//    (cache/compile_key.hpp: source text, options, architecture, NVRTC
//    build, the files it can #include, jitkernel version), so kernels with
//    identical text compile once; in memory for the process and on disk
//    (cache/disk_cache.hpp) across processes;
//  - modules loaded per (binary content, device), so an image is loaded once
//    per device however many kernels or calls use it.
// Entries live for the life of the process. All functions are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "jitkernel/cache/compile_key.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/cuda/compiler.hpp"
#include "jitkernel/cuda/driver_api.hpp"
#include "jitkernel/cuda/toolkit/toolkit_paths.hpp"

namespace jk::cuda {

// The cubin of `kernel` for `arch`: from memory, else from the disk cache,
// else compiled with NVRTC (and stored on disk). Throws CompileError
// (nothing is cached then, so the library stays usable).
std::shared_ptr<const std::string> compile_kernel_cached(const GeneratedKernel& kernel,
                                                         const std::string& arch);

// The disk cache, else NVRTC (storing the result on disk); no memory cache:
// for kernel.compile(), compile_cuda and the builtin kernels, whose callers
// keep the bytes. Same errors as compile_kernel / compile_source.
std::string compile_kernel_persistent(const GeneratedKernel& kernel, const std::string& arch,
                                      CompileTarget target);
std::string compile_source_persistent(const std::string& source, const std::string& program_name,
                                      const std::string& arch, CompileTarget target);

// The disk cache key of compiling `source` as `program_name` with the
// current toolkit (cache/compile_key.hpp): compile_options(), the NVRTC
// library's identity and the files the source can #include among the rest
// (not_covered says when those cannot be known: no disk cache then). Throws
// ArgumentError for a bad `arch`, CudaNotAvailable when NVRTC cannot be
// loaded (the options depend on its version).
cache::CompileKey compile_key(const std::string& source, const std::string& program_name,
                          const std::string& arch, CompileTarget target);
// The key of a generated kernel (what compile_kernel_cached and
// compile_kernel_persistent use): its source under its program name, with
// the options compile_options(arch, target, kernel) gives.
cache::CompileKey compile_key(const GeneratedKernel& kernel, const std::string& arch,
                          CompileTarget target);

// The identity of the NVRTC library compiles use (part of compile_key): the
// ELF build-id of the configured file (or, for a soname, of the file the
// loader mapped) and of its preloads; memoized per configuration.
std::string compiler_identity();

// compiler_identity() of `paths` read from the files they name, without
// loading anything (a few small reads of ELF headers); "" when the library
// is named by a soname or its file cannot be read.
std::string library_identity(const ToolkitPaths& paths);

// Makes compiler_identity() answer `identity` for `paths` without reading
// the files: for a toolkit record (toolkit_record.hpp) that computed it with
// library_identity() and has checked since that the files are unchanged.
void remember_compiler_identity(const ToolkitPaths& paths, std::string identity);

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
