// Reading and writing one entry file of the disk cache (disk_cache.hpp):
// a checked read that never blocks or over-allocates, and an atomic write
// (temp file announcing its size, room made under the cap, rename into
// place). Internal to cache/: the stores (store.hpp) read and write through
// these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/cache/store.hpp"

namespace jk::cache {

// Stores the entry file for `key` in folders[into]: announce a temp file,
// make room (make_room), write, rename into place. Nothing waits for the disk
// (no fsync): after a crash the file may be torn or gone, which readers see
// as a bad or missing entry -- a miss, costing one compile or search, never a
// wrong binary (every entry carries its checksum). `what` names the step that
// failed and `error` its errno.
Write write_entry(const std::vector<Folder>& folders, std::size_t into, const Digest& key,
                  EntryKind kind, std::string_view payload, std::uint64_t max_bytes,
                  std::uint64_t& evictions, const char** what, int* error);

// Whose folder an entry is read from: the writable folder's hits are marked
// recently used; a read-only tier (tiers.hpp) is never modified, and its
// entry files must not be writable by group or others, and must belong to
// root, this user or the owner of `folder` (else Bad); a folder read as it
// is (Plain: the folder a bundle is exported from) is never modified and
// its files' owners are not checked.
enum class Folders { Own, ReadOnly, Plain };

// Reads the entry of `kind` for `key` in `folder` (relative to its descriptor) into `payload` (checked against its
// header and checksum); a hit in our own folder marks it recently used (the
// owner may always set times to now). Never blocks on what is in the entry's
// place, and never allocates more than the file's real size, which must be
// at most `max_bytes` (an entry larger than the cap could not have been
// stored under it) and agree with the header's payload size. A read that
// fails because the file went away or its server lost it (ENOENT, ESTALE,
// EIO: another process removed it, or a network file system) is Missing,
// not Bad: a plain miss, no warning.
Read read_entry(const Folder& folder, const Digest& key, EntryKind kind, std::uint64_t max_bytes,
                std::string& payload, Folders whose = Folders::Own);

}  // namespace jk::cache
