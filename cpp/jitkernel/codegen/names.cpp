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

// "input 'x'" / "output 'y'" for messages.
struct NamedParam {
  const char* argument;  // "input_names" / "output_names"
  const char* role;      // "input" / "output"
  const std::string* name;
};

std::vector<NamedParam> all_params(const CudaKernelSpec& spec) {
  std::vector<NamedParam> params;
  for (const auto& n : spec.input_names) params.push_back({"input_names", "input", &n});
  for (const auto& n : spec.output_names) params.push_back({"output_names", "output", &n});
  return params;
}

void check_one_name(const char* argument, const char* role, const std::string& name) {
  if (!is_c_identifier(name)) {
    throw ArgumentError(argument, std::string(role) + " name " + quoted(name) +
                                      " is not a C identifier (expected letters, digits and "
                                      "'_', not starting with a digit)");
  }
  if (const char* why = reserved_name_reason(name)) {
    throw ArgumentError(argument, std::string(role) + " name " + quoted(name) +
                                      " is reserved: " + why + "; choose another name");
  }
}

// The generated names (x_shape, ...) the user code makes jitkernel define, with
// the input they belong to.
struct GeneratedName {
  std::string name;
  const std::string* input;
  const char* what;  // "shape" / "strides" / "ndim"
};

std::vector<GeneratedName> generated_names(const std::vector<std::string>& input_names,
                                           const SourceScan& scan) {
  std::vector<GeneratedName> out;
  for (const auto& input : input_names) {
    ShapeUse use = shape_use(scan, input);
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

}  // namespace

bool is_c_identifier(std::string_view name) {
  return !name.empty() && is_ident_start(name[0]) &&
         std::all_of(name.begin(), name.end(), is_ident_char);
}

const char* reserved_name_reason(std::string_view name) {
  if (contains(kKeywords, name)) return "it is a C++ keyword";
  if (contains(kCudaBuiltins, name)) return "it is a CUDA built-in variable";
  if (contains(kGeneratedNames, name)) return "the generated code uses this name itself";
  if (name.find("__") != std::string_view::npos ||
      (name.size() > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z')) {
    return "C++ reserves identifiers containing '__' or starting with '_' and an uppercase "
           "letter (jitkernel uses them for generated parameters)";
  }
  return nullptr;
}

ShapeUse shape_use(const SourceScan& scan, const std::string& input_name) {
  ShapeUse use;
  use.shape = scan.has(input_name + "_shape");
  use.strides = scan.has(input_name + "_strides");
  use.ndim = scan.has(input_name + "_ndim");
  return use;
}

void check_template_names(const std::vector<std::string>& template_names,
                          const std::vector<std::string>& input_names,
                          const std::vector<std::string>& output_names,
                          const SourceScan& scan) {
  auto generated = generated_names(input_names, scan);
  for (std::size_t i = 0; i < template_names.size(); ++i) {
    const std::string& name = template_names[i];
    check_one_name("template", "template argument", name);
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

}  // namespace jk::codegen

namespace jk {

void validate_cuda_kernel_spec(const CudaKernelSpec& spec) {
  using namespace codegen;
  if (!is_c_identifier(spec.name)) {
    throw ArgumentError("name", "kernel name " + quoted(spec.name) +
                                    " is not a C identifier (expected letters, digits and '_', "
                                    "not starting with a digit)");
  }
  if (spec.output_names.empty()) {
    throw ArgumentError("output_names", "at least one output name is required");
  }
  if (spec.shared_memory < 0) {
    throw ArgumentError("shared_memory", "expected a number of bytes >= 0, got " +
                                             std::to_string(spec.shared_memory));
  }
  auto params = all_params(spec);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    check_one_name(p.argument, p.role, *p.name);
    for (std::size_t j = 0; j < i; ++j) {
      if (*params[j].name == *p.name) {
        throw ArgumentError(p.argument, "name " + quoted(*p.name) + " is given twice (as " +
                                            params[j].role + " and as " + p.role +
                                            "); kernel parameter names must be unique");
      }
    }
  }
  SourceScan scan = scan_user_code(spec.source, spec.header);
  for (const auto& g : generated_names(spec.input_names, scan)) {
    for (const auto& p : params) {
      if (*p.name == g.name) throw ArgumentError(p.argument, collision_message(p.role, g));
    }
  }
}

}  // namespace jk
