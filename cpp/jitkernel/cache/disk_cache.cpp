// The persistent compile cache (disk_cache.hpp): configuration from the
// environment (resolved once per process), entry reads and atomic writes,
// least-recently-used eviction, info and clear; records (small payloads that
// are not code) share the entry format and code in a folder of their own.
//
// Concurrency without locks between processes: a writer renames a complete,
// fsync'ed temp file over the entry, so a reader opens either the old or the
// new file, both whole; eviction and clear unlink, which a reader that has the
// file open does not notice and a reader that comes later sees as a miss. The
// hit path is one open, fstat, two preads, a checksum and a futimens (the
// mtime is the LRU clock); directory scans happen only after stores.
#include "jitkernel/cache/disk_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <vector>

#include "jitkernel/cache/directory.hpp"
#include "jitkernel/cache/entry.hpp"
#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/settings.hpp"

namespace jk::cache {
namespace {

constexpr const char* kEntrySuffix = ".jkc";
constexpr const char* kTempSuffix = ".tmp";
// Subfolders holding jitkernel's files: entries, records (load_record /
// store_record) and NVRTC precompiled headers (written by the compiler).
// clear() empties them all.
constexpr const char* kEntryFolder = "kernels";
constexpr const char* kRecordFolder = "records";
constexpr const char* kOwnedFolders[] = {"kernels", "records", "pch"};
// Records are a few hundred bytes each: a count cap bounds the folder.
constexpr std::size_t kMaxRecords = 64;
// Temp files older than this are left over from a crashed writer.
constexpr std::int64_t kStaleTempSeconds = 3600;

struct Config {
  std::string directory;        // configured folder ("" without a home folder)
  std::string entries;          // directory/kernels
  bool readable = false;        // the folder passed the checks: loads may hit
  std::atomic<bool> writable{false};  // stores allowed (off after a failed write)
  std::string disabled_reason;  // when not readable
  std::string write_problem;    // why writable turned off (under State::mutex)
  std::uint64_t max_bytes = kDefaultMaxBytes;
};

struct Counters {
  std::atomic<std::uint64_t> hits{0}, misses{0}, corrupt{0}, stores{0}, evictions{0};
};

struct State {
  std::mutex mutex;
  std::shared_ptr<Config> config;   // null until resolved
  std::set<std::string> warned;     // causes already reported
  WarningHandler handler = nullptr;
  Counters counters;
};

State& state() {
  static auto* s = new State;  // never destroyed: usable from exit-time code
  return *s;
}

struct Warning {
  std::string cause;
  std::string message;
};

// Reports each cause once (until reset), outside the lock.
void emit(const std::vector<Warning>& warnings) {
  State& s = state();
  for (const Warning& w : warnings) {
    WarningHandler handler = nullptr;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (!s.warned.insert(w.cause).second) continue;
      handler = s.handler;
    }
    if (handler != nullptr) {
      handler(w.message);
    } else {
      std::fprintf(stderr, "jitkernel: warning: %s\n", w.message.c_str());
    }
  }
}

constexpr const char* kMemoryOnly = "compiled kernels are kept in memory only";

std::shared_ptr<Config> resolve(std::vector<Warning>& warnings) {
  auto c = std::make_shared<Config>();
  c->directory = directory_from_environment();
  const char* enabled_text = std::getenv("JITKERNEL_CACHE");
  std::optional<bool> enabled = parse_enabled(enabled_text);
  if (!enabled) {
    warnings.push_back({"JITKERNEL_CACHE", std::string("JITKERNEL_CACHE='") + enabled_text +
                                               "' is not 0 or 1; the compile cache stays on "
                                               "(set JITKERNEL_CACHE=0 to turn it off)"});
  }
  if (const char* max = std::getenv("JITKERNEL_CACHE_MAX_BYTES"); max != nullptr && *max) {
    if (auto parsed = parse_max_bytes(max)) {
      c->max_bytes = *parsed;
    } else {
      warnings.push_back({"JITKERNEL_CACHE_MAX_BYTES",
                          std::string("JITKERNEL_CACHE_MAX_BYTES='") + max +
                              "' is not a size in bytes (e.g. 1073741824, 512M, 2G); using the "
                              "default of 1 GiB"});
    }
  }
  if (enabled == false) {
    c->disabled_reason = "turned off by JITKERNEL_CACHE=0";
    return c;
  }
  if (c->directory.empty()) {
    c->disabled_reason = "no home folder to put it in (set JITKERNEL_CACHE_DIR)";
    warnings.push_back({"folder", "the compile cache is off: " + c->disabled_reason + "; " +
                                      kMemoryOnly});
    return c;
  }
  c->entries = c->directory + "/" + kEntryFolder;
  std::string problem = prepare_private_folder(c->directory, true);
  std::string where = c->directory;
  if (problem.empty()) {
    problem = prepare_private_folder(c->entries, true);
    where = c->entries;
  }
  if (!problem.empty()) {
    c->disabled_reason = where + ": " + problem;
    warnings.push_back({"folder", "the compile cache folder " + where + " is not used: " + problem +
                                      "; " + kMemoryOnly +
                                      " (set JITKERNEL_CACHE_DIR to another folder, or "
                                      "JITKERNEL_CACHE=0)"});
    return c;
  }
  c->readable = true;
  c->writable = true;
  return c;
}

std::shared_ptr<Config> config() {
  State& s = state();
  std::vector<Warning> warnings;
  std::shared_ptr<Config> c;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.config) s.config = resolve(warnings);
    c = s.config;
  }
  emit(warnings);
  return c;
}

// After a failed write the folder is only read from; one warning.
void write_failed(Config& c, const std::string& what, int error) {
  const std::string problem = "cannot write to the compile cache folder " + c.entries + " (" +
                              what + ": " + errno_text(error) + ")";
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (c.writable) c.write_problem = problem;
    c.writable = false;
  }
  emit({{"write", problem + "; " + kMemoryOnly + " from now on"}});
}

std::string entry_name(const Key& key) { return to_hex(key) + kEntrySuffix; }

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

struct EntryFile {
  std::string name;
  std::uint64_t size = 0;
  std::int64_t mtime = 0;
};

// Entry files of `folder`; removes temp files older than kStaleTempSeconds
// (all temp files when `all_temps`). Files that vanish meanwhile are skipped.
std::vector<EntryFile> scan(const std::string& folder, bool all_temps) {
  std::vector<EntryFile> out;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return out;
  std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, &::closedir);
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  while (struct dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    const bool entry = ends_with(name, kEntrySuffix);
    const bool temp = ends_with(name, kTempSuffix);
    if (!entry && !temp) continue;
    struct stat st;
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode)) continue;
    if (temp) {
      if (all_temps || now - mtime_ns(st) > kStaleTempSeconds * std::int64_t(1000000000))
        ::unlinkat(::dirfd(dir), name.c_str(), 0);
      continue;
    }
    out.push_back({std::move(name), static_cast<std::uint64_t>(st.st_size), mtime_ns(st)});
  }
  return out;
}

// What a folder may hold after a store.
struct Budget {
  std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max();
  std::size_t max_files = std::numeric_limits<std::size_t>::max();
};

// Unlinks the least recently used files of `folder` (never `keep`) until it
// is within `budget`; returns how many it unlinked.
std::uint64_t evict(const std::string& folder, const Budget& budget, const std::string& keep) {
  std::vector<EntryFile> files = scan(folder, false);
  std::uint64_t total = 0;
  for (const EntryFile& f : files) total += f.size;
  std::size_t count = files.size();
  auto within = [&] { return total <= budget.max_bytes && count <= budget.max_files; };
  if (within()) return 0;
  std::sort(files.begin(), files.end(), [](const EntryFile& a, const EntryFile& b) {
    return a.mtime != b.mtime ? a.mtime < b.mtime : a.name < b.name;
  });
  std::uint64_t removed = 0;
  for (const EntryFile& f : files) {
    if (within()) break;
    if (f.name == keep) continue;
    if (::unlink((folder + "/" + f.name).c_str()) == 0) removed++;
    total -= f.size;  // gone either way (another process may have removed it)
    count--;
  }
  return removed;
}

// A temp-file name no other writer uses: key, pid and a per-process random
// number with a counter.
std::string temp_name(const Key& key) {
  static const std::uint64_t process_random = [] {
    std::random_device device;
    return (std::uint64_t(device()) << 32) ^ device();
  }();
  static std::atomic<std::uint64_t> counter{0};
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ".%ld.%016llx.%llu", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(process_random),
                static_cast<unsigned long long>(counter++));
  return to_hex(key) + suffix + kTempSuffix;
}

// How much a write waits for the disk.
enum class Durability {
  Synced,  // fsync the file before the rename and the folder after it
  Lazy,    // neither: after a crash the file may be torn or gone, which
           // readers see as a bad or missing entry (for records, whose loss
           // only costs a search)
};

// Writes the entry file to a temp file in `folder` and renames it into
// place; false (errno set, `what` naming the step) on failure.
bool write_entry(const std::string& folder, const Key& key, std::string_view payload,
                 Durability durability, const char** what) {
  const std::string temp = folder + "/" + temp_name(key);
  const std::string final_path = folder + "/" + entry_name(key);
  EntryHeaderBytes header = encode_entry_header(key, payload);
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    *what = "creating a file";
    return false;
  }
  bool ok = write_all(fd.get(), header.data(), header.size()) &&
            write_all(fd.get(), payload.data(), payload.size());
  if (!ok) *what = "writing";
  if (ok && durability == Durability::Synced && ::fsync(fd.get()) != 0) {
    ok = false;
    *what = "fsync";
  }
  if (ok && !fd.reset()) {
    ok = false;
    *what = "closing";
  }
  if (ok && ::rename(temp.c_str(), final_path.c_str()) != 0) {
    ok = false;
    *what = "renaming";
  }
  if (!ok) {
    int error = errno;
    fd.reset();
    ::unlink(temp.c_str());
    errno = error;
    return false;
  }
  if (durability == Durability::Synced) {
    // Make the rename durable; a failure here loses nothing that matters.
    Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir) ::fsync(dir.get());
  }
  return true;
}

enum class Read { Hit, Missing, Bad };

// Reads the entry for `key` in `folder` into `payload` (checked against its
// header and checksum); a hit marks it recently used (the owner may always
// set times to now).
Read read_entry(const std::string& folder, const Key& key, std::string& payload) {
  const std::string path = folder + "/" + entry_name(key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0) return Read::Missing;
  EntryHeaderBytes header;
  bool valid = S_ISREG(st.st_mode) && st.st_size >= static_cast<off_t>(kEntryHeaderSize) &&
               read_at(fd.get(), header.data(), header.size(), 0) &&
               check_entry_header(header, key, static_cast<std::uint64_t>(st.st_size)) == nullptr;
  if (valid) {
    payload.resize(static_cast<std::size_t>(st.st_size) - kEntryHeaderSize);
    valid = read_at(fd.get(), payload.data(), payload.size(), kEntryHeaderSize) &&
            payload_matches(header, payload);
  }
  if (!valid) return Read::Bad;
  const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  ::futimens(fd.get(), times);
  return Read::Hit;
}

}  // namespace

std::optional<std::string> active_directory() {
  std::shared_ptr<Config> c = config();
  if (!c->readable || !c->writable) return std::nullopt;
  return c->directory;
}

std::string configured_directory() { return config()->directory; }

std::optional<std::string> load(const Key& key) {
  std::shared_ptr<Config> c = config();
  if (!c->readable) return std::nullopt;
  Counters& counters = state().counters;
  std::string payload;
  switch (read_entry(c->entries, key, payload)) {
    case Read::Hit:
      counters.hits++;
      return payload;
    case Read::Bad:
      counters.corrupt++;
      break;
    case Read::Missing:
      break;
  }
  counters.misses++;
  return std::nullopt;
}

void store(const Key& key, std::string_view payload) {
  std::shared_ptr<Config> c = config();
  if (!c->readable || !c->writable) return;
  if (payload.size() + kEntryHeaderSize > c->max_bytes) return;  // could never stay
  const char* what = "";
  if (!write_entry(c->entries, key, payload, Durability::Synced, &what)) {
    write_failed(*c, what, errno);
    return;
  }
  state().counters.stores++;
  Budget budget;
  budget.max_bytes = c->max_bytes;
  state().counters.evictions += evict(c->entries, budget, entry_name(key));
}

std::optional<std::string> load_record(const Key& key) {
  std::shared_ptr<Config> c = config();
  if (!c->readable) return std::nullopt;
  const std::string folder = c->directory + "/" + kRecordFolder;
  // A record names a library to load: only a private folder's are used.
  std::string payload;
  if (!prepare_private_folder(folder, false).empty() ||
      read_entry(folder, key, payload) != Read::Hit)
    return std::nullopt;
  return payload;
}

void store_record(const Key& key, std::string_view payload) {
  std::shared_ptr<Config> c = config();
  if (!c->readable || !c->writable) return;
  const std::string folder = c->directory + "/" + kRecordFolder;
  const char* what = "";
  if (!prepare_private_folder(folder, true).empty() ||
      !write_entry(folder, key, payload, Durability::Lazy, &what))
    return;  // the caller finds no record next time and rediscovers
  Budget budget;
  budget.max_files = kMaxRecords;
  evict(folder, budget, entry_name(key));
}

Info info() {
  std::shared_ptr<Config> c = config();
  Info out;
  out.directory = c->directory;
  out.enabled = c->readable && c->writable;
  out.disabled_reason = c->disabled_reason;
  if (c->readable && !c->writable) {
    std::lock_guard<std::mutex> lock(state().mutex);
    out.disabled_reason = c->write_problem;
  }
  out.max_bytes = c->max_bytes;
  if (!c->directory.empty() && prepare_private_folder(c->directory, false).empty()) {
    for (const EntryFile& f : scan(c->directory + "/" + kEntryFolder, false)) {
      out.entries++;
      out.bytes += f.size;
    }
  }
  const Counters& counters = state().counters;
  out.hits = counters.hits;
  out.misses = counters.misses;
  out.corrupt = counters.corrupt;
  out.stores = counters.stores;
  out.evictions = counters.evictions;
  return out;
}

std::uint64_t clear() {
  std::shared_ptr<Config> c = config();
  if (c->directory.empty() || !prepare_private_folder(c->directory, false).empty()) return 0;
  std::uint64_t removed = 0;
  for (const char* sub : kOwnedFolders) {
    const std::string folder = c->directory + "/" + sub;
    if (sub == std::string(kEntryFolder)) {
      for (const EntryFile& f : scan(folder, true)) {
        if (::unlink((folder + "/" + f.name).c_str()) == 0) removed++;
      }
      continue;
    }
    DIR* dir = ::opendir(folder.c_str());
    if (dir == nullptr) continue;
    std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, &::closedir);
    while (struct dirent* e = ::readdir(dir)) {
      struct stat st;
      if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
        ::unlinkat(::dirfd(dir), e->d_name, 0);
    }
  }
  return removed;
}

void reset() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.config.reset();
  s.warned.clear();
  s.counters.hits = 0;
  s.counters.misses = 0;
  s.counters.corrupt = 0;
  s.counters.stores = 0;
  s.counters.evictions = 0;
}

void set_warning_handler(WarningHandler handler) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.handler = handler;
}

}  // namespace jk::cache
