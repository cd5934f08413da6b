// `_core.MetalKernel` (the kernel object behind jitkernel.metal_kernel): the
// Python front of the engine's Kernel on the Metal backend. A call goes
// through the shared conversion (call/convert.hpp) with the host-memory
// policy (arrays in CPU memory as host views, which Apple GPUs read
// directly; Python scalars by value), runs, and returns the outputs as NumPy
// arrays over the kernel's shared Metal buffers (no copy; each array owns its
// buffer) or the caller's outputs= arrays. Code
// generation and every argument check work on any OS; where the Metal
// runtime is missing the call raises jitkernel.MetalNotAvailableError. The
// Python class in python/jitkernel/_kernels/metal_kernel.py adds the keyword-only
// signature, the dict form and the legacy MetalKernel class.
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "call/call_form.hpp"
#include "call/convert.hpp"
#include "objects/dtypes.hpp"
#include "call/template_args.hpp"
#include "jitkernel/codegen/metal_signature.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace jk::py {
namespace {

struct PyMetalKernel {
  Kernel kernel;  // on metal_backend()
  const KernelSpec& spec() const { return kernel.spec(); }
};

MetalMathMode math_mode_arg(const std::string& mode) {
  if (mode == "safe") return MetalMathMode::Safe;
  if (mode == "relaxed") return MetalMathMode::Relaxed;
  if (mode == "fast") return MetalMathMode::Fast;
  throw ArgumentError("compile_options",
                      "math_mode must be 'safe', 'relaxed' or 'fast', got '" + mode + "'");
}


// The signature of a source() / kernel_name() / buffers() request: inputs
// as the code generator sees them (dtype, shape; Python scalars are 0-d, with
// MLX's dtypes: bool, int32 (int64 when out of range), float32).
CallSignature signature(const PyMetalKernel& self, nb::handle inputs, nb::handle output_dtypes,
                        nb::handle tmpl) {
  const KernelSpec& spec = self.spec();
  return signature_of(describe_inputs(inputs, &spec.input_names, /*widen_int_scalars=*/true),
                      output_dtypes_arg(output_dtypes, &spec.output_names), template_args(tmpl));
}

GeneratedKernel generate(const PyMetalKernel& self, nb::handle inputs, nb::handle output_dtypes,
                         nb::handle tmpl) {
  return self.kernel.generate(signature(self, inputs, output_dtypes, tmpl));
}

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

// MLX's verbose output: the generated text without the metal_utils preamble.
void print_source(const KernelSpec& spec, const GeneratedKernel& k) {
  nb::print(nb::str(("Generated source code for `" + spec.name + "`:\n```\n" + k.display_source + "\n```")
                        .c_str()));
}

// cooperative= / cluster= are CUDA launch options: None only.
void refuse_cuda_launch_options(const CallArgs& args) {
  if (!args.cooperative.is_none())
    throw ArgumentError("cooperative", "Metal kernels have no cooperative launches: not supported; expected None, "
                                       "got " + repr_text(args.cooperative));
  if (!args.cluster.is_none())
    throw ArgumentError("cluster", "Metal kernels have no thread-block clusters: not supported; expected None, "
                                   "got " + repr_text(args.cluster));
}

// A call. The dict form (inputs, output_shapes, output_dtypes or outputs
// keyed by name) is turned into lists by call_form.cpp, then comes back here;
// the arguments go through the shared conversion with the host-memory policy.
nb::object call(PyMetalKernel& self, const CallArgs& args) {
  if (is_dict_form(args))
    return call_by_name(&call, self, self.spec().input_names, self.spec().output_names, "metal_kernel", args);
  const bool show_source = verbose_arg(args.verbose);
  refuse_cuda_launch_options(args);
  KernelCall c;
  ConvertedCall conv;  // keeps the host arrays the call reads alive until the kernel has finished
  c.template_args = template_args(args.tmpl);
  CallInputs in{args, Memory::Host};
  in.input_names = &self.spec().input_names;
  in.output_names = &self.spec().output_names;
  convert_call(in, c, conv);
  if (show_source)
    print_source(self.spec(), self.kernel.generate(signature_of(c.inputs, c.output_dtypes, c.template_args)));
  std::vector<OwnedArray> results = self.kernel(c);
  return wrap_host_outputs(std::move(results), conv);
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  auto cls = nb::class_<PyMetalKernel>(m, "MetalKernel",
                                       "The C++ kernel object behind jitkernel.metal_kernel (internal).");
  def_positional_call<&call, PyMetalKernel>(cls);
  cls.def(
          "__init__",
          [](PyMetalKernel* self, std::string name, std::vector<std::string> input_names,
             std::vector<std::string> output_names, std::string source, std::string header,
             bool ensure_row_contiguous, bool atomic_outputs, const std::string& math_mode) {
            KernelSpec spec;
            spec.name = std::move(name);
            spec.input_names = std::move(input_names);
            spec.output_names = std::move(output_names);
            spec.source = std::move(source);
            spec.header = std::move(header);
            spec.ensure_row_contiguous = ensure_row_contiguous;
            spec.atomic_outputs = atomic_outputs;
            spec.math_mode = math_mode_arg(math_mode);
            new (self) PyMetalKernel{Kernel(std::move(spec), metal_backend())};
          },
          "name"_a, "input_names"_a, "output_names"_a, "source"_a, "header"_a,
          "ensure_row_contiguous"_a, "atomic_outputs"_a, "math_mode"_a)
      .def_prop_ro("input_names", [](const PyMetalKernel& k) { return k.spec().input_names; })
      .def_prop_ro("output_names", [](const PyMetalKernel& k) { return k.spec().output_names; })
      .def_prop_ro("math_mode", [](const PyMetalKernel& k) { return metal_math_mode_name(k.spec().math_mode); })
      .def("_source",
           [](const PyMetalKernel& self, nb::handle inputs, nb::handle output_dtypes,
              nb::handle tmpl, bool with_utils) {
             GeneratedKernel k = generate(self, inputs, output_dtypes, tmpl);
             return with_utils ? k.source : k.display_source;
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(), "with_utils"_a)
      .def("_kernel_name",
           [](const PyMetalKernel& self, nb::handle inputs, nb::handle output_dtypes,
              nb::handle tmpl) { return generate(self, inputs, output_dtypes, tmpl).entry_name; },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none())
      .def("_buffers",
           [](const PyMetalKernel& self, nb::handle inputs, nb::handle output_dtypes,
              nb::handle tmpl) {
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

  m.def("validate_metal_kernel_name", &codegen::validate_metal_kernel_name, "name"_a,
        "ArgumentError unless `name` can name a metal_kernel (a C identifier).");
  m.def("metal_available", [] { return metal_backend().available(); },
        "True when this build has the Metal backend and a Metal device can be used.");
  m.def("metal_utils_source", [] { return std::string(codegen::metal_utils_preamble()); },
        "The metal_utils headers prepended to every generated Metal source.");
  m.def(
      "map_metal_compile_log",
      [](const PyMetalKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl,
         const std::string& log) {
        return codegen::map_metal_compile_log(generate(self, inputs, output_dtypes, tmpl), log);
      },
      "kernel"_a, "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(), "log"_a,
      "A Metal compiler log with locations in the user's source/header (tests).");
}

const Registration reg(order::metal, "metal", bind);

}  // namespace
}  // namespace jk::py
