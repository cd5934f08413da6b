// The benchmark cases (see cases.hpp):
//   codegen/*   generate_cuda_kernel for a tiny add kernel and for the documentation's exp kernel
//   nvrtc/*     NVRTC compiles of generated kernels to an sm_90a cubin (no GPU needed)
//   cache/*     the persistent compile cache as a warm process meets it (no GPU needed): key_* builds a
//               generated kernel's compile key (key_*_user_headers: with two user headers to cover);
//               disk_hit_* is compile_kernel_persistent answered from an entry
//               stored once in a private temporary folder (key + open/read/checksum; no in-memory cache)
//   launch/*    on a GPU, steady state: jk::Kernel::operator() with device pointers (caller outputs, and
//               outputs it allocates) against a bare cuLaunchKernelEx of the same add kernel through the
//               same driver table. One sample = up to `batch` launches on the legacy default stream + a sync.
//   floor/*     on a GPU: bench_launch.py's exp kernel (4096 float32) through the bare driver: the launch, a
//               stream-ordered alloc + launch + free, and launch + synchronize: the floors its targets use.
#include "cases.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/binary/module_loader.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"
#include "jitkernel/cuda/memory/memory.hpp"
#include "jitkernel/cuda/nvrtc/compile.hpp"
#include "jitkernel/cuda/nvrtc/compile_cache.hpp"
#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace jkbench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// --- kernels -------------------------------------------------------------------

// c = a + b over n elements; n is a scalar input (read as n[0], which works for scalars as in MLX).
jk::KernelSpec add_spec() {
  jk::KernelSpec spec;
  spec.name = "bench_add";
  spec.input_names = {"a", "b", "n"};
  spec.output_names = {"c"};
  spec.source =
      "    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "    if (i < n[0]) c[i] = a[i] + b[i];\n";
  return spec;
}

jk::CallSignature add_signature(jk::DType dtype) {
  jk::CallSignature sig;
  sig.inputs = {{false, dtype, 1}, {false, dtype, 1}, {true, jk::DType::Int32, 0}};
  sig.output_dtypes = {dtype};
  return sig;
}

// The exp example of MLX's cuda_kernel documentation (uses cooperative_groups, so CCCL headers).
jk::KernelSpec exp_spec() {
  jk::KernelSpec spec;
  spec.name = "myexp";
  spec.input_names = {"inp"};
  spec.output_names = {"out"};
  spec.source =
      "    auto elem = cooperative_groups::this_grid().thread_rank();\n"
      "    T tmp = inp[elem];\n"
      "    out[elem] = exp(tmp);\n";
  return spec;
}

jk::CallSignature exp_signature() {
  jk::CallSignature sig;
  sig.inputs = {{false, jk::DType::Float16, 2}};
  sig.output_dtypes = {jk::DType::Float16};
  jk::TemplateArg t;
  t.name = "T";
  t.kind = jk::TemplateArg::Kind::DType;
  t.dtype = jk::DType::Float32;
  sig.template_args = {t};
  return sig;
}

const char* kRawAddSource = R"(
extern "C" __global__ void raw_add(const float* a, const float* b, int n, float* c) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

// Volatile sink so the compiler cannot drop the code-generation work.
volatile std::size_t g_sink = 0;

// The compile cache folder of the cache/* cases: a new private temporary folder, made the cache's folder
// (JITKERNEL_CACHE_DIR, cache on, no size cap from the environment) before the cache's first use, and
// removed when the process exits.
class BenchCacheFolder {
 public:
  static const std::string& path() {
    static BenchCacheFolder folder;
    return folder.path_;
  }
  BenchCacheFolder(const BenchCacheFolder&) = delete;
  BenchCacheFolder& operator=(const BenchCacheFolder&) = delete;

 private:
  BenchCacheFolder() {
    std::string name = (fs::temp_directory_path() / "jitkernel-bench-cache-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr)
      throw jk::Error("cannot create a temporary compile cache folder: " + std::string(std::strerror(errno)));
    path_ = name;
    if (::setenv("JITKERNEL_CACHE_DIR", path_.c_str(), 1) != 0 || ::setenv("JITKERNEL_CACHE", "1", 1) != 0 ||
        ::unsetenv("JITKERNEL_CACHE_MAX_BYTES") != 0) {
      const int error = errno;
      remove();
      throw jk::Error("cannot set the compile cache's environment: " + std::string(std::strerror(error)));
    }
    jk::cache::reset();
  }
  ~BenchCacheFolder() { remove(); }
  void remove() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string path_;
};

// Compiles `kernel` once through the disk cache (storing its entry), then checks that a second lookup is a
// disk hit with the same bytes; returns them.
std::string store_in_disk_cache(const jk::GeneratedKernel& kernel, const std::string& arch) {
  const std::optional<std::string> dir = jk::cache::active_directory();
  if (!dir || *dir != BenchCacheFolder::path())
    throw jk::Error("the compile cache is not using the benchmark's folder " + BenchCacheFolder::path() + ": " +
                    jk::cache::info().disabled_reason);
  std::string binary = jk::cuda::compile_kernel_persistent(kernel, arch, jk::cuda::CompileTarget::Cubin);
  const std::uint64_t hits = jk::cache::info().hits;
  if (jk::cuda::compile_kernel_persistent(kernel, arch, jk::cuda::CompileTarget::Cubin) != binary ||
      jk::cache::info().hits != hits + 1)
    throw jk::Error("the entry of '" + kernel.entry_name + "' was not stored in the disk cache");
  return binary;
}

// A kernel of the CPU cases: its name in the case names, spec and call signature.
struct Gen {
  const char* name;
  jk::KernelSpec spec;
  jk::CallSignature sig;
};

void add_codegen_cases(Suite& suite) {
  for (auto& g : {Gen{"add_f32", add_spec(), add_signature(jk::DType::Float32)},
                  Gen{"exp_f16_seed", exp_spec(), exp_signature()}}) {
    jk::codegen::validate_cuda_kernel_spec(g.spec);
    auto spec = std::make_shared<jk::KernelSpec>(g.spec);
    auto sig = std::make_shared<jk::CallSignature>(g.sig);
    suite.cases.push_back({std::string("codegen/") + g.name, "one generate_cuda_kernel", 1,
                           [spec, sig](std::int64_t n) {
                             auto t0 = Clock::now();
                             for (std::int64_t i = 0; i < n; ++i)
                               g_sink = g_sink + jk::codegen::generate_cuda_kernel(*spec, *sig).source.size();
                             return seconds_since(t0);
                           }});
  }
}

void add_nvrtc_cases(Suite& suite) {
  for (auto& g : {Gen{"add_f32", add_spec(), add_signature(jk::DType::Float32)},
                  Gen{"add_f16", add_spec(), add_signature(jk::DType::Float16)},
                  Gen{"exp_f16_seed_cg", exp_spec(), exp_signature()}}) {
    auto kernel = std::make_shared<jk::GeneratedKernel>(jk::codegen::generate_cuda_kernel(g.spec, g.sig));
    suite.cases.push_back({std::string("nvrtc/") + g.name + "_sm_90a", "one NVRTC compile to cubin", 1,
                           [kernel](std::int64_t n) {
                             auto t0 = Clock::now();
                             for (std::int64_t i = 0; i < n; ++i)
                               g_sink = g_sink + jk::cuda::compile_kernel(*kernel, "sm_90a").size();
                             return seconds_since(t0);
                           }});
  }
}

void add_cache_cases(Suite& suite) {
  for (auto& g : {Gen{"add_f32", add_spec(), add_signature(jk::DType::Float32)},
                  Gen{"exp_f16_seed_cg", exp_spec(), exp_signature()}}) {
    auto kernel = std::make_shared<jk::GeneratedKernel>(jk::codegen::generate_cuda_kernel(g.spec, g.sig));
    suite.cases.push_back({std::string("cache/key_") + g.name,
                           "one compile key (options, NVRTC identity, include closure, SHA-256), sm_90a", 1,
                           [kernel](std::int64_t n) {
                             auto t0 = Clock::now();
                             for (std::int64_t i = 0; i < n; ++i)
                               g_sink = g_sink + jk::cuda::compile_key(*kernel, "sm_90a",
                                                                       jk::cuda::CompileTarget::Cubin).digest[0];
                             return seconds_since(t0);
                           }});
    auto stored = std::make_shared<std::string>();  // the entry's bytes, once stored (first run)
    suite.cases.push_back(
        {std::string("cache/disk_hit_") + g.name,
         "one compile_kernel_persistent answered by the disk cache (key + open/read/checksum), sm_90a", 1,
         [kernel, stored](std::int64_t n) {
           if (stored->empty()) *stored = store_in_disk_cache(*kernel, "sm_90a");
           const std::uint64_t hits = jk::cache::info().hits;
           std::string binary;
           auto t0 = Clock::now();
           for (std::int64_t i = 0; i < n; ++i) {
             binary = jk::cuda::compile_kernel_persistent(*kernel, "sm_90a", jk::cuda::CompileTarget::Cubin);
             g_sink = g_sink + binary.size();
           }
           const double seconds = seconds_since(t0);
           if (jk::cache::info().hits != hits + static_cast<std::uint64_t>(n) || binary != *stored)
             throw jk::Error("a lookup of '" + kernel->entry_name + "' was not answered by its disk cache entry");
           return seconds;
         }});
  }
}

// The add kernel with a header= that includes a user header (which includes another): the key hashes both
// once, then stats them. Timing starts 2 s after they were written: a file changed more recently than the
// timestamps' resolution is hashed again on every key (cache/include_closure.hpp).
void add_user_header_case(Suite& suite) {
  const std::string dir = BenchCacheFolder::path() + "/headers";
  fs::create_directories(dir);
  for (auto [name, text] : {std::pair{"helper.h", "#pragma once\n#include \"detail.h\"\n#define BENCH_SCALE 1\n"},
                            std::pair{"detail.h", "#pragma once\n#define BENCH_DETAIL 1\n"}}) {
    std::ofstream file(dir + "/" + name);
    file << text;
    if (!file.flush()) throw jk::Error("cannot write the benchmark header " + dir + "/" + name);
  }
  jk::KernelSpec spec = add_spec();
  spec.header = "#include \"" + dir + "/helper.h\"\n";
  auto kernel = std::make_shared<jk::GeneratedKernel>(
      jk::codegen::generate_cuda_kernel(spec, add_signature(jk::DType::Float32)));
  const auto settled = Clock::now() + std::chrono::milliseconds(2100);
  suite.cases.push_back({"cache/key_add_f32_user_headers",
                         "one compile key of a kernel including a user header that includes another, sm_90a", 1,
                         [kernel, settled](std::int64_t n) {
                           std::this_thread::sleep_until(settled);
                           auto t0 = Clock::now();
                           for (std::int64_t i = 0; i < n; ++i)
                             g_sink = g_sink + jk::cuda::compile_key(*kernel, "sm_90a",
                                                                     jk::cuda::CompileTarget::Cubin).digest[0];
                           return seconds_since(t0);
                         }});
}

void add_cpu_cases(Suite& suite) {
  add_codegen_cases(suite);
  add_nvrtc_cases(suite);
  BenchCacheFolder::path();  // before anything uses the compile cache
  add_cache_cases(suite);
  add_user_header_case(suite);
}

// --- GPU cases -------------------------------------------------------------------

struct Module {
  jk::cuda::CUmodule handle = nullptr;
  ~Module() {
    if (handle) jk::cuda::driver().cuModuleUnload(handle);
  }
};

// Device buffers and kernels shared by the launch cases (kept alive by the lambdas).
struct GpuState {
  static constexpr std::int64_t kElements = 1;
  jk::OwnedArray a, b, c;
  std::unique_ptr<jk::Kernel> kernel;
  jk::KernelCall call_provided, call_alloc;
  Module module;
  jk::cuda::CUfunction raw = nullptr;
};

void expect_sum(const jk::OwnedArray& c, float expected, const char* what) {
  std::vector<float> host(static_cast<std::size_t>(c.view.size()), -1.0f);
  jk::cuda::download(c.view, host.data(), nullptr);
  for (float v : host)
    if (std::fabs(v - expected) > 1e-6f)
      throw jk::Error(std::string(what) + ": wrong result " + std::to_string(v) + ", expected " +
                      std::to_string(expected));
}

void add_gpu_cases(Suite& suite) {
  const int device = 0;
  const std::string arch = jk::cuda::device_info(device).arch;
  jk::cuda::make_current(device);
  auto st = std::make_shared<GpuState>();
  const std::int64_t n = GpuState::kElements;
  st->a = jk::cuda::allocate_array(device, jk::DType::Float32, {n}, nullptr);
  st->b = jk::cuda::allocate_array(device, jk::DType::Float32, {n}, nullptr);
  st->c = jk::cuda::allocate_array(device, jk::DType::Float32, {n}, nullptr);
  jk::cuda::fill(st->a.view, 1.0, nullptr);
  jk::cuda::fill(st->b.view, 2.0, nullptr);

  st->kernel = std::make_unique<jk::Kernel>(add_spec(), jk::cuda_backend());
  jk::KernelCall call;
  call.inputs = {st->a.view, st->b.view, jk::Scalar::of(jk::DType::Int32, static_cast<std::int32_t>(n))};
  call.output_shapes = {{n}};
  call.output_dtypes = {jk::DType::Float32};
  call.launch.grid = {n, 1, 1};
  call.launch.threadgroup = {256, 1, 1};
  call.launch.stream = 0;
  st->call_alloc = call;
  call.provided_outputs = {st->c.view};
  st->call_provided = call;

  // First calls compile and load; check the results once before timing anything.
  jk::cuda::fill(st->c.view, 0.0, nullptr);
  (*st->kernel)(st->call_provided);
  expect_sum(st->c, 3.0f, "launch/jitkernel_outputs");
  auto allocated = (*st->kernel)(st->call_alloc);
  if (allocated.size() != 1) throw jk::Error("launch/jitkernel_alloc: expected one output");
  expect_sum(allocated[0], 3.0f, "launch/jitkernel_alloc");

  const auto& drv = jk::cuda::driver();
  std::string cubin = jk::cuda::compile_source(kRawAddSource, "raw_add.cu", arch);
  jk::cuda::check(drv.cuModuleLoadData(&st->module.handle, cubin.data()), "cuModuleLoadData");
  jk::cuda::check(drv.cuModuleGetFunction(&st->raw, st->module.handle, "raw_add"), "cuModuleGetFunction");
  auto raw_launch = [st]() {
    jk::cuda::CUlaunchConfig cfg{};
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = static_cast<unsigned>(GpuState::kElements);
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = nullptr;
    void* pa = st->a.view.data;
    void* pb = st->b.view.data;
    void* pc = st->c.view.data;
    int count = static_cast<int>(GpuState::kElements);
    void* params[] = {&pa, &pb, &count, &pc};
    jk::cuda::check(jk::cuda::driver().cuLaunchKernelEx(&cfg, st->raw, params, nullptr), "cuLaunchKernelEx");
  };
  jk::cuda::fill(st->c.view, 0.0, nullptr);
  raw_launch();
  expect_sum(st->c, 3.0f, "launch/raw_cuLaunchKernelEx");

  auto sync = []() { jk::cuda::check(jk::cuda::driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize"); };
  const std::string note = "one launch of a 1-element add (" + arch + ")";
  suite.cases.push_back({"launch/raw_cuLaunchKernelEx", note, 1000, [st, raw_launch, sync](std::int64_t n) {
                           auto t0 = Clock::now();
                           for (std::int64_t i = 0; i < n; ++i) raw_launch();
                           sync();
                           return seconds_since(t0);
                         }});
  suite.cases.push_back({"launch/jitkernel_outputs", note + ", outputs provided", 1000,
                         [st, sync](std::int64_t n) {
                           auto t0 = Clock::now();
                           for (std::int64_t i = 0; i < n; ++i) (*st->kernel)(st->call_provided);
                           sync();
                           return seconds_since(t0);
                         }});
  suite.cases.push_back({"launch/jitkernel_alloc", note + ", output allocated and freed stream-ordered", 1000,
                         [st, sync](std::int64_t n) {
                           auto t0 = Clock::now();
                           for (std::int64_t i = 0; i < n; ++i) (*st->kernel)(st->call_alloc);
                           sync();
                           return seconds_since(t0);
                         }});
}

// The floors benchmarks/python/bench_launch.py compares Python calls with: its kernel (exp over 4096 float32,
// blocks of 256) launched straight through the driver table, on the legacy default stream.
const char* kRawExpSource = R"(
extern "C" __global__ void raw_exp(const float* inp, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = expf(inp[i]);
}
)";

struct ExpFloor {
  static constexpr long long kElements = 4096;
  jk::OwnedArray x, y;
  Module module;
  jk::cuda::CUfunction function = nullptr;

  void launch(void* out) {
    jk::cuda::CUlaunchConfig cfg{};
    cfg.gridDimX = static_cast<unsigned>(kElements / 256);
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 256;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = nullptr;
    void* in = x.view.data;
    long long n = kElements;
    void* params[] = {&in, &out, &n};
    jk::cuda::check(jk::cuda::driver().cuLaunchKernelEx(&cfg, function, params, nullptr), "cuLaunchKernelEx");
  }
  // The same launch through the driver's plain entry point (no launch attributes).
  void launch_plain(void* out) {
    void* in = x.view.data;
    long long n = kElements;
    void* params[] = {&in, &out, &n};
    jk::cuda::check(jk::cuda::driver().cuLaunchKernel(function, static_cast<unsigned>(kElements / 256), 1, 1, 256,
                                                      1, 1, 0, nullptr, params, nullptr),
                    "cuLaunchKernel");
  }
  // A stream-ordered output, the launch into it and its free: what an allocating call must do at least.
  void alloc_launch_free() {
    const auto& api = jk::cuda::driver();
    jk::cuda::CUdeviceptr out = 0;
    jk::cuda::check(api.cuMemAllocAsync(&out, sizeof(float) * kElements, nullptr), "cuMemAllocAsync");
    launch(reinterpret_cast<void*>(out));
    jk::cuda::check(api.cuMemFreeAsync(out, nullptr), "cuMemFreeAsync");
  }
};

void add_floor_cases(Suite& suite) {
  const int device = 0;
  const std::string arch = jk::cuda::device_info(device).arch;
  auto st = std::make_shared<ExpFloor>();
  const std::int64_t n = ExpFloor::kElements;
  st->x = jk::cuda::allocate_array(device, jk::DType::Float32, {n}, nullptr);
  st->y = jk::cuda::allocate_array(device, jk::DType::Float32, {n}, nullptr);
  jk::cuda::fill(st->x.view, 0.5, nullptr);
  jk::cuda::fill(st->y.view, 0.0, nullptr);
  const auto& drv = jk::cuda::driver();
  std::string cubin = jk::cuda::compile_source(kRawExpSource, "raw_exp.cu", arch);
  jk::cuda::check(drv.cuModuleLoadData(&st->module.handle, cubin.data()), "cuModuleLoadData");
  jk::cuda::check(drv.cuModuleGetFunction(&st->function, st->module.handle, "raw_exp"), "cuModuleGetFunction");
  st->launch(st->y.view.data);
  std::vector<float> host(static_cast<std::size_t>(n));
  jk::cuda::download(st->y.view, host.data(), nullptr);
  for (float v : host)
    if (std::fabs(v - std::exp(0.5f)) > 1e-5f) throw jk::Error("floor/raw_exp4096: wrong result " + std::to_string(v));

  auto sync = []() { jk::cuda::check(jk::cuda::driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize"); };
  const std::string note = "exp over 4096 float32 (" + arch + ")";
  // A case doing `op` k times, synchronizing after each (`each`) or once at the end.
  auto add = [&](const char* name, const std::string& what, std::int64_t batch, bool each, auto op) {
    suite.cases.push_back({name, note + ": " + what, batch, [op, each, sync](std::int64_t k) {
                             auto t0 = Clock::now();
                             for (std::int64_t i = 0; i < k; ++i) {
                               op();
                               if (each) sync();
                             }
                             if (!each) sync();
                             return seconds_since(t0);
                           }});
  };
  add("floor/raw_exp4096_launch", "cuLaunchKernelEx, output given", 1000, false,
      [st] { st->launch(st->y.view.data); });
  add("floor/raw_exp4096_cuLaunchKernel", "cuLaunchKernel, output given", 1000, false,
      [st] { st->launch_plain(st->y.view.data); });
  add("floor/raw_exp4096_alloc_launch_free", "cuMemAllocAsync + cuLaunchKernelEx + cuMemFreeAsync", 1000, false,
      [st] { st->alloc_launch_free(); });
  add("floor/raw_exp4096_launch_sync", "cuLaunchKernelEx + cuStreamSynchronize", 200, true,
      [st] { st->launch(st->y.view.data); });
}

}  // namespace

std::string toolkit_summary() {
  auto p = jk::cuda::toolkit_paths();  // the environment's toolkit (toolkit_from_environment)
  std::string s = "NVRTC " + (p.nvrtc_library.empty() ? "(the system loader's libnvrtc.so.13)" : p.nvrtc_library);
  for (const auto& d : p.include_dirs) s += " -I" + d;
  return s;
}

double run_counted(const Case& c, std::int64_t n, double& spent) {
  auto t0 = Clock::now();
  double reported = c.run(n);
  spent += seconds_since(t0);
  return reported;
}

std::int64_t sample_size(const Case& c, double one_op_seconds) {
  const double fit = kMaxSampleSeconds / std::max(one_op_seconds, 1e-9);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::min(static_cast<double>(c.batch), fit)));
}

Suite make_suite() {
  Suite suite;
  add_cpu_cases(suite);
  if (jk::cuda::cuda_available() && jk::cuda::device_count() > 0) {
    add_gpu_cases(suite);
    add_floor_cases(suite);
  } else {
    std::string why = "no CUDA GPU";
    try {
      jk::cuda::driver();
    } catch (const jk::Error& e) {
      why = e.what();
    }
    for (const char* name : {"launch/raw_cuLaunchKernelEx", "launch/jitkernel_outputs", "launch/jitkernel_alloc",
                             "floor/raw_exp4096_launch", "floor/raw_exp4096_cuLaunchKernel",
                             "floor/raw_exp4096_alloc_launch_free",
                             "floor/raw_exp4096_launch_sync"})
      suite.skipped.push_back(std::string(name) + ": " + why);
  }
  return suite;
}

}  // namespace jkbench
