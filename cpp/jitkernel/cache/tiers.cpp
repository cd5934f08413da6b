// Resolving and vetting the read-only tiers of tiers.hpp.
#include "jitkernel/cache/tiers.hpp"

#include <algorithm>

#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/directory.hpp"
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
    t.problem = check_readonly_folder(t.directory, LinkPolicy::Follow);
    if (t.problem.empty()) {
      t.problem = check_readonly_folder(t.entries, LinkPolicy::Refuse);
      if (!t.problem.empty()) t.problem = std::string(kEntryFolder) + ": " + t.problem;
    }
    tiers.push_back(std::move(t));
  }
  return tiers;
}

}  // namespace jk::cache
