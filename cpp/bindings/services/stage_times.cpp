// `_core._stage_times(reset=False)`: the stage clock (core/stage_clock.hpp) as
// {stage name: (seconds, count)}, for benchmarks that break a first call down.
#include <nanobind/stl/pair.h>

#include "bindings.hpp"
#include "jitkernel/core/stage_clock.hpp"

namespace jk::py {
namespace {

nb::dict stage_times(bool reset) {
  nb::dict out;
  for (const StageTotal& s : stage_snapshot(reset)) {
    out[s.name] = nb::make_tuple(static_cast<double>(s.nanoseconds) * 1e-9, s.count);
  }
  return out;
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def("_stage_times", &stage_times, "reset"_a = false,
        "Self time in seconds and count of each cold stage (driver load, toolkit search, NVRTC, disk "
        "cache, module load, memory pool setup) since the process started or the last reset; "
        "reset=True zeroes them after reading.");
}

const Registration reg(order::toolkit, "stage_times", bind);

}  // namespace
}  // namespace jk::py
