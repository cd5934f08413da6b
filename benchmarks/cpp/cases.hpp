// The C++ benchmark cases, independent of the harness that times them
// (Google Benchmark in main_gbench.cpp, or the small loop in main_simple.cpp).
// A case is a function that performs `n` operations and returns the seconds
// they took, including whatever wait makes the time honest (a stream
// synchronize after GPU launches), so both harnesses measure the same thing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace jkbench {

struct Case {
  std::string name;
  std::string unit_note;       // what one operation is
  std::int64_t batch = 1;      // operations per timing sample (amortises the final synchronize)
  std::function<double(std::int64_t n)> run;
};

struct Suite {
  std::vector<Case> cases;
  std::vector<std::string> skipped;  // "name: why", for cases that cannot run here (no GPU)
};

// Builds every case that can run on this machine and checks each GPU case's result once; the core
// takes the toolkit from the environment (JITKERNEL_NVRTC_PATH, JITKERNEL_INCLUDE_PATH, CUDA_HOME /
// CUDA_PATH / /usr/local/cuda: cuda/toolkit/toolkit_paths.hpp). Throws jk::Error when setup fails (for example NVRTC not found).
Suite make_suite();

// One line describing where NVRTC and the headers were taken from.
std::string toolkit_summary();

// Both harnesses bound each case: its whole wall time (warm-ups, calibration, every sample and
// repetition) stops at a cap, --max-case-seconds, so one slow case cannot use up a benchmark run.
constexpr double kDefaultMaxCaseSeconds = 15.0;
// Longest wanted sample: a case whose single operation is slow gets fewer than `batch` per sample.
constexpr double kMaxSampleSeconds = 0.05;

// c.run(n), with its wall time measured here (not taken from the case) added to `spent`; returns
// the seconds the case reported.
double run_counted(const Case& c, std::int64_t n, double& spent);

// Operations per sample: the case's batch, reduced so that one sample takes about kMaxSampleSeconds
// when one operation (plus the final synchronize) took `one_op_seconds` in the warm-up; at least 1.
std::int64_t sample_size(const Case& c, double one_op_seconds);

}  // namespace jkbench
