// Cheap identities of files that feed a compile or a toolkit record (a
// compiler library, header folders, the files a record was made from), used
// as key fields without reading the files whole.
#pragma once

#include <cstddef>
#include <string>

namespace jk::cache {

// Identity of a library file: its ELF build-id (a hash of its contents the
// linker records) and size when it has one, else its size and modification
// time; "missing" when it cannot be read or is not a regular file (opened
// without blocking). Costs one open and a few small reads.
std::string file_identity(const std::string& path);

// Size and modification time (ns) of `path`, or "missing": one stat.
std::string stat_fingerprint(const std::string& path);

// Content identity of a header without reading it whole: its size and the
// SHA-256 of its first `head_bytes` bytes (where release headers keep their
// version macros), or "missing". Unlike stat_fingerprint it is the same for
// the same file installed at another path or time.
std::string head_fingerprint(const std::string& path, std::size_t head_bytes);

// Device, inode, size, modification and status-change times (ns) of `path`
// (links followed), or "missing": one stat. Replacing, writing, renaming
// onto or re-linking the path changes it (the status-change time cannot be
// set back), so a file or folder with the same value is the same one,
// unchanged.
std::string stat_identity(const std::string& path);

}  // namespace jk::cache
