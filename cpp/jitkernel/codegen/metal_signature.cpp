// generate_metal_kernel: writes the text MLX 0.32.4's metal_kernel writes for
// the same spec and call (see metal_signature.hpp), in this order:
//
//   <header>                                       the user's, verbatim
//   template <typename T, int N, bool B>           when template arguments are given
//   [[kernel]] void custom_kernel_NAME...(         name: see entry_name_of() below
//     const device float* inp [[buffer(0)]],       per input; `constant` below 8
//     const constant int* inp_shape [[buffer(1)]],   elements, `const constant T&` for 0-d;
//     const constant int64_t* inp_strides [[buffer(2)]],  shape/strides/ndim when the
//     const constant int& inp_ndim [[buffer(3)]],         body mentions them
//     device float* out [[buffer(4)]],             per output (`device atomic<T>*`)
//     uint3 thread_position_in_grid [[thread_position_in_grid]]) {   attributes used
//   <source>
//   }
//                                                  when templated:
//   template [[host_name("NAME")]] [[kernel]] decltype(NAME<float, 3, 1>) NAME<float, 3, 1>;
//
// The runtime compiles metal_utils_preamble() + this text.
#include <cstdint>
#include <string>

#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/codegen/metal_detail.hpp"
#include "jitkernel/codegen/metal_signature.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::codegen {
namespace {

const char* metal_type(DType d) { return dtype_info(d).metal_type; }

// Apple GPUs have no 64-bit floating point type (MLX refuses float64 arrays too).
void check_dtype(const char* argument, const char* role, const std::string& name, DType dtype) {
  if (dtype != DType::Float64) return;
  throw ArgumentError(argument, std::string(role) + " '" + name +
                                    "' is float64, which Metal does not support (Apple GPUs have no "
                                    "double precision); convert it to float32");
}

// MLX declares no shape / strides / ndim for a 0-d input, so a body that uses
// them cannot compile: say so instead. `code` has the identifiers outside
// comments (a mention in a comment alone is harmless).
void check_input(const std::string& name, const InputSignature& in, const SourceScan& code) {
  const char* used = code.has(name + "_shape")     ? "_shape"
                     : code.has(name + "_strides") ? "_strides"
                     : code.has(name + "_ndim")    ? "_ndim"
                                                   : nullptr;
  if (!used) return;
  if (in.ndim == 0) {
    throw ArgumentError("inputs", "input '" + name + "' is 0-d (a scalar), but the source uses '" +
                                      name + used + "'; a 0-d input gets no shape, strides or ndim " +
                                      "(as in MLX): pass an array of shape (1,), or drop " + name +
                                      used + " from the source");
  }
  check_metal_shape_range(name, in.max_extent, used);
}

// One template value as MLX prints it: ints in decimal, bools as 1 / 0,
// dtypes by their Metal spelling.
std::string template_value(const TemplateArg& arg) {
  switch (arg.kind) {
    case TemplateArg::Kind::Int: return std::to_string(arg.int_value);
    case TemplateArg::Kind::Bool: return arg.int_value ? "1" : "0";
    case TemplateArg::Kind::DType: return metal_type(arg.dtype);
  }
  return {};
}

const char* template_param_type(const TemplateArg& arg) {
  switch (arg.kind) {
    case TemplateArg::Kind::Int: return "int";
    case TemplateArg::Kind::Bool: return "bool";
    case TemplateArg::Kind::DType: return "typename";
  }
  return "";
}

// custom_kernel_<name>[_<template part>]<per input _type[s|c]><per output _type>.
// MLX's template part is its instantiation text "<v1, v2>" with '<', '>',
// ', ' and '-' each replaced by '_' and the last character dropped: "_v1_v2"
// (so the name gets a double underscore). Inputs: 's' for 0-d, 'c' for the
// constant address space.
std::string entry_name_of(const KernelSpec& spec, const CallSignature& call) {
  std::string name = "custom_kernel_" + spec.name;
  if (!call.template_args.empty()) {
    name += "_";
    for (const auto& t : call.template_args) {
      std::string v = template_value(t);
      for (char& c : v) c = c == '-' ? '_' : c;
      name += "_" + v;
    }
  }
  for (const auto& in : call.inputs) {
    name += "_";
    name += metal_type(in.dtype);
    if (in.ndim == 0) {
      name += "s";
    } else if (in.small()) {
      name += "c";
    }
  }
  for (DType d : call.output_dtypes) {
    name += "_";
    name += metal_type(d);
  }
  return name;
}

// Appends one buffer parameter (recorded in k.params in buffer order) to `params`.
void add_buffer(GeneratedKernel& k, std::vector<std::string>& params, ParamKind kind, int index,
                AddressSpace space, Passing passing, const std::string& decl) {
  const int buffer = static_cast<int>(k.params.size());
  params.push_back("  " + decl + " [[buffer(" + std::to_string(buffer) + ")]]");
  k.params.push_back({kind, index, space, passing});
}

void add_input_buffers(GeneratedKernel& k, std::vector<std::string>& params, const std::string& name,
                       const InputSignature& in, int idx, const Identifiers& body) {
  const bool constant = in.small();
  add_buffer(k, params, ParamKind::InputData, idx, constant ? AddressSpace::Constant : AddressSpace::Device,
             Passing::Buffer,
             std::string("const ") + (constant ? "constant " : "device ") + metal_type(in.dtype) +
                 (in.ndim == 0 ? "& " : "* ") + name);
  if (in.ndim == 0) return;
  ShapeUse use = shape_use(body, name);
  if (use.shape) {
    add_buffer(k, params, ParamKind::InputShape, idx, AddressSpace::Constant, Passing::Bytes,
               "const constant int* " + name + "_shape");
  }
  if (use.strides) {
    add_buffer(k, params, ParamKind::InputStrides, idx, AddressSpace::Constant, Passing::Bytes,
               "const constant int64_t* " + name + "_strides");
  }
  if (use.ndim) {
    add_buffer(k, params, ParamKind::InputNdim, idx, AddressSpace::Constant, Passing::Bytes,
               "const constant int& " + name + "_ndim");
  }
}

// The entry's parameters, one per line: inputs (with the shapes the body uses), outputs, then the Metal
// attributes the body names.
std::vector<std::string> metal_params(const KernelSpec& spec, const CallSignature& call, const Identifiers& body,
                                      GeneratedKernel& k) {
  std::vector<std::string> params;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    add_input_buffers(k, params, spec.input_names[i], call.inputs[i], static_cast<int>(i), body);
  }
  for (std::size_t i = 0; i < call.output_dtypes.size(); ++i) {
    std::string type = metal_type(call.output_dtypes[i]);
    if (spec.atomic_outputs) type = "atomic<" + type + ">";
    add_buffer(k, params, ParamKind::OutputData, static_cast<int>(i), AddressSpace::Device, Passing::Buffer,
               "device " + type + "* " + spec.output_names[i]);
  }
  for (const auto& attr : metal_attributes()) {
    if (body.count(attr.name)) {
      params.push_back(std::string("  ") + attr.type + " " + attr.name + " [[" + attr.name + "]]");
    }
  }
  return params;
}

// "template <...>" before the entry, and its explicit instantiation under the host name after it.
void append_template_head(std::string& text, const CallSignature& call) {
  if (call.template_args.empty()) return;
  text += "template <";
  for (std::size_t i = 0; i < call.template_args.size(); ++i) {
    const TemplateArg& t = call.template_args[i];
    text += (i ? ", " : "") + std::string(template_param_type(t)) + " " + t.name;
  }
  text += ">\n";
}

void append_instantiation(std::string& text, const std::string& entry_name, const CallSignature& call) {
  if (call.template_args.empty()) return;
  std::string instance = entry_name + "<";
  for (std::size_t i = 0; i < call.template_args.size(); ++i) {
    instance += (i ? ", " : "") + template_value(call.template_args[i]);
  }
  instance += ">";
  text += "\ntemplate [[host_name(\"" + entry_name + "\")]] [[kernel]] decltype(" + instance + ") " + instance +
          ";\n";
}

}  // namespace

GeneratedKernel generate_metal_kernel(const KernelSpec& spec, const CallSignature& call) {
  validate_metal_kernel_spec(spec);
  check_call_counts(spec.input_names, call.inputs.size(), spec.output_names,
                    call.output_dtypes.size());
  const auto body = raw_identifiers(spec.source);
  check_metal_template_args(call.template_args, spec, body);
  SourceScan code;
  scan_into(spec.source, code);
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    check_dtype("inputs", "input", spec.input_names[i], call.inputs[i].dtype);
    check_input(spec.input_names[i], call.inputs[i], code);
  }
  for (std::size_t i = 0; i < call.output_dtypes.size(); ++i) {
    check_dtype("output_dtypes", "output", spec.output_names[i], call.output_dtypes[i]);
  }

  GeneratedKernel k;
  k.entry_name = entry_name_of(spec, call);

  std::string& text = k.display_source;
  text.reserve(spec.header.size() + spec.source.size() + 1024);
  text += spec.header;
  append_template_head(text, call);
  text += "[[kernel]] void " + k.entry_name + "(\n";
  const std::vector<std::string> params = metal_params(spec, call, body, k);
  for (std::size_t i = 0; i < params.size(); ++i) {
    text += params[i];
    text += i + 1 < params.size() ? ",\n" : ") {\n";
  }

  const std::size_t body_offset = text.size();
  text += spec.source;
  text += "\n}\n";
  append_instantiation(text, k.entry_name, call);

  const std::string_view utils = metal_utils_preamble();
  k.source.reserve(utils.size() + text.size());
  k.source.append(utils);
  k.source += text;
  const int utils_lines = line_at(k.source, utils.size()) - 1;
  if (!spec.header.empty()) {
    k.header_first_line = utils_lines + 1;
    k.header_line_count = count_lines(spec.header);
  }
  k.body_first_line = utils_lines + line_at(text, body_offset);
  k.body_line_count = count_lines(spec.source);
  return k;
}

}  // namespace jk::codegen
