// The eviction of eviction.hpp.
#include "jitkernel/cache/eviction.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

namespace jk::cache {

std::uint64_t evict(const std::vector<Folder>& folders, std::vector<CacheFile> files,
                    std::uint64_t& total, std::uint64_t max_bytes, std::size_t max_entries,
                    const FileId& keep, const FileId& first) {
  std::size_t entries = 0;
  for (const CacheFile& f : files) entries += f.temp ? 0 : 1;
  auto within = [&] { return total <= max_bytes && entries <= max_entries; };
  if (within()) return 0;
  auto is = [](const CacheFile& f, const FileId& id) { return f.folder == id.first && f.name == id.second; };
  std::sort(files.begin(), files.end(), [&](const CacheFile& a, const CacheFile& b) {
    if (is(a, first) != is(b, first)) return is(a, first);
    return a.mtime != b.mtime ? a.mtime < b.mtime : a.name < b.name;
  });
  std::uint64_t removed = 0;
  for (const CacheFile& f : files) {
    if (within()) break;
    if (f.temp || is(f, keep)) continue;
    switch (remove_ours(folders[f.folder], f)) {
      case Removal::Removed:
        removed++;
        [[fallthrough]];
      case Removal::Gone:
      case Removal::NotOurs:
        total -= std::min(total, f.size);
        entries--;
        break;
      case Removal::Kept:
        break;
    }
  }
  return removed;
}

bool make_room(const std::vector<Folder>& folders, std::uint64_t max_bytes, const FileId& replaced,
               std::uint64_t& evictions) {
  std::map<std::pair<dev_t, ino_t>, CacheFile> seen;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<CacheFile> files;
    for (std::size_t i = 0; i < folders.size(); ++i) list_files(folders[i], i, files);
    for (CacheFile& f : files) seen[{f.device, f.inode}] = std::move(f);  // the latest name
  }
  std::vector<CacheFile> files;
  std::uint64_t total = 0;
  for (auto& [id, f] : seen) {
    total = saturating_add(total, f.size);
    files.push_back(std::move(f));
  }
  evictions += evict(folders, std::move(files), total, max_bytes,
                     std::numeric_limits<std::size_t>::max(), FileId{folders.size(), ""}, replaced);
  return total <= max_bytes;
}

}  // namespace jk::cache
