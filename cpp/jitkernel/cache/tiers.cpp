// Resolving and vetting the read-only tiers of tiers.hpp.
#include "jitkernel/cache/tiers.hpp"

#include <algorithm>
#include <utility>

#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/directory.hpp"
#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/settings.hpp"

namespace jk::cache {

std::vector<Tier> readonly_tiers(const std::string& value, const std::string& writable) {
  std::vector<Tier> tiers;
  for (const std::string& folder : split_folders(value)) {
    Tier t;
    t.directory = absolute_path(folder);
    while (t.directory.size() > 1 && t.directory.back() == '/') t.directory.pop_back();
    if (t.directory == writable ||
        std::any_of(tiers.begin(), tiers.end(), [&](const Tier& o) { return o.directory == t.directory; }))
      continue;
    t.entries = t.directory + "/" + kEntryFolder;
    // The folder itself may be a link (the user chose it); its subfolder may not.
    Fd entries;
    t.problem = open_readonly_tier(t.directory, kEntryFolder, entries);
    t.folder = Folder(std::move(entries), 0);
    if (t.problem.empty() && !t.folder.ok()) t.problem = errno_text(t.folder.error());
    tiers.push_back(std::move(t));
  }
  return tiers;
}

}  // namespace jk::cache
