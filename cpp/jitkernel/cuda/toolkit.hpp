// Where the CUDA pieces that are not the driver live: the NVRTC library (and
// libraries to preload before it) and the include folders for cuda_fp16.h,
// cuda_bf16.h, cooperative_groups, CCCL. Python finds them with
// cuda-pathfinder (or takes them from a toolkit record of an earlier search,
// toolkit_record.hpp) and hands them over here; C++ users set them directly.
// Configuring loads nothing: NVRTC is loaded on the first compile.
#pragma once

#include <string>
#include <vector>

namespace jk::cuda {

struct ToolkitPaths {
  std::string nvrtc_library;                // full path or soname ("libnvrtc.so.13")
  std::vector<std::string> nvrtc_preload;   // dlopen'ed RTLD_GLOBAL first (libnvrtc-builtins)
  std::vector<std::string> include_dirs;    // passed to NVRTC as -I
};

// Must be called before the first compile; later calls replace the paths for
// compiles that have not loaded NVRTC yet (NVRTC itself is loaded once).
void configure_toolkit(const ToolkitPaths& paths);
ToolkitPaths toolkit_paths();

}  // namespace jk::cuda
