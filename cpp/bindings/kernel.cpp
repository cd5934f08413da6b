// `_core.CudaKernel` (the engine behind jitkernel.cuda_kernel) and
// `_core.compile_cuda`: template arguments, the call (convert -> launch ->
// wrap), source() and compile() without a GPU. Argument conversion lives in
// convert.cpp; the Python class in python/jitkernel/_cuda_kernel.py adds the
// keyword-only signature and the dict form.
#include <string>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "dtypes.hpp"
#include "hooks.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/compiler.hpp"
#include "jitkernel/cuda/cuda_kernel.hpp"

namespace jk::py {
namespace {

struct PyCudaKernel {
  cuda::CudaKernel kernel;
  std::vector<std::string> input_names, output_names;  // for messages
};

// template=: None, a dict {name: value} or a sequence of (name, value) pairs;
// values are ints, bools or dtype-likes.
std::vector<TemplateArg> template_args(nb::handle value) {
  std::vector<TemplateArg> out;
  if (!value.is_valid() || value.is_none()) return out;
  nb::object pairs;
  if (PyDict_Check(value.ptr())) {
    pairs = nb::list(nb::borrow<nb::dict>(value).items());
  } else if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
    pairs = nb::borrow(value);
  } else {
    throw ArgumentTypeError("template", "expected a list of (name, value) pairs or a dict, got " +
                                           nb::cast<std::string>(nb::type_name(value.type())));
  }
  std::vector<std::string> names;
  const std::size_t n = nb::len(pairs);
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    nb::handle pair = pairs[i];
    if (!(PyTuple_Check(pair.ptr()) || PyList_Check(pair.ptr())) || nb::len(pair) != 2)
      throw ArgumentTypeError("template", "entry " + std::to_string(i) +
                                              " must be a (name, value) pair, got " +
                                              nb::cast<std::string>(nb::repr(pair)));
    nb::handle name = pair[0], v = pair[1];
    if (!PyUnicode_Check(name.ptr()))
      throw ArgumentTypeError("template", "entry " + std::to_string(i) +
                                              ": names must be strings, got " +
                                              nb::cast<std::string>(nb::repr(name)));
    TemplateArg arg;
    arg.name = nb::cast<std::string>(name);
    names.push_back(arg.name);
    const ItemRef where{"entry", i, &names};
    Scalar s;
    std::int64_t iv = 0;
    IntResult ir;
    if (is_jk_dtype(v)) {
      arg.kind = TemplateArg::Kind::DType;
      arg.dtype = dtype_arg(v, "template", where);
    } else if (PyBool_Check(v.ptr())) {
      arg.kind = TemplateArg::Kind::Bool;
      arg.int_value = v.ptr() == Py_True;
    } else if ((ir = int_value(v, &iv)) != IntResult::NotInt) {
      if (ir == IntResult::Overflow)
        throw ArgumentError("template", where.prefix() + nb::cast<std::string>(nb::repr(v)) +
                                            " does not fit in int64");
      arg.kind = TemplateArg::Kind::Int;
      arg.int_value = iv;
    } else if (PyFloat_Check(v.ptr()) || PyComplex_Check(v.ptr()) ||
               scalar_value(v, true, "template", where, &s)) {
      // NumPy bool scalars are bools; any other number is not a template value.
      if (!PyFloat_Check(v.ptr()) && !PyComplex_Check(v.ptr()) && s.dtype == DType::Bool) {
        arg.kind = TemplateArg::Kind::Bool;
        arg.int_value = s.bytes[0] != 0;
      } else {
        throw ArgumentTypeError("template", where.prefix() +
                                                "values must be ints, bools or dtypes, got " +
                                                nb::cast<std::string>(nb::repr(v)));
      }
    } else {
      arg.kind = TemplateArg::Kind::DType;
      arg.dtype = dtype_arg(v, "template", where);
    }
    out.push_back(std::move(arg));
  }
  return out;
}

cuda::CompileTarget target_arg(const std::string& target) {
  if (target == "cubin") return cuda::CompileTarget::Cubin;
  if (target == "ptx") return cuda::CompileTarget::Ptx;
  throw ArgumentError("target", "expected 'cubin' or 'ptx', got '" + target + "'");
}

// "sm_90a", "sm_80", "compute_90a" (PTX only), ...
void check_arch(const std::string& arch, cuda::CompileTarget target) {
  auto digits_then_suffix = [](const std::string& s, std::size_t from) {
    std::size_t i = from;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    std::size_t n = i - from;
    if (n < 2 || n > 3) return false;
    return i == s.size() || (i + 1 == s.size() && (s[i] == 'a' || s[i] == 'f'));
  };
  bool ok = (arch.rfind("sm_", 0) == 0 && digits_then_suffix(arch, 3)) ||
            (target == cuda::CompileTarget::Ptx && arch.rfind("compute_", 0) == 0 &&
             digits_then_suffix(arch, 8));
  if (!ok)
    throw ArgumentError("arch", "expected a GPU architecture such as 'sm_90a' (H100/H200), "
                                "'sm_80' or 'sm_100a'" +
                                    std::string(target == cuda::CompileTarget::Ptx
                                                    ? " (or 'compute_90a' for PTX)"
                                                    : "") +
                                    ", got '" + arch + "'");
}

CallSignature signature(const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes,
                        nb::handle tmpl) {
  auto in = describe_inputs(inputs, &self.input_names, true);
  auto dtypes = output_dtypes_arg(output_dtypes, &self.output_names);
  return cuda::describe_call(in, dtypes, template_args(tmpl));
}

// Converts a call's arguments (everything but the launch itself).
void convert(const PyCudaKernel& self, cuda::KernelCall& call, ConvertedCall& conv,
             nb::handle inputs, nb::handle output_shapes, nb::handle output_dtypes, nb::handle grid,
             nb::handle threadgroup, nb::handle tmpl, nb::handle init_value, nb::handle stream,
             nb::handle outputs) {
  call.template_args = template_args(tmpl);
  CallInputs in{inputs, output_shapes, output_dtypes, grid, threadgroup, init_value, stream, outputs};
  in.input_names = &self.input_names;
  in.output_names = &self.output_names;
  in.widen_int_scalars = true;
  convert_call(in, call.args, conv);
}

// The list form of a call. Returns NotImplemented when inputs, output_shapes,
// output_dtypes or outputs is a dict: the Python front then resolves names
// (the dict form of _cuda_kernel.py) and calls again with lists, so the list
// form pays no Python-side checks.
nb::object call(PyCudaKernel& self, nb::handle inputs, nb::handle output_shapes,
                nb::handle output_dtypes, nb::handle grid, nb::handle threadgroup, nb::handle tmpl,
                nb::handle init_value, nb::handle stream, nb::handle outputs, nb::handle verbose_arg) {
  if (PyDict_Check(inputs.ptr()) || PyDict_Check(output_shapes.ptr()) ||
      PyDict_Check(output_dtypes.ptr()) || PyDict_Check(outputs.ptr()))
    return nb::borrow(Py_NotImplemented);
  if (!PyBool_Check(verbose_arg.ptr()))
    throw ArgumentTypeError("verbose", "expected True or False, got " +
                                           nb::cast<std::string>(nb::repr(verbose_arg)));
  const bool verbose = verbose_arg.ptr() == Py_True;
  cuda::KernelCall kc;
  ConvertedCall conv;
  convert(self, kc, conv, inputs, output_shapes, output_dtypes, grid, threadgroup, tmpl,
          init_value, stream, outputs);
  if (verbose) {
    auto sig = cuda::describe_call(kc.args.inputs, kc.args.output_dtypes, kc.template_args);
    nb::print(nb::str(self.kernel.generate(sig).source.c_str()));
  }
  ensure_toolkit();
  std::vector<cuda::OwnedArray> results = self.kernel(kc);
  return wrap_outputs(std::move(results), conv);
  // `conv` goes here: consumed DLPack tensors are released after the launch.
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  nb::class_<PyCudaKernel>(m, "CudaKernel",
                           "The C++ kernel object behind jitkernel.cuda_kernel (internal).")
      .def(
          "__init__",
          [](PyCudaKernel* self, std::string name, std::vector<std::string> input_names,
             std::vector<std::string> output_names, std::string source, std::string header,
             bool ensure_row_contiguous, int shared_memory) {
            CudaKernelSpec spec;
            spec.name = std::move(name);
            spec.input_names = input_names;
            spec.output_names = output_names;
            spec.source = std::move(source);
            spec.header = std::move(header);
            spec.ensure_row_contiguous = ensure_row_contiguous;
            spec.shared_memory = shared_memory;
            new (self) PyCudaKernel{cuda::CudaKernel(std::move(spec)), std::move(input_names),
                                    std::move(output_names)};
          },
          "name"_a, "input_names"_a, "output_names"_a, "source"_a, "header"_a,
          "ensure_row_contiguous"_a, "shared_memory"_a)
      .def_prop_ro("input_names", [](const PyCudaKernel& k) { return k.input_names; })
      .def_prop_ro("output_names", [](const PyCudaKernel& k) { return k.output_names; })
      .def("call", &call, "inputs"_a.none(), "output_shapes"_a.none(), "output_dtypes"_a.none(),
           "grid"_a.none(), "threadgroup"_a.none(), "template"_a.none(), "init_value"_a.none(),
           "stream"_a.none(), "outputs"_a.none(), "verbose"_a.none())
      .def("source",
           [](const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes,
              nb::handle tmpl) {
             return self.kernel.generate(signature(self, inputs, output_dtypes, tmpl)).source;
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none())
      .def("entry_name",
           [](const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes,
              nb::handle tmpl) {
             return self.kernel.generate(signature(self, inputs, output_dtypes, tmpl)).entry_name;
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none())
      .def("compile",
           [](const PyCudaKernel& self, nb::handle inputs, nb::handle output_dtypes,
              nb::handle tmpl, const std::string& arch, const std::string& target) {
             cuda::CompileTarget t = target_arg(target);
             check_arch(arch, t);
             CallSignature sig = signature(self, inputs, output_dtypes, tmpl);
             ensure_toolkit();
             std::string binary;
             {
               nb::gil_scoped_release unlocked;  // other Python threads run during NVRTC
               binary = self.kernel.compile(sig, arch, t);
             }
             return nb::bytes(binary.data(), binary.size());
           },
           "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(), "arch"_a,
           "target"_a)
      .def("_convert",
           [](const PyCudaKernel& self, nb::handle inputs, nb::handle output_shapes,
              nb::handle output_dtypes, nb::handle grid, nb::handle threadgroup,
              nb::handle tmpl, nb::handle init_value, nb::handle stream, nb::handle outputs) {
             cuda::KernelCall kc;
             ConvertedCall conv;
             convert(self, kc, conv, inputs, output_shapes, output_dtypes, grid, threadgroup,
                     tmpl, init_value, stream, outputs);
           },
           "inputs"_a.none(), "output_shapes"_a.none(), "output_dtypes"_a.none(),
           "grid"_a.none(), "threadgroup"_a.none(), "template"_a.none(), "init_value"_a.none(),
           "stream"_a.none(), "outputs"_a.none(),
           "Argument conversion of a call without the launch (to measure binding overhead).");

  m.def(
      "compile_cuda",
      [](const std::string& source, const std::string& arch, const std::string& target,
         const std::string& name) {
        cuda::CompileTarget t = target_arg(target);
        check_arch(arch, t);
        ensure_toolkit();
        std::string binary;
        {
          nb::gil_scoped_release unlocked;
          binary = cuda::compile_source(source, name, arch, t);
        }
        return nb::bytes(binary.data(), binary.size());
      },
      "source"_a, "arch"_a, "target"_a, "name"_a,
      "Compiles standalone CUDA source with NVRTC (no GPU needed); returns cubin or PTX bytes.");
}

const Registration reg(order::kernel, "kernel", bind);

}  // namespace
}  // namespace jk::py
