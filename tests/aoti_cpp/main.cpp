// Runs an AOTInductor package (argument 1) whose graph calls jitkernel kernels, in a process with no Python:
// jitkernel's ops are defined and given their CUDA implementation first, then torch's loader runs the package on
// x = linspace(-3, 3, N) (N: argument 2) and the result is compared with torch's sin(2 x + 0.5), the exported
// model's computation. Prints the largest error and the compile cache's hits and misses (a kernel found in a
// cache tier is a hit: no NVRTC compile in this process); exit status 0 when the result is right.
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/torch.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/torch_op/torch_library.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PACKAGE.pt2 N\n", argv[0]);
    return 2;
  }
  try {
    jk::torch_op::register_torch_library();
    torch::inductor::AOTIModelPackageLoader loader(argv[1]);
    const torch::Tensor x = torch::linspace(-3, 3, std::stoll(argv[2]), torch::device(torch::kCUDA));
    const std::vector<torch::Tensor> out = loader.run({x});
    const double error = (out.at(0) - torch::sin(2 * x + 0.5)).abs().max().item<double>();
    const jk::cache::Info cache = jk::cache::info();
    std::printf("max error %g, cache hits %llu, misses %llu\n", error, static_cast<unsigned long long>(cache.hits),
                static_cast<unsigned long long>(cache.misses));
    return error < 1e-5 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
