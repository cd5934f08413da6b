// Read-only tiers of the disk cache (disk_cache.hpp): folders named by
// JITKERNEL_CACHE_READONLY_DIRS (a shared file system, an image layer, an
// unpacked bundle), or cache bundle files named there (served in place,
// bundle_file.hpp), that a load looks in after the writable folder, in order.
//
// What a read-only tier must be, and why. It is never written to: no entry,
// temp file, claim or mtime touch, no eviction, no clear -- so it need not be
// ours, and a read-only mount works. It may belong to anyone (root, a deploy
// user): the user named it, as they name a folder on PATH. But nobody else
// may be able to change it: neither its group nor others may write to it or
// to its "kernels" subfolder, every folder above it belongs to root, this
// user or the tier's owner and is writable by neither group nor others
// unless sticky, and "kernels" belongs to one of those (all checked once,
// when the environment is read, on the folders as opened: directory.hpp),
// nor to an entry file, which must also belong to one of them (checked on
// the opened file at each load): anyone who could write there could plant
// a binary with a valid checksum (the checksum catches damage, not intent).
// The tier's "kernels" folder stays open: a tier renamed or replaced after
// the checks is not looked at by this process.
// Entries are read like the writable folder's: no link followed, regular
// files only, bounded reads, magic, key and checksum verified; a bad one is a
// miss. A hit is not copied into the writable folder: the tier already
// answers at the cost of one read, and the node-local folder stays small.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/store.hpp"

namespace jk::cache {

// One read-only tier as a store (store.hpp): loads and lists, nothing else.
class ReadOnlyTier : public Store {
 public:
  // Opens and vets `directory` (absolute) and its kernels subfolder, as
  // above; problem() says why it is not used.
  explicit ReadOnlyTier(std::string directory);

  const std::string& where() const override { return directory_; }
  const std::string& problem() const override { return problem_; }
  Read load(const Key& key, EntryKind kind, std::uint64_t max_bytes, std::string& payload) const override;
  void list(std::vector<StoredFile>& out) const override;  // never tidies

 private:
  std::string directory_;  // as configured, made absolute
  std::string problem_;    // why it is not used ("" when it is)
  Folder folder_;          // its kernels folder, held open (ok() when used)
};

// A bundle file named as a tier may hold at most this many bytes of entries.
inline constexpr std::uint64_t kMaxTierBundleBytes = std::uint64_t{64} << 30;

// The tiers JITKERNEL_CACHE_READONLY_DIRS (`value`) names, each checked,
// without duplicates and without `writable` (the writable folder, which is
// looked in first anyway): a folder is a ReadOnlyTier; a file is a cache
// bundle (bundle_file.hpp) served in place, after the same ownership rules
// (directory.hpp's open_readonly_file) and its whole-file check. One that
// fails its checks stays in the list, unused, its problem() saying why.
std::vector<std::unique_ptr<Store>> readonly_tiers(const std::string& value, const std::string& writable);

}  // namespace jk::cache
