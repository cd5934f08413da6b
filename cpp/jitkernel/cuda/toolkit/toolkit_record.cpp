// The toolkit record of toolkit_record.hpp. Its payload is text, one field a
// line, "<name>\t<value>" (a value runs to the end of its line):
//   library <path>    preload <path>    include <folder>    identity <text>
//   note <text>       watch <stat identity>\t<path>    head <head>\t<path>
// The entry format around it (disk_cache.hpp records) carries the checksum.
#include "jitkernel/cuda/toolkit/toolkit_record.hpp"

#if defined(__linux__)
#include <link.h>
#endif

#include <algorithm>
#include <set>
#include <string_view>

#include "jitkernel/cache/compile_key.hpp"
#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/file_identity.hpp"
#include "jitkernel/cache/key_builder.hpp"
#include "jitkernel/cuda/nvrtc/compiler_identity.hpp"

namespace jk::cuda {
namespace {

constexpr std::string_view kFirstLine = "jitkernel toolkit record";

cache::Key record_key(const std::string& inputs, const Watched& loaded) {
  cache::KeyBuilder key;
  key.add("record", "toolkit search").add("inputs", inputs);
  key.add("loaded nvrtc libraries", std::to_string(loaded.size()));
  for (const auto& [path, identity] : loaded) key.add("path", path).add("identity", identity);
  return key.finish();
}

#if defined(__linux__)
// dl_iterate_phdr callback: appends the loader's name of each loaded NVRTC to
// the std::vector<std::string> at `out`.
int collect_nvrtc(struct dl_phdr_info* info, std::size_t, void* out) {
  const std::string_view name = info->dlpi_name == nullptr ? "" : info->dlpi_name;
  const std::size_t slash = name.rfind('/');
  const std::string_view file = slash == std::string_view::npos ? name : name.substr(slash + 1);
  if (file.substr(0, 11) == "libnvrtc.so")  // libnvrtc-builtins.so.* does not match
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
  return 0;
}
#endif

bool one_line(const std::string& value) { return value.find('\n') == std::string::npos; }

void add_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append("\t").append(value).append("\n");
}

// Splits "<head>\t<rest>" at the first tab; false when there is none.
bool split_tab(std::string_view line, std::string_view& head, std::string_view& rest) {
  const std::size_t tab = line.find('\t');
  if (tab == std::string_view::npos) return false;
  head = line.substr(0, tab);
  rest = line.substr(tab + 1);
  return true;
}

// The record in `payload` when it is well formed, watches every file it
// names, and every watched path is unchanged.
std::optional<ToolkitRecord> parse_and_check(std::string_view payload) {
  if (payload.substr(0, kFirstLine.size() + 1) != std::string(kFirstLine) + "\n") return std::nullopt;
  payload.remove_prefix(kFirstLine.size() + 1);
  ToolkitRecord record;
  bool has_identity = false;
  std::set<std::string_view> watched;
  while (!payload.empty()) {
    const std::size_t end = payload.find('\n');
    if (end == std::string_view::npos) return std::nullopt;  // every field ends its line
    const std::string_view line = payload.substr(0, end);
    payload.remove_prefix(end + 1);
    std::string_view name, value;
    if (!split_tab(line, name, value)) return std::nullopt;
    if (name == "library") {
      record.paths.nvrtc_library = value;
    } else if (name == "preload") {
      record.paths.nvrtc_preload.emplace_back(value);
    } else if (name == "include") {
      record.paths.include_dirs.emplace_back(value);
    } else if (name == "identity") {
      record.nvrtc_identity = value;
      has_identity = true;
    } else if (name == "note") {
      record.notes.emplace_back(value);
    } else if (name == "head") {
      std::string_view head, path;
      if (!split_tab(value, head, path)) return std::nullopt;
      record.heads.emplace_back(path, head);
    } else if (name == "watch") {
      std::string_view identity, path;
      if (!split_tab(value, identity, path)) return std::nullopt;
      if (cache::stat_identity(std::string(path)) != identity) return std::nullopt;  // stale
      watched.insert(path);
    } else {
      return std::nullopt;
    }
  }
  if (record.paths.nvrtc_library.empty() || !has_identity) return std::nullopt;
  auto unwatched = [&](const std::string& path) { return watched.count(path) == 0; };
  const ToolkitPaths& p = record.paths;
  if (unwatched(p.nvrtc_library) ||
      std::any_of(p.nvrtc_preload.begin(), p.nvrtc_preload.end(), unwatched) ||
      std::any_of(p.include_dirs.begin(), p.include_dirs.end(), unwatched) ||
      std::any_of(record.heads.begin(), record.heads.end(),
                  [&](const auto& h) { return unwatched(h.first); }))
    return std::nullopt;
  return record;
}

// The record stored under `key` when it is valid (parse_and_check).
std::optional<ToolkitRecord> load_checked(const cache::Key& key) {
  std::optional<std::string> payload = cache::load_record(key);
  if (!payload) return std::nullopt;
  return parse_and_check(*payload);
}

// Whether each of the `loaded` libraries is the file at `library` now (stat
// identity: device, inode, size, times).
bool all_are(const Watched& loaded, const std::string& library) {
  const std::string identity = cache::stat_identity(library);
  return identity != "missing" &&
         std::all_of(loaded.begin(), loaded.end(), [&](const auto& l) { return l.second == identity; });
}

}  // namespace

Watched watch(const std::vector<std::string>& paths) {
  Watched out;
  out.reserve(paths.size());
  for (const std::string& path : paths) out.emplace_back(path, cache::stat_identity(path));
  return out;
}

Watched loaded_nvrtc() {
  std::vector<std::string> names;
#if defined(__linux__)
  dl_iterate_phdr(collect_nvrtc, &names);  // under the loader's lock: stat afterwards
#endif
  return watch(names);
}

bool store_toolkit_record(const std::string& inputs, const Watched& loaded,
                          const ToolkitPaths& paths, const std::vector<std::string>& notes,
                          const Watched& places) {
  if (paths.nvrtc_library.empty() || paths.nvrtc_library[0] != '/') return false;
  // The found files' identities first: a change after them makes the record
  // stale (its fingerprints no longer match), never wrong.
  std::vector<std::string> found = {paths.nvrtc_library};
  found.insert(found.end(), paths.nvrtc_preload.begin(), paths.nvrtc_preload.end());
  found.insert(found.end(), paths.include_dirs.begin(), paths.include_dirs.end());
  std::vector<std::string> headers;
  for (const std::string& dir : paths.include_dirs) {
    for (std::string& header : cache::toolkit_header_paths(dir)) headers.push_back(std::move(header));
  }
  found.insert(found.end(), headers.begin(), headers.end());
  const Watched files = watch(found);
  const std::string identity = library_identity(paths);
  if (identity.empty()) return false;
  remember_compiler_identity(paths, identity);  // what compiler_identity() would read again
  std::vector<std::pair<std::string, std::string>> heads;
  for (const std::string& header : headers) {
    std::string head = cache::toolkit_head(header);
    if (head != "unreadable") heads.emplace_back(header, std::move(head));  // else read again
  }
  cache::remember_toolkit_heads(heads);  // what compile keys would read again

  std::string payload(kFirstLine);
  payload += '\n';
  bool ok = one_line(identity);
  auto field = [&](std::string_view name, const std::string& value) {
    ok = ok && one_line(value);
    add_field(payload, name, value);
  };
  field("library", paths.nvrtc_library);
  for (const auto& pre : paths.nvrtc_preload) field("preload", pre);
  for (const auto& dir : paths.include_dirs) field("include", dir);
  add_field(payload, "identity", identity);
  for (const auto& note : notes) field("note", note);
  for (const auto& [path, head] : heads) field("head", head + "\t" + path);
  for (const Watched* list : {&files, &places}) {
    for (const auto& [path, id] : *list) field("watch", id + "\t" + path);
  }
  if (!ok) return false;
  cache::store_record(record_key(inputs, loaded), payload);
  return true;
}

std::optional<ToolkitRecord> load_toolkit_record(const std::string& inputs,
                                                 const Watched& loaded) {
  std::optional<ToolkitRecord> record = load_checked(record_key(inputs, loaded));
  if (!record && !loaded.empty()) {
    // The search would return the NVRTC already loaded; where that is the
    // very file the search without it found, the answer is the same.
    record = load_checked(record_key(inputs, {}));
    if (record && !all_are(loaded, record->paths.nvrtc_library)) record.reset();
  }
  if (record) {
    remember_compiler_identity(record->paths, record->nvrtc_identity);
    cache::remember_toolkit_heads(record->heads);
  }
  return record;
}

}  // namespace jk::cuda
