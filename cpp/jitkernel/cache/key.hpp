// Cache keys: a SHA-256 over labelled, length-prefixed fields, so that no two
// different field lists hash the same bytes. Every key starts with the cache
// format version and jitkernel's version; callers add what else changes the
// binary (source, options, compiler identity, ...). Also cheap identities of
// files that feed a compile (a compiler library, header folders), used as
// key fields without reading the files whole.
#pragma once

#include <string>
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

// Identity of a library file: its ELF build-id (a hash of its contents the
// linker records) and size when it has one, else its size and modification
// time; "missing" when it cannot be read. Costs one open and a few small reads.
std::string file_identity(const std::string& path);

// Size and modification time (ns) of `path`, or "missing": one stat.
std::string stat_fingerprint(const std::string& path);

// Device, inode, size, modification and status-change times (ns) of `path`
// (links followed), or "missing": one stat. Replacing, writing, renaming
// onto or re-linking the path changes it (the status-change time cannot be
// set back), so a file or folder with the same value is the same one,
// unchanged.
std::string stat_identity(const std::string& path);

}  // namespace jk::cache
