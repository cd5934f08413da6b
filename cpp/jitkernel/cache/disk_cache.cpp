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
// mtime is the LRU clock); directory listings happen only in stores (two, to
// make room within the cap: make_room), info and clear.
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
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "jitkernel/cache/directory.hpp"
#include "jitkernel/cache/entry.hpp"
#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/settings.hpp"

namespace jk::cache {
namespace {

constexpr std::string_view kEntrySuffix = ".jkc";
constexpr std::string_view kTempSuffix = ".tmp";
// The subfolders holding everything the cache stores: entries (load /
// store) and records (load_record / store_record). The cap counts both;
// clear() empties both.
constexpr const char* kEntryFolder = "kernels";
constexpr const char* kRecordFolder = "records";
constexpr std::size_t kEntries = 0, kRecords = 1;
// Records are a few hundred bytes each: a count cap bounds their number.
constexpr std::size_t kMaxRecords = 64;
// Temp files older than this are left over from a crashed writer.
constexpr std::int64_t kStaleTempSeconds = 3600;
// How long a temp file counts at the size its name announces (the writer's
// reservation, see make_room) rather than at the bytes written so far: a
// crashed writer's reservation stops holding room after this.
constexpr std::int64_t kReservationSeconds = 60;
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
    problem = prepare_private_folder(c->entries, true, LinkPolicy::Refuse);
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

// One entry that cannot be stored (something we cannot replace is in its
// place): the others still are; one warning.
void entry_not_stored(const std::string& path, const std::string& what, int error) {
  emit({{"entry", "cannot store the compiled kernel " + path + " (" + what + ": " +
                      errno_text(error) + "); it is compiled again when needed, other kernels "
                      "are still stored"}});
}

std::string entry_name(const Key& key) { return to_hex(key) + std::string(kEntrySuffix); }

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_key_hex(std::string_view s) {
  return s.size() == 2 * std::tuple_size<Key>::value &&
         std::all_of(s.begin(), s.end(), [](char ch) {
           return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
         });
}

// "<key hex>.jkc": an entry's (or record's) name.
bool is_entry_name(std::string_view name) {
  return ends_with(name, kEntrySuffix) &&
         is_key_hex(name.substr(0, name.size() - kEntrySuffix.size()));
}

// "<key hex>.<field>...<field>.tmp", fields of [0-9a-z]: a temp file's name
// (temp_name). The field "r<digits>" is the size its writer reserved
// (`reserved`, else 0).
bool is_temp_name(std::string_view name, std::uint64_t& reserved) {
  reserved = 0;
  const std::size_t key_size = 2 * std::tuple_size<Key>::value;
  if (!ends_with(name, kTempSuffix) || name.size() < key_size + 2 + kTempSuffix.size() ||
      !is_key_hex(name.substr(0, key_size)) || name[key_size] != '.')
    return false;
  std::string_view fields =
      name.substr(key_size + 1, name.size() - key_size - 1 - kTempSuffix.size());
  while (true) {
    const std::size_t dot = fields.find('.');
    const std::string_view field = fields.substr(0, dot);
    if (field.empty() || !std::all_of(field.begin(), field.end(), [](char ch) {
          return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z');
        }))
      return false;
    if (field[0] == 'r' && field.size() > 1 && field.size() <= 20) {
      std::uint64_t value = 0;
      bool digits = true;
      for (char ch : field.substr(1)) {
        if (ch < '0' || ch > '9' || value > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) {
          digits = false;
          break;
        }
        value = value * 10 + std::uint64_t(ch - '0');
      }
      if (digits) reserved = value;
    }
    if (dot == std::string_view::npos) return true;
    fields.remove_prefix(dot + 1);
  }
}

// A temp-file name no other writer uses (key, pid and a per-process random
// number with a counter) that announces `size`, the bytes it will hold.
std::string temp_name(const Key& key, std::uint64_t size) {
  static const std::uint64_t process_random = [] {
    std::random_device device;
    return (std::uint64_t(device()) << 32) ^ device();
  }();
  static std::atomic<std::uint64_t> counter{0};
  char suffix[96];
  std::snprintf(suffix, sizeof(suffix), ".%ld.%016llx.%llu.r%llu", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(process_random),
                static_cast<unsigned long long>(counter++),
                static_cast<unsigned long long>(size));
  return to_hex(key) + suffix + std::string(kTempSuffix);
}

// A subfolder of the cache, opened as a directory without following a link
// (a link in its place is not opened: not ok()). Every operation on the
// files in it is relative to this descriptor.
class Folder {
 public:
  Folder() = default;
  explicit Folder(const std::string& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)),
        error_(fd_ ? 0 : errno) {}
  bool ok() const { return static_cast<bool>(fd_); }
  int fd() const { return fd_.get(); }
  int error() const { return error_; }  // why it could not be opened

 private:
  Fd fd_;
  int error_ = 0;
};

// The cache's folders, in the order kEntries, kRecords.
std::vector<Folder> open_folders(const std::string& directory) {
  std::vector<Folder> folders;
  folders.emplace_back(directory + "/" + kEntryFolder);
  folders.emplace_back(directory + "/" + kRecordFolder);
  return folders;
}

// One of our files found by a listing.
struct CacheFile {
  std::size_t folder = 0;  // index in the folders listed
  std::string name;
  std::uint64_t size = 0;  // what it counts toward the cap
  std::int64_t mtime = 0;  // the LRU clock
  bool temp = false;
  dev_t device = 0;
  ino_t inode = 0;
};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Appends the entries and temp files (by name; regular files only, never
// following a link) of `folder` to `out`; removes temp files older than
// kStaleTempSeconds. Files that vanish meanwhile are skipped.
void list(const Folder& folder, std::size_t index, std::vector<CacheFile>& out) {
  if (!folder.ok()) return;
  const int copy = ::dup(folder.fd());  // fdopendir takes the descriptor it is given
  if (copy < 0) return;
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    ::close(copy);
    return;
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, &::closedir);
  ::rewinddir(dir);  // the copy shares the position of an earlier listing
  const std::int64_t now = now_ns();
  constexpr std::int64_t kSecond = 1000000000;
  while (struct dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    std::uint64_t reserved = 0;
    const bool temp = is_temp_name(name, reserved);
    if (!temp && !is_entry_name(name)) continue;
    struct stat st;
    if (::fstatat(folder.fd(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    const std::int64_t age = now - mtime_ns(st);
    if (temp && age > kStaleTempSeconds * kSecond) {
      ::unlinkat(folder.fd(), e->d_name, 0);
      continue;
    }
    CacheFile f;
    f.folder = index;
    f.name = std::string(name);
    f.size = static_cast<std::uint64_t>(st.st_size);
    if (temp && age < kReservationSeconds * kSecond) f.size = std::max(f.size, reserved);
    f.mtime = mtime_ns(st);
    f.temp = temp;
    f.device = st.st_dev;
    f.inode = st.st_ino;
    out.push_back(std::move(f));
  }
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max()
                                                          : a + b;
}

enum class Removal {
  Removed,
  Gone,     // no longer there
  NotOurs,  // a link, a folder, or a file that merely has one of our names
  Kept,     // ours, but it could not be removed
};

// Unlinks `f` when it is ours: a temp file (by its name), or an entry file
// that starts with the entry magic. Never a link, a folder, or a file of
// someone else's that merely has an entry's name.
Removal remove_ours(const Folder& folder, const CacheFile& f) {
  if (!f.temp) {
    Fd fd;
    struct stat st;
    switch (open_for_reading(folder.fd(), f.name.c_str(), fd, st)) {
      case OpenedAs::Missing:
        return errno == ENOENT ? Removal::Gone : Removal::Kept;
      case OpenedAs::NotAFile:
        return Removal::NotOurs;
      case OpenedAs::File:
        break;
    }
    std::uint8_t first[kEntryMagicSize];
    if (!read_at(fd.get(), first, sizeof(first), 0) || !has_entry_magic(first))
      return Removal::NotOurs;
  } else {
    struct stat st;
    if (::fstatat(folder.fd(), f.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      return errno == ENOENT ? Removal::Gone : Removal::Kept;
    if (!S_ISREG(st.st_mode)) return Removal::NotOurs;
  }
  if (::unlinkat(folder.fd(), f.name.c_str(), 0) == 0) return Removal::Removed;
  return errno == ENOENT ? Removal::Gone : Removal::Kept;  // another process removed it first
}

// A file of one of the folders: (folder index, name).
using FileId = std::pair<std::size_t, std::string>;

// Unlinks entries among `files` (never temp files, never `keep`) until
// `total` is at most `max_bytes` and the entries number at most
// `max_entries`: `first` before any other (the entry a store is about to
// replace), then the least recently used. A file found not to be ours stops
// counting (it cannot be evicted). Returns how many it unlinked.
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

// Makes room under `max_bytes` for a writer whose temp file (announcing its
// size) already exists, evicting the file it will replace (`replaced`) first;
// false when there is none to make (the temp files of
// writers still in flight fill the cap).
//
// The cap with concurrent writers, without locks. Every file the cache
// stores counts toward the cap: entries, records and temp files, a temp file
// at the size its name announces while it is younger than
// kReservationSeconds. A writer (write_entry) first creates its temp file
// empty, announcing its size; then lists all folders twice, counting each
// file once (by inode) over both listings; evicts least recently used
// entries until that total is within the cap; and only then writes its bytes
// (or gives the store up when there is no room to make). Guarantee, for N
// writers (threads or processes) with the same cap on one local file system:
// the bytes in the folder never exceed the cap, at any moment. Take, at any
// moment, the writer W that announced last among those that have written
// bytes: no writer that announced after W has written any, and every file
// that existed when W started listing was counted by W or has been removed
// since (a directory listing may miss a file renamed while it runs, but each
// file is renamed at most once, from temp to entry keeping its inode and
// size, so one of W's two listings sees it). That includes the files of
// every other writer that has written bytes, which announced before W. A
// rename replaces and never adds bytes; evictions only remove. What it does
// not cover: a writer slower than kReservationSeconds between announcing and
// writing (its reservation lapses to the bytes written so far), writers
// using different caps (each keeps to its own), network file systems whose
// listings lag behind creates, and files that are not ours.
bool make_room(const std::vector<Folder>& folders, std::uint64_t max_bytes, const FileId& replaced,
               std::uint64_t& evictions) {
  std::map<std::pair<dev_t, ino_t>, CacheFile> seen;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<CacheFile> files;
    for (std::size_t i = 0; i < folders.size(); ++i) list(folders[i], i, files);
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

// How much a write waits for the disk.
enum class Durability {
  Synced,  // fsync the file before the rename and the folder after it
  Lazy,    // neither: after a crash the file may be torn or gone, which
           // readers see as a bad or missing entry (for records, whose loss
           // only costs a search)
};

enum class Write {
  Stored,
  NoRoom,       // writers in flight hold the room: not stored, not a failure
  EntryInTheWay,  // something that cannot be replaced holds the entry's name
  Failed,       // the folder does not take files (errno set)
};

// Stores the entry file for `key` in folders[into]: announce a temp file,
// make room (make_room), write, rename into place. `what` names the step that
// failed and `error` its errno.
Write write_entry(const std::vector<Folder>& folders, std::size_t into, const Key& key,
                  std::string_view payload, std::uint64_t max_bytes, Durability durability,
                  std::uint64_t& evictions, const char** what, int* error) {
  const Folder& folder = folders[into];
  *what = "opening the folder";
  *error = folder.error();
  if (!folder.ok()) return Write::Failed;
  const std::uint64_t size = std::uint64_t(kEntryHeaderSize) + payload.size();
  const std::string temp = temp_name(key, size);
  const std::string final_name = entry_name(key);
  Fd fd(::openat(folder.fd(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    *what = "creating a file";
    *error = errno;
    return Write::Failed;
  }
  auto give_up = [&](Write result) {
    *error = errno;
    fd.reset();
    ::unlinkat(folder.fd(), temp.c_str(), 0);
    return result;
  };
  if (!make_room(folders, max_bytes, FileId{into, final_name}, evictions)) return give_up(Write::NoRoom);
  const EntryHeaderBytes header = encode_entry_header(key, payload);
  *what = "writing";
  if (!write_all(fd.get(), header.data(), header.size()) ||
      !write_all(fd.get(), payload.data(), payload.size()))
    return give_up(Write::Failed);
  *what = "fsync";
  if (durability == Durability::Synced && ::fsync(fd.get()) != 0) return give_up(Write::Failed);
  *what = "closing";
  if (!fd.reset()) return give_up(Write::Failed);
  *what = "renaming";
  int renamed = ::renameat(folder.fd(), temp.c_str(), folder.fd(), final_name.c_str());
  if (renamed != 0 && (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)) {
    // An empty folder in the entry's place is removed; anything else is kept.
    if (::unlinkat(folder.fd(), final_name.c_str(), AT_REMOVEDIR) == 0)
      renamed = ::renameat(folder.fd(), temp.c_str(), folder.fd(), final_name.c_str());
    else
      errno = EISDIR;
  }
  if (renamed != 0) {
    // The temp file was created and written, so the folder takes files: what
    // failed is this entry's name, unless the disk itself reports trouble.
    // ENOENT: clear() removed the temp file meanwhile.
    const int e = errno;
    const Write result = e == ENOENT                                             ? Write::NoRoom
                         : e == EROFS || e == ENOSPC || e == EDQUOT || e == EIO ? Write::Failed
                                                                                 : Write::EntryInTheWay;
    errno = e;
    return give_up(result);
  }
  // Make the rename durable; a failure here loses nothing that matters.
  if (durability == Durability::Synced) ::fsync(folder.fd());
  return Write::Stored;
}

enum class Read { Hit, Missing, Bad };

// Reads the entry for `key` in `folder` into `payload` (checked against its
// header and checksum); a hit marks it recently used (the owner may always
// set times to now). Never blocks on what is in the entry's place, and never
// allocates more than the file's real size, which must be at most
// `max_bytes` (an entry larger than the cap could not have been stored under
// it) and agree with the header's payload size.
Read read_entry(const std::string& folder, const Key& key, std::uint64_t max_bytes,
                std::string& payload) {
  const std::string path = folder + "/" + entry_name(key);
  Fd fd;
  struct stat st;
  switch (open_for_reading(AT_FDCWD, path.c_str(), fd, st)) {
    case OpenedAs::Missing:
      return Read::Missing;  // a link counts as no entry: it is never opened
    case OpenedAs::NotAFile:
      return Read::Bad;
    case OpenedAs::File:
      break;
  }
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  EntryHeaderBytes header;
  if (size < kEntryHeaderSize || size > max_bytes ||
      !read_at(fd.get(), header.data(), header.size(), 0) ||
      check_entry_header(header, key, size) != nullptr)
    return Read::Bad;
  try {
    payload.resize(static_cast<std::size_t>(size - kEntryHeaderSize));
  } catch (const std::bad_alloc&) {
    return Read::Bad;
  } catch (const std::length_error&) {
    return Read::Bad;
  }
  // read_at fails when the file shrank since the fstat.
  if (!read_at(fd.get(), payload.data(), payload.size(), kEntryHeaderSize) ||
      !payload_matches(header, payload))
    return Read::Bad;
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
  switch (read_entry(c->entries, key, c->max_bytes, payload)) {
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
  if (payload.size() > c->max_bytes - std::min<std::uint64_t>(c->max_bytes, kEntryHeaderSize) ||
      kEntryHeaderSize > c->max_bytes)
    return;  // could never stay
  const std::vector<Folder> folders = open_folders(c->directory);
  const char* what = "";
  int error = 0;
  std::uint64_t evictions = 0;
  const Write result = write_entry(folders, kEntries, key, payload, c->max_bytes,
                                   Durability::Synced, evictions, &what, &error);
  state().counters.evictions += evictions;
  switch (result) {
    case Write::Stored:
      state().counters.stores++;
      break;
    case Write::NoRoom:
      break;
    case Write::EntryInTheWay:
      entry_not_stored(c->entries + "/" + entry_name(key), what, error);
      break;
    case Write::Failed:
      write_failed(*c, what, error);
      break;
  }
}

std::optional<std::string> load_record(const Key& key) {
  std::shared_ptr<Config> c = config();
  if (!c->readable) return std::nullopt;
  const std::string folder = c->directory + "/" + kRecordFolder;
  // A record names a library to load: only a private folder's are used.
  std::string payload;
  if (!prepare_private_folder(folder, false, LinkPolicy::Refuse).empty() ||
      read_entry(folder, key, c->max_bytes, payload) != Read::Hit)
    return std::nullopt;
  return payload;
}

void store_record(const Key& key, std::string_view payload) {
  std::shared_ptr<Config> c = config();
  if (!c->readable || !c->writable) return;
  if (payload.size() > c->max_bytes - std::min<std::uint64_t>(c->max_bytes, kEntryHeaderSize) ||
      kEntryHeaderSize > c->max_bytes)
    return;
  const std::string folder = c->directory + "/" + kRecordFolder;
  if (!prepare_private_folder(folder, true, LinkPolicy::Refuse).empty())
    return;  // the caller finds no record next time and rediscovers
  const std::vector<Folder> folders = open_folders(c->directory);
  const char* what = "";
  int error = 0;
  std::uint64_t evictions = 0;
  // A failure is ignored: the caller finds no record next time and searches.
  if (write_entry(folders, kRecords, key, payload, c->max_bytes, Durability::Lazy, evictions,
                  &what, &error) == Write::Stored) {
    std::vector<CacheFile> records;
    list(folders[kRecords], kRecords, records);
    std::uint64_t total = 0;  // only the count is bounded here
    evictions += evict(folders, std::move(records), total, std::numeric_limits<std::uint64_t>::max(),
                       kMaxRecords, FileId{kRecords, entry_name(key)}, FileId{});
  }
  state().counters.evictions += evictions;
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
    std::vector<CacheFile> files;
    const std::vector<Folder> folders = open_folders(c->directory);
    for (std::size_t i = 0; i < folders.size(); ++i) list(folders[i], i, files);
    for (const CacheFile& f : files) {
      if (f.folder == kEntries && !f.temp) out.entries++;
      out.bytes = saturating_add(out.bytes, f.size);
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

Cleared clear() {
  std::shared_ptr<Config> c = config();
  Cleared out;
  if (c->directory.empty() || !prepare_private_folder(c->directory, false).empty()) return out;
  const std::vector<Folder> folders = open_folders(c->directory);
  for (std::size_t i = 0; i < folders.size(); ++i) {
    struct stat st;
    if (!folders[i].ok() || ::fstat(folders[i].fd(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    std::vector<CacheFile> files;
    list(folders[i], i, files);
    for (const CacheFile& f : files) {
      if (remove_ours(folders[i], f) != Removal::Removed || f.temp) continue;
      (i == kEntries ? out.entries : out.records)++;
    }
  }
  return out;
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

void warn(const std::string& cause, const std::string& message) { emit({{cause, message}}); }

}  // namespace jk::cache
