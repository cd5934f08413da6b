// Stage 1 of a call: the kernel spec, what the user gave the factory
// (cuda_kernel / metal_kernel). One struct for both backends; the fields a
// backend does not read are documented as such. The backend validates it
// (Backend::validate_spec) because the reserved names differ per language.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace jk {

// MTLCompileOptions' math mode ("safe" preserves IEEE special values, e.g.
// exp(-inf) == 0). MLX's default is Safe. Metal only.
enum class MetalMathMode : std::uint8_t { Safe, Relaxed, Fast };

// "safe" / "relaxed" / "fast".
const char* metal_math_mode_name(MetalMathMode mode);

// cuda_kernel's / compile_cuda's compile_options, each one NVRTC flag or more
// (cuda/nvrtc/compile_options.hpp checks them and writes the flags). All of
// them are in the compile cache key, through the flags, except `checked`,
// which changes the generated source instead. CUDA only.
struct CudaCompileOptions {
  bool fast_math = false;  // math_mode "fast": --use_fast_math
  bool line_info = true;   // -lineinfo: source lines for profilers; the SASS is unchanged
  bool debug = false;      // -G
  // -DNAME or -DNAME=VALUE, sorted by name (a dict has no duplicates).
  std::vector<std::pair<std::string, std::optional<std::string>>> defines;
  std::string std = "c++17";              // --std=
  int max_registers = 0;                  // --maxrregcount; 0: no cap
  std::vector<std::string> include_dirs;  // -I, searched before the toolkit's folders
  std::vector<std::string> extra_flags;   // NVRTC flags from an allowlist
  // Checked mode (docs/checked.md): arrays become bounds-checked accessors
  // (codegen/checked_accessors.cpp) and launches read back the first
  // violation (cuda/launch/checked_launch.hpp). cuda_kernel only.
  bool checked = false;
};

// "safe" / "fast".
const char* cuda_math_mode_name(const CudaCompileOptions& options);

// The options that differ from their defaults, as cuda_kernel's compile_options dict spells them, in one order:
// what a kernel text records (engine/call_record.cpp) and what Python's decoded kernel shows
// (bindings/services/call_record.cpp), each writing them its own way.
struct CudaOptionSink {
  virtual ~CudaOptionSink() = default;
  virtual void text(const char* name, const std::string& value) = 0;
  virtual void flag(const char* name, bool value) = 0;
  virtual void number(const char* name, int value) = 0;
  virtual void texts(const char* name, const std::vector<std::string>& values) = 0;
  virtual void defines(const char* name, const std::vector<std::pair<std::string, std::optional<std::string>>>& d) = 0;
};
void visit_changed_options(const CudaCompileOptions& options, CudaOptionSink& sink);

struct KernelSpec {
  std::string name;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  std::string source;  // kernel body
  std::string header;  // file-scope code, placed before the kernel
  bool ensure_row_contiguous = true;  // copy strided inputs to row-contiguous ones first
  int shared_memory = 0;              // CUDA: default dynamic shared memory bytes of a call
  bool atomic_outputs = false;        // Metal: outputs are `device atomic<T>*`
  MetalMathMode math_mode = MetalMathMode::Safe;  // Metal: compile_options={"math_mode": ...}
  CudaCompileOptions cuda_options;                 // CUDA: compile_options={...}
};

}  // namespace jk
