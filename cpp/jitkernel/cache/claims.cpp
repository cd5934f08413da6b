// The compile claims of claims.hpp: creating one, telling a live holder from
// a dead or stale one (a zombie is dead), the bounded wait, and tidying the
// claims of dead owners (clear()).
#include "jitkernel/cache/claims.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <vector>

#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/directory.hpp"

namespace jk::cache {
namespace {

constexpr std::int64_t kMs = 1000000;
// A claim file appears whole (ClaimMaker); one without its fields is not
// ours to judge until it is older than this (a foreign or damaged file).
constexpr std::int64_t kUnwrittenNs = 5000 * kMs;
constexpr std::int64_t kFirstPollNs = 2 * kMs, kLongestPollNs = 50 * kMs;
constexpr std::size_t kMaxClaimBytes = 512;
// Claims removed or found released before giving up on claiming (a claim
// that cannot be removed must not loop).
constexpr int kMaxTakeovers = 4;

// Up to `limit` bytes of a small file (a /proc entry), "" when unreadable.
// Plain reads, not iostreams: parsing must not depend on the C++ locale
// machinery, which is not safe to start from several threads in every
// libstdc++ build (a statically linked one in a loaded module).
std::string read_small(const char* path, std::size_t limit) {
  Fd fd(::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  std::string out;
  if (!fd) return out;
  char buffer[1024];
  while (out.size() < limit) {
    const ssize_t n = ::read(fd.get(), buffer, std::min(sizeof(buffer), limit - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
}

// The whitespace-separated words of `text`, in order.
std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    const std::size_t start = at;
    while (at < text.size() && !std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    if (at > start) out.emplace_back(text.substr(start, at - start));
  }
  return out;
}

// A decimal number filling all of `word`, or nullopt.
std::optional<unsigned long long> decimal(const std::string& word) {
  if (word.empty() || word.size() > 20) return std::nullopt;
  unsigned long long value = 0;
  for (char c : word) {
    if (c < '0' || c > '9') return std::nullopt;
    const unsigned long long digit = static_cast<unsigned long long>(c - '0');
    if (value > (~0ULL - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

// What /proc/<pid>/stat tells of a process (Linux): its state, and its
// start time in clock ticks since boot, which tells a live owner from a
// later process that reuses its pid.
struct ProcessStat {
  char state = '?';  // 'Z' (zombie) and 'X' (dead): exited, not yet reaped
  unsigned long long start = 0;
};

std::optional<ProcessStat> process_stat(long pid) {
  const std::string text = read_small(("/proc/" + std::to_string(pid) + "/stat").c_str(), 4096);
  const std::size_t paren = text.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos) return std::nullopt;
  const std::vector<std::string> fields = words(std::string_view(text).substr(paren + 1));
  // The first word after ')' is field 3 (state); field 22 is starttime.
  if (fields.size() < 20 || fields[0].size() != 1) return std::nullopt;
  const std::optional<unsigned long long> start = decimal(fields[19]);
  if (!start) return std::nullopt;
  return ProcessStat{fields[0][0], *start};
}

unsigned long long start_time(long pid) {
  const std::optional<ProcessStat> stat = process_stat(pid);
  return stat ? stat->start : 0;
}

// This machine and boot: claims by the same host can be checked for liveness.
const std::string& host_id() {
  static const std::string id = [] {
    char name[256] = {};
    ::gethostname(name, sizeof(name) - 1);
    const std::vector<std::string> boot = words(read_small("/proc/sys/kernel/random/boot_id", 128));
    std::string out = std::string(name) + "/" + (boot.empty() ? "" : boot.front());
    std::replace_if(out.begin(), out.end(), [](char c) { return c <= ' '; }, '_');
    return out;
  }();
  return id;
}

struct Holder {
  enum State { Gone, Live, Ours, Stale, Foreign } state = Gone;
  dev_t device = 0;
  ino_t inode = 0;
};

// Whether a holder recorded as `text` is alive (only answerable on its host).
Holder::State judge(const std::string& text, std::int64_t age) {
  constexpr std::string_view kMagic = "jitkernel claim 1\n";
  const std::vector<std::string> fields =
      text.compare(0, kMagic.size(), kMagic) == 0 ? words(std::string_view(text).substr(kMagic.size()))
                                                  : std::vector<std::string>{};
  const std::optional<unsigned long long> pid_field =
      fields.size() == 3 ? decimal(fields[1]) : std::nullopt;
  const std::optional<unsigned long long> start_field =
      fields.size() == 3 ? decimal(fields[2]) : std::nullopt;
  if (!pid_field || !start_field || *pid_field == 0 || *pid_field > 0x7fffffffULL)
    return age > kUnwrittenNs ? Holder::Stale : Holder::Live;
  const std::string& host = fields[0];
  const long pid = static_cast<long>(*pid_field);
  const unsigned long long start = *start_field;
  if (host != host_id()) return Holder::Live;  // only the bound tells
  if (pid == ::getpid())  // this process, or a dead one that had its pid
    return start == 0 || start == start_time(pid) ? Holder::Ours : Holder::Stale;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return Holder::Stale;
  // A killed owner its parent has not reaped yet (a zombie) passes kill(),
  // and keeps its start time: dead all the same.
  const std::optional<ProcessStat> now = process_stat(pid);
  if (now && (now->state == 'Z' || now->state == 'X')) return Holder::Stale;
  return now && start != 0 && now->start != start ? Holder::Stale : Holder::Live;
}

Holder inspect(int folder, const std::string& name, std::int64_t wait_ns) {
  Holder h;
  Fd fd;
  struct stat st;
  switch (open_for_reading(folder, name.c_str(), fd, st)) {
    case OpenedAs::Missing:
      h.state = errno == ENOENT || errno == ESTALE ? Holder::Gone : Holder::Foreign;
      return h;
    case OpenedAs::NotAFile:
      h.state = Holder::Foreign;  // something we do not remove
      return h;
    case OpenedAs::File:
      break;
  }
  h.device = st.st_dev;
  h.inode = st.st_ino;
  const std::int64_t age = now_ns() - mtime_ns(st);
  std::string text(std::min<std::size_t>(kMaxClaimBytes, static_cast<std::size_t>(st.st_size)), '\0');
  if (!text.empty() && !read_at(fd.get(), text.data(), text.size(), 0)) text.clear();
  h.state = age > wait_ns ? Holder::Stale : judge(text, age);
  return h;
}

// Unlinks `name` if it still is the file (device, inode) that was judged;
// returns whether it did.
bool remove_if_same(int folder, const std::string& name, dev_t device, ino_t inode) {
  struct stat st;
  return ::fstatat(folder, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == device &&
         st.st_ino == inode && ::unlinkat(folder, name.c_str(), 0) == 0;
}

constexpr std::string_view kClaimSuffix = ".claim";
// ClaimMaker's temp files: "<claim name>.tmp.<pid>.<counter>".
constexpr std::string_view kClaimTempMark = ".claim.tmp.";

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

struct ClaimMaker {
  enum Result { Created, Exists, Failed };
  // Creates the claim file with this process's fields, whole: they are
  // written to a temp file that is then hard-linked to the claim's name
  // (link fails if the name exists, also over NFS), so a claim is never
  // seen without its fields, even when its writer is killed in between.
  static Result create(const Folder& folder, const std::string& name, Claim& claim) {
    static std::atomic<unsigned> counter{0};
    const long pid = static_cast<long>(::getpid());
    const std::string temp = name.substr(0, name.size() - kClaimSuffix.size()) + std::string(kClaimTempMark) +
                             std::to_string(pid) + "." + std::to_string(counter++);
    Fd fd(::openat(folder.fd(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   0600));
    if (!fd) return Failed;
    char text[kMaxClaimBytes];
    const int n = std::snprintf(text, sizeof(text), "jitkernel claim 1\n%s %ld %llu\n",
                                host_id().c_str(), pid, start_time(pid));
    struct stat st;
    const bool written = n > 0 && static_cast<std::size_t>(n) < sizeof(text) &&
                         write_all(fd.get(), text, static_cast<std::size_t>(n)) &&
                         ::fstat(fd.get(), &st) == 0;
    const bool closed = fd.reset();
    const int linked =
        written && closed ? ::linkat(folder.fd(), temp.c_str(), folder.fd(), name.c_str(), 0) : -1;
    const int link_error = errno;
    ::unlinkat(folder.fd(), temp.c_str(), 0);
    if (linked != 0) return written && closed && link_error == EEXIST ? Exists : Failed;
    claim.folder_ = Fd(::dup(folder.fd()));
    claim.name_ = name;
    claim.device_ = st.st_dev;
    claim.inode_ = st.st_ino;
    if (!claim.folder_) {
      ::unlinkat(folder.fd(), name.c_str(), 0);
      return Failed;
    }
    return Created;
  }
};

void Claim::release() {
  if (!folder_) return;
  remove_if_same(folder_.get(), name_, device_, inode_);
  folder_.reset();
}

Claimed claim_or_wait(const std::string& claims_folder, const Digest& key, std::string_view tag,
                      std::int64_t wait_ns, const std::function<bool()>& found, Claim& claim) {
  Claimed out;
  if (!prepare_private_folder(claims_folder, true, LinkPolicy::Refuse).empty()) return out;
  const Folder folder(claims_folder);
  if (!folder.ok()) return out;
  const std::string name = to_hex(key) + std::string(tag) + std::string(kClaimSuffix);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait_ns);
  std::int64_t poll = kFirstPollNs;
  bool seen_live = false;  // a live holder was waited for: if it vanishes, do not claim after it
  for (int takeovers = 0;;) {
    if (!seen_live) {
      switch (ClaimMaker::create(folder, name, claim)) {
        case ClaimMaker::Created:
          if (!found()) {  // an owner may have finished just before
            out.outcome = Claimed::Owner;
            return out;
          }
          claim.release();
          out.outcome = Claimed::Found;
          return out;
        case ClaimMaker::Failed:
          return out;
        case ClaimMaker::Exists:
          break;
      }
    }
    const Holder h = inspect(folder.fd(), name, wait_ns);
    switch (h.state) {
      case Holder::Gone:  // released just now: claim it, unless it was waited for
        if (seen_live) {
          if (found()) out.outcome = Claimed::Found;
          return out;
        }
        if (++takeovers > kMaxTakeovers) return out;
        continue;
      case Holder::Stale:  // its owner is dead or too slow: take over
        if (++takeovers > kMaxTakeovers) return out;
        remove_if_same(folder.fd(), name, h.device, h.inode);
        seen_live = false;
        continue;
      case Holder::Ours:
      case Holder::Foreign:
        return out;
      case Holder::Live:
        break;
    }
    seen_live = out.waited = true;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::nanoseconds(poll));
    poll = std::min(kLongestPollNs, poll + poll / 2);
    if (found()) {
      out.outcome = Claimed::Found;
      return out;
    }
  }
  out.timed_out = true;
  return out;
}

std::uint64_t remove_dead_claims(const std::string& claims_folder, std::int64_t wait_ns) {
  if (!prepare_private_folder(claims_folder, false, LinkPolicy::Refuse).empty()) return 0;
  const Folder folder(claims_folder);
  if (!folder.ok()) return 0;
  const int copy = ::dup(folder.fd());  // fdopendir takes the descriptor it is given
  if (copy < 0) return 0;
  DIR* const dir = ::fdopendir(copy);
  if (dir == nullptr) {
    ::close(copy);
    return 0;
  }
  const std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, &::closedir);
  std::vector<std::string> names;  // listed first: removing while reading a folder may skip names
  while (const struct dirent* e = ::readdir(dir)) names.emplace_back(e->d_name);
  std::uint64_t removed = 0;
  for (const std::string& name : names) {
    if (ends_with(name, kClaimSuffix)) {
      const Holder h = inspect(folder.fd(), name, wait_ns);
      if (h.state == Holder::Stale) removed += remove_if_same(folder.fd(), name, h.device, h.inode);
    } else if (name.find(kClaimTempMark) != std::string::npos) {
      struct stat st;
      if (::fstatat(folder.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
          now_ns() - mtime_ns(st) > kUnwrittenNs)
        removed += remove_if_same(folder.fd(), name, st.st_dev, st.st_ino);
    }
  }
  return removed;
}

}  // namespace jk::cache
