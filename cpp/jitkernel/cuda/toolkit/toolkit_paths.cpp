// The environment's toolkit (toolkit_paths.hpp): variables and a CUDA root,
// looked up with stat and one directory listing.
#include "jitkernel/cuda/toolkit/toolkit_paths.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace jk::cuda {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The most specific libnvrtc-builtins.so.* next to `library` (e.g.
// libnvrtc-builtins.so.13.0), as one preload; none when there is no folder.
std::vector<std::string> builtins_next_to(const std::string& library) {
  const fs::path dir = fs::path(library).parent_path();
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return {};
  std::string best;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("libnvrtc-builtins.so.", 0) == 0 && name.find(".alt.") == std::string::npos &&
        name.size() > best.size())
      best = name;
  }
  if (best.empty()) return {};
  return {(dir / best).string()};
}

}  // namespace

ToolkitPaths toolkit_from_environment() {
  ToolkitPaths paths;
  std::string root = env("CUDA_HOME");
  if (root.empty()) root = env("CUDA_PATH");
  if (root.empty()) root = "/usr/local/cuda";
  std::error_code ec;

  paths.nvrtc_library = env("JITKERNEL_NVRTC_PATH");
  if (paths.nvrtc_library.empty()) {
    for (const char* rel : {"lib64/libnvrtc.so.13", "lib64/libnvrtc.so", "lib/libnvrtc.so.13"}) {
      if (fs::exists(fs::path(root) / rel, ec)) {
        paths.nvrtc_library = (fs::path(root) / rel).string();
        break;
      }
    }
  }
  if (!paths.nvrtc_library.empty()) paths.nvrtc_preload = builtins_next_to(paths.nvrtc_library);

  const std::string includes = env("JITKERNEL_INCLUDE_PATH");
  if (!includes.empty()) {
    // Split on ':' by hand: no iostreams in the core (their locale start-up is not thread-safe in every
    // libstdc++ build).
    for (std::size_t at = 0; at <= includes.size();) {
      const std::size_t end = std::min(includes.find(':', at), includes.size());
      if (end > at) paths.include_dirs.push_back(includes.substr(at, end - at));
      at = end + 1;
    }
  } else {
    for (const char* rel : {"include", "include/cccl"})
      if (fs::is_directory(fs::path(root) / rel, ec))
        paths.include_dirs.push_back((fs::path(root) / rel).string());
  }
  return paths;
}

}  // namespace jk::cuda
