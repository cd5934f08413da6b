// A cache key argument from Python (64 lowercase hex digits), shared by the
// bindings that take keys: bundles (cache_bundle.cpp) and tuning decisions
// (autotune.cpp).
#pragma once

#include <string>

#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

inline cache::Digest key_arg(const std::string& hex) {
  cache::Digest key{};
  if (!cache::from_hex(hex, key))
    throw ArgumentError("key", "expected 64 lowercase hex digits, got '" + hex.substr(0, 80) + "'");
  return key;
}

}  // namespace jk::py
