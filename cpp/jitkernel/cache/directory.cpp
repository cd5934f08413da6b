// Locating, creating, vetting and opening the cache folder and the read-only
// tiers (directory.hpp). The checks follow the usual rules for per-user caches
// and for paths trusted with code (as OpenSSH's StrictModes): a folder another
// user owns or may write to, or one inside a folder another user could
// replace, could feed us binaries, so it is not used.
#include "jitkernel/cache/directory.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace jk::cache {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string home_folder() {
  std::string home = env("HOME");
  if (!home.empty()) return home;
  std::vector<char> buffer(16384);
  struct passwd pw;
  struct passwd* found = nullptr;
  if (getpwuid_r(geteuid(), &pw, buffer.data(), buffer.size(), &found) == 0 && found &&
      found->pw_dir)
    return found->pw_dir;
  return "";
}

}  // namespace

std::string absolute_path(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  std::vector<char> cwd(4096);
  if (::getcwd(cwd.data(), cwd.size()) == nullptr) return path;
  return std::string(cwd.data()) + "/" + path;
}

namespace {

// Why a folder with status `st` is not usable ("" when it is): not a
// directory, owned by another user (when `owned`), writable by group/others.
// "writable by others (mode 757)" / "... its group ..." for a file or folder
// its group or others may write to; "" otherwise.
std::string writable_by_others(const struct stat& st) {
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0) return "";
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
  return std::string("writable by ") + ((st.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " + mode + ")";
}

std::string folder_problem(const struct stat& st, bool owned) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link, not a directory";
  if (!S_ISDIR(st.st_mode)) return "not a directory";
  if (owned && st.st_uid != geteuid())
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(geteuid()) + ")";
  if (std::string writable = writable_by_others(st); !writable.empty()) {
    return writable + (owned ? "; make it private with chmod 700"
                             : ": whoever may write there could plant binaries; make it writable by its "
                               "owner only (chmod go-w)");
  }
  return "";
}

}  // namespace

std::string directory_from_environment() {
  std::string dir = env("JITKERNEL_CACHE_DIR");
  if (!dir.empty()) return absolute_path(dir);
#if defined(__APPLE__)
  std::string home = home_folder();
  return home.empty() ? "" : home + "/Library/Caches/jitkernel";
#else
  std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg[0] == '/') return xdg + "/jitkernel";
  std::string home = home_folder();
  return home.empty() ? "" : home + "/.cache/jitkernel";
#endif
}

bool trusted_owner(uid_t uid, uid_t folder_owner) {
  return uid == 0 || uid == ::geteuid() || uid == folder_owner;
}

namespace {

// Passing through a folder on the way: only *at calls and fstat use it, so
// no read permission is needed where the platform has O_PATH.
#if defined(O_PATH)
constexpr int kPassFlags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
#elif defined(O_SEARCH)
constexpr int kPassFlags = O_SEARCH | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
#else
constexpr int kPassFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
#endif
// A folder whose files are listed and read.
constexpr int kListFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
// Links followed in one walk before giving up (as the kernel's ELOOP).
constexpr int kMaxLinks = 40;

int open_at(int dirfd, const char* name, int flags) {
  int fd;
  do {
    fd = ::openat(dirfd, name, flags);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// Why the folder `name` in `dirfd` could not be opened (with `error`).
std::string open_failure(int dirfd, const char* name, int error) {
  struct stat st;
  if ((error == ELOOP || error == ENOTDIR) && ::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    std::string problem = folder_problem(st, false);  // a link, or not a directory
    if (!problem.empty()) return problem;
  }
  return errno_text(error);
}

// Why a folder passed on the way to a cache folder or tier (at `path`, with
// status `st`) lets someone else replace what is below it ("" when it does
// not): an owner other than root, this user and `owner`, or write access for
// group or others without the sticky bit.
std::string passage_problem(const struct stat& st, const std::string& path, uid_t owner) {
  if (!trusted_owner(st.st_uid, owner))
    return "the enclosing folder " + path + " is owned by uid " + std::to_string(st.st_uid) +
           " (not root, not this user" + (owner != ::geteuid() ? ", not the tier's owner" : "") +
           "): that user could replace what is inside it with a folder of their own";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return "the enclosing folder " + path + " is writable by " +
           ((st.st_mode & S_IWOTH) ? "others" : "its group") + " (mode " + mode +
           ") without the sticky bit: whoever may write there could replace what is inside it "
           "with a folder of their own; chmod go-w (or +t) " + path + ", or use another folder";
  }
  return "";
}

// The components of `path`, without empty ones and ".".
std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(at, slash - at);
    if (!part.empty() && part != ".") out.push_back(std::move(part));
    at = slash + 1;
  }
  return out;
}

// The target of the link `name` in `dirfd`, or "" (errno set).
std::string read_link(int dirfd, const char* name) {
  std::vector<char> buffer(4096);
  while (true) {
    const ssize_t n = ::readlinkat(dirfd, name, buffer.data(), buffer.size());
    if (n < 0) return "";
    if (static_cast<std::size_t>(n) < buffer.size()) return std::string(buffer.data(), std::size_t(n));
    if (buffer.size() >= (1u << 20)) {
      errno = ENAMETOOLONG;
      return "";
    }
    buffer.resize(buffer.size() * 2);
  }
}

// Walks the absolute `path` from "/" (directory.hpp): every folder passed
// must pass passage_problem with `owner`; a missing folder is created (0700)
// when `create`, inside one that passed; a link is read in a folder that
// passed and followed (the last component's only with LinkPolicy::Follow).
// "" with `out` holding the last component opened (kPassFlags) and `st` its
// status, else why not.
std::string walk(const std::string& path, bool create, LinkPolicy links, uid_t owner, Fd& out,
                 struct stat& st) {
  if (path.empty() || path[0] != '/') return "not an absolute path";
  const std::string prefix = create ? "cannot create " + path + ": " : "";
  std::vector<std::string> todo = components(path);  // back() is next
  std::reverse(todo.begin(), todo.end());
  Fd at(open_at(AT_FDCWD, "/", kPassFlags));
  std::string where;  // the folder `at` holds ("" for "/")
  if (!at) return prefix + "/: " + errno_text(errno);
  int followed = 0;
  while (!todo.empty()) {
    struct stat here;
    if (::fstat(at.get(), &here) != 0) return prefix + errno_text(errno);
    const std::string shown = where.empty() ? "/" : where;
    if (std::string problem = passage_problem(here, shown, owner); !problem.empty()) return problem;
    const std::string name = std::move(todo.back());
    todo.pop_back();
    const bool last = todo.empty();
    const std::string next = name == ".." ? where.substr(0, where.rfind('/')) : where + "/" + name;
    struct stat entry;
    if (::fstatat(at.get(), name.c_str(), &entry, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT || !create) return last ? errno_text(errno) : next + ": " + errno_text(errno);
      if (::mkdirat(at.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
        return prefix + next + ": " + errno_text(errno);
      if (::fstatat(at.get(), name.c_str(), &entry, AT_SYMLINK_NOFOLLOW) != 0)
        return prefix + next + ": " + errno_text(errno);
    }
    if (S_ISLNK(entry.st_mode) && (!last || links == LinkPolicy::Follow)) {
      const std::string target = read_link(at.get(), name.c_str());
      if (target.empty() || ++followed > kMaxLinks)
        return prefix + next + ": " + errno_text(target.empty() ? errno : ELOOP);
      const std::vector<std::string> parts = components(target);
      todo.insert(todo.end(), parts.rbegin(), parts.rend());
      if (target[0] == '/') {
        at = Fd(open_at(AT_FDCWD, "/", kPassFlags));
        where.clear();
        if (!at) return prefix + "/: " + errno_text(errno);
      }
      continue;
    }
    Fd opened(open_at(at.get(), name.c_str(), kPassFlags));
    if (!opened) {
      const std::string why = open_failure(at.get(), name.c_str(), errno);
      return last && !create ? why : prefix + next + ": " + why;
    }
    at = std::move(opened);
    where = next;
  }
  if (::fstat(at.get(), &st) != 0) return prefix + errno_text(errno);
  out = std::move(at);
  return "";
}

// Opens the subfolder `name` of `parent` for listing (never a link); ""
// with `folder` and `st` set, else why not. Creates it (0700) when missing
// and `create`.
std::string open_subfolder(int parent, const char* name, bool create, Fd& folder,
                           struct stat& st) {
  Fd fd(open_at(parent, name, kListFlags));
  if (!fd && errno == ENOENT && create) {
    if (::mkdirat(parent, name, 0700) != 0 && errno != EEXIST)
      return "cannot create it: " + errno_text(errno);
    fd = Fd(open_at(parent, name, kListFlags));
  }
  if (!fd) return open_failure(parent, name, errno);
  if (::fstat(fd.get(), &st) != 0) return errno_text(errno);
  folder = std::move(fd);
  return "";
}

}  // namespace

std::string open_private_folder(const std::string& path, bool create, LinkPolicy links,
                                Fd& folder) {
  Fd fd;
  struct stat st;
  std::string problem = walk(path, create, links, ::geteuid(), fd, st);
  if (problem.empty()) problem = folder_problem(st, true);
  if (problem.empty()) folder = std::move(fd);
  return problem;
}

std::string prepare_private_folder(const std::string& path, bool create, LinkPolicy links) {
  Fd unused;
  return open_private_folder(path, create, links, unused);
}

std::string open_private_subfolder(int parent, const char* name, bool create, Fd& folder) {
  Fd fd;
  struct stat st;
  std::string problem = open_subfolder(parent, name, create, fd, st);
  if (problem.empty()) problem = folder_problem(st, true);
  if (problem.empty()) folder = std::move(fd);
  return problem;
}

std::string private_folder_problem(int folder) {
  struct stat st;
  if (::fstat(folder, &st) != 0) return errno_text(errno);
  return folder_problem(st, true);
}

std::string open_readonly_tier(const std::string& path, const char* entries, Fd& folder) {
  // The tier's owner, which the folders on the way may also have; the walk
  // then checks that it opened a folder of that owner.
  struct stat presumed;
  if (::stat(path.c_str(), &presumed) != 0) return errno_text(errno);
  Fd tier;
  struct stat st;
  std::string problem = walk(path, false, LinkPolicy::Follow, presumed.st_uid, tier, st);
  if (!problem.empty()) return problem;
  if (st.st_uid != presumed.st_uid) return "it changed while it was being checked";
  if (problem = folder_problem(st, false); !problem.empty()) return problem;
  Fd fd;
  struct stat sub;
  problem = open_subfolder(tier.get(), entries, false, fd, sub);
  if (problem.empty()) problem = folder_problem(sub, false);
  if (problem.empty() && !trusted_owner(sub.st_uid, st.st_uid))
    problem = "owned by uid " + std::to_string(sub.st_uid) +
              ", neither root, this user nor the tier's owner (uid " + std::to_string(st.st_uid) +
              "): that user could plant binaries";
  if (!problem.empty()) return std::string(entries) + ": " + problem;
  folder = std::move(fd);
  return "";
}
std::string open_readonly_file(const std::string& path, Fd& file) {
  const std::size_t slash = path.rfind('/');
  if (path.empty() || path[0] != '/' || slash + 1 == path.size()) return "not an absolute path to a file";
  const std::string folder = slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = path.substr(slash + 1);
  struct stat presumed;
  if (::lstat(path.c_str(), &presumed) != 0) return errno_text(errno);
  if (S_ISLNK(presumed.st_mode)) return "a symbolic link: name the bundle file itself";
  Fd at;
  struct stat st;
  std::string problem = walk(folder, false, LinkPolicy::Follow, presumed.st_uid, at, st);
  if (problem.empty()) problem = folder_problem(st, false);
  if (!problem.empty()) return folder + ": " + problem;
  Fd fd(::openat(at.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) return errno == ELOOP ? "a symbolic link: name the bundle file itself" : errno_text(errno);
  struct stat own;
  if (::fstat(fd.get(), &own) != 0) return errno_text(errno);
  if (!S_ISREG(own.st_mode)) return "not a regular file";
  if (std::string writable = writable_by_others(own); !writable.empty())
    return writable + ": whoever may write it could plant binaries; make it writable by its owner only (chmod go-w)";
  if (!trusted_owner(own.st_uid, st.st_uid))
    return "owned by uid " + std::to_string(own.st_uid) + ", neither root, this user nor the folder's owner (uid " +
           std::to_string(st.st_uid) + "): that user could plant binaries";
  file = std::move(fd);
  return "";
}

}  // namespace jk::cache
