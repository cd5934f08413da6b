// `_core.MetalKernel` (the engine behind jitkernel.metal_kernel): argument
// checks and Metal code generation on every OS (source(), kernel_name(),
// the buffer layout), and the call, which hands a checked MetalCall to the
// Metal runtime (metal_call.hpp) on Apple and raises
// jitkernel.MetalNotAvailableError elsewhere. Argument conversion reuses
// convert.hpp / template_args.hpp; the Python class in
// python/jitkernel/_metal_kernel.py adds the keyword-only signature, the dict
// form and the legacy MetalKernel class.
#include <cstdio>
#include <string>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "call_form.hpp"
#include "convert.hpp"
#include "dtypes.hpp"
#include "metal_call.hpp"
#include "template_args.hpp"
#include "jitkernel/codegen/metal_signature.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {
namespace {

using codegen::GeneratedMetalKernel;
using codegen::MetalCallDescription;
using codegen::MetalInputDescription;
using codegen::MetalKernelSpec;

struct PyMetalKernel {
  MetalKernelSpec spec;
};

codegen::MetalMathMode math_mode_arg(const std::string& mode) {
  if (mode == "safe") return codegen::MetalMathMode::Safe;
  if (mode == "relaxed") return codegen::MetalMathMode::Relaxed;
  if (mode == "fast") return codegen::MetalMathMode::Fast;
  throw ArgumentError("compile_options",
                      "math_mode must be 'safe', 'relaxed' or 'fast', got '" + mode + "'");
}


// Inputs as the code generator sees them: dtype and shape (Python scalars
// are 0-d, with MLX's dtypes: bool, int32 (int64 when out of range), float32).
std::vector<MetalInputDescription> describe(const PyMetalKernel& self, nb::handle inputs) {
  std::vector<MetalInputDescription> out;
  for (auto& in : describe_inputs(inputs, &self.spec.input_names, /*widen_int_scalars=*/true)) {
    MetalInputDescription d;
    if (const Scalar* s = std::get_if<Scalar>(&in)) {
      d.dtype = s->dtype;
      d.is_scalar = true;
    } else {
      const ArrayView& v = std::get<ArrayView>(in);
      d.dtype = v.dtype;
      d.shape = v.shape;
    }
    out.push_back(std::move(d));
  }
  return out;
}

MetalCallDescription signature(const PyMetalKernel& self, nb::handle inputs,
                               nb::handle output_dtypes, nb::handle tmpl) {
  MetalCallDescription call;
  call.inputs = describe(self, inputs);
  call.output_dtypes = output_dtypes_arg(output_dtypes, &self.spec.output_names);
  call.template_args = template_args(tmpl);
  return call;
}

GeneratedMetalKernel generate(const PyMetalKernel& self, nb::handle inputs,
                              nb::handle output_dtypes, nb::handle tmpl) {
  return codegen::generate_metal_kernel(self.spec, signature(self, inputs, output_dtypes, tmpl));
}

const char* kind_name(codegen::MetalBufferKind kind) {
  switch (kind) {
    case codegen::MetalBufferKind::InputData: return "input";
    case codegen::MetalBufferKind::InputShape: return "input_shape";
    case codegen::MetalBufferKind::InputStrides: return "input_strides";
    case codegen::MetalBufferKind::InputNdim: return "input_ndim";
    case codegen::MetalBufferKind::OutputData: return "output";
  }
  return "";
}

// `.shape` / `.dtype` of the outputs= entry i (the list's length checked).
nb::object provided_attr(nb::handle outputs, std::size_t i, const char* attr,
                         const std::vector<std::string>& names) {
  if (static_cast<std::size_t>(PySequence_Fast_GET_SIZE(outputs.ptr())) != names.size())
    raise_sequence_changed("outputs");
  nb::object arr = nb::borrow(PySequence_Fast_GET_ITEM(outputs.ptr(), i));
  const ItemRef where{"output", i, &names};
  PyObject* value = PyObject_GetAttrString(arr.ptr(), attr);
  if (value == nullptr) {
    PyErr_Clear();
    throw ArgumentTypeError("outputs", where.prefix() + "expected an array with ." + attr +
                                           ", got " + type_text(arr));
  }
  return nb::steal(value);
}

// output_shapes / output_dtypes, or (when omitted) those of the outputs=
// arrays.
void output_layout(const PyMetalKernel& self, nb::handle output_shapes, nb::handle output_dtypes,
                   nb::handle outputs, MetalCall& call) {
  const auto& names = self.spec.output_names;
  const bool have_outputs = outputs.is_valid() && !outputs.is_none();
  if (have_outputs) {
    std::size_t n = sequence_arg(outputs, "outputs", "a list of arrays, one per output");
    if (n != names.size())
      throw ArgumentError("outputs", "expected " + std::to_string(names.size()) +
                                         " arrays (one per output), got " + std::to_string(n));
    call.outputs = outputs;
  }
  if (output_shapes.is_valid() && !output_shapes.is_none()) {
    std::size_t n = sequence_arg(output_shapes, "output_shapes", "a list of shapes, one per output");
    if (n != names.size())
      throw ArgumentError("output_shapes", "expected " + std::to_string(names.size()) +
                                               " shapes (one per output), got " + std::to_string(n));
  } else if (!have_outputs) {
    throw ArgumentTypeError("output_shapes", "required: a list with one shape per output");
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const ItemRef where{"output", i, &names};
    if (output_shapes.is_valid() && !output_shapes.is_none()) {
      if (static_cast<std::size_t>(PySequence_Fast_GET_SIZE(output_shapes.ptr())) != names.size())
        raise_sequence_changed("output_shapes");
      nb::object shape = nb::borrow(PySequence_Fast_GET_ITEM(output_shapes.ptr(), i));
      call.output_shapes.push_back(shape_arg(shape, "output_shapes", where));
    } else {
      call.output_shapes.push_back(
          shape_arg(provided_attr(outputs, i, "shape", names), "outputs", where, ".shape"));
    }
  }
  if (output_dtypes.is_valid() && !output_dtypes.is_none()) {
    call.output_dtypes = output_dtypes_arg(output_dtypes, &names);
  } else if (!have_outputs) {
    throw ArgumentTypeError("output_dtypes", "required: a list with one dtype per output");
  } else {
    for (std::size_t i = 0; i < names.size(); ++i)
      call.output_dtypes.push_back(dtype_arg(provided_attr(outputs, i, "dtype", names), "outputs",
                                             ItemRef{"output", i, &names}));
  }
}

// MLX's verbose output: the generated text without the metal_utils preamble.
void print_source(const MetalKernelSpec& spec, const GeneratedMetalKernel& k) {
  nb::print(nb::str(("Generated source code for `" + spec.name + "`:\n```\n" +
                     k.source_without_utils + "\n```")
                        .c_str()));
}

#ifndef JITKERNEL_HAVE_METAL
bool metal_runtime_available() { return false; }

[[noreturn]] void raise_not_available() {
  nb::object cls = nb::module_::import_("jitkernel._errors").attr("MetalNotAvailableError");
  PyErr_SetObject(cls.ptr(), cls("Metal kernels need macOS on Apple silicon (this jitkernel was "
                                 "built without its Metal backend); metal_kernel(...) and "
                                 "kernel.source(...) work everywhere, calling a kernel does not")
                                 .ptr());
  throw nb::python_error();
}

nb::object launch_metal(const MetalCall&) { raise_not_available(); }
#endif

// The list form of a call. Returns NotImplemented when inputs,
// output_shapes, output_dtypes or outputs is a dict (the Python front then
// resolves names and calls again with lists).
nb::object call(const PyMetalKernel& self, nb::handle inputs, nb::handle output_shapes,
                nb::handle output_dtypes, nb::handle grid, nb::handle threadgroup, nb::handle tmpl,
                nb::handle init_value, nb::handle stream, nb::handle outputs,
                nb::handle verbose) {
  if (is_dict_form(inputs, output_shapes, output_dtypes, outputs))
    return call_by_name(call, self, self.spec.input_names, self.spec.output_names, "metal_kernel", inputs, output_shapes, output_dtypes, grid, threadgroup, tmpl, init_value, stream, outputs, verbose);
  const bool show_source = verbose_arg(verbose);
  if (stream.is_valid() && !stream.is_none())
    throw ArgumentError("stream", "Metal kernels run on jitkernel's own Metal command queue; "
                                  "expected None, got " + type_text(stream));
  MetalCall c;
  c.spec = &self.spec;
  c.inputs = inputs;
  c.input_descriptions = describe(self, inputs);
  output_layout(self, output_shapes, output_dtypes, outputs, c);
  c.grid = dim3_arg(grid, "grid");
  c.threadgroup = dim3_arg(threadgroup, "threadgroup");
  c.init_value = init_value_arg(init_value);
  MetalCallDescription desc{c.input_descriptions, c.output_dtypes, template_args(tmpl)};
  c.kernel = codegen::generate_metal_kernel(self.spec, desc);
  if (show_source) print_source(self.spec, c.kernel);
  return launch_metal(c);
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  nb::class_<PyMetalKernel>(m, "MetalKernel",
                            "The C++ kernel object behind jitkernel.metal_kernel (internal).")
      .def(
          "__init__",
          [](PyMetalKernel* self, std::string name, std::vector<std::string> input_names,
             std::vector<std::string> output_names, std::string source, std::string header,
             bool ensure_row_contiguous, bool atomic_outputs, const std::string& math_mode) {
            MetalKernelSpec spec;
            spec.name = std::move(name);
            spec.input_names = std::move(input_names);
            spec.output_names = std::move(output_names);
            spec.source = std::move(source);
            spec.header = std::move(header);
            spec.ensure_row_contiguous = ensure_row_contiguous;
            spec.atomic_outputs = atomic_outputs;
            spec.math_mode = math_mode_arg(math_mode);
            codegen::validate_metal_kernel_spec(spec);
            new (self) PyMetalKernel{std::move(spec)};
          },
          "name"_a, "input_names"_a, "output_names"_a, "source"_a, "header"_a,
          "ensure_row_contiguous"_a, "atomic_outputs"_a, "math_mode"_a)
      .def_prop_ro("input_names", [](const PyMetalKernel& k) { return k.spec.input_names; })
      .def_prop_ro("output_names", [](const PyMetalKernel& k) { return k.spec.output_names; })
      .def_prop_ro("math_mode",
                   [](const PyMetalKernel& k) { return codegen::metal_math_mode_name(k.spec.math_mode); })
      .def("_call", &call, "inputs"_a.none(), "output_shapes"_a.none(), "output_dtypes"_a.none(),
           "grid"_a.none(), "threadgroup"_a.none(), "template"_a.none(), "init_value"_a.none(),
           "stream"_a.none(), "outputs"_a.none(), "verbose"_a.none())
      .def("_source",
           [](const PyMetalKernel& self, nb::handle inputs, nb::handle output_dtypes,
              nb::handle tmpl, bool with_utils) {
             GeneratedMetalKernel k = generate(self, inputs, output_dtypes, tmpl);
             return with_utils ? k.source : k.source_without_utils;
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(), "with_utils"_a)
      .def("_kernel_name",
           [](const PyMetalKernel& self, nb::handle inputs, nb::handle output_dtypes,
              nb::handle tmpl) { return generate(self, inputs, output_dtypes, tmpl).kernel_name; },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none())
      .def("_buffers",
           [](const PyMetalKernel& self, nb::handle inputs, nb::handle output_dtypes,
              nb::handle tmpl) {
             nb::list out;
             for (const auto& b : generate(self, inputs, output_dtypes, tmpl).bindings) {
               out.append(nb::make_tuple(
                   b.buffer_index, kind_name(b.kind), b.index,
                   b.address_space == codegen::MetalAddressSpace::Constant ? "constant" : "device",
                   b.passing == codegen::MetalPassing::Bytes ? "bytes" : "buffer"));
             }
             return out;
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(),
           "[(buffer index, what, input/output index, address space, 'buffer' | 'bytes')]");

  m.def("validate_metal_kernel_name", &codegen::validate_metal_kernel_name, "name"_a,
        "ArgumentError unless `name` can name a metal_kernel (a C identifier).");
  m.def("metal_available", [] { return metal_runtime_available(); },
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
