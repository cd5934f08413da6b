// `_core.MetalKernel` (the kernel object behind jitkernel.metal_kernel): the
// Python front of the engine's Kernel on the Metal backend. A call converts
// its arguments into a KernelCall (arrays in CPU memory as host views, which
// Apple GPUs read directly; Python scalars by value), runs it, and returns
// the outputs as NumPy arrays over the kernel's shared Metal buffers (no
// copy; each array owns its buffer) or the caller's outputs= arrays. Code
// generation and every argument check work on any OS; where the Metal
// runtime is missing the call raises jitkernel.MetalNotAvailableError. The
// Python class in python/jitkernel/_kernels/metal_kernel.py adds the keyword-only
// signature, the dict form and the legacy MetalKernel class.
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/ndarray.h>
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
                   nb::handle outputs, KernelCall& call) {
  const auto& names = self.spec().output_names;
  const bool have_outputs = outputs.is_valid() && !outputs.is_none();
  if (have_outputs) {
    std::size_t n = sequence_arg(outputs, "outputs", "a list of arrays, one per output");
    if (n != names.size())
      throw ArgumentError("outputs", "expected " + std::to_string(names.size()) +
                                         " arrays (one per output), got " + std::to_string(n));
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
void print_source(const KernelSpec& spec, const GeneratedKernel& k) {
  nb::print(nb::str(("Generated source code for `" + spec.name + "`:\n```\n" + k.display_source + "\n```")
                        .c_str()));
}

// Inputs (and outputs= arrays) as host views; `borrowed` keeps what they read alive.
void import_arrays(const PyMetalKernel& self, nb::handle inputs, nb::handle outputs, KernelCall& call,
                   Borrowed& borrowed) {
  const auto& in_names = self.spec().input_names;
  const std::size_t n_inputs = sequence_arg(inputs, "inputs", "a list of arrays or scalars, one per input");
  call.inputs.reserve(n_inputs);
  for_each_item(inputs, "inputs", [&](std::size_t i, nb::handle item) {
    const ItemRef where{"input", i, &in_names};
    Scalar s;
    if (scalar_value(item, /*widen_int=*/true, "inputs", where, &s)) {
      call.inputs.emplace_back(s);
      return;
    }
    bool read_only = false;
    call.inputs.emplace_back(host_array_view(item, "inputs", where, borrowed, &read_only));
  });
  if (!outputs.is_valid() || outputs.is_none()) return;
  const auto& out_names = self.spec().output_names;
  for_each_item(outputs, "outputs", [&](std::size_t j, nb::handle item) {
    const ItemRef where{"output", j, &out_names};
    bool read_only = false;
    call.provided_outputs.push_back(host_array_view(item, "outputs", where, borrowed, &read_only));
    if (read_only) throw ArgumentError("outputs", where.prefix() + "the array is read-only");
  });
}

// bfloat16 outputs are NumPy arrays of ml_dtypes.bfloat16; find it before
// the kernel runs rather than fail after.
nb::object bfloat16_numpy_dtype() {
  try {
    return nb::module_::import_("ml_dtypes").attr("bfloat16");
  } catch (nb::python_error&) {
    throw ArgumentError("output_dtypes", "bfloat16 outputs come back as NumPy arrays of "
                                         "ml_dtypes.bfloat16, and ml_dtypes is not installed: "
                                         "pip install ml-dtypes");
  }
}

// A NumPy array over an output's shared buffer; the array owns the buffer.
nb::object numpy_output(OwnedArray&& out, const nb::object& bfloat16) {
  using Owner = std::shared_ptr<Buffer>;
  const ArrayView& v = out.view;
  std::vector<std::size_t> shape(v.shape.begin(), v.shape.end());
  const DTypeInfo& info = dtype_info(v.dtype);
  const bool is_bf16 = v.dtype == DType::BFloat16;
  // NumPy has no bfloat16: export the bits as uint16 and view them as ml_dtypes.bfloat16.
  const nb::dlpack::dtype dtype{static_cast<std::uint8_t>(is_bf16 ? 1 : info.dlpack_code), info.dlpack_bits, 1};
  auto* owner = new Owner(std::move(out.buffer));
  nb::capsule capsule(owner, [](void* p) noexcept { delete static_cast<Owner*>(p); });
  nb::object array = nb::cast(nb::ndarray<nb::numpy>(v.data, shape.size(), shape.data(), capsule, nullptr, dtype));
  return is_bf16 ? nb::object(array.attr("view")(bfloat16)) : array;
}

// A call. The dict form (inputs, output_shapes, output_dtypes or outputs
// keyed by name) is turned into lists by call_form.cpp, then comes back here.
nb::object call(PyMetalKernel& self, const CallArgs& args) {
  if (is_dict_form(args))
    return call_by_name(&call, self, self.spec().input_names, self.spec().output_names, "metal_kernel", args);
  nb::handle inputs = args.inputs, output_shapes = args.output_shapes, output_dtypes = args.output_dtypes,
             grid = args.grid, threadgroup = args.threadgroup, tmpl = args.tmpl, init_value = args.init_value,
             stream = args.stream, outputs = args.outputs, verbose = args.verbose;
  const bool show_source = verbose_arg(verbose);
  if (stream.is_valid() && !stream.is_none())
    throw ArgumentError("stream", "Metal kernels run on jitkernel's own Metal command queue; "
                                  "expected None, got " + type_text(stream));
  KernelCall c;
  Borrowed borrowed;  // keeps imported host arrays alive until the kernel has finished
  output_layout(self, output_shapes, output_dtypes, outputs, c);
  c.launch.grid = dim3_arg(grid, "grid");
  c.launch.threadgroup = dim3_arg(threadgroup, "threadgroup");
  c.init_value = init_value_arg(init_value);
  c.template_args = template_args(tmpl);
  import_arrays(self, inputs, outputs, c, borrowed);
  if (show_source) {
    print_source(self.spec(), self.kernel.generate(signature_of(c.inputs, c.output_dtypes, c.template_args)));
  }
  const bool provided = !c.provided_outputs.empty();
  nb::object bfloat16;
  for (DType d : c.output_dtypes) {
    if (!provided && d == DType::BFloat16 && !bfloat16.is_valid()) bfloat16 = bfloat16_numpy_dtype();
  }
  std::vector<OwnedArray> results = self.kernel(c);
  nb::list out;
  if (provided) {
    for_each_item(outputs, "outputs", [&](std::size_t, nb::handle item) { out.append(item); });
  } else {
    for (OwnedArray& r : results) out.append(numpy_output(std::move(r), bfloat16));
  }
  return out;
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
