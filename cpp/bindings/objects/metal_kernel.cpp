// Metal's half of `_core.KernelBase` (the type and its call are
// kernel_object.cpp's; a Metal call goes through the shared conversion with
// the host-memory policy): the factory's math mode, verbose=True's text in
// MLX's format, buffers(), and the module's Metal functions. Code generation
// and every argument check work on any OS; where the Metal runtime is
// missing a call raises jitkernel.MetalNotAvailableError.
#include <string>

#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "objects/kernel_object.hpp"
#include "jitkernel/codegen/metal_signature.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace jk::py {
namespace {

const char* kind_name(ParamKind kind) {
  switch (kind) {
    case ParamKind::InputData: return "input";
    case ParamKind::InputScalar: return "input_scalar";  // not in Metal layouts
    case ParamKind::InputShape: return "input_shape";
    case ParamKind::InputStrides: return "input_strides";
    case ParamKind::InputNdim: return "input_ndim";
    case ParamKind::OutputData: return "output";
  }
  return "";
}

}  // namespace

MetalMathMode math_mode_arg(const std::string& mode) {
  if (mode == "safe") return MetalMathMode::Safe;
  if (mode == "relaxed") return MetalMathMode::Relaxed;
  if (mode == "fast") return MetalMathMode::Fast;
  throw ArgumentError("compile_options",
                      "math_mode must be 'safe', 'relaxed' or 'fast', got '" + mode + "'");
}

// MLX's verbose output: the generated text without the metal_utils preamble.
void print_metal_source(const KernelSpec& spec, const GeneratedKernel& k) {
  nb::print(nb::str(("Generated source code for `" + spec.name + "`:\n```\n" + k.display_source + "\n```")
                        .c_str()));
}

void bind_metal_methods(nb::class_<PyKernel>& cls) {
  using namespace nb::literals;
  cls.def(
      "_buffers",
      [](const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl) {
        nb::list out;
        const GeneratedKernel k = generate(self, inputs, output_dtypes, tmpl);
        for (std::size_t n = 0; n < k.params.size(); ++n) {
          const ParamSlot& p = k.params[n];
          out.append(nb::make_tuple(n, kind_name(p.kind), p.index,
                                    p.space == AddressSpace::Constant ? "constant" : "device",
                                    p.passing == Passing::Bytes ? "bytes" : "buffer"));
        }
        return out;
      },
      "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(),
      "[(buffer index, what, input/output index, address space, 'buffer' | 'bytes')]");
}

namespace {

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def("validate_metal_kernel_name", &codegen::validate_metal_kernel_name, "name"_a,
        "ArgumentError unless `name` can name a metal_kernel (a C identifier).");
  m.def("metal_available", [] { return metal_backend().available(); },
        "True when this build has the Metal backend and a Metal device can be used.");
  m.def("metal_utils_source", [] { return std::string(codegen::metal_utils_preamble()); },
        "The metal_utils headers prepended to every generated Metal source.");
  m.def(
      "map_metal_compile_log",
      [](const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl,
         const std::string& log) {
        return codegen::map_metal_compile_log(generate(self, inputs, output_dtypes, tmpl), log);
      },
      "kernel"_a, "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(), "log"_a,
      "A Metal compiler log with locations in the user's source/header (tests).");
}

const Registration reg(order::metal, "metal", bind);

}  // namespace
}  // namespace jk::py
