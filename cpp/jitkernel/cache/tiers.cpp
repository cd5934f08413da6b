// Resolving and vetting the read-only tiers of tiers.hpp, and reading them.
#include "jitkernel/cache/tiers.hpp"

#include <algorithm>
#include <utility>

#include "jitkernel/cache/directory.hpp"
#include "jitkernel/cache/entry_io.hpp"
#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/settings.hpp"

namespace jk::cache {

ReadOnlyTier::ReadOnlyTier(std::string directory) : directory_(std::move(directory)) {
  // The folder itself may be a link (the user chose it); its subfolder may not.
  Fd entries;
  problem_ = open_readonly_tier(directory_, kEntryFolder, entries);
  folder_ = Folder(std::move(entries), 0);
  if (problem_.empty() && !folder_.ok()) problem_ = errno_text(folder_.error());
}

Read ReadOnlyTier::load(const Key& key, std::uint64_t max_bytes, std::string& payload) const {
  if (!usable()) return Read::Missing;
  return read_entry(folder_, key, max_bytes, payload, Folders::ReadOnly);
}

void ReadOnlyTier::list(std::vector<StoredFile>& out) const {
  if (!usable()) return;
  std::vector<CacheFile> files;
  list_files(folder_, kEntries, files, false);
  for (CacheFile& f : files) out.push_back({std::move(f.name), f.size, f.temp});
}

std::vector<std::unique_ptr<ReadOnlyTier>> readonly_tiers(const std::string& value,
                                                          const std::string& writable) {
  std::vector<std::unique_ptr<ReadOnlyTier>> tiers;
  for (const std::string& folder : split_folders(value)) {
    std::string directory = absolute_path(folder);
    while (directory.size() > 1 && directory.back() == '/') directory.pop_back();
    if (directory == writable || std::any_of(tiers.begin(), tiers.end(), [&](const auto& o) {
          return o->where() == directory;
        }))
      continue;
    tiers.push_back(std::make_unique<ReadOnlyTier>(std::move(directory)));
  }
  return tiers;
}

}  // namespace jk::cache
