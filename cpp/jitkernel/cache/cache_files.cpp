// The cache folder's files of cache_files.hpp.
#include "jitkernel/cache/cache_files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <limits>
#include <memory>
#include <random>
#include <string_view>
#include <tuple>

#include "jitkernel/cache/entry.hpp"

namespace jk::cache {
namespace {

// Indexed by EntryKind's value.
constexpr EntryKind kKinds[] = {EntryKind::Binary, EntryKind::Alias, EntryKind::Decision};
const EntryKindFacts kKindFacts[] = {
    {".jkc", "the compiled kernel", "it is compiled again when needed"},
    {".jka", "the serving alias", "a machine without NVRTC will not find this kernel through it"},
    {".jkt", "the tuning decision", "the next process tunes this kernel again"},
};
static_assert(std::size(kKinds) == std::size(kKindFacts), "one row of facts per entry kind");
constexpr std::string_view kTempSuffix = ".tmp";
// Temp files older than this are left over from a crashed writer.
constexpr std::int64_t kStaleTempSeconds = 3600;
// How long a temp file counts at the size its name announces (the writer's
// reservation, see make_room) rather than at the bytes written so far: a
// crashed writer's reservation stops holding room after this.
constexpr std::int64_t kReservationSeconds = 60;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_key_hex(std::string_view s) {
  return s.size() == 2 * std::tuple_size<Digest>::value &&
         std::all_of(s.begin(), s.end(), [](char ch) {
           return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
         });
}

// "<key hex>.jkc", ".jka" or ".jkt": an entry's (or record's) name, its kind in `kind`.
bool is_entry_name(std::string_view name, EntryKind& kind) {
  for (EntryKind k : kKinds) {
    const std::string_view suffix = entry_suffix(k);
    if (ends_with(name, suffix) && is_key_hex(name.substr(0, name.size() - suffix.size()))) {
      kind = k;
      return true;
    }
  }
  return false;
}

// "<key hex>.<field>...<field>.tmp", fields of [0-9a-z]: a temp file's name
// (temp_name). The field "r<digits>" is the size its writer reserved
// (`reserved`, else 0).
bool is_temp_name(std::string_view name, std::uint64_t& reserved) {
  reserved = 0;
  const std::size_t key_size = 2 * std::tuple_size<Digest>::value;
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

}  // namespace

const EntryKindFacts& entry_kind_facts(EntryKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return kKindFacts[i < std::size(kKindFacts) ? i : 0];
}

std::string entry_name(const Digest& key, EntryKind kind) { return to_hex(key) + std::string(entry_suffix(kind)); }

bool key_of_entry_name(std::string_view name, Digest& key, EntryKind* kind) {
  EntryKind found = EntryKind::Binary;
  if (!is_entry_name(name, found) || !from_hex(name.substr(0, name.size() - entry_suffix(found).size()), key))
    return false;
  if (kind != nullptr) *kind = found;
  return true;
}

std::string temp_name(const Digest& key, std::uint64_t size) {
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

Folder::Folder(const std::string& path)
    : fd_(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)),
      error_(fd_ ? 0 : errno) {
  read_owner();
}

Folder::Folder(Fd fd, int error) : fd_(std::move(fd)), error_(fd_ ? 0 : error) { read_owner(); }

void Folder::read_owner() {
  struct stat st;
  if (!fd_) return;
  if (::fstat(fd_.get(), &st) == 0) {
    owner_ = st.st_uid;
  } else {
    error_ = errno;
    fd_.reset();
  }
}

void list_files(const Folder& folder, std::size_t index, std::vector<CacheFile>& out, bool tidy) {
  if (!folder.ok()) return;
  // A descriptor of its own (fdopendir takes the one it is given), not a dup:
  // a dup would share its position with listings in other threads.
  const int copy = ::openat(folder.fd(), ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (copy < 0) return;
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    ::close(copy);
    return;
  }
  std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, &::closedir);
  const std::int64_t now = now_ns();
  constexpr std::int64_t kSecond = 1000000000;
  while (struct dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    std::uint64_t reserved = 0;
    EntryKind kind = EntryKind::Binary;
    const bool temp = is_temp_name(name, reserved);
    if (!temp && !is_entry_name(name, kind)) continue;
    struct stat st;
    if (::fstatat(folder.fd(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    const std::int64_t age = now - mtime_ns(st);
    if (tidy && temp && age > kStaleTempSeconds * kSecond) {
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
    f.kind = kind;
    f.device = st.st_dev;
    f.inode = st.st_ino;
    out.push_back(std::move(f));
  }
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max()
                                                          : a + b;
}

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

}  // namespace jk::cache
