// NVRTC compilation to a cubin (or PTX) for one exact architecture. The
// options are the architecture, target, language standard, include folders
// (the user's, then the configured toolkit's), the user's compile options
// (compile_options.hpp: defines, math mode, line info, ...) and --minimal
// when the source fits it (for a generated kernel the generator decides);
// all of them are part of the cache keys. Of the options measured
// (benchmarks/results/2026-11-22_local_compile_time.md) --minimal is the one
// that changes compile time (a faster front end); -default-device,
// --split-compile and the -I folders change nothing measurable. A compile
// failure becomes a CompileError carrying the log (mapped to the user's lines
// for generated kernels) and the full source.
#include "jitkernel/core/stage_clock.hpp"
#include "jitkernel/cuda/nvrtc/compile.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "jitkernel/core/compile_events.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/nvrtc/compile_options.hpp"
#include "jitkernel/cuda/nvrtc/nvrtc_api.hpp"
#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"

namespace jk::cuda {
namespace {

constexpr const char* kMinimal = "--minimal";

// "sm_90a" / "compute_90a" / "sm_80" -> {number 90, suffix "a"}.
struct ParsedArch {
  int number = 0;
  std::string suffix;
};

ParsedArch parse_arch(const std::string& arch) {
  std::string rest;
  if (arch.rfind("sm_", 0) == 0) {
    rest = arch.substr(3);
  } else if (arch.rfind("compute_", 0) == 0) {
    rest = arch.substr(8);
  }
  std::size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits]))) ++digits;
  std::string suffix = rest.substr(digits);
  if (digits == 0 || digits > 4 || !(suffix.empty() || suffix == "a" || suffix == "f")) {
    throw ArgumentError("arch", "expected a GPU architecture such as 'sm_90a', 'sm_80' or "
                                "'compute_90', got '" + arch + "'");
  }
  return {std::stoi(rest.substr(0, digits)), suffix};
}

std::string nvrtc_error(nvrtcResult r) {
  const char* text = nvrtc().nvrtcGetErrorString(r);
  return text ? text : "NVRTC error " + std::to_string(r);
}

void check_nvrtc(nvrtcResult r, const char* what) {
  if (r != NVRTC_SUCCESS) throw Error(std::string("NVRTC ") + what + " failed: " + nvrtc_error(r));
}

// Errors clearly when the loaded NVRTC cannot target `arch`.
void check_arch_supported(const ParsedArch& arch, const std::string& spelled) {
  const NvrtcApi& api = nvrtc();
  int count = 0;
  check_nvrtc(api.nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<std::size_t>(std::max(count, 0)));
  if (count > 0) check_nvrtc(api.nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  if (std::find(archs.begin(), archs.end(), arch.number) != archs.end()) return;
  auto [major, minor] = nvrtc_version();
  std::string list;
  for (int a : archs) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a);
  // The pip extras name the NVRTC that fits: CUDA 13 starts at sm_75, CUDA 12 reaches down to sm_50.
  const bool older = !archs.empty() && arch.number < archs.front();
  const std::string hint = older && major >= 13
                               ? "; for this GPU install NVRTC 12: `pip install \"jitkernel[cuda12]\"` (sm_50 to sm_90, "
                                 "sm_100/sm_120 from 12.8; runs on r525+ drivers)"
                               : "; use a newer NVRTC for newer GPUs (`pip install -U \"jitkernel[cuda]\"`) or an "
                                 "older one for older GPUs";
  throw ArgumentError("arch", "NVRTC " + std::to_string(major) + "." + std::to_string(minor) +
                                  " cannot compile for " + spelled + " (it supports " + list + ")" + hint);
}

// Owns an nvrtcProgram.
class Program {
 public:
  Program(const std::string& source, const std::string& name) {
    const NvrtcApi& api = nvrtc();
    StageTimer timer(Stage::NvrtcCreate);
    check_nvrtc(api.nvrtcCreateProgram(&program_, source.c_str(), name.c_str(), 0, nullptr,
                                           nullptr),
                "nvrtcCreateProgram");
  }
  ~Program() {
    if (program_ != nullptr) nvrtc().nvrtcDestroyProgram(&program_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  nvrtcResult compile(const std::vector<std::string>& options) {
    std::vector<const char*> argv;
    argv.reserve(options.size());
    for (const auto& o : options) argv.push_back(o.c_str());
    const NvrtcApi& api = nvrtc();
    StageTimer timer(Stage::NvrtcCompile);
    return api.nvrtcCompileProgram(program_, static_cast<int>(argv.size()), argv.data());
  }

  std::string log() const {
    const NvrtcApi& api = nvrtc();
    std::size_t size = 0;
    check_nvrtc(api.nvrtcGetProgramLogSize(program_, &size), "nvrtcGetProgramLogSize");
    std::string text(size, '\0');
    if (size > 0) check_nvrtc(api.nvrtcGetProgramLog(program_, text.data()), "nvrtcGetProgramLog");
    while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
    return text;
  }

  std::string binary(CompileTarget target) const {
    const NvrtcApi& api = nvrtc();
    StageTimer timer(Stage::NvrtcGetBinary);
    std::size_t size = 0;
    std::string out;
    if (target == CompileTarget::Cubin) {
      check_nvrtc(api.nvrtcGetCUBINSize(program_, &size), "nvrtcGetCUBINSize");
      out.resize(size);
      if (size > 0) check_nvrtc(api.nvrtcGetCUBIN(program_, out.data()), "nvrtcGetCUBIN");
    } else {
      check_nvrtc(api.nvrtcGetPTXSize(program_, &size), "nvrtcGetPTXSize");
      out.resize(size);
      if (size > 0) check_nvrtc(api.nvrtcGetPTX(program_, out.data()), "nvrtcGetPTX");
      while (!out.empty() && out.back() == '\0') out.pop_back();  // std::string keeps a terminator
    }
    return out;
  }

 private:
  nvrtcProgram program_ = nullptr;
};

// A hint for the most common setup problem: CUDA headers not configured.
std::string header_hint(const std::string& log) {
  if (log.find("cannot open source file") == std::string::npos) return "";
  if (!toolkit_paths().include_dirs.empty()) return "";
  return "\n(no CUDA include folders are configured: `pip install \"jitkernel[cuda]\"` brings the "
         "CUDA headers, or set CUDA_HOME to a CUDA toolkit)";
}

struct CompileResult {
  bool ok = false;
  std::string binary;  // when ok
  std::string log;     // when not ok
};

// Compiles with `options` (compile_options' for this source).
CompileResult run_nvrtc(const std::string& source, const std::string& program_name,
                        const std::string& arch, CompileTarget target,
                        std::vector<std::string> options) {
  ParsedArch parsed = parse_arch(arch);
  check_arch_supported(parsed, arch);
  if (nvrtc_version() < std::make_pair(12, 4)) {  // NVRTC 12.4 brought --minimal
    options.erase(std::remove(options.begin(), options.end(), kMinimal), options.end());
  }
  Program program(source, program_name);
  CompileReport report("NVRTC", program_name, arch, source.size());
  nvrtcResult r = program.compile(options);
  CompileResult out;
  if (r == NVRTC_SUCCESS) {
    out.ok = true;
    out.binary = program.binary(target);
    report.finished();
    return out;
  }
  out.log = program.log();
  if (r != NVRTC_ERROR_COMPILATION) {
    out.log = nvrtc_error(r) + (out.log.empty() ? "" : "\n" + out.log);
  }
  out.log += header_hint(out.log);
  return out;
}

// `toolkit`: with the toolkit's -I folders (resolving the toolkit), else without.
std::vector<std::string> options_for(const std::string& arch, CompileTarget target, bool minimal,
                                     const CudaCompileOptions& user, bool toolkit = true) {
  ParsedArch parsed = parse_arch(arch);
  validate_compile_options(user);
  std::vector<std::string> options;
  options.push_back(std::string("--gpu-architecture=") +
                    (target == CompileTarget::Cubin ? "sm_" : "compute_") +
                    std::to_string(parsed.number) + parsed.suffix);
  options.push_back("--std=" + user.std);
  for (const auto& flag : include_flags(user)) options.push_back(flag);
  if (toolkit) {
    for (const auto& dir : toolkit_paths().include_dirs) options.push_back("-I" + dir);
  }
  for (auto& flag : option_flags(user)) options.push_back(std::move(flag));
  if (minimal) options.push_back(kMinimal);
  return options;
}

}  // namespace

std::vector<std::string> compile_options(const std::string& arch, CompileTarget target,
                                         const std::string& source, const CudaCompileOptions& user) {
  return options_for(arch, target, codegen::fits_minimal_builtins(source), user);
}

std::vector<std::string> compile_options(const std::string& arch, CompileTarget target,
                                         const GeneratedKernel& kernel) {
  return options_for(arch, target, kernel.fits_minimal, kernel.options);
}

std::vector<std::string> portable_compile_options(const std::string& arch, CompileTarget target,
                                                  const std::string& source, const CudaCompileOptions& user) {
  return options_for(arch, target, codegen::fits_minimal_builtins(source), user, false);
}

std::vector<std::string> portable_compile_options(const std::string& arch, CompileTarget target,
                                                  const GeneratedKernel& kernel) {
  return options_for(arch, target, kernel.fits_minimal, kernel.options, false);
}

std::string nvrtc_program_name(const GeneratedKernel& kernel) {
  return kernel.program_name.empty() ? kernel.entry_name + ".cu" : kernel.program_name;
}

std::string compile_kernel(const GeneratedKernel& kernel, const std::string& arch,
                           CompileTarget target) {
  CompileResult result = run_nvrtc(kernel.source, nvrtc_program_name(kernel), arch, target,
                                   compile_options(arch, target, kernel));
  if (result.ok) return std::move(result.binary);
  std::string log = codegen::map_compile_log(kernel, result.log);
  throw CompileError("compiling kernel '" + kernel.entry_name + "' failed:\n" + log, log,
                     kernel.source);
}

std::string compile_source(const std::string& source, const std::string& program_name,
                           const std::string& arch, CompileTarget target,
                           const CudaCompileOptions& options) {
  CompileResult result = run_nvrtc(source, program_name, arch, target,
                                   compile_options(arch, target, source, options));
  if (result.ok) return std::move(result.binary);
  throw CompileError("compiling '" + program_name + "' failed:\n" + result.log, result.log, source);
}

}  // namespace jk::cuda
