// Private pieces of the Metal code generator, shared by its .cpp files:
// which Metal attributes a body can use (MLX's table and order), how body
// text is matched against generated names, and the name checks. Not a
// contract: other parts of jitkernel use metal_signature.hpp only.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "jitkernel/codegen/metal_signature.hpp"

namespace jk::codegen {

// ---- metal_names.cpp ---------------------------------------------------------

// A Metal kernel attribute the generated signature declares when the body
// mentions it: `<type> <name> [[<name>]]`. MLX 0.32.4's table, in its order
// (alphabetical), which is also the order of the generated parameters.
struct MetalAttribute {
  const char* name;
  const char* type;  // "uint" or "uint3"
};
const std::vector<MetalAttribute>& metal_attributes();

// Every identifier token of `text`, comments and literals included (MLX
// looks at the raw text, so a name in a comment still adds its parameter;
// unlike MLX, only whole identifiers count: "data_shape" is not "a_shape").
std::unordered_set<std::string> raw_identifiers(std::string_view text);

// Why `name` cannot name a Metal kernel parameter or template argument, or
// nullptr when it can: C++ and Metal keywords, types and names the generated
// signature spells, Metal attribute names.
const char* metal_reserved_name_reason(std::string_view name);

// Template arguments: names checked as check_template_names does (with
// metal_reserved_name_reason), Int values within int32 (ArgumentError("template")).
void check_metal_template_args(const std::vector<TemplateArg>& args, const KernelSpec& spec,
                               const std::unordered_set<std::string>& body_identifiers);

}  // namespace jk::codegen
