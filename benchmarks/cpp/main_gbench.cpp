// The benchmark harness on Google Benchmark: each case becomes one benchmark with manual timing. One
// sample runs `batch` operations (and the case's final synchronize) and counts as `batch` iterations
// (KeepRunningBatch), so Google Benchmark's iteration count, its min-time rule and the Time column are
// all per operation. Each case stops at --max-case-seconds of wall time in total (an error line, exit
// status 1), so a slow case cannot use up the run. Accepts the usual --benchmark_* flags, plus --quick
// (10 ms per benchmark, for smoke runs) and --max-case-seconds=S.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cases.hpp"
#include "jitkernel/core/errors.hpp"

int main(int argc, char** argv) {
  bool quick = false;
  double max_case_seconds = jkbench::kDefaultMaxCaseSeconds;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const char* cap_flag = "--max-case-seconds=";
    if (i > 0 && std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (i > 0 && std::strncmp(argv[i], cap_flag, std::strlen(cap_flag)) == 0)
      max_case_seconds = std::atof(argv[i] + std::strlen(cap_flag));
    else
      args.push_back(argv[i]);
  }
  if (!(max_case_seconds > 0)) {
    std::fprintf(stderr, "--max-case-seconds must be a positive number of seconds\n");
    return 2;
  }
  int nargs = static_cast<int>(args.size());
  benchmark::Initialize(&nargs, args.data());
  if (benchmark::ReportUnrecognizedArguments(nargs, args.data())) return 2;

  jkbench::Suite suite;
  try {
    suite = jkbench::make_suite();
  } catch (const jk::Error& e) {
    std::fprintf(stderr, "setup failed: %s\n", e.what());
    return 1;
  }
  std::printf("toolkit: %s\n", jkbench::toolkit_summary().c_str());
  for (const auto& s : suite.skipped) std::printf("skipped %s\n", s.c_str());
  std::fflush(stdout);  // Google Benchmark flushes its own lines after each benchmark

  bool failed = false;
  for (const auto& c : suite.cases) {
    // Wall time of this case over every call Google Benchmark makes (its rounds and repetitions).
    auto spent = std::make_shared<double>(0.0);
    auto body = [&c, &failed, spent, max_case_seconds](benchmark::State& state) {
      try {
        const double one = jkbench::run_counted(c, 1, *spent);  // warm-up
        const std::int64_t batch = jkbench::sample_size(c, one);
        while (state.KeepRunningBatch(batch)) {
          if (*spent > max_case_seconds) {
            failed = true;
            char msg[160];
            std::snprintf(msg, sizeof msg, "stopped by --max-case-seconds=%g before the minimum time was reached",
                          max_case_seconds);
            state.SkipWithError(msg);
            break;
          }
          state.SetIterationTime(jkbench::run_counted(c, batch, *spent));
        }
        state.SetLabel(c.unit_note);
      } catch (const jk::Error& e) {
        failed = true;
        state.SkipWithError(e.what());
      }
    };
    auto* b = benchmark::RegisterBenchmark(c.name.c_str(), body);
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
    if (quick) b->MinTime(0.01);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return failed ? 1 : 0;
}
