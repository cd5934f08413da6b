// Where compiled entries are kept, apart from how their keys are made
// (compile_key.hpp, key_builder.hpp): a store answers "the payload for this
// key", lists what it holds, and, when writable, takes new entries. The
// models are CuPy's KernelCacheBackend and Triton's CacheManager.
//
// Implementations, all reading entries through the same checks (entry.hpp's
// header and checksum; entry_io.hpp's non-blocking, bounded, never-a-link
// reads):
//   WritableFolder  the cache folder of this user (writable_folder.hpp):
//                   loads mark the entry used, stores evict to stay in the cap
//   ReadOnlyTier    a folder of JITKERNEL_CACHE_READONLY_DIRS (tiers.hpp):
//                   loaded and listed, never modified
//   BundleFile      a bundle file (bundle_file.hpp): loaded and listed;
//                   written whole by export
// The order in which a load asks them lives in one place: find() below, over
// the list disk_cache.cpp builds (the writable folder, then the tiers in the
// order configured).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {

using Key = Digest;

// What an entry file holds: a compiled binary ("<key hex>.jkc"), a serving
// alias ("<key hex>.jka": the key of a binary, named by what a machine without
// NVRTC can compute: cuda/nvrtc/serving_alias.hpp), or an autotuning decision
// ("<key hex>.jkt": python/jitkernel/_fleet/tune_decisions.py). All have the
// entry format (entry.hpp); an entry is only ever served as its own kind.
// Each kind's suffix and words: cache_files.hpp's entry_kind_facts.
enum class EntryKind : unsigned char { Binary, Alias, Decision };

// What one load found.
enum class Read {
  Hit,
  Missing,  // no entry (or one that went away while it was read)
  Bad,      // something is in the entry's place that is not a valid entry for the key
};

// What one store did.
enum class Write {
  Stored,
  NoRoom,         // writers in flight hold the room: not stored, not a failure
  EntryInTheWay,  // something that cannot be replaced holds the entry's name
  Failed,         // the store does not take files (errno set)
};

// One file a listing found: an entry ("<key hex>.jkc", ".jka" or ".jkt", its whole
// size), or a temp file being written (counted in sizes, never loaded).
struct StoredFile {
  std::string name;
  std::uint64_t size = 0;
  bool temp = false;
  EntryKind kind = EntryKind::Binary;
};

class Store {
 public:
  virtual ~Store() = default;

  // Where it is, for messages: a folder, a bundle file.
  virtual const std::string& where() const = 0;

  // Why it is not used ("" when it is): a store that failed its checks
  // finds nothing and lists nothing.
  virtual const std::string& problem() const = 0;
  bool usable() const { return problem().empty(); }

  // The payload stored under `key`, checked (Hit), or Missing / Bad. Reads
  // at most `max_bytes` (an entry larger is Bad) and allocates no more than
  // the entry's real size.
  virtual Read load(const Key& key, EntryKind kind, std::uint64_t max_bytes, std::string& payload) const = 0;

  // Appends the entries (and temp files) it holds now to `out`.
  virtual void list(std::vector<StoredFile>& out) const = 0;

  // Stores `payload` under `key`. Read-only stores answer Failed (errno
  // EROFS); `what` names the step that failed and `error` its errno.
  virtual Write store(const Key& key, EntryKind kind, std::string_view payload, const char** what, int* error);
};

// The first of `stores` (usable ones, in order) with a valid entry for
// `key`, its payload in `payload`; nullptr when none has one. `bad` is set
// when a bad entry was found on the way.
const Store* find(const std::vector<const Store*>& stores, const Key& key, EntryKind kind, std::uint64_t max_bytes,
                  std::string& payload, bool& bad);

}  // namespace jk::cache
