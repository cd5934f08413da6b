// The toolkit as Python sees it: the resolver this module registers with the
// core's toolkit provider at import (it runs the package's search,
// python/jitkernel/_toolkit_search.py, the first time the core needs NVRTC or
// the CUDA headers), the paths set or resolved (configure_toolkit,
// toolkit_paths), the toolkit record the search keeps for later processes
// (cpp/jitkernel/cuda/toolkit/toolkit_record.hpp), and NVRTC's version.
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "services/hooks.hpp"
#include "jitkernel/cuda/memory/builtin_kernels.hpp"
#include "jitkernel/cuda/nvrtc/compile_cache.hpp"
#include "jitkernel/cuda/binary/module_loader.hpp"
#include "jitkernel/cuda/nvrtc/nvrtc_api.hpp"
#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"
#include "jitkernel/cuda/toolkit/toolkit_record.hpp"

namespace jk::py {
namespace {

nb::dict toolkit_paths_dict() {
  cuda::ToolkitPaths p = cuda::toolkit_paths();
  nb::dict d;
  d["nvrtc_library"] = p.nvrtc_library;
  d["nvrtc_preload"] = p.nvrtc_preload;
  d["include_dirs"] = p.include_dirs;
  return d;
}

cuda::ToolkitPaths make_paths(std::string nvrtc_library, std::vector<std::string> nvrtc_preload,
                              std::vector<std::string> include_dirs) {
  cuda::ToolkitPaths p;
  p.nvrtc_library = std::move(nvrtc_library);
  p.nvrtc_preload = std::move(nvrtc_preload);
  p.include_dirs = std::move(include_dirs);
  return p;
}

// The core's resolver: `_toolkit_search.resolve()` (the record of an earlier
// search when valid, else a search), run on whichever thread first needs the
// toolkit, taking the GIL for it. Its Python errors reach that caller as
// they are. Once the interpreter is gone, the environment's toolkit.
cuda::ToolkitPaths resolve_with_search() {
  if (!nb::is_alive()) return cuda::toolkit_from_environment();
  nb::gil_scoped_acquire gil;
  nb::tuple found = nb::cast<nb::tuple>(
      nb::module_::import_("jitkernel._toolkit_search").attr("resolve")());
  return make_paths(nb::cast<std::string>(found[0]), nb::cast<std::vector<std::string>>(found[1]),
                    nb::cast<std::vector<std::string>>(found[2]));
}

// A toolkit record's inputs: the searcher's text, then each environment
// variable of `variables` with its value (read here: os.environ is slow to
// ask for many names, and putenv keeps the two the same).
std::string record_inputs(const std::string& text, const std::vector<std::string>& variables) {
  std::string inputs = text;
  for (const std::string& name : variables) {
    const char* value = std::getenv(name.c_str());
    inputs += "\n" + name + (value == nullptr ? std::string(" unset") : "=" + std::string(value));
  }
  return inputs;
}

// (nvrtc_library, nvrtc_preload, include_dirs, notes) of the valid record for
// the inputs and loaded NVRTC libraries; None without one.
nb::object load_record(const std::string& text, const std::vector<std::string>& variables,
                       const cuda::Watched& loaded) {
  std::optional<cuda::ToolkitRecord> r =
      cuda::load_toolkit_record(record_inputs(text, variables), loaded);
  if (!r) return nb::none();
  return nb::make_tuple(r->paths.nvrtc_library, r->paths.nvrtc_preload, r->paths.include_dirs,
                        r->notes);
}

bool store_record(const std::string& text, const std::vector<std::string>& variables,
                  const cuda::Watched& loaded, std::string nvrtc_library,
                  std::vector<std::string> nvrtc_preload, std::vector<std::string> include_dirs,
                  const std::vector<std::string>& notes, const cuda::Watched& places) {
  return cuda::store_toolkit_record(
      record_inputs(text, variables), loaded,
      make_paths(std::move(nvrtc_library), std::move(nvrtc_preload), std::move(include_dirs)),
      notes, places);
}

// The builtin kernels' cubin for `arch`, compiled (or read from the disk
// cache) the way a precompiled launch's first row-contiguous copy does.
nb::bytes compile_builtin_kernels(const std::string& arch) {
  std::string cubin;
  {
    nb::gil_scoped_release unlocked;
    cubin = cuda::compile_source_persistent(cuda::builtin_kernels_source(), "jitkernel_builtins.cu",
                                            arch, cuda::CompileTarget::Cubin);
  }
  return nb::bytes(cubin.data(), cubin.size());
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  cuda::set_toolkit_resolver(&resolve_with_search);
  on_clear_caches([] { cuda::set_toolkit_resolver(nullptr); });  // at exit: Python is going away
  m.def(
      "configure_toolkit",
      [](std::string nvrtc_library, std::vector<std::string> nvrtc_preload,
         std::vector<std::string> include_dirs) {
        cuda::configure_toolkit(
            make_paths(std::move(nvrtc_library), std::move(nvrtc_preload), std::move(include_dirs)));
      },
      "nvrtc_library"_a, "nvrtc_preload"_a, "include_dirs"_a,
      "Sets where the core loads NVRTC from and the -I folders it compiles with.");
  m.def("_toolkit_watch", &cuda::watch, "paths"_a,
        "(path, stat identity) of each path, taken now (internal: places a search looks at).");
  m.def("_toolkit_loaded_nvrtc", &cuda::loaded_nvrtc,
        "(path, stat identity) of each NVRTC library loaded in this process now, whoever loaded "
        "it (internal: part of a toolkit record's key).");
  m.def("_toolkit_record_store", &store_record, "text"_a, "variables"_a, "loaded"_a,
        "nvrtc_library"_a, "nvrtc_preload"_a, "include_dirs"_a, "notes"_a, "places"_a,
        "Keeps a search result for later processes under the inputs (text, then the values of the "
        "environment variables named) and the NVRTC libraries loaded before the search "
        "(_toolkit_loaded_nvrtc); False when it cannot be recorded (internal).");
  m.def("_toolkit_record_load", &load_record, "text"_a, "variables"_a, "loaded"_a,
        "The valid toolkit record for the inputs (text, then the values of the environment "
        "variables named) and the NVRTC libraries loaded now (_toolkit_loaded_nvrtc): "
        "(nvrtc_library, nvrtc_preload, include_dirs, notes), or None (internal).");
  m.def("toolkit_paths", &toolkit_paths_dict,
        "The paths the core uses (resolving the toolkit first if nothing needed it yet).");
  m.def(
      "nvrtc_version",
      [] {
        auto [major, minor] = cuda::nvrtc_version();
        return nb::make_tuple(major, minor);
      },
      "(major, minor) of NVRTC, loading it if needed (CudaNotAvailableError if it cannot).");
  m.def("_compile_builtin_kernels", &compile_builtin_kernels, "arch"_a,
        "The builtin copy/fill kernels compiled for `arch` as a precompiled launch compiles them "
        "(internal, for tests: no GPU needed).");
}

const Registration reg(order::toolkit, "toolkit paths", bind);

}  // namespace
}  // namespace jk::py
