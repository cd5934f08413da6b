// Stage 1 of a call: the kernel spec, what the user gave the factory
// (cuda_kernel / metal_kernel). One struct for both backends; the fields a
// backend does not read are documented as such. The backend validates it
// (Backend::validate_spec) because the reserved names differ per language.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jk {

// MTLCompileOptions' math mode ("safe" preserves IEEE special values, e.g.
// exp(-inf) == 0). MLX's default is Safe. Metal only.
enum class MetalMathMode : std::uint8_t { Safe, Relaxed, Fast };

// "safe" / "relaxed" / "fast".
const char* metal_math_mode_name(MetalMathMode mode);

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
};

}  // namespace jk
