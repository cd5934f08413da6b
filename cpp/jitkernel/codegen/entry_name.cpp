// Entry-point names of generated kernels: `<name>_<16 hex digits>`, where the
// digits hash everything the generated text contains (user source, header,
// signature, template values, preamble). Same name + different source gives a
// different entry; every template value (negative ints too) gives a valid C
// identifier because the values only enter through the hash.
#include <string>

#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/core/hash.hpp"

namespace jk::codegen {

std::string make_entry_name(const std::string& name, std::string_view content) {
  std::uint64_t h = hash_combine(hash_string(name), hash_string(content));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = name + "_";
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kHex[(h >> shift) & 0xf]);
  return out;
}

}  // namespace jk::codegen
