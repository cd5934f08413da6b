// The files of the disk cache folder (disk_cache.hpp): their names (entries
// "<key hex>.jkc", temp files announcing the size their writer reserved), the
// two subfolders opened without following links, one listing of them, and
// removing a file only when it is ours. Internal to cache/.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/cache/store.hpp"

namespace jk::cache {

// The subfolders holding everything the cache stores: entries (load /
// store) and records (load_record / store_record), opened in this order by
// open_folders. The cap counts both; clear() empties both.
inline constexpr const char* kEntryFolder = "kernels";
inline constexpr const char* kRecordFolder = "records";
inline constexpr std::size_t kEntries = 0, kRecords = 1;

// What the cache says of each entry kind (store.hpp's EntryKind), in one
// row per kind: the file name suffix (".jkc" for a binary and a record,
// ".jka" for an alias, ".jkt" for a decision), what the entry is and what
// is lost when it cannot be stored (the "cannot store" warning's words).
struct EntryKindFacts {
  std::string_view suffix;
  const char* thing;
  const char* without_it;
};
const EntryKindFacts& entry_kind_facts(EntryKind kind);

inline std::string_view entry_suffix(EntryKind kind) { return entry_kind_facts(kind).suffix; }

// "<key hex>" + entry_suffix(kind): the name of the entry (or record) for `key`.
std::string entry_name(const Digest& key, EntryKind kind = EntryKind::Binary);

// The key the entry (or record) name `name` stands for; false when `name`
// is not one ("<64 lowercase hex digits>" and a kind's suffix, nothing else).
// The kind of entry the name is, in `kind` when given.
bool key_of_entry_name(std::string_view name, Digest& key, EntryKind* kind = nullptr);

// A temp-file name no other writer uses (key, pid and a per-process random
// number with a counter) that announces `size`, the bytes it will hold.
std::string temp_name(const Digest& key, std::uint64_t size);

// A subfolder of the cache, opened as a directory without following a link
// (a link in its place is not opened: not ok()). Every operation on the
// files in it is relative to this descriptor, and it is kept open as long
// as the folder is used: renaming the path later does not change which
// folder it is.
class Folder {
 public:
  Folder() = default;
  explicit Folder(const std::string& path);
  // A folder opened and vetted already (directory.hpp); `error` says why
  // not when `fd` holds none.
  Folder(Fd fd, int error);
  bool ok() const { return static_cast<bool>(fd_); }
  int fd() const { return fd_.get(); }
  int error() const { return error_; }  // why it could not be opened
  uid_t owner() const { return owner_; }  // when ok()

 private:
  void read_owner();  // or not ok() when it cannot be fstat'ed

  Fd fd_;
  int error_ = 0;
  uid_t owner_ = 0;
};

// One of our files found by a listing.
struct CacheFile {
  std::size_t folder = 0;  // index in the folders listed
  std::string name;
  std::uint64_t size = 0;  // what it counts toward the cap
  std::int64_t mtime = 0;  // the LRU clock
  bool temp = false;
  EntryKind kind = EntryKind::Binary;  // of an entry
  dev_t device = 0;
  ino_t inode = 0;
};

// Appends the entries and temp files (by name; regular files only, never
// following a link) of `folder` to `out` (listed through a descriptor of its
// own: listings in other threads do not disturb it), each with `index` as its folder;
// removes temp files older than an hour (left over from a crashed writer)
// when `tidy` (never in a read-only tier). Files that vanish meanwhile are
// skipped.
void list_files(const Folder& folder, std::size_t index, std::vector<CacheFile>& out,
                bool tidy = true);

// a + b, or the largest value when that overflows.
std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b);

enum class Removal {
  Removed,
  Gone,     // no longer there
  NotOurs,  // a link, a folder, or a file that merely has one of our names
  Kept,     // ours, but it could not be removed
};

// Unlinks `f` when it is ours: a temp file (by its name), or an entry file
// that starts with the entry magic. Never a link, a folder, or a file of
// someone else's that merely has an entry's name.
Removal remove_ours(const Folder& folder, const CacheFile& f);

// A file of one of the folders: (folder index, name).
using FileId = std::pair<std::size_t, std::string>;

}  // namespace jk::cache
