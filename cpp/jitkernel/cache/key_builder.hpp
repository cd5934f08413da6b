// The generic cache-key builder: a SHA-256 over labelled, length-prefixed
// fields, so that no two different field lists hash the same bytes. Every key
// starts with the cache format version and jitkernel's version; callers add
// what else identifies the entry (compile_key.hpp lists a compile's fields,
// cuda/toolkit_record.cpp a toolkit record's).
#pragma once

#include <string_view>

#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {

// Version of the entry format and of the key layout; bumping it makes every
// older entry a miss.
inline constexpr int kFormatVersion = 1;

class KeyBuilder {
 public:
  KeyBuilder();  // adds the format version and jitkernel's version
  KeyBuilder& add(std::string_view label, std::string_view value);
  Digest finish() { return hasher_.finish(); }

 private:
  Sha256 hasher_;
};

}  // namespace jk::cache
