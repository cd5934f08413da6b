// SHA-256 (FIPS 180-4), the cryptographic hash behind on-disk cache keys and
// entry checksums. Self-contained (no OpenSSL): a streaming hasher plus
// one-shot and hex helpers; x86-64 CPUs with the SHA extensions hash with
// them (several times faster: this is on the warm-cache path), others with
// portable code. Checked against the standard test vectors in
// tests/cpu/test_cache_key.py.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jk::cache {

using Digest = std::array<std::uint8_t, 32>;

class Sha256 {
 public:
  // `portable`: never use the CPU's SHA extensions (to test that code path).
  explicit Sha256(bool portable = false);
  void update(const void* data, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest of everything added; the hasher must not be used afterwards.
  Digest finish();

 private:
  void (*compress_)(std::uint32_t* state, const std::uint8_t* blocks, std::size_t count);
  std::uint32_t state_[8];
  std::uint8_t buffer_[64];
  std::size_t buffered_ = 0;
  std::uint64_t length_ = 0;  // bytes added
};

Digest sha256(std::string_view bytes, bool portable = false);

// 64 lowercase hex digits.
std::string to_hex(const Digest& digest);

// 64 lowercase hex digits -> the digest; false for anything else.
bool from_hex(std::string_view hex, Digest& digest);

}  // namespace jk::cache
