// One kernel call as an XLA custom call carries it: everything needed to
// rebuild the kernel and its launch in a process that never saw the Python
// call (a jitted function served from JAX's persistent compilation cache):
// the kernel spec, each input's dtype and shape (scalars with their value),
// the outputs, template arguments, grid, threadgroup and init_value. It
// travels as one string attribute (`jk_call`) whose text is a sequence of
// length-prefixed tokens, plus its 64-bit key (`jk_key`, SHA-256 prefix of
// the text) that the handler's hot path looks the prepared call up by.
// The parser reads each byte once and answers malformed text with
// ArgumentError("jk_call", ...) saying which field is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/core/array_view.hpp"
#include "jitkernel/engine/kernel_spec.hpp"
#include "jitkernel/engine/template_arg.hpp"

namespace jk::xla {

struct InputDescription {
  bool is_scalar = false;
  DType dtype = DType::Float32;
  std::vector<std::int64_t> shape;  // arrays
  Scalar scalar;                    // scalars: passed by value, fixed when the call was traced
};

struct CallDescription {
  KernelSpec spec;  // CUDA fields only (name, names, source, header, ensure_row_contiguous, shared_memory)
  std::vector<InputDescription> inputs;
  std::vector<std::vector<std::int64_t>> output_shapes;
  std::vector<DType> output_dtypes;
  std::vector<TemplateArg> template_args;
  Dim3 grid;
  Dim3 threadgroup;
  std::optional<double> init_value;
  // Operands after the array inputs: `outputs=` arrays that are not inputs,
  // passed only so that XLA aliases them with their outputs.
  int extra_operands = 0;

  std::size_t array_input_count() const;
};

// The attribute text of `call` (what parse() reads back).
std::string encode(const CallDescription& call);

// Reads the attribute text. ArgumentError("jk_call", ...) for malformed
// text; counts, dims and values are range-checked, names are left to the
// backend's spec and codegen checks.
CallDescription parse(std::string_view text);

// The key of an attribute text: the first 8 bytes of its SHA-256.
std::uint64_t call_key(std::string_view text);

}  // namespace jk::xla
