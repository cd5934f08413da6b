// The CUDA driver and its devices as Python sees them: driver_version,
// cuda_available, device_count, synchronize and device_info (with the
// device-ordinal argument check they share).
#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "call/convert.hpp"
#include "services/device_arg.hpp"
#include "services/hooks.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/launch/checked_launch.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"
#include "jitkernel/cuda/memory/memory.hpp"

namespace jk::py {
namespace {

void synchronize(nb::handle device) {
  if (device.is_none()) {
    cuda::driver();
    const int count = cuda::device_count();
    nb::gil_scoped_release release;
    for (int d = 0; d < count; ++d) cuda::synchronize(d);
    for (int d = 0; d < count; ++d) cuda::raise_pending_checks(d);
    return;
  }
  const int d = device_arg(device);
  nb::gil_scoped_release release;
  cuda::synchronize(d);
  cuda::raise_pending_checks(d);
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
  on_clear_caches(&cuda::wait_for_pool_warmup);  // runs at exit, before the driver is torn down
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

const Registration reg(order::toolkit, "devices", bind);

}  // namespace
}  // namespace jk::py
