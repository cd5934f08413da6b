// NVRTC compilation of generated kernels to a cubin (or PTX) for one exact
// architecture. Works without a GPU. Compile errors become CompileError with
// the log mapped back to the user's lines.
#pragma once

#include <string>
#include <vector>

#include "jitkernel/codegen/cuda_signature.hpp"

namespace jk::cuda {

enum class CompileTarget { Cubin, Ptx };

// `arch` is "sm_90a", "sm_80", ... Returns the binary (cubin bytes or PTX text).
std::string compile_kernel(const GeneratedKernel& kernel, const std::string& arch,
                           CompileTarget target = CompileTarget::Cubin);

// The name NVRTC compiles `kernel` under (its __FILE__): kernel.program_name,
// else "<entry name>.cu".
std::string nvrtc_program_name(const GeneratedKernel& kernel);

// Compiles arbitrary standalone source (compile_cuda, builtin helper kernels).
std::string compile_source(const std::string& source, const std::string& program_name,
                           const std::string& arch, CompileTarget target = CompileTarget::Cubin,
                           const CudaCompileOptions& options = {});

// The NVRTC options for compiling `source` (the single source of truth, also
// for cache keys): the architecture, the language standard, the user's and
// the configured -I folders, the user's compile options (validated here:
// ArgumentError naming the option) and --minimal when the source fits it
// (fits_minimal_builtins). Does not load
// NVRTC (a disk-cache hit must not pay for that); a compile with an NVRTC
// older than 12.4, which lacks --minimal, leaves it out (cache keys tell
// NVRTC builds apart anyway).
std::vector<std::string> compile_options(const std::string& arch, CompileTarget target,
                                         const std::string& source,
                                         const CudaCompileOptions& options = {});
// The same options for a generated kernel's source (with its
// kernel.options), with --minimal decided by the generator
// (kernel.fits_minimal) instead of a scan of the whole file.
std::vector<std::string> compile_options(const std::string& arch, CompileTarget target,
                                         const GeneratedKernel& kernel);

// compile_options() less the toolkit's -I folders: what a machine without
// the toolkit can compute (the serving key, cache/serving_alias.hpp).
std::vector<std::string> portable_compile_options(const std::string& arch, CompileTarget target,
                                                  const std::string& source, const CudaCompileOptions& options);
std::vector<std::string> portable_compile_options(const std::string& arch, CompileTarget target,
                                                  const GeneratedKernel& kernel);

}  // namespace jk::cuda
