// The `template=` argument of kernel calls (cuda_kernel, metal_kernel): None,
// a dict {name: value} or a sequence of (name, value) pairs whose values are
// ints, bools (Python or NumPy) or dtype-likes -> jk::TemplateArg list.
// Names and value ranges are checked by each backend's code generator.
#pragma once

#include <vector>

#include "bindings.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"

namespace jk::py {

// Raises ArgumentTypeError("template", ...) for anything else, and
// ArgumentError("template", ...) for ints outside int64.
std::vector<TemplateArg> template_args(nb::handle value);

}  // namespace jk::py
