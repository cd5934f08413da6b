// Resolving and vetting the read-only tiers of tiers.hpp, and reading them.
#include "jitkernel/cache/tiers.hpp"

#include <sys/stat.h>

#include "jitkernel/cache/bundle_file.hpp"

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

Read ReadOnlyTier::load(const Key& key, EntryKind kind, std::uint64_t max_bytes, std::string& payload) const {
  if (!usable()) return Read::Missing;
  return read_entry(folder_, key, kind, max_bytes, payload, Folders::ReadOnly);
}

void ReadOnlyTier::list(std::vector<StoredFile>& out) const {
  if (!usable()) return;
  std::vector<CacheFile> files;
  list_files(folder_, kEntries, files, false);
  for (CacheFile& f : files) out.push_back({std::move(f.name), f.size, f.temp, f.kind});
}

namespace {

// A configured tier that failed its checks before it could be opened as a store.
class RefusedTier : public Store {
 public:
  RefusedTier(std::string where, std::string problem) : where_(std::move(where)), problem_(std::move(problem)) {}
  const std::string& where() const override { return where_; }
  const std::string& problem() const override { return problem_; }
  Read load(const Key&, EntryKind, std::uint64_t, std::string&) const override { return Read::Missing; }
  void list(std::vector<StoredFile>&) const override {}

 private:
  std::string where_, problem_;
};

// A bundle file named as a tier: vetted (directory.hpp), then checked whole (bundle_file.hpp).
std::unique_ptr<Store> bundle_tier(const std::string& path) {
  Fd file;
  std::string problem = open_readonly_file(path, file);
  if (!problem.empty()) return std::make_unique<RefusedTier>(path, std::move(problem));
  return std::make_unique<BundleFile>(path, std::move(file), kMaxTierBundleBytes);
}

// Something that exists and is not a folder (a link to a folder is one, as a tier folder may be a link).
bool names_a_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode);
}

}  // namespace

std::vector<std::unique_ptr<Store>> readonly_tiers(const std::string& value, const std::string& writable) {
  std::vector<std::unique_ptr<Store>> tiers;
  for (const std::string& folder : split_folders(value)) {
    std::string where = absolute_path(folder);
    while (where.size() > 1 && where.back() == '/') where.pop_back();
    if (where == writable || std::any_of(tiers.begin(), tiers.end(), [&](const auto& o) {
          return o->where() == where;
        }))
      continue;
    if (names_a_file(where))
      tiers.push_back(bundle_tier(where));
    else
      tiers.push_back(std::make_unique<ReadOnlyTier>(std::move(where)));
  }
  return tiers;
}

}  // namespace jk::cache
