// The benchmark harness used when Google Benchmark is not installed: for each case, one warm-up
// operation, then a sample size chosen so one sample takes about --min-time, then --repetitions samples;
// prints the median and the spread of the time per operation, each case's line as soon as it is done.
// Each case stops at --max-case-seconds of wall time in total: calibration ends early and fewer samples
// are taken (the line says so). Flags: --quick, --filter=SUBSTRING, --min-time=SECONDS, --repetitions=N,
// --max-case-seconds=SECONDS.
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
  double max_case_seconds = jkbench::kDefaultMaxCaseSeconds;
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
    } else if (const char* v = value("--max-case-seconds=")) {
      opt.max_case_seconds = std::atof(v);
      if (!(opt.max_case_seconds > 0)) {
        std::fprintf(stderr, "--max-case-seconds must be a positive number of seconds\n");
        return false;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--filter=SUBSTRING] [--min-time=SECONDS] [--repetitions=N]"
                   " [--max-case-seconds=SECONDS]\n"
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
  for (const auto& s : suite.skipped) std::printf("skipped %s\n", s.c_str());
  std::printf("%-34s %12s %12s %12s %10s  %s\n", "case", "median_us", "min_us", "max_us", "ops/sample", "one op");
  std::fflush(stdout);
  int failures = 0;
  for (const auto& c : suite.cases) {
    if (!opt.filter.empty() && c.name.find(opt.filter) == std::string::npos) continue;
    try {
      // Calibration and samples stop at the cap; the samples are the ones that fit in what is left.
      double spent = 0;
      std::int64_t n = jkbench::sample_size(c, jkbench::run_counted(c, 1, spent));  // warm-up
      double t = jkbench::run_counted(c, n, spent);
      const double calibration_cap = opt.max_case_seconds / 2;
      while (t < opt.min_time && n < (std::int64_t{1} << 40)) {
        const double grow = std::min(10.0, 1.5 * opt.min_time / std::max(t, 1e-9));
        if (spent + grow * t > calibration_cap) break;
        n = static_cast<std::int64_t>(n * grow) + 1;
        t = jkbench::run_counted(c, n, spent);
      }
      std::vector<double> us;
      for (int r = 0; r < opt.repetitions && (us.empty() || spent + t <= opt.max_case_seconds); ++r)
        us.push_back(jkbench::run_counted(c, n, spent) / static_cast<double>(n) * 1e6);
      std::sort(us.begin(), us.end());
      char capped[128] = "";
      if (static_cast<int>(us.size()) < opt.repetitions || t < opt.min_time)
        std::snprintf(capped, sizeof capped, " [capped by --max-case-seconds=%g: %zu samples of %.3f s]",
                      opt.max_case_seconds, us.size(), t);
      std::printf("%-34s %12.3f %12.3f %12.3f %10lld  %s%s\n", c.name.c_str(), us[us.size() / 2], us.front(),
                  us.back(), static_cast<long long>(n), c.unit_note.c_str(), capped);
    } catch (const jk::Error& e) {
      std::printf("%-34s FAILED: %s\n", c.name.c_str(), e.what());
      ++failures;
    }
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}
