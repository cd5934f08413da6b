// The benchmark harness on Google Benchmark: each case becomes one benchmark with manual timing. One
// iteration runs `batch` operations (and the case's final synchronize) and reports their time divided by
// `batch`, so the Time column is the time per operation. Accepts the usual --benchmark_* flags, plus
// --quick (10 ms per benchmark, for smoke runs).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cases.hpp"
#include "jitkernel/core/errors.hpp"

int main(int argc, char** argv) {
  bool quick = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else
      args.push_back(argv[i]);
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

  bool failed = false;
  for (const auto& c : suite.cases) {
    auto* b = benchmark::RegisterBenchmark(c.name.c_str(), [&c, &failed](benchmark::State& state) {
      try {
        c.run(1);  // warm-up
        for (auto _ : state) state.SetIterationTime(c.run(c.batch) / static_cast<double>(c.batch));
        state.SetLabel(c.unit_note);
      } catch (const jk::Error& e) {
        failed = true;
        state.SkipWithError(e.what());
      }
    });
    b->UseManualTime()->Unit(benchmark::kMicrosecond);
    if (quick) b->MinTime(0.01);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return failed ? 1 : 0;
}
