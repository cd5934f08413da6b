// The key builder of key_builder.hpp: each field is its label's length (8
// bytes, little-endian), the label, its value's length and the value.
#include "jitkernel/cache/key_builder.hpp"

#include <cstdint>
#include <string>

#ifndef JITKERNEL_VERSION
#define JITKERNEL_VERSION "dev"
#endif

namespace jk::cache {
namespace {

void add_length(Sha256& hasher, std::size_t n) {
  std::uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<std::uint8_t>(std::uint64_t(n) >> (8 * i));
  hasher.update(bytes, sizeof(bytes));
}

}  // namespace

KeyBuilder::KeyBuilder() {
  add("format", std::to_string(kFormatVersion));
  add("jitkernel", JITKERNEL_VERSION);
}

KeyBuilder& KeyBuilder::add(std::string_view label, std::string_view value) {
  add_length(hasher_, label.size());
  hasher_.update(label);
  add_length(hasher_, value.size());
  hasher_.update(value);
  return *this;
}

}  // namespace jk::cache
