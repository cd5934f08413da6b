// The benchmark harness used when Google Benchmark is not installed: for each case, one warm-up sample,
// then a sample size chosen so one sample takes about --min-time, then --repetitions samples; prints the
// median and the spread of the time per operation. Flags: --quick, --filter=SUBSTRING,
// --min-time=SECONDS, --repetitions=N.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cases.hpp"
#include "jitkernel/core/errors.hpp"

namespace {

struct Options {
  double min_time = 0.2;  // seconds per sample
  int repetitions = 7;
  std::string filter;
};

bool parse(int argc, char** argv, Options& opt) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      std::size_t len = std::strlen(flag);
      return a.compare(0, len, flag) == 0 ? a.c_str() + len : nullptr;
    };
    if (a == "--quick") {
      opt.min_time = 0.02;
      opt.repetitions = 3;
    } else if (const char* v = value("--filter=")) {
      opt.filter = v;
    } else if (const char* v = value("--min-time=")) {
      opt.min_time = std::atof(v);
    } else if (const char* v = value("--repetitions=")) {
      opt.repetitions = std::max(1, std::atoi(v));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--filter=SUBSTRING] [--min-time=SECONDS] [--repetitions=N]\n"
                   "(built without Google Benchmark: this is the built-in timing loop)\n",
                   argv[0]);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) return 2;
  jkbench::Suite suite;
  try {
    suite = jkbench::make_suite();
  } catch (const jk::Error& e) {
    std::fprintf(stderr, "setup failed: %s\n", e.what());
    return 1;
  }
  std::printf("jitkernel C++ benchmarks (built-in loop; median of %d samples of >= %.3f s)\n", opt.repetitions,
              opt.min_time);
  std::printf("toolkit: %s\n\n", jkbench::toolkit_summary().c_str());
  std::printf("%-34s %12s %12s %12s %10s  %s\n", "case", "median_us", "min_us", "max_us", "ops/sample", "one op");
  int failures = 0;
  for (const auto& c : suite.cases) {
    if (!opt.filter.empty() && c.name.find(opt.filter) == std::string::npos) continue;
    try {
      c.run(1);  // warm-up
      std::int64_t n = c.batch;
      double t = c.run(n);
      while (t < opt.min_time && n < (std::int64_t{1} << 40)) {
        n = static_cast<std::int64_t>(n * std::min(10.0, 1.5 * opt.min_time / std::max(t, 1e-9))) + 1;
        t = c.run(n);
      }
      std::vector<double> us(opt.repetitions);
      for (auto& u : us) u = c.run(n) / static_cast<double>(n) * 1e6;
      std::sort(us.begin(), us.end());
      std::printf("%-34s %12.3f %12.3f %12.3f %10lld  %s\n", c.name.c_str(), us[us.size() / 2], us.front(),
                  us.back(), static_cast<long long>(n), c.unit_note.c_str());
    } catch (const jk::Error& e) {
      std::printf("%-34s FAILED: %s\n", c.name.c_str(), e.what());
      ++failures;
    }
    std::fflush(stdout);
  }
  for (const auto& s : suite.skipped) std::printf("skipped %s\n", s.c_str());
  return failures ? 1 : 0;
}
