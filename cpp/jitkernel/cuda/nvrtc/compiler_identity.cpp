// The NVRTC identity of compiler_identity.hpp: by path without loading NVRTC
// when the configuration names a file, else by asking the loader which file
// it mapped; memoized per configuration (library and preloads).
#include "jitkernel/core/stage_clock.hpp"
#include "jitkernel/cuda/nvrtc/compiler_identity.hpp"

#include <dlfcn.h>

#include <mutex>
#include <unordered_map>

#include "jitkernel/cache/file_identity.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/nvrtc/nvrtc_api.hpp"

namespace jk::cuda {
namespace {

std::string identity_memo_key(const ToolkitPaths& paths) {
  std::string key = paths.nvrtc_library;
  for (const auto& pre : paths.nvrtc_preload) key += '\n' + pre;
  return key;
}

std::mutex g_identity_mutex;
std::unordered_map<std::string, std::string>& identity_memo() {
  static auto* memo = new std::unordered_map<std::string, std::string>;
  return *memo;
}

std::string with_preloads(std::string identity, const ToolkitPaths& paths) {
  for (const auto& pre : paths.nvrtc_preload) identity += "; " + cache::file_identity(pre);
  return identity;
}

}  // namespace

std::string library_identity(const ToolkitPaths& paths) {
  if (paths.nvrtc_library.find('/') == std::string::npos) return "";
  std::string identity = cache::file_identity(paths.nvrtc_library);
  return identity == "missing" ? "" : with_preloads(std::move(identity), paths);
}

void remember_compiler_identity(const ToolkitPaths& paths, std::string identity) {
  std::lock_guard<std::mutex> lock(g_identity_mutex);
  identity_memo().insert_or_assign(identity_memo_key(paths), std::move(identity));
}

std::string compiler_identity() {
  ToolkitPaths paths = toolkit_paths();
  const std::string memo_key = identity_memo_key(paths);
  {
    std::lock_guard<std::mutex> lock(g_identity_mutex);
    auto it = identity_memo().find(memo_key);
    if (it != identity_memo().end()) return it->second;
  }
  StageTimer timer(Stage::CompilerIdentity);
  // By path without loading NVRTC; a soname (or a missing file) is
  // resolved by loading it and asking the loader which file it mapped.
  std::string identity = library_identity(paths);
  if (identity.empty()) {
    const NvrtcApi& api = nvrtc();  // CudaNotAvailable when it cannot be loaded
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(api.nvrtcVersion), &info) == 0 || info.dli_fname == nullptr)
      throw CudaNotAvailable("cannot tell which file NVRTC was loaded from (dladdr failed)");
    identity = with_preloads(cache::file_identity(info.dli_fname), paths);
  }
  std::lock_guard<std::mutex> lock(g_identity_mutex);
  return identity_memo().emplace(memo_key, std::move(identity)).first->second;
}

}  // namespace jk::cuda
