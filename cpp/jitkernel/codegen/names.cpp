// Names in generated code: which strings may name a kernel, a parameter or a
// template argument, which names the generator itself adds (name_shape,
// name_strides, name_ndim), and the checks that turn a bad name into an
// ArgumentError naming the argument, the value and what was expected.
#include <algorithm>
#include <string>

#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::codegen {
namespace {

constexpr const char* kKeywords[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
    "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
    "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
    "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
    "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
    "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
    "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
};

constexpr const char* kCudaBuiltins[] = {"threadIdx", "blockIdx", "blockDim", "gridDim",
                                         "warpSize"};

// Spelled by the generated code itself (types in the signature, macros,
// namespaces of the preamble): a parameter with one of these names breaks it.
constexpr const char* kGeneratedNames[] = {
    "int8_t",  "int16_t",  "int32_t",  "int64_t",   "uint8_t",   "uint16_t", "uint32_t",
    "uint64_t", "intptr_t", "uintptr_t", "size_t",  "ptrdiff_t", "cuComplex", "jitkernel",
    "WARP_SIZE", "MAX_NDIM", "cooperative_groups", "cg",
};

template <std::size_t N>
bool contains(const char* const (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The generated names (x_shape, ...) the user code makes jitkernel define, with
// the input they belong to.
struct GeneratedName {
  std::string name;
  const std::string* input;
  const char* what;  // "shape" / "strides" / "ndim"
};

std::vector<GeneratedName> generated_names(const std::vector<std::string>& input_names,
                                           const Identifiers& identifiers) {
  std::vector<GeneratedName> out;
  for (const auto& input : input_names) {
    ShapeUse use = shape_use(identifiers, input);
    if (use.shape) out.push_back({input + "_shape", &input, "shape"});
    if (use.strides) out.push_back({input + "_strides", &input, "strides"});
    if (use.ndim) out.push_back({input + "_ndim", &input, "ndim"});
  }
  return out;
}

std::string collision_message(const char* role, const GeneratedName& g) {
  return std::string(role) + " name " + quoted(g.name) + " collides with the " + g.what +
         " parameter jitkernel generates for input " + quoted(*g.input) + " (the source uses " +
         quoted(g.name) + "); rename one of them";
}

std::string plural(std::size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string name_list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

bool is_c_identifier(std::string_view name) {
  return !name.empty() && is_ident_start(name[0]) &&
         std::all_of(name.begin(), name.end(), is_ident_char);
}

bool is_cpp_keyword(std::string_view name) { return contains(kKeywords, name); }

const char* reserved_name_reason(std::string_view name) {
  if (is_cpp_keyword(name)) return "it is a C++ keyword";
  if (contains(kCudaBuiltins, name)) return "it is a CUDA built-in variable";
  if (contains(kGeneratedNames, name)) return "the generated code uses this name itself";
  if (name.find("__") != std::string_view::npos ||
      (name.size() > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z')) {
    return "C++ reserves identifiers containing '__' or starting with '_' and an uppercase "
           "letter (jitkernel uses them for generated parameters)";
  }
  return nullptr;
}

void check_kernel_name(const std::string& name) {
  if (!is_c_identifier(name)) {
    throw ArgumentError("name", "kernel name " + quoted(name) +
                                    " is not a C identifier (expected letters, digits and '_', "
                                    "not starting with a digit)");
  }
}

void check_name(const char* argument, const char* role, const std::string& name,
                ReservedReason reserved) {
  if (!is_c_identifier(name)) {
    throw ArgumentError(argument, std::string(role) + " name " + quoted(name) +
                                      " is not a C identifier (expected letters, digits and "
                                      "'_', not starting with a digit)");
  }
  if (const char* why = reserved(name)) {
    throw ArgumentError(argument, std::string(role) + " name " + quoted(name) +
                                      " is reserved: " + why + "; choose another name");
  }
}

ShapeUse shape_use(const Identifiers& identifiers, const std::string& input_name) {
  ShapeUse use;
  use.shape = identifiers.count(input_name + "_shape") != 0;
  use.strides = identifiers.count(input_name + "_strides") != 0;
  use.ndim = identifiers.count(input_name + "_ndim") != 0;
  return use;
}

ShapeUse shape_use(const SourceScan& scan, const std::string& input_name) {
  return shape_use(scan.identifiers, input_name);
}

void check_parameter_names(const std::vector<std::string>& input_names,
                           const std::vector<std::string>& output_names,
                           const Identifiers& identifiers, ReservedReason reserved) {
  struct Param {
    const char* argument;  // "input_names" / "output_names"
    const char* role;      // "input" / "output"
    const std::string* name;
  };
  std::vector<Param> params;
  for (const auto& n : input_names) params.push_back({"input_names", "input", &n});
  for (const auto& n : output_names) params.push_back({"output_names", "output", &n});
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    check_name(p.argument, p.role, *p.name, reserved);
    for (std::size_t j = 0; j < i; ++j) {
      if (*params[j].name == *p.name) {
        throw ArgumentError(p.argument, "name " + quoted(*p.name) + " is given twice (as " +
                                            params[j].role + " and as " + p.role +
                                            "); kernel parameter names must be unique");
      }
    }
  }
  for (const auto& g : generated_names(input_names, identifiers)) {
    for (const auto& p : params) {
      if (*p.name == g.name) throw ArgumentError(p.argument, collision_message(p.role, g));
    }
  }
}

void check_template_names(const std::vector<std::string>& template_names,
                          const std::vector<std::string>& input_names,
                          const std::vector<std::string>& output_names,
                          const Identifiers& identifiers, ReservedReason reserved) {
  auto generated = generated_names(input_names, identifiers);
  for (std::size_t i = 0; i < template_names.size(); ++i) {
    const std::string& name = template_names[i];
    check_name("template", "template argument", name, reserved);
    for (std::size_t j = 0; j < i; ++j) {
      if (template_names[j] == name) {
        throw ArgumentError("template", "template argument " + quoted(name) + " is given twice");
      }
    }
    auto is_param = [&](const std::vector<std::string>& names) {
      return std::find(names.begin(), names.end(), name) != names.end();
    };
    if (is_param(input_names) || is_param(output_names)) {
      throw ArgumentError("template", "template argument " + quoted(name) +
                                          " has the same name as a kernel " +
                                          (is_param(input_names) ? "input" : "output") +
                                          "; rename one of them");
    }
    for (const auto& g : generated) {
      if (g.name == name) throw ArgumentError("template", collision_message("template argument", g));
    }
  }
}

void check_template_names(const std::vector<std::string>& template_names,
                          const std::vector<std::string>& input_names,
                          const std::vector<std::string>& output_names,
                          const SourceScan& scan) {
  check_template_names(template_names, input_names, output_names, scan.identifiers,
                       reserved_name_reason);
}

void check_call_counts(const std::vector<std::string>& input_names, std::size_t inputs,
                       const std::vector<std::string>& output_names, std::size_t output_dtypes) {
  if (inputs != input_names.size()) {
    throw ArgumentError("inputs", "expected " + plural(input_names.size(), "input") + " (" +
                                      name_list(input_names) + "), got " + std::to_string(inputs));
  }
  if (output_dtypes != output_names.size()) {
    throw ArgumentError("output_dtypes", "expected " + plural(output_names.size(), "output dtype") +
                                             " (" + name_list(output_names) + "), got " +
                                             std::to_string(output_dtypes));
  }
}


void validate_cuda_kernel_spec(const KernelSpec& spec) {
  using namespace codegen;
  check_kernel_name(spec.name);
  if (spec.output_names.empty()) {
    throw ArgumentError("output_names", "at least one output name is required");
  }
  if (spec.shared_memory < 0) {
    throw ArgumentError("shared_memory", "expected a number of bytes >= 0, got " +
                                             std::to_string(spec.shared_memory));
  }
  check_parameter_names(spec.input_names, spec.output_names,
                        scan_user_code(spec.source, spec.header).identifiers, reserved_name_reason);
}

}  // namespace jk::codegen
