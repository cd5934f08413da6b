// A folder laid out like a read-only tier ("<folder>/kernels/<key hex>.jkc",
// tiers.hpp) that is neither this process's cache nor one of its tiers: the
// folder a bundle is exported from (the active cache's or `--from DIR`, read
// by its path when the export runs), and the folder `cache import --into DIR`
// fills to be named in JITKERNEL_CACHE_READONLY_DIRS later.
//
// Read as found (entry_io.hpp's Folders::Plain): no link followed, regular
// files only, bounded reads, every entry checked (magic, key, size,
// checksum); never modified by reading, and no owner check (export reads
// what you name; docs/cache.md's threat model). Written entry by entry:
// each entry file is a new temp file "<key hex>.import.<pid>.<random>.tmp"
// (a name the cache's listings know as a temp file), created exclusively
// without following a link (a name taken by anything, a planted link
// included, is skipped for another), filled, checked as a whole entry for
// its key, then renamed into place; a failure removes it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/entry.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/cache/store.hpp"

namespace jk::cache {

class EntryFolder : public Store {
 public:
  // Opens `directory`'s kernels folder for reading (the last component not
  // a link); problem() says why it could not be ("No such file or
  // directory", ...).
  explicit EntryFolder(const std::string& directory);

  const std::string& where() const override { return entries_; }  // directory/kernels
  const std::string& problem() const override { return problem_; }
  Read load(const Key& key, EntryKind kind, std::uint64_t max_bytes, std::string& payload) const override;
  void list(std::vector<StoredFile>& out) const override;  // entries only, never tidies

 private:
  std::string entries_;
  std::string problem_;
  Folder folder_;
};

// Writes entry files into the kernels folder of `directory`, laid out as a
// read-only tier: `directory` (and missing folders above it) and kernels are
// created with `folder_mode` less the umask, neither may be writable by group
// or others, and the folder must pass the checks a read-only tier passes
// when it is read (directory.hpp's open_readonly_tier: nobody else may
// replace it or what is above it), so whatever is written here can be named
// in JITKERNEL_CACHE_READONLY_DIRS; entries are written relative to the
// kernels folder that passed. Entry files get `file_mode` less the umask.
class TierWriter {
 public:
  TierWriter(const std::string& directory, mode_t folder_mode = 0755, mode_t file_mode = 0644);
  ~TierWriter() { abort(); }
  TierWriter(const TierWriter&) = delete;
  TierWriter& operator=(const TierWriter&) = delete;

  // "" when entries can be written, else why not; `problem_is_mode()` tells
  // whether it was the group/others check.
  const std::string& problem() const { return problem_; }
  bool problem_is_mode() const { return mode_problem_; }
  const std::string& where() const { return entries_; }

  // One entry file at a time: begin (false, errno set, when no temp file
  // could be created: EEXIST after 16 names taken) for `size` bytes, write
  // them in pieces (false, errno set, on a write error), then commit or
  // abort. commit renames the file into place when its bytes were a valid
  // entry file for `key` of `size` bytes (Done), else removes it:
  // NotAnEntry with `why`, or Failed with errno set.
  enum class Commit { Done, NotAnEntry, Failed };
  bool begin(const Key& key, EntryKind kind, std::uint64_t size);
  bool write(std::string_view bytes);
  Commit commit(std::string& why);
  void abort();

 private:
  std::string entries_;
  std::string problem_;
  bool mode_problem_ = false;
  mode_t file_mode_;
  Folder folder_;
  // The entry being written.
  Key key_{};
  EntryKind kind_ = EntryKind::Binary;
  Fd fd_;
  std::string temp_;
  std::unique_ptr<EntryCheck> check_;
};

// Tests: the next `count` temp names TierWriter tries use `token` as their
// random part (an attacker who guessed them).
void predict_temp_tokens_for_tests(const std::string& token, std::uint64_t count);

}  // namespace jk::cache
