// The kernel spec's names of its math modes (kernel_spec.hpp).
#include "jitkernel/engine/kernel_spec.hpp"

namespace jk {

const char* metal_math_mode_name(MetalMathMode mode) {
  switch (mode) {
    case MetalMathMode::Safe: return "safe";
    case MetalMathMode::Relaxed: return "relaxed";
    case MetalMathMode::Fast: return "fast";
  }
  return "safe";
}

const char* cuda_math_mode_name(const CudaCompileOptions& options) {
  return options.fast_math ? "fast" : "safe";
}

void visit_changed_options(const CudaCompileOptions& o, CudaOptionSink& sink) {
  if (o.fast_math) sink.text("math_mode", "fast");
  if (!o.line_info) sink.flag("line_info", false);
  if (o.debug) sink.flag("debug", true);
  if (!o.defines.empty()) sink.defines("defines", o.defines);
  if (o.std != "c++17") sink.text("std", o.std);
  if (o.max_registers > 0) sink.number("max_registers", o.max_registers);
  if (!o.include_dirs.empty()) sink.texts("include_dirs", o.include_dirs);
  if (!o.extra_flags.empty()) sink.texts("extra_flags", o.extra_flags);
  if (o.checked) sink.flag("checked", true);
}

}  // namespace jk
