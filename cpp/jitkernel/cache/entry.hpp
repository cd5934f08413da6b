// The byte layout of one cache entry file: a fixed 96-byte header, then the
// payload (the compiled binary). All integers little-endian.
//
//   0   8  magic "\x89JKC\r\n\x1a\n" (catches text-mode mangling and foreign files)
//   8   4  format version (key_builder.hpp's kFormatVersion)
//   12  4  header size (96)
//   16  32 the key (SHA-256), echoing the file name
//   48  8  payload size; the file is exactly header + payload bytes long
//   56  32 SHA-256 of the payload
//   88  8  zero (reserved)
//
// Pure byte work, no I/O: entry_io.cpp reads and writes the files.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {

inline constexpr std::size_t kEntryHeaderSize = 96;
using EntryHeaderBytes = std::array<std::uint8_t, kEntryHeaderSize>;

// The first bytes of every entry file (the magic): enough to tell one of
// our entries from someone else's file before removing it.
inline constexpr std::size_t kEntryMagicSize = 8;
bool has_entry_magic(const std::uint8_t (&first)[kEntryMagicSize]);

EntryHeaderBytes encode_entry_header(const Digest& key, std::string_view payload);

// Checks a header read from a file of `file_size` bytes against `key`.
// Returns nullptr when it is the header of a valid entry for `key` whose
// payload is file_size - kEntryHeaderSize bytes, else why not ("bad magic",
// "wrong size", ...). The payload checksum is checked by payload_matches.
const char* check_entry_header(const EntryHeaderBytes& header, const Digest& key,
                               std::uint64_t file_size);

// Whether `payload` has the checksum recorded in `header`.
bool payload_matches(const EntryHeaderBytes& header, std::string_view payload);

// Whether `checksum` (the SHA-256 of a payload, hashed in pieces by the
// caller) is the one recorded in `header`.
bool payload_checksum_matches(const EntryHeaderBytes& header, const Digest& checksum);

// Checks an entry file given in pieces (update) against `key` and the size
// announced for it: the header against the key and the size, the payload
// against the header's checksum, hashed as it comes. Memory does not depend
// on the size (bundles stream theirs).
class EntryCheck {
 public:
  EntryCheck(const Digest& key, std::uint64_t size) : key_(key), size_(size) {}
  void update(std::string_view bytes);
  // "" when the pieces were a valid entry file for the key, of the size
  // announced, else why not. The answer is kept: later calls repeat it.
  const std::string& finish();
  bool finished() const { return finished_; }
  // The header seen so far (whole once kEntryHeaderSize bytes came).
  const EntryHeaderBytes& header() const { return header_; }

 private:
  Digest key_;
  std::uint64_t size_;
  std::uint64_t seen_ = 0;
  EntryHeaderBytes header_{};
  Sha256 payload_;
  bool finished_ = false;
  std::string why_;
};

}  // namespace jk::cache
