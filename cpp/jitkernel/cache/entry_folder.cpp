// The tier-shaped folders of entry_folder.hpp: read for export, written by
// import --into.
#include "jitkernel/cache/entry_folder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <random>
#include <utility>

#include "jitkernel/cache/directory.hpp"
#include "jitkernel/cache/entry_io.hpp"
#include "jitkernel/cache/file_io.hpp"

namespace jk::cache {
namespace {

// Temp names tried for one entry before giving up (each taken by something).
constexpr int kTempTries = 16;

// `directory` joined with `name` as Python's os.path.join does.
std::string join(const std::string& directory, const char* name) {
  if (directory.empty()) return name;
  return directory.back() == '/' ? directory + name : directory + "/" + name;
}

struct Predicted {
  std::mutex mutex;
  std::string token;
  std::uint64_t count = 0;
};

Predicted& predicted() {
  static auto* p = new Predicted;  // never destroyed: usable from exit-time code
  return *p;
}

// 16 random hex digits (or a predicted token, in tests).
std::string random_token() {
  {
    Predicted& p = predicted();
    std::lock_guard<std::mutex> lock(p.mutex);
    if (p.count > 0) {
      p.count--;
      return p.token;
    }
  }
  std::random_device device;
  const unsigned long long value = (std::uint64_t(device()) << 32) ^ device();
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", value);
  return text;
}

// os.makedirs(path, exist_ok=True): missing folders above `path` with mode
// 0777, `path` with `mode` (both less the umask). false with errno set.
bool make_folders(const std::string& path, mode_t mode) {
  for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    if (path[at - 1] == '/') continue;
    if (::mkdir(path.substr(0, at).c_str(), 0777) != 0 && errno != EEXIST) return false;
  }
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) return false;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  if (!S_ISDIR(st.st_mode)) {
    errno = EEXIST;
    return false;
  }
  return true;
}

}  // namespace

EntryFolder::EntryFolder(const std::string& directory)
    : entries_(join(directory, kEntryFolder)), folder_(entries_) {
  if (!folder_.ok()) problem_ = errno_text(folder_.error());
}

Read EntryFolder::load(const Key& key, EntryKind kind, std::uint64_t max_bytes, std::string& payload) const {
  if (!usable()) return Read::Missing;
  return read_entry(folder_, key, kind, max_bytes, payload, Folders::Plain);
}

void EntryFolder::list(std::vector<StoredFile>& out) const {
  if (!usable()) return;
  std::vector<CacheFile> files;
  list_files(folder_, kEntries, files, false);
  for (CacheFile& f : files)
    if (!f.temp) out.push_back({std::move(f.name), f.size, false, f.kind});
}

TierWriter::TierWriter(const std::string& directory, mode_t folder_mode, mode_t file_mode)
    : entries_(join(directory, kEntryFolder)), file_mode_(file_mode) {
  if (!make_folders(directory, folder_mode) ||
      (::mkdir(entries_.c_str(), folder_mode) != 0 && errno != EEXIST) ||
      !(folder_ = Folder(entries_)).ok()) {
    const int error = folder_.ok() || folder_.error() == 0 ? errno : folder_.error();
    problem_ = entries_ + " cannot be used as a folder (" + errno_text(error) + ")";
    folder_ = Folder();
    return;
  }
  struct stat top, sub;
  if (::stat(directory.c_str(), &top) != 0 || ::fstat(folder_.fd(), &sub) != 0) {
    problem_ = entries_ + " cannot be used as a folder (" + errno_text(errno) + ")";
  } else if (((top.st_mode | sub.st_mode) & (S_IWGRP | S_IWOTH)) != 0) {
    problem_ = directory + " or its kernels folder is writable by group or others; a read-only tier "
                           "refuses such a folder";
    mode_problem_ = true;
  } else {
    // Vetted as a tier is when it is read (tiers.hpp): what nobody else may
    // replace, written through the descriptor that passed.
    Fd vetted;
    if (std::string why = open_readonly_tier(absolute_path(directory), kEntryFolder, vetted); !why.empty())
      problem_ = directory + " cannot serve as a read-only tier: " + why;
    else
      folder_ = Folder(std::move(vetted), 0);
  }
  if (!problem_.empty()) folder_ = Folder();
}

bool TierWriter::begin(const Key& key, EntryKind kind, std::uint64_t size) {
  abort();
  if (!folder_.ok()) {
    errno = EBADF;
    return false;
  }
  const std::string stem = to_hex(key) + ".import." + std::to_string(::getpid()) + ".";
  for (int i = 0; i < kTempTries; ++i) {
    std::string temp = stem + random_token() + ".tmp";
    Fd fd(::openat(folder_.fd(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                   file_mode_));
    if (fd) {
      key_ = key;
      kind_ = kind;
      fd_ = std::move(fd);
      temp_ = std::move(temp);
      check_ = std::make_unique<EntryCheck>(key, size);
      return true;
    }
    if (errno != EEXIST) return false;
  }
  errno = EEXIST;
  return false;
}

bool TierWriter::write(std::string_view bytes) {
  if (!fd_) {
    errno = EBADF;
    return false;
  }
  check_->update(bytes);
  return write_all(fd_.get(), bytes.data(), bytes.size());
}

TierWriter::Commit TierWriter::commit(std::string& why) {
  why.clear();
  if (!fd_) {
    errno = EBADF;
    return Commit::Failed;
  }
  if (!(why = check_->finish()).empty()) {
    abort();
    return Commit::NotAnEntry;
  }
  const std::string name = entry_name(key_, kind_);
  if (!fd_.reset() || ::renameat(folder_.fd(), temp_.c_str(), folder_.fd(), name.c_str()) != 0) {
    const int error = errno;
    abort();
    errno = error;
    return Commit::Failed;
  }
  temp_.clear();
  check_.reset();
  return Commit::Done;
}

void TierWriter::abort() {
  const int saved = errno;
  fd_.reset();
  if (!temp_.empty()) ::unlinkat(folder_.fd(), temp_.c_str(), 0);
  temp_.clear();
  check_.reset();
  errno = saved;
}

void predict_temp_tokens_for_tests(const std::string& token, std::uint64_t count) {
  Predicted& p = predicted();
  std::lock_guard<std::mutex> lock(p.mutex);
  p.token = token;
  p.count = count;
}

}  // namespace jk::cache
