// Loads NVRTC at run time (nothing links it): first the configured preloads
// (the NVRTC 13 wheel's libnvrtc.so.13 has no RPATH, so libnvrtc-builtins is
// loaded RTLD_GLOBAL beforehand), then the library itself. A failed load is
// not remembered, so configuring the toolkit and retrying works.
#include "jitkernel/cuda/nvrtc/nvrtc_api.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>

#include <atomic>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/stage_clock.hpp"
#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"

namespace jk::cuda {
namespace {

constexpr const char* kInstallHint =
    "install NVRTC with `pip install \"jitkernel[cuda]\"`, or set JITKERNEL_NVRTC_PATH to a "
    "libnvrtc.so, or CUDA_HOME to a CUDA toolkit";

std::mutex g_mutex;
std::atomic<bool> g_loaded{false};
NvrtcApi g_api{};
std::pair<int, int> g_version{0, 0};

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

// dlopen reads the file it is given with a blocking open(): a FIFO named as
// the library would never return, and a device could be read for ever. A
// path (not a soname, which the loader looks up itself) that is there but is
// not a regular file is refused, naming the setting it came from.
void require_regular_file(const std::string& path) {
  if (path.find('/') == std::string::npos) return;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;  // absent: dlopen says so
  const char* kind = S_ISFIFO(st.st_mode)  ? "a FIFO"
                     : S_ISDIR(st.st_mode) ? "a folder"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                   : "not a regular file";
  const char* env = std::getenv("JITKERNEL_NVRTC_PATH");
  const std::string named = env != nullptr && path == env ? "JITKERNEL_NVRTC_PATH='" + path + "'" : "'" + path + "'";
  throw CudaNotAvailable("NVRTC could not be loaded: " + named + " is " + kind +
                         ", not a regular file (a library is loaded from one); " + kInstallHint);
}

void load_nvrtc() {
  ToolkitPaths paths = toolkit_paths();
  for (const auto& pre : paths.nvrtc_preload) {
    require_regular_file(pre);
    if (dlopen(pre.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      throw CudaNotAvailable("NVRTC could not be loaded: preloading " + pre + " failed (" +
                             dl_error() + "); " + kInstallHint);
    }
  }
  std::vector<std::string> candidates;
  if (!paths.nvrtc_library.empty()) {
    candidates.push_back(paths.nvrtc_library);
  } else {  // none found (toolkit_from_environment): the loader's search path
    for (const char* soname : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
      candidates.emplace_back(soname);
    }
  }
  void* lib = nullptr;
  std::string tried;
  for (const auto& candidate : candidates) {
    require_regular_file(candidate);
    lib = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) break;
    std::string why = dl_error();  // usually names the file already
    tried += (tried.empty() ? "" : "; ") +
             (why.find(candidate) == std::string::npos ? candidate + ": " + why : why);
  }
  if (lib == nullptr) {
    throw CudaNotAvailable("NVRTC (the CUDA runtime compiler) not found (tried " + tried + "): " +
                           kInstallHint);
  }
  NvrtcApi api{};
  std::string missing;
  auto bind = [&](auto& field, const char* symbol) {
    field = reinterpret_cast<std::remove_reference_t<decltype(field)>>(dlsym(lib, symbol));
    if (field == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  };
  bind(api.nvrtcGetErrorString, "nvrtcGetErrorString");
  bind(api.nvrtcVersion, "nvrtcVersion");
  bind(api.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs");
  bind(api.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs");
  bind(api.nvrtcCreateProgram, "nvrtcCreateProgram");
  bind(api.nvrtcDestroyProgram, "nvrtcDestroyProgram");
  bind(api.nvrtcCompileProgram, "nvrtcCompileProgram");
  bind(api.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize");
  bind(api.nvrtcGetProgramLog, "nvrtcGetProgramLog");
  bind(api.nvrtcGetCUBINSize, "nvrtcGetCUBINSize");
  bind(api.nvrtcGetCUBIN, "nvrtcGetCUBIN");
  bind(api.nvrtcGetPTXSize, "nvrtcGetPTXSize");
  bind(api.nvrtcGetPTX, "nvrtcGetPTX");
  if (!missing.empty()) {
    dlclose(lib);
    throw CudaNotAvailable("the NVRTC library found is too old (it lacks " + missing +
                           "; NVRTC 11.2 or newer is needed): " + kInstallHint);
  }
  int major = 0, minor = 0;
  if (api.nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) {
    throw CudaNotAvailable("NVRTC loaded but nvrtcVersion failed: " + std::string(kInstallHint));
  }
  g_api = api;
  g_version = {major, minor};
}

}  // namespace

const NvrtcApi& nvrtc() {
  if (g_loaded.load(std::memory_order_acquire)) return g_api;
  resolve_toolkit();  // before the lock: resolving may run Python (toolkit_provider.hpp)
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_loaded.load(std::memory_order_relaxed)) {
    StageTimer timer(Stage::NvrtcLoad);
    load_nvrtc();
    g_loaded.store(true, std::memory_order_release);
  }
  return g_api;
}

std::pair<int, int> nvrtc_version() {
  nvrtc();
  return g_version;
}

}  // namespace jk::cuda
