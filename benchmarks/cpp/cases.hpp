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

// Configures the toolkit from the environment (JITKERNEL_NVRTC_PATH, JITKERNEL_INCLUDE_PATH,
// CUDA_HOME / CUDA_PATH / /usr/local/cuda), builds every case that can run on this machine and checks
// each GPU case's result once. Throws jk::Error when setup fails (for example NVRTC not found).
Suite make_suite();

// One line describing where NVRTC and the headers were taken from.
std::string toolkit_summary();

}  // namespace jkbench
