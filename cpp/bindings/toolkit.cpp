// Toolkit and device functions: handing the NVRTC/header locations that
// python/jitkernel/_toolkit.py found to the core (and keeping them in a
// toolkit record for later processes), NVRTC and driver versions, and
// cuda_available / device_count / synchronize / device_info.
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "hooks.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"
#include "jitkernel/cuda/nvrtc/nvrtc_api.hpp"
#include "jitkernel/cuda/toolkit.hpp"
#include "jitkernel/cuda/toolkit_record.hpp"

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
// the inputs and loaded NVRTC libraries, which is now the core's
// configuration; None without one.
nb::object configure_from_record(const std::string& text, const std::vector<std::string>& variables,
                                 const cuda::Watched& loaded) {
  std::optional<cuda::ToolkitRecord> r =
      cuda::configure_from_toolkit_record(record_inputs(text, variables), loaded);
  if (!r) return nb::none();
  return nb::make_tuple(r->paths.nvrtc_library, r->paths.nvrtc_preload, r->paths.include_dirs,
                        r->notes);
}

// A device ordinal argument (an int, not a bool) within range.
int device_arg(nb::handle device) {
  std::int64_t d = 0;
  if (int_value(device, &d) != IntResult::Ok)
    throw ArgumentTypeError("device", "expected a CUDA device ordinal (int), got " +
                                          nb::cast<std::string>(nb::repr(device)));
  cuda::driver();  // CudaNotAvailable first when there is no driver
  const int count = cuda::device_count();
  if (d < 0 || d >= count)
    throw ArgumentError("device", "CUDA device " + std::to_string(d) + " does not exist (" +
                                      std::to_string(count) + " device" +
                                      (count == 1 ? "" : "s") + " found)");
  return static_cast<int>(d);
}

void synchronize(nb::handle device) {
  if (device.is_none()) {
    cuda::driver();
    const int count = cuda::device_count();
    nb::gil_scoped_release release;
    for (int d = 0; d < count; ++d) cuda::synchronize(d);
    return;
  }
  const int d = device_arg(device);
  nb::gil_scoped_release release;
  cuda::synchronize(d);
}

nb::dict device_info(nb::handle device) {
  const cuda::DeviceInfo& info = cuda::device_info(device_arg(device));
  nb::dict d;
  d["ordinal"] = info.ordinal;
  d["name"] = info.name;
  d["compute_capability"] = nb::make_tuple(info.cc_major, info.cc_minor);
  d["arch"] = info.arch;
  d["max_threads_per_block"] = info.max_threads_per_block;
  d["max_block_dim"] =
      nb::make_tuple(info.max_block_dim[0], info.max_block_dim[1], info.max_block_dim[2]);
  d["max_grid_dim"] =
      nb::make_tuple(info.max_grid_dim[0], info.max_grid_dim[1], info.max_grid_dim[2]);
  d["max_shared_memory_per_block"] = info.max_shared_memory_per_block;
  d["max_shared_memory_per_block_optin"] = info.max_shared_memory_per_block_optin;
  return d;
}

void bind(nb::module_& m) {
  using namespace nb::literals;
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
  m.def(
      "_toolkit_record_store",
      [](const std::string& text, const std::vector<std::string>& variables,
         const cuda::Watched& loaded, std::string nvrtc_library,
         std::vector<std::string> nvrtc_preload, std::vector<std::string> include_dirs,
         const std::vector<std::string>& notes, const cuda::Watched& places) {
        return cuda::store_toolkit_record(
            record_inputs(text, variables), loaded,
            make_paths(std::move(nvrtc_library), std::move(nvrtc_preload), std::move(include_dirs)),
            notes, places);
      },
      "text"_a, "variables"_a, "loaded"_a, "nvrtc_library"_a, "nvrtc_preload"_a, "include_dirs"_a,
      "notes"_a, "places"_a,
      "Keeps a search result for later processes under the inputs (text, then the values of the "
      "environment variables named) and the NVRTC libraries loaded before the search "
      "(_toolkit_loaded_nvrtc); False when it cannot be recorded (internal).");
  m.def("_toolkit_record_configure", &configure_from_record, "text"_a, "variables"_a, "loaded"_a,
        "Configures the core from the valid toolkit record for the inputs (text, then the values "
        "of the environment variables named) and the NVRTC libraries loaded now "
        "(_toolkit_loaded_nvrtc): (nvrtc_library, nvrtc_preload, include_dirs, notes), or None "
        "(internal).");
  m.def("toolkit_paths", &toolkit_paths_dict, "The paths the core currently uses.");
  m.def(
      "nvrtc_version",
      [] {
        ensure_toolkit();
        auto [major, minor] = cuda::nvrtc_version();
        return nb::make_tuple(major, minor);
      },
      "(major, minor) of NVRTC, loading it if needed (CudaNotAvailableError if it cannot).");
  m.def(
      "driver_version",
      [] {
        int version = 0;
        const cuda::DriverApi& api = cuda::driver();
        cuda::check(api.cuDriverGetVersion(&version), "cuDriverGetVersion");
        return version;
      },
      "The CUDA version the driver supports, e.g. 13000 (CudaNotAvailableError without one).");
  m.def("cuda_available", &cuda::cuda_available,
        "True when the CUDA driver loads and reports at least one device.");
  m.def("device_count", &cuda::device_count, "Number of CUDA devices (0 without a driver).");
  m.def("synchronize", &synchronize, "device"_a.none() = nb::none(),
        "Waits for all work on one device (all devices when None).");
  m.def("device_info", &device_info, "device"_a, "Name, architecture and limits of a device.");
}

const Registration reg(order::toolkit, "toolkit", bind);

}  // namespace
}  // namespace jk::py
