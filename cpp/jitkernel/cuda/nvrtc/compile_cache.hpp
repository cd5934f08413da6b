// Process-wide caching of NVRTC compiles, for cuda_kernel, compile_cuda and
// the builtin kernels: cubins compiled from generated kernels, keyed by
// their full content (cache/compile_key.hpp lists the fields; this side fills
// them), so kernels with identical text compile once; in memory for the
// process and on disk (cache/disk_cache.hpp) across processes. Entries live
// for the life of the process. All functions are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "jitkernel/cache/compile_key.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/cuda/nvrtc/compile.hpp"

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
                                      const std::string& arch, CompileTarget target,
                                      const CudaCompileOptions& options = {});

// The disk cache key of compiling `source` as `program_name` with the
// current toolkit and `options`: compile_options(), the NVRTC library's
// identity (compiler_identity.hpp) and the user's and configured -I
// folders, hashed with the
// files the source can #include among the rest (not_covered says when those
// cannot be known: no disk cache then). Throws ArgumentError for a bad
// `arch`, CudaNotAvailable when NVRTC cannot be loaded (the options depend on
// its version).
cache::CompileKey compile_key(const std::string& source, const std::string& program_name,
                              const std::string& arch, CompileTarget target,
                              const CudaCompileOptions& options = {});
// The key of a generated kernel (what compile_kernel_cached and
// compile_kernel_persistent use): its source under its program name, with
// the options compile_options(arch, target, kernel) gives.
cache::CompileKey compile_key(const GeneratedKernel& kernel, const std::string& arch,
                              CompileTarget target);

}  // namespace jk::cuda
