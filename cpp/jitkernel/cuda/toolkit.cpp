// Holds the toolkit paths (NVRTC library, preloads, include folders) that
// Python discovers with cuda-pathfinder, or that C++ users set directly.
#include "jitkernel/cuda/toolkit.hpp"

#include <mutex>

namespace jk::cuda {
namespace {

std::mutex g_mutex;
ToolkitPaths g_paths;

}  // namespace

void configure_toolkit(const ToolkitPaths& paths) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_paths = paths;
}

ToolkitPaths toolkit_paths() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_paths;
}

}  // namespace jk::cuda
