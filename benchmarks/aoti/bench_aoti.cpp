// Per-call cost of AOTInductor packages run from C++ (no Python): each package given on the command line is
// loaded (timed), called once (timed: the first call loads its kernels), then all are called in interleaved
// rounds of CALLS calls each, on x = linspace(-3, 3, N). Prints one line per package and round:
//   load <name> <ms>
//   first <name> <ms>
//   round <r> <name> <us per call>
// Usage: jitkernel_bench_aoti N ROUNDS CALLS PACKAGE.pt2...
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/torch.h>
#include <c10/cuda/CUDAFunctions.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "jitkernel/torch_op/torch_library.hpp"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s N ROUNDS CALLS PACKAGE.pt2...\n", argv[0]);
    return 2;
  }
  const long long n = std::stoll(argv[1]);
  const int rounds = std::stoi(argv[2]);
  const int calls = std::stoi(argv[3]);
  jk::torch_op::register_torch_library();
  const torch::Tensor x = torch::linspace(-3, 3, n, torch::device(torch::kCUDA));
  std::vector<std::unique_ptr<torch::inductor::AOTIModelPackageLoader>> loaders;
  for (int i = 4; i < argc; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    loaders.push_back(std::make_unique<torch::inductor::AOTIModelPackageLoader>(argv[i]));
    std::printf("load %s %.3f\n", argv[i], ms_since(t0));
    t0 = std::chrono::steady_clock::now();
    loaders.back()->run({x});
    c10::cuda::device_synchronize();
    std::printf("first %s %.3f\n", argv[i], ms_since(t0));
  }
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < loaders.size(); ++k) {
      const std::size_t i = r % 2 == 0 ? k : loaders.size() - 1 - k;  // alternate the order between rounds
      for (int w = 0; w < 20; ++w) loaders[i]->run({x});
      c10::cuda::device_synchronize();
      const auto t0 = std::chrono::steady_clock::now();
      for (int c = 0; c < calls; ++c) loaders[i]->run({x});
      c10::cuda::device_synchronize();
      std::printf("round %d %s %.3f\n", r, argv[4 + i], ms_since(t0) * 1e3 / calls);
    }
  }
  return 0;
}
