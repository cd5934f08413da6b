// 64-bit non-cryptographic hashing for in-memory lookups (kernel variants,
// hash tables). One fast byte hash (8 bytes per step, four lanes for long
// inputs) plus helpers to hash strings and combine hashes. Collisions can be
// constructed at will, so it never decides on its own that two inputs are the
// same where an input may come from a user (binaries, files): those are keyed
// by SHA-256 (cache/sha256.hpp) or compared byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jk {

// Hash of `size` bytes at `data`. Deterministic across runs and machines of
// the same endianness (usable in on-disk keys).
std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t seed = 0);

inline std::uint64_t hash_string(std::string_view text, std::uint64_t seed = 0) {
  return hash_bytes(text.data(), text.size(), seed);
}

// Mixes `value` into `seed` (order matters).
inline std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t value) {
  std::uint64_t x = seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  return x;
}

// Hasher for unordered containers keyed by std::string.
struct StringHash {
  std::size_t operator()(const std::string& s) const noexcept {
    return static_cast<std::size_t>(hash_string(s));
  }
};

}  // namespace jk
