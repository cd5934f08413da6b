// Launches the kernel a Python program recorded as "twice_plus" (y = 2 x + b over a 1-d float32 x, b a float32
// scalar) from the records file given as argument 1, on N elements (argument 2), and checks the result on the host.
// Prints the largest error and the compile cache's hits, read-only-tier hits and misses; exit status 0 when right.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/memory/memory.hpp"
#include "jitkernel/engine/kernel_program.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s RECORDS N\n", argv[0]);
    return 2;
  }
  try {
    jk::KernelProgram program(argv[1]);
    jk::Kernel& kernel = program.kernel("twice_plus");
    const auto n = static_cast<std::int64_t>(std::stoll(argv[2]));
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.25f - 3.0f;
    jk::KernelCall call;
    call.inputs = {jk::ArrayView{x.data(), jk::DType::Float32, jk::kHostDevice, {n}, {1}},
                   jk::Scalar::of(jk::DType::Float32, 0.5f)};
    call.output_shapes = {{n}};
    call.output_dtypes = {jk::DType::Float32};
    call.launch.grid = {n, 1, 1};
    call.launch.threadgroup = {128, 1, 1};
    std::vector<jk::OwnedArray> outputs = kernel(call);
    std::vector<float> y(x.size());
    jk::cuda::download(outputs.at(0).view, y.data(), nullptr);
    double error = 0;
    for (std::size_t i = 0; i < y.size(); ++i) error = std::fmax(error, std::fabs(y[i] - (2.0f * x[i] + 0.5f)));
    const jk::cache::Info cache = jk::cache::info();
    std::printf("max error %g, cache hits %llu, readonly hits %llu, misses %llu\n", error,
                static_cast<unsigned long long>(cache.hits), static_cast<unsigned long long>(cache.readonly_hits),
                static_cast<unsigned long long>(cache.misses));
    jk::cuda::wait_for_pool_warmup();
    return error == 0 ? 0 : 1;
  } catch (const jk::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
