// A CUDA device ordinal argument from Python, checked (an int, not a bool,
// naming a device that exists), shared by the bindings that take one:
// devices.cpp (device_info, synchronize) and tune_lookup.cpp.
#pragma once

#include <cstdint>
#include <string>

#include "bindings.hpp"
#include "call/convert.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"

namespace jk::py {

// A device ordinal argument (an int, not a bool) within range.
inline int device_arg(nb::handle device) {
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

}  // namespace jk::py
