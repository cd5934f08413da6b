// What "the toolkit" is to the core: where the CUDA pieces that are not the
// driver live (the NVRTC library, libraries to preload before it, and the
// include folders for cuda_fp16.h, cuda_bf16.h, cooperative_groups, CCCL),
// and the one place the core reads them from the environment by itself (for
// C++ programs that register no resolver: toolkit_provider.hpp).
#pragma once

#include <string>
#include <vector>

namespace jk::cuda {

struct ToolkitPaths {
  std::string nvrtc_library;                // full path or soname ("libnvrtc.so.13")
  std::vector<std::string> nvrtc_preload;   // dlopen'ed RTLD_GLOBAL first (libnvrtc-builtins)
  std::vector<std::string> include_dirs;    // passed to NVRTC as -I
};

// The toolkit the environment names, without a search: JITKERNEL_NVRTC_PATH
// and JITKERNEL_INCLUDE_PATH (':'-separated) when set, else the toolkit at
// CUDA_HOME, CUDA_PATH or /usr/local/cuda (lib64/ or lib/, include/ and
// include/cccl). libnvrtc-builtins next to NVRTC is preloaded. An empty
// nvrtc_library (none found) leaves NVRTC to the system loader's sonames.
// Loads nothing.
ToolkitPaths toolkit_from_environment();

}  // namespace jk::cuda
