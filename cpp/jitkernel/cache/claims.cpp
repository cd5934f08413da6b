// The compile claims of claims.hpp: creating one, telling a live holder from
// a dead or stale one, and the bounded wait.
#include "jitkernel/cache/claims.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

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

// The process start time of `pid` in clock ticks since boot (Linux /proc),
// which tells a live owner from a later process that reuses its pid.
std::optional<unsigned long long> start_time(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const std::size_t paren = text.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && (fields >> field); ++i)  // field 22 is starttime
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return std::nullopt;
}

// This machine and boot: claims by the same host can be checked for liveness.
const std::string& host_id() {
  static const std::string id = [] {
    char name[256] = {};
    ::gethostname(name, sizeof(name) - 1);
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string boot_id;
    std::getline(boot, boot_id);
    std::string out = std::string(name) + "/" + boot_id;
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
  std::istringstream in(text);
  std::string magic, host;
  long pid = 0;
  unsigned long long start = 0;
  if (!std::getline(in, magic) || magic != "jitkernel claim 1" || !(in >> host >> pid >> start) ||
      pid <= 0)
    return age > kUnwrittenNs ? Holder::Stale : Holder::Live;
  if (host != host_id()) return Holder::Live;  // only the bound tells
  if (pid == ::getpid())  // this process, or a dead one that had its pid
    return start == 0 || start == start_time(pid).value_or(0) ? Holder::Ours : Holder::Stale;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return Holder::Stale;
  const std::optional<unsigned long long> now = start_time(pid);
  return now && start != 0 && *now != start ? Holder::Stale : Holder::Live;
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

// Unlinks `name` if it still is the file (device, inode) that was judged.
void remove_if_same(int folder, const std::string& name, dev_t device, ino_t inode) {
  struct stat st;
  if (::fstatat(folder, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == device &&
      st.st_ino == inode)
    ::unlinkat(folder, name.c_str(), 0);
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
    const std::string temp = name + ".tmp." + std::to_string(pid) + "." + std::to_string(counter++);
    Fd fd(::openat(folder.fd(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   0600));
    if (!fd) return Failed;
    char text[kMaxClaimBytes];
    const int n = std::snprintf(text, sizeof(text), "jitkernel claim 1\n%s %ld %llu\n",
                                host_id().c_str(), pid, start_time(pid).value_or(0));
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

Claimed claim_or_wait(const std::string& claims_folder, const Digest& key, std::int64_t wait_ns,
                      const std::function<bool()>& found, Claim& claim) {
  Claimed out;
  if (!prepare_private_folder(claims_folder, true, LinkPolicy::Refuse).empty()) return out;
  const Folder folder(claims_folder);
  if (!folder.ok()) return out;
  const std::string name = to_hex(key) + ".claim";
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

}  // namespace jk::cache
