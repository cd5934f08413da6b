// A cache bundle file (docs/precompile.md: `cache export` writes it, `cache
// import` reads it) as a read-only store: the third implementation of
// store.hpp beside the writable folder and the read-only tiers, so that a
// C++ program can serve kernels from a bundle as Python imports one.
//
// The file is untrusted and checked whole when opened, in time linear in its
// size and in bounded memory (read in 1 MiB pieces): the magic and format
// version, the manifest's size (at most 64 MiB) and SHA-256, the manifest
// itself (strict JSON, core/json.hpp: exact keys, entry names only, so no
// path or link can be expressed; sizes bounded per entry and in total; no
// name twice), the file's size against the sizes, each member's SHA-256 and
// its own entry check (entry.hpp), and the whole file's SHA-256. The file is
// opened without blocking and must be a regular file; it stays open, so a
// bundle renamed or replaced later is not read. Any failure leaves the store
// unusable with problem() saying what was wrong (the texts BundleError
// shows). Reads after the check verify each member's SHA-256 again: bytes
// changed since the check are never served.
//
// Layout (integers little-endian):
//   0      8  magic "\x89JKB\r\n\x1a\n"
//   8      4  format version (1)
//   12     4  manifest size M
//   16     M  manifest: {"format": 1, "jitkernel": version, "total_bytes": N,
//             "entries": [{"name": "<64 hex>.jkc", "size": n, "sha256": "<64 hex>"}, ...]}
//             (".jka" names: serving aliases, store.hpp's EntryKind)
//   16+M  32  SHA-256 of the bytes before it
//   ...       the entry files' bytes, in manifest order (N bytes in all)
//   end-32 32 SHA-256 of everything before it
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/store.hpp"

namespace jk::cache {

inline constexpr std::uint32_t kBundleFormat = 1;
inline constexpr std::uint64_t kMaxBundleManifestBytes = std::uint64_t{64} << 20;
inline constexpr std::uint64_t kMaxBundleEntryBytes = std::uint64_t{1} << 30;

class BundleFile : public Store {
 public:
  struct Member {
    std::string name;  // "<key hex>.jkc" (or ".jka": an alias)
    Key key;
    EntryKind kind = EntryKind::Binary;
    std::uint64_t offset = 0;  // of its bytes in the file
    std::uint64_t size = 0;
    Digest sha256{};
  };

  // Opens and checks the bundle at `path`; its entries may hold at most
  // `max_total_bytes` bytes.
  BundleFile(const std::string& path, std::uint64_t max_total_bytes);
  // The same over `file`, opened (and vetted) by the caller: a read-only tier.
  BundleFile(const std::string& path, Fd file, std::uint64_t max_total_bytes);

  const std::string& where() const override { return path_; }
  const std::string& problem() const override { return problem_; }
  Read load(const Key& key, EntryKind kind, std::uint64_t max_bytes, std::string& payload) const override;
  void list(std::vector<StoredFile>& out) const override;

  const std::string& version() const { return version_; }  // the jitkernel that wrote it
  const std::vector<Member>& members() const { return members_; }

  // `size` bytes of member `index` from `offset` within it (the caller
  // bounds the piece); false when the file ends first or a read fails.
  bool read(std::size_t index, std::uint64_t offset, std::size_t size, std::string& out) const;

 private:
  std::string check(std::uint64_t max_total_bytes);
  std::string read_manifest(std::uint64_t file_size, std::uint64_t max_total_bytes, Sha256& whole);

  std::string path_;
  std::string problem_;
  std::string version_;
  std::vector<Member> members_;
  std::map<std::pair<Key, EntryKind>, std::size_t> index_;  // (key, kind) -> member
  Fd fd_;
};

}  // namespace jk::cache
