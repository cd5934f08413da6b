// Encoding and checking of the entry header of entry.hpp.
#include "jitkernel/cache/entry.hpp"

#include <algorithm>
#include <cstring>

#include "jitkernel/cache/key_builder.hpp"

namespace jk::cache {
namespace {

constexpr std::uint8_t kMagic[kEntryMagicSize] = {0x89, 'J', 'K', 'C', '\r', '\n', 0x1a, '\n'};
constexpr std::size_t kVersionAt = 8, kHeaderSizeAt = 12, kKeyAt = 16, kPayloadSizeAt = 48,
                      kChecksumAt = 56, kReservedAt = 88;

void put_le(std::uint8_t* p, std::uint64_t v, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint64_t get_le(const std::uint8_t* p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v |= std::uint64_t(p[i]) << (8 * i);
  return v;
}

}  // namespace

bool has_entry_magic(const std::uint8_t (&first)[kEntryMagicSize]) {
  return std::memcmp(first, kMagic, kEntryMagicSize) == 0;
}

EntryHeaderBytes encode_entry_header(const Digest& key, std::string_view payload) {
  EntryHeaderBytes h{};
  std::memcpy(h.data(), kMagic, sizeof(kMagic));
  put_le(h.data() + kVersionAt, kFormatVersion, 4);
  put_le(h.data() + kHeaderSizeAt, kEntryHeaderSize, 4);
  std::memcpy(h.data() + kKeyAt, key.data(), key.size());
  put_le(h.data() + kPayloadSizeAt, payload.size(), 8);
  Digest checksum = sha256(payload);
  std::memcpy(h.data() + kChecksumAt, checksum.data(), checksum.size());
  return h;
}

const char* check_entry_header(const EntryHeaderBytes& h, const Digest& key,
                               std::uint64_t file_size) {
  if (file_size < kEntryHeaderSize) return "truncated";
  if (std::memcmp(h.data(), kMagic, sizeof(kMagic)) != 0) return "not a jitkernel cache entry";
  if (get_le(h.data() + kVersionAt, 4) != std::uint64_t(kFormatVersion) ||
      get_le(h.data() + kHeaderSizeAt, 4) != kEntryHeaderSize)
    return "another format version";
  if (std::memcmp(h.data() + kKeyAt, key.data(), key.size()) != 0) return "another key";
  if (get_le(h.data() + kReservedAt, 8) != 0) return "reserved bytes set";
  if (get_le(h.data() + kPayloadSizeAt, 8) != file_size - kEntryHeaderSize)
    return "truncated or extended";
  return nullptr;
}

bool payload_matches(const EntryHeaderBytes& header, std::string_view payload) {
  return payload_checksum_matches(header, sha256(payload));
}

bool payload_checksum_matches(const EntryHeaderBytes& header, const Digest& checksum) {
  return std::memcmp(header.data() + kChecksumAt, checksum.data(), checksum.size()) == 0;
}

void EntryCheck::update(std::string_view bytes) {
  if (finished_) return;
  const std::size_t to_header =
      seen_ < header_.size() ? std::min(bytes.size(), header_.size() - static_cast<std::size_t>(seen_)) : 0;
  if (to_header > 0) std::memcpy(header_.data() + seen_, bytes.data(), to_header);
  payload_.update(bytes.data() + to_header, bytes.size() - to_header);
  seen_ += bytes.size();
}

const std::string& EntryCheck::finish() {
  if (finished_) return why_;
  finished_ = true;
  const Digest checksum = payload_.finish();
  if (seen_ != size_) {
    why_ = "got " + std::to_string(seen_) + " bytes, expected " + std::to_string(size_);
  } else if (size_ < kEntryHeaderSize) {
    why_ = "shorter than an entry header";
  } else if (const char* why = check_entry_header(header_, key_, size_)) {
    why_ = why;
  } else if (!payload_checksum_matches(header_, checksum)) {
    why_ = "bad checksum";
  }
  return why_;
}

}  // namespace jk::cache
