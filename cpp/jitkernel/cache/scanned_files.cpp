// The memo of scanned_files.hpp: at most a few thousand files, forgotten
// all at once when full.
#include "jitkernel/cache/scanned_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <unordered_map>

#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {
namespace {

// Filesystems stamp times at a clock tick (up to 2 s on some): a file
// changed within that long before being hashed could change again with the
// same size and times, so its hash is not reused. The status-change time is
// the one to ask: it is always the time of the last change (a modification
// time can be set to anything).
constexpr std::int64_t kTimestampResolutionNs = 2'000'000'000;
constexpr std::size_t kMaxMemoFiles = 4096;

bool same_file(const ScannedFile& f, const struct stat& st) {
  return f.dev == st.st_dev && f.ino == st.st_ino && f.size == st.st_size &&
         f.mtime == mtime_ns(st) && f.ctime == ctime_ns(st);
}

struct FileMemo {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const ScannedFile>> files;
};

FileMemo& file_memo() {
  static auto* memo = new FileMemo;  // never destroyed: usable from exit-time code
  return *memo;
}


// The whole of the regular file `path` (opened without blocking: a FIFO
// put in its place since the stat must not hang), with its stat; nullptr
// and errno set when it cannot be read.
std::shared_ptr<const ScannedFile> read_and_scan(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0) return nullptr;
  if (!S_ISREG(st.st_mode)) {
    errno = EINVAL;
    return nullptr;
  }
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[65536];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return nullptr;
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  auto file = std::make_shared<ScannedFile>();
  file->dev = st.st_dev;
  file->ino = st.st_ino;
  file->size = st.st_size;
  file->mtime = mtime_ns(st);
  file->ctime = ctime_ns(st);
  file->state = "sha256 " + to_hex(sha256(text));
  file->includes = scan_includes(text);
  return file;
}

}  // namespace

// `path`'s hash and directives, from the memo while `st` (a fresh stat of
// it) says it is unchanged.
std::shared_ptr<const ScannedFile> scanned(const std::string& path, const struct stat& st) {
  FileMemo& memo = file_memo();
  {
    std::lock_guard<std::mutex> lock(memo.mutex);
    auto it = memo.files.find(path);
    if (it != memo.files.end() && same_file(*it->second, st)) return it->second;
  }
  const std::int64_t started = now_ns();
  std::shared_ptr<const ScannedFile> file = read_and_scan(path);
  if (!file) return nullptr;
  if (file->ctime + kTimestampResolutionNs < started) {
    std::lock_guard<std::mutex> lock(memo.mutex);
    if (memo.files.size() >= kMaxMemoFiles) memo.files.clear();
    memo.files.insert_or_assign(path, file);
  }
  return file;
}

}  // namespace jk::cache
