// The writable cache folder of writable_folder.hpp: opening and vetting it,
// entry and record reads and writes through entry_io.hpp, listings, clear.
#include "jitkernel/cache/writable_folder.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <utility>

#include "jitkernel/cache/directory.hpp"
#include "jitkernel/cache/entry.hpp"
#include "jitkernel/cache/entry_io.hpp"
#include "jitkernel/cache/eviction.hpp"

namespace jk::cache {

WritableFolder::WritableFolder(std::string directory, std::uint64_t max_bytes)
    : directory_(std::move(directory)), entries_(directory_ + "/" + kEntryFolder), max_bytes_(max_bytes) {
  Fd root, entries, records;
  problem_ = open_private_folder(directory_, true, LinkPolicy::Follow, root);
  problem_at_ = directory_;
  if (problem_.empty()) {
    problem_ = open_private_subfolder(root.get(), kEntryFolder, true, entries);
    problem_at_ = entries_;
  }
  if (!problem_.empty()) return;
  const int records_error =
      open_private_subfolder(root.get(), kRecordFolder, true, records).empty() ? 0 : EPERM;
  folders_.emplace_back(std::move(entries), 0);
  folders_.emplace_back(std::move(records), records_error);
}

namespace {

// Whether a payload of `size` bytes could ever stay under the cap.
bool fits(std::uint64_t size, std::uint64_t max_bytes) {
  return kEntryHeaderSize <= max_bytes && size <= max_bytes - kEntryHeaderSize;
}

}  // namespace

Read WritableFolder::load(const Key& key, EntryKind kind, std::uint64_t max_bytes, std::string& payload) const {
  if (!usable()) return Read::Missing;
  return read_entry(folders_[kEntries], key, kind, max_bytes, payload, Folders::Own);
}

void WritableFolder::list(std::vector<StoredFile>& out) const {
  if (!usable()) return;
  std::vector<CacheFile> files;
  list_files(folders_[kEntries], kEntries, files);
  for (CacheFile& f : files) out.push_back({std::move(f.name), f.size, f.temp, f.kind});
}

Write WritableFolder::store(const Key& key, EntryKind kind, std::string_view payload, const char** what,
                            int* error) {
  *what = "";
  *error = 0;
  if (!usable()) {
    *what = "opening the folder";
    *error = EPERM;
    return Write::Failed;
  }
  if (!fits(payload.size(), max_bytes_)) return Write::NoRoom;  // could never stay
  std::uint64_t evictions = 0;
  const Write result = write_entry(folders_, kEntries, key, kind, payload, max_bytes_, evictions, what, error);
  evictions_ += evictions;
  return result;
}

bool WritableFolder::load_record(const Key& key, std::string& payload) const {
  if (!usable()) return false;
  const Folder& folder = folders_[kRecords];
  // A record names a library to load: only a private folder's are used
  // (re-checked here, as a user may have changed its mode meanwhile).
  return folder.ok() && private_folder_problem(folder.fd()).empty() &&
         read_entry(folder, key, EntryKind::Binary, max_bytes_, payload) == Read::Hit;
}

bool WritableFolder::store_record(const Key& key, std::string_view payload, std::size_t max_records) {
  if (!usable() || !fits(payload.size(), max_bytes_)) return false;
  if (!folders_[kRecords].ok() || !private_folder_problem(folders_[kRecords].fd()).empty())
    return false;
  const char* what = "";
  int error = 0;
  std::uint64_t evictions = 0;
  const bool stored = write_entry(folders_, kRecords, key, EntryKind::Binary, payload, max_bytes_, evictions, &what,
                                  &error) == Write::Stored;
  if (stored) {
    std::vector<CacheFile> records;
    list_files(folders_[kRecords], kRecords, records);
    std::uint64_t total = 0;  // only the count is bounded here
    evictions += evict(folders_, std::move(records), total, std::numeric_limits<std::uint64_t>::max(),
                       max_records, FileId{kRecords, entry_name(key)}, FileId{});
  }
  evictions_ += evictions;
  return stored;
}

void WritableFolder::usage(std::uint64_t& entries, std::uint64_t& records, std::uint64_t& bytes) const {
  entries = records = bytes = 0;
  std::vector<CacheFile> files;
  for (std::size_t i = 0; i < folders_.size(); ++i) list_files(folders_[i], i, files);
  for (const CacheFile& f : files) {
    if (!f.temp && f.kind == EntryKind::Binary) (f.folder == kEntries ? entries : records)++;
    bytes = saturating_add(bytes, f.size);
  }
}

void WritableFolder::clear(std::uint64_t& entries, std::uint64_t& records) const {
  entries = records = 0;
  for (std::size_t i = 0; i < folders_.size(); ++i) {
    struct stat st;
    if (!folders_[i].ok() || ::fstat(folders_[i].fd(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    std::vector<CacheFile> files;
    list_files(folders_[i], i, files);
    for (const CacheFile& f : files) {
      if (remove_ours(folders_[i], f) != Removal::Removed || f.temp || f.kind != EntryKind::Binary) continue;
      (i == kEntries ? entries : records)++;
    }
  }
}

}  // namespace jk::cache
