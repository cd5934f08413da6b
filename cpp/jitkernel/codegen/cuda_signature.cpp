// generate_cuda_kernel: assembles the file NVRTC compiles from the spec and a
// call signature, in this order (see cuda_signature.hpp for the parameter
// packing):
//
//   // jitkernel cuda_kernel "NAME" ...           one comment line
//   <preamble>                                   integer types, needed headers, helpers
//   #line 1 "header"                             user header (when not empty)
//   <header>
//   #line <n> "NAME.cu"                          back to generated line numbers
//   extern "C" __global__ void NAME_<hash>(      parameters, one per line
//       const float* inp, ..., float* out) {     (checked mode: jitkernel::checked_ptr<const float> inp, ...)
//     [[maybe_unused]] constexpr int N = 3;      template arguments (using T = float;)
//     [[maybe_unused]] const float* s = &s__value;   scalars (passed by value)
//   #line 1 "source"
//   <source>                                     user body
//   }
#include <climits>
#include <string>

#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/core/array_view.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::codegen {
namespace {

using codegen::ShapeUse;

// Appends `text` followed by a newline unless it already ends in one.
void append_block(std::string& out, const std::string& text) {
  out += text;
  if (!text.empty() && text.back() != '\n') out += '\n';
}

const char* cuda_type(DType d) { return dtype_info(d).cuda_type; }

std::string int_literal(std::int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  if (v == INT32_MIN) return "(-2147483647 - 1)";
  if (v >= INT32_MIN && v <= INT32_MAX) return std::to_string(v);
  return std::to_string(v) + "LL";
}

std::string template_line(const TemplateArg& arg) {
  switch (arg.kind) {
    case TemplateArg::Kind::Int: {
      bool fits_int = arg.int_value >= INT32_MIN && arg.int_value <= INT32_MAX;
      return std::string("  [[maybe_unused]] constexpr ") + (fits_int ? "int " : "long long ") +
             arg.name + " = " + int_literal(arg.int_value) + ";\n";
    }
    case TemplateArg::Kind::Bool:
      return "  [[maybe_unused]] constexpr bool " + arg.name + " = " +
             (arg.int_value ? "true" : "false") + ";\n";
    case TemplateArg::Kind::DType:
      return "  using " + arg.name + " = " + cuda_type(arg.dtype) + ";\n";
  }
  return {};
}

void check_ndim(const std::string& name, const InputSignature& in, const ShapeUse& use) {
  if (in.is_scalar || !(use.shape || use.strides) || in.ndim <= kMaxNdim) return;
  std::string used = use.shape ? name + "_shape" : name + "_strides";
  throw ArgumentError("inputs", "input '" + name + "' has " + std::to_string(in.ndim) +
                                    " dimensions, but the source uses '" + used +
                                    "', which holds at most " + std::to_string(kMaxNdim) +
                                    "; reshape the input or drop its shape/strides from the source");
}

// fits_minimal_builtins(k.source) without scanning the whole file: the
// preamble and the generated lines fit, so only the user's code and the names
// the generated lines declare for the user decide: the entry point, the
// parameters and the template arguments (other generated names add a suffix
// starting with '_' to a parameter's, which omitted_by_minimal never flags
// unless it flags the parameter's name itself).
bool generated_fits_minimal(const std::string& entry_name, const KernelSpec& spec,
                  const CallSignature& call, const codegen::SourceScan& user_scan) {
  if (!codegen::scan_fits_minimal(user_scan) || codegen::omitted_by_minimal(entry_name)) return false;
  for (const auto* names : {&spec.input_names, &spec.output_names}) {
    for (const auto& name : *names) {
      if (codegen::omitted_by_minimal(name)) return false;
    }
  }
  for (const auto& t : call.template_args) {
    if (codegen::omitted_by_minimal(t.name)) return false;
  }
  return true;
}

// The parameter list (in the order the launcher packs it, recorded in k.params), the lines atop the body
// (template constants, scalar aliases) and every dtype the kernel names.
struct Signature {
  std::string params;
  std::string templates;
  std::string prologue;
  std::vector<DType> dtypes;
};

void add_param(GeneratedKernel& k, Signature& sig, ParamKind kind, int index, const std::string& decl) {
  sig.params += sig.params.empty() ? "    " : ",\n    ";
  sig.params += decl;
  k.params.push_back({kind, index});
}

// Checked mode's accessor type for an array of `type` (codegen/checked_accessors.cpp).
std::string checked_type(const std::string& type) { return "jitkernel::checked_ptr<" + type + ">"; }

void add_input(const std::string& name, const InputSignature& in, int idx, const ShapeUse& use, bool checked,
               GeneratedKernel& k, Signature& sig) {
  const std::string type = cuda_type(in.dtype);
  if (in.is_scalar) {
    // By value; `name` points at the parameter so name[0] works as in MLX.
    add_param(k, sig, ParamKind::InputScalar, idx, "const __grid_constant__ " + type + " " + name + "__value");
    if (checked) {  // one element at offset 0; array id = input index
      sig.prologue += "  [[maybe_unused]] const " + checked_type("const " + type) + " " + name + " = {&" + name +
                      "__value, &" + name + "__value, 0, 1, " + std::to_string(idx) + ", 0};\n";
    } else {
      sig.prologue += "  [[maybe_unused]] const " + type + "* " + name + " = &" + name + "__value;\n";
    }
    if (use.shape) sig.prologue += "  [[maybe_unused]] const jitkernel::Shape " + name + "_shape = {};\n";
    if (use.strides) sig.prologue += "  [[maybe_unused]] const jitkernel::Strides " + name + "_strides = {};\n";
    if (use.ndim) sig.prologue += "  [[maybe_unused]] constexpr int " + name + "_ndim = 0;\n";
    return;
  }
  add_param(k, sig, ParamKind::InputData, idx,
            checked ? checked_type("const " + type) + " " + name : "const " + type + "* " + name);
  if (use.shape) {
    add_param(k, sig, ParamKind::InputShape, idx, "const __grid_constant__ jitkernel::Shape " + name + "_shape");
  }
  if (use.strides) {
    add_param(k, sig, ParamKind::InputStrides, idx,
              "const __grid_constant__ jitkernel::Strides " + name + "_strides");
  }
  if (use.ndim) add_param(k, sig, ParamKind::InputNdim, idx, "const int " + name + "_ndim");
}

Signature build_signature(const KernelSpec& spec, const CallSignature& call, const SourceScan& scan,
                          GeneratedKernel& k) {
  Signature sig;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const InputSignature& in = call.inputs[i];
    const std::string& name = spec.input_names[i];
    ShapeUse use = codegen::shape_use(scan, name);
    check_ndim(name, in, use);
    sig.dtypes.push_back(in.dtype);
    add_input(name, in, static_cast<int>(i), use, spec.cuda_options.checked, k, sig);
  }
  for (std::size_t i = 0; i < call.output_dtypes.size(); ++i) {
    sig.dtypes.push_back(call.output_dtypes[i]);
    const std::string type = cuda_type(call.output_dtypes[i]);
    add_param(k, sig, ParamKind::OutputData, static_cast<int>(i),
              (spec.cuda_options.checked ? checked_type(type) + " " : type + "* ") + spec.output_names[i]);
  }
  for (const auto& t : call.template_args) {
    if (t.kind == TemplateArg::Kind::DType) sig.dtypes.push_back(t.dtype);
    sig.templates += template_line(t);
  }
  return sig;
}

// The text before the entry name: banner, preamble, the user's header (line-mapped), the entry's declarator.
std::string head_text(const KernelSpec& spec, const codegen::Features& features, GeneratedKernel& k) {
  std::string head = "// jitkernel cuda_kernel \"" + spec.name +
                     "\": generated code; user code follows the #line \"header\" and "
                     "#line \"source\" markers.\n";
  head += codegen::preamble_text(features);
  if (!spec.header.empty()) {
    head += "#line 1 \"header\"\n";
    k.header_first_line = codegen::line_at(head, head.size());
    k.header_line_count = codegen::count_lines(spec.header);
    append_block(head, spec.header);
    head += "#line " + std::to_string(codegen::line_at(head, head.size()) + 1) + " \"" + k.program_name + "\"\n";
  }
  head += "extern \"C\" __global__ void ";
  return head;
}

}  // namespace

GeneratedKernel generate_cuda_kernel(const KernelSpec& spec, const CallSignature& call) {
  validate_cuda_kernel_spec(spec);
  codegen::check_call_counts(spec.input_names, call.inputs.size(), spec.output_names,
                             call.output_dtypes.size());
  codegen::SourceScan scan = codegen::scan_user_code(spec.source, spec.header);
  {
    std::vector<std::string> template_names;
    for (const auto& t : call.template_args) template_names.push_back(t.name);
    codegen::check_template_names(template_names, spec.input_names, spec.output_names, scan);
  }

  GeneratedKernel k;
  k.program_name = spec.name + ".cu";
  k.options = spec.cuda_options;
  const Signature sig = build_signature(spec, call, scan, k);
  codegen::Features features = codegen::detect_features(scan, sig.dtypes);
  features.checked = spec.cuda_options.checked;
  k.needs_cccl = features.needs_cccl();
  k.grid_sync = codegen::syncs_grid(spec.source, spec.header);
  const std::string head = head_text(spec, features, k);

  // Text after the entry name.
  std::string tail = "(\n" + sig.params + ") {\n" + sig.templates + sig.prologue + "#line 1 \"source\"\n";
  k.body_first_line = codegen::line_at(head + tail, (head + tail).size());  // the entry name adds no line
  k.body_line_count = codegen::count_lines(spec.source);
  append_block(tail, spec.source);
  tail += "}\n";

  k.entry_name = codegen::make_entry_name(spec.name, head + tail);
  k.source = head + k.entry_name + tail;
  k.fits_minimal = generated_fits_minimal(k.entry_name, spec, call, scan);
  return k;
}

}  // namespace jk::codegen
