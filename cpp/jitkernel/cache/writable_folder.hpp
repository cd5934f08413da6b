// The cache folder of this user as a store (store.hpp): its "kernels"
// subfolder holds the entries, its "records" subfolder the records
// (disk_cache.hpp's load_record), both created 0700, vetted when opened
// (directory.hpp: a private folder of this user, reached through folders
// nobody else may replace) and used through their descriptors from then on,
// so a rename of the path after the checks changes nothing. Loads mark the
// entry recently used; stores write a temp file and rename it into place,
// first evicting least recently used files of both subfolders to stay within
// the cap (eviction.hpp). Internal to cache/: disk_cache.cpp holds the one of
// the process.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/store.hpp"

namespace jk::cache {

class WritableFolder : public Store {
 public:
  // Opens `directory` (absolute; the last component may be a link) and its
  // subfolders, creating them when missing. problem() says why it cannot be
  // used; a records folder that cannot be used only means no records.
  WritableFolder(std::string directory, std::uint64_t max_bytes);

  const std::string& directory() const { return directory_; }
  const std::string& where() const override { return entries_; }  // directory/kernels
  const std::string& problem() const override { return problem_; }
  // The folder the problem was found in (directory or its kernels folder).
  const std::string& problem_at() const { return problem_at_; }

  Read load(const Key& key, EntryKind kind, std::uint64_t max_bytes, std::string& payload) const override;
  void list(std::vector<StoredFile>& out) const override;  // tidies stale temp files
  Write store(const Key& key, EntryKind kind, std::string_view payload, const char** what, int* error) override;

  // Records: the same entry format in "records", at most `max_records` kept
  // (least recently used removed). Only used while that folder is still
  // private (re-checked at each call: its owner may change its mode).
  bool load_record(const Key& key, std::string& payload) const;
  bool store_record(const Key& key, std::string_view payload, std::size_t max_records);

  // Files of both subfolders now: entries, records, and the bytes the cap
  // counts (temp files included).
  void usage(std::uint64_t& entries, std::uint64_t& records, std::uint64_t& bytes) const;

  // Removes our entries, records and temp files (cache_files.hpp's
  // remove_ours) from subfolders this user owns; counts what it removed.
  void clear(std::uint64_t& entries, std::uint64_t& records) const;

  // Files this object evicted to make room.
  std::uint64_t evictions() const { return evictions_; }

 private:
  std::string directory_;
  std::string entries_;
  std::string problem_, problem_at_;
  std::uint64_t max_bytes_;
  // kEntries and kRecords (cache_files.hpp); records may be not ok().
  std::vector<Folder> folders_;
  std::atomic<std::uint64_t> evictions_{0};
};

}  // namespace jk::cache
