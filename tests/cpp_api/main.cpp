// The C++ API from an installed package, as a user's program meets it: a kernel spec (the body only),
// the generated source for one call signature, an NVRTC compile to PTX and to a cubin for an
// architecture (no GPU needed), and on a machine with a GPU a launch checked against the host.
// Prints one line per step; .ci/cpp_api.sh checks them.
//   usage: jitkernel_cpp_api_example [ARCH]      (ARCH: sm_80 unless given)
// NVRTC is found as the core finds it in any C++ program: JITKERNEL_NVRTC_PATH and
// JITKERNEL_INCLUDE_PATH when set, else CUDA_HOME, CUDA_PATH or /usr/local/cuda. Without it the compile
// and launch steps say so and are skipped; exit status 1 on any other error.
#include <cstdio>
#include <string>
#include <vector>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/memory/memory.hpp"
#include "jitkernel/cuda/nvrtc/compile.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace {

// c = a * s + b over n elements (s, n: scalars, read as s[0] and n[0] as in MLX).
jk::KernelSpec axpy_spec() {
  jk::KernelSpec spec;
  spec.name = "axpy";
  spec.input_names = {"a", "b", "s", "n"};
  spec.output_names = {"c"};
  spec.source =
      "    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "    if (i < n[0]) c[i] = a[i] * s[0] + b[i];\n";
  return spec;
}

// Compiles `generated` for `arch`; false (and says why) when NVRTC is not there.
bool compile(const jk::GeneratedKernel& generated, const std::string& arch) {
  try {
    const std::string ptx = jk::cuda::compile_kernel(generated, arch, jk::cuda::CompileTarget::Ptx);
    const std::string cubin = jk::cuda::compile_kernel(generated, arch, jk::cuda::CompileTarget::Cubin);
    const bool ptx_ok = ptx.find(".entry " + generated.entry_name) != std::string::npos;
    const bool elf_ok = cubin.size() > 4 && cubin.compare(0, 4, "\x7f" "ELF") == 0;
    if (!ptx_ok || !elf_ok) throw jk::Error("NVRTC's output is not a PTX/cubin of " + generated.entry_name);
    std::printf("ptx %s: %zu bytes\ncubin %s: %zu bytes\n", arch.c_str(), ptx.size(), arch.c_str(),
                cubin.size());
    return true;
  } catch (const jk::CudaNotAvailable& e) {
    std::printf("compile: skipped (%s)\n", e.what());
    return false;
  }
}

// Launches on device 0 with host inputs (the launcher uploads them) and checks the output.
void launch(jk::Kernel& kernel, const std::vector<float>& a, const std::vector<float>& b, float s) {
  const auto n = static_cast<std::int64_t>(a.size());
  jk::KernelCall call;
  call.inputs = {jk::ArrayView{const_cast<float*>(a.data()), jk::DType::Float32, jk::kHostDevice, {n}, {1}},
                 jk::ArrayView{const_cast<float*>(b.data()), jk::DType::Float32, jk::kHostDevice, {n}, {1}},
                 jk::Scalar::of(jk::DType::Float32, s), jk::Scalar::of(jk::DType::Int32, static_cast<int>(n))};
  call.output_shapes = {{n}};
  call.output_dtypes = {jk::DType::Float32};
  call.launch.grid = {n, 1, 1};
  call.launch.threadgroup = {256, 1, 1};
  std::vector<jk::OwnedArray> outputs = kernel(call);
  std::vector<float> c(a.size(), -1.0f);
  jk::cuda::download(outputs.at(0).view, c.data(), nullptr);
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c[i] != a[i] * s + b[i]) throw jk::Error("wrong result at " + std::to_string(i));
  std::printf("launch: ok (%zu elements)\n", c.size());
}

int run(const std::string& arch) {
  std::printf("jitkernel %s C++ API\n", JITKERNEL_VERSION);
  jk::Kernel kernel(axpy_spec(), jk::cuda_backend());

  // The signature of the call below: two 1-d float32 arrays, a float32 and an int32 scalar.
  jk::CallSignature signature;
  signature.inputs = {{false, jk::DType::Float32, 1}, {false, jk::DType::Float32, 1},
                      {true, jk::DType::Float32, 0}, {true, jk::DType::Int32, 0}};
  signature.output_dtypes = {jk::DType::Float32};
  const jk::GeneratedKernel generated = kernel.generate(signature);
  if (generated.source.find("c[i] = a[i] * s[0] + b[i];") == std::string::npos)
    throw jk::Error("the generated source lacks the kernel's body");
  std::printf("generated: %s (%zu bytes of CUDA)\n", generated.entry_name.c_str(), generated.source.size());

  const bool compiled = compile(generated, arch);
  std::string reason;
  if (!compiled || !jk::cuda_backend().available(&reason)) {
    std::printf("launch: skipped (%s)\n", compiled ? reason.c_str() : "no NVRTC");
    return 0;
  }
  std::vector<float> a(1000), b(1000);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f;
  }
  launch(kernel, a, b, 2.0f);
  jk::cuda::wait_for_pool_warmup();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? argv[1] : "sm_80");
  } catch (const jk::Error& e) {
    std::fprintf(stderr, "jitkernel_cpp_api_example: %s\n", e.what());
    return 1;
  }
}
