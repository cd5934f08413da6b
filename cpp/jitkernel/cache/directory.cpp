// Locating, creating and vetting the cache folder (directory.hpp). The checks
// follow the usual rules for per-user caches: a folder another user owns or
// may write to could feed us binaries, so it is not used.
#include "jitkernel/cache/directory.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "jitkernel/cache/file_io.hpp"

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

// mkdir -p with mode 0700 for what it creates (for a `path` that stat did
// not find); "" or the error.
std::string make_folders(const std::string& path) {
  struct stat st;
  std::size_t at = 0;
  while (true) {
    at = path.find('/', at + 1);
    std::string part = path.substr(0, at);
    if (!part.empty() && ::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      int error = errno;
      if (::stat(part.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        return "cannot create " + part + ": " + errno_text(error);
    }
    if (at == std::string::npos) return "";
  }
}

// Why a folder with status `st` is not usable ("" when it is): not a
// directory, owned by another user (when `owned`), writable by group/others.
std::string folder_problem(const struct stat& st, bool owned) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link, not a directory";
  if (!S_ISDIR(st.st_mode)) return "not a directory";
  if (owned && st.st_uid != geteuid())
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(geteuid()) + ")";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return std::string("writable by ") + ((st.st_mode & S_IWOTH) ? "others" : "its group") +
           " (mode " + mode + ")" +
           (owned ? "; make it private with chmod 700"
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

std::string prepare_private_folder(const std::string& path, bool create, LinkPolicy links) {
  auto status = [&](struct stat& st) {
    return links == LinkPolicy::Follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
  };
  struct stat st;
  if (status(st) != 0) {  // one stat when the folder exists (a warm start)
    if (!create) return errno_text(errno);
    std::string problem = make_folders(path);
    if (!problem.empty()) return problem;
    if (status(st) != 0) return errno_text(errno);
  }
  return folder_problem(st, true);
}

std::string check_readonly_folder(const std::string& path, LinkPolicy links) {
  struct stat st;
  if ((links == LinkPolicy::Follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0)
    return errno_text(errno);
  return folder_problem(st, false);
}

}  // namespace jk::cache
