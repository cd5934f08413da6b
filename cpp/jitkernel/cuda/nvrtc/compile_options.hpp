// The user's compile options (KernelSpec's CudaCompileOptions) as NVRTC
// flags, checked before NVRTC runs: define names are C identifiers, include
// folders exist, and extra flags come from an allowlist of NVRTC's documented
// options ("Supported Compile Options" of the NVRTC user guide), leaving out
// those jitkernel sets itself (architecture, language standard, --minimal),
// those a typed option spells (-D, -I, -G, -lineinfo, --use_fast_math,
// --maxrregcount), and those whose output jitkernel cannot load or whose
// reads and writes the cache key cannot see (LTO/OptiX IR, relocatable code,
// pre-included files, time traces, precompiled headers).
#pragma once

#include <string>
#include <vector>

#include "jitkernel/engine/kernel_spec.hpp"

namespace jk::cuda {

// Throws ArgumentError("compile_options", ...) naming the option at fault.
void validate_compile_options(const CudaCompileOptions& options);

// -I for each include folder, in order.
std::vector<std::string> include_flags(const CudaCompileOptions& options);

// Every other flag of `options` (defines, math mode, line info, debug,
// register cap, extra flags), in a fixed order; the defaults give only
// -lineinfo.
std::vector<std::string> option_flags(const CudaCompileOptions& options);

}  // namespace jk::cuda
