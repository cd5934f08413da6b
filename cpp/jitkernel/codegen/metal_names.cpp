// Names in generated Metal code: the Metal attributes a body can use (MLX's
// table), how the body is matched against generated names (whole identifier
// tokens of the raw text), which names may not name a parameter or template
// argument, and the checks that turn a bad name into an ArgumentError naming
// the argument, the value and what was expected.
#include <algorithm>
#include <climits>
#include <string>

#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/codegen/metal_detail.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::codegen {
namespace {

// Metal keywords (address spaces, function qualifiers) and the type names the
// generated signature or the metal_utils preamble spell.
constexpr const char* kMetalKeywords[] = {
    "device", "constant", "threadgroup", "threadgroup_imageblock", "thread", "ray_data",
    "object_data", "kernel", "vertex", "fragment",
};
constexpr const char* kMetalGeneratedNames[] = {
    "metal",    "atomic",   "half",      "bfloat",     "uint",       "ushort",      "uchar",
    "ulong",    "uint3",    "size_t",    "ptrdiff_t",  "int8_t",     "int16_t",     "int32_t",
    "int64_t",  "uint8_t",  "uint16_t",  "uint32_t",   "uint64_t",   "float16_t",   "bfloat16_t",
    "complex64_t",
};

template <std::size_t N>
bool contains(const char* const (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

bool is_attribute(std::string_view name) {
  for (const auto& a : metal_attributes()) {
    if (name == a.name) return true;
  }
  return false;
}

}  // namespace

const std::vector<MetalAttribute>& metal_attributes() {
  static const std::vector<MetalAttribute> table = {
      {"dispatch_quadgroups_per_threadgroup", "uint"},
      {"dispatch_simdgroups_per_threadgroup", "uint"},
      {"dispatch_threads_per_threadgroup", "uint3"},
      {"grid_origin", "uint3"},
      {"grid_size", "uint3"},
      {"quadgroup_index_in_threadgroup", "uint"},
      {"quadgroups_per_threadgroup", "uint"},
      {"simdgroup_index_in_threadgroup", "uint"},
      {"simdgroups_per_threadgroup", "uint"},
      {"thread_execution_width", "uint"},
      {"thread_index_in_quadgroup", "uint"},
      {"thread_index_in_simdgroup", "uint"},
      {"thread_index_in_threadgroup", "uint"},
      {"thread_position_in_grid", "uint3"},
      {"thread_position_in_threadgroup", "uint3"},
      {"threadgroup_position_in_grid", "uint3"},
      {"threadgroups_per_grid", "uint3"},
      {"threads_per_grid", "uint3"},
      {"threads_per_simdgroup", "uint"},
      {"threads_per_threadgroup", "uint3"},
  };
  return table;
}

std::unordered_set<std::string> raw_identifiers(std::string_view text) {
  std::unordered_set<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!is_ident_char(text[i])) {
      ++i;
      continue;
    }
    std::size_t start = i;
    while (i < text.size() && is_ident_char(text[i])) ++i;
    // A run starting with a digit is a number (1e5f, 0x1f), not a name.
    if (is_ident_start(text[start])) out.emplace(text.substr(start, i - start));
  }
  return out;
}

const char* metal_reserved_name_reason(std::string_view name) {
  if (is_cpp_keyword(name)) return "it is a C++ keyword";
  if (contains(kMetalKeywords, name)) return "it is a Metal keyword";
  if (contains(kMetalGeneratedNames, name)) return "the generated code uses this name as a type";
  if (is_attribute(name)) {
    return "it is a Metal attribute, which the generated signature declares as a parameter "
           "when the source uses it";
  }
  return nullptr;
}

void check_metal_template_args(const std::vector<TemplateArg>& args, const KernelSpec& spec,
                               const std::unordered_set<std::string>& body_identifiers) {
  std::vector<std::string> names;
  for (const auto& a : args) names.push_back(a.name);
  check_template_names(names, spec.input_names, spec.output_names, body_identifiers,
                       metal_reserved_name_reason);
  for (const auto& a : args) {
    if (a.kind == TemplateArg::Kind::Int && (a.int_value < INT_MIN || a.int_value > INT_MAX)) {
      throw ArgumentError("template", "template argument '" + a.name + "' = " +
                                          std::to_string(a.int_value) +
                                          " does not fit in a Metal int (32 bits)");
    }
  }
}

void validate_metal_kernel_name(const std::string& name) { check_kernel_name(name); }

void validate_metal_kernel_spec(const KernelSpec& spec) {
  check_kernel_name(spec.name);
  if (spec.output_names.empty()) {
    throw ArgumentError("output_names", "at least one output name is required");
  }
  check_parameter_names(spec.input_names, spec.output_names, raw_identifiers(spec.source),
                        metal_reserved_name_reason);
}

void check_metal_shape_range(const std::string& name, std::int64_t extent, const char* used) {
  if (extent <= INT32_MAX) return;
  throw ArgumentError("inputs", "input '" + name + "' has a dimension of " + std::to_string(extent) +
                                    ", but its shape is passed as 32-bit ints ('" + name + used + "')");
}

}  // namespace jk::codegen
