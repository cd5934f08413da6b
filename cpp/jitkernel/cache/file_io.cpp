// The file helpers of file_io.hpp.
#include "jitkernel/cache/file_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace jk::cache {

bool Fd::reset() {
  if (fd_ < 0) return true;
  int r = ::close(fd_);
  fd_ = -1;
  return r == 0;
}

OpenedAs open_for_reading(int dirfd, const char* name, Fd& fd, struct stat& st) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  // It does not change reads of a regular file.
  int raw;
  do {
    raw = ::openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  } while (raw < 0 && errno == EINTR);
  fd = Fd(raw);
  if (!fd) return OpenedAs::Missing;
  if (::fstat(fd.get(), &st) != 0) {
    const int error = errno;
    fd.reset();
    errno = error;
    return OpenedAs::Missing;
  }
  if (!S_ISREG(st.st_mode)) {
    fd.reset();
    return OpenedAs::NotAFile;
  }
  return OpenedAs::File;
}

namespace {
std::atomic<int> injected_read_error{0};
}  // namespace

void fail_next_read(int error) { injected_read_error = error; }

bool read_at(int fd, void* out, std::size_t size, std::uint64_t offset) {
  if (injected_read_error.load(std::memory_order_relaxed) != 0) {
    if (const int error = injected_read_error.exchange(0); error != 0) {
      errno = error;
      return false;
    }
  }
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = 0;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
  return true;
}

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

namespace {

std::int64_t nanoseconds(const struct timespec& t) {
  return std::int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

}  // namespace

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

#if defined(__APPLE__)
std::int64_t mtime_ns(const struct stat& st) { return nanoseconds(st.st_mtimespec); }
std::int64_t ctime_ns(const struct stat& st) { return nanoseconds(st.st_ctimespec); }
#else
std::int64_t mtime_ns(const struct stat& st) { return nanoseconds(st.st_mtim); }
std::int64_t ctime_ns(const struct stat& st) { return nanoseconds(st.st_ctim); }
#endif

std::string errno_text(int error) { return std::strerror(error); }

}  // namespace jk::cache
