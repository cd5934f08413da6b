// The byte hash behind hash.hpp. Short inputs (the usual cache key) take one
// 8-byte multiply-rotate step per word; inputs of 32 bytes and more run four
// independent lanes so long sources and binaries hash at memory speed. A final
// avalanche makes every input bit affect every output bit.
#include "jitkernel/core/hash.hpp"

#include <cstring>

namespace jk {
namespace {

constexpr std::uint64_t kP1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t kP3 = 0x165667B19E3779F9ULL;
constexpr std::uint64_t kP4 = 0x85EBCA77C2B2AE63ULL;
constexpr std::uint64_t kP5 = 0x27D4EB2F165667C5ULL;

inline std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

inline std::uint64_t load64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline std::uint32_t load32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline std::uint64_t lane_step(std::uint64_t acc, std::uint64_t word) {
  acc += word * kP2;
  acc = rotl(acc, 31);
  return acc * kP1;
}

inline std::uint64_t merge_lane(std::uint64_t h, std::uint64_t lane) {
  h ^= lane_step(0, lane);
  return h * kP1 + kP4;
}

inline std::uint64_t avalanche(std::uint64_t h) {
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

}  // namespace

std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  const unsigned char* end = p + size;
  std::uint64_t h;
  if (size >= 32) {
    std::uint64_t a = seed + kP1 + kP2, b = seed + kP2, c = seed, d = seed - kP1;
    const unsigned char* limit = end - 32;
    do {
      a = lane_step(a, load64(p));
      b = lane_step(b, load64(p + 8));
      c = lane_step(c, load64(p + 16));
      d = lane_step(d, load64(p + 24));
      p += 32;
    } while (p <= limit);
    h = rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18);
    h = merge_lane(h, a);
    h = merge_lane(h, b);
    h = merge_lane(h, c);
    h = merge_lane(h, d);
  } else {
    h = seed + kP5;
  }
  h += static_cast<std::uint64_t>(size);
  for (; p + 8 <= end; p += 8) {
    h ^= lane_step(0, load64(p));
    h = rotl(h, 27) * kP1 + kP4;
  }
  if (p + 4 <= end) {
    h ^= static_cast<std::uint64_t>(load32(p)) * kP1;
    h = rotl(h, 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) {
    h ^= static_cast<std::uint64_t>(*p) * kP5;
    h = rotl(h, 11) * kP1;
  }
  return avalanche(h);
}

}  // namespace jk
