// Small POSIX file helpers for the disk cache: an owning file descriptor,
// the one way every reader opens a file of the cache folder (never blocking,
// never following a link), reads/writes that retry until complete (EINTR,
// short transfers), and file times.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace jk::cache {

// Owns a file descriptor (closed on destruction; -1: none).
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Closes now; returns false (errno set) when close reports an error.
  bool reset();

 private:
  int fd_;
};

// Opening a file of the cache folder for reading. Whatever the folder holds
// in its place (a FIFO, a device, a socket, a folder, a link), the open
// neither blocks nor follows a link: O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
// then fstat of the opened descriptor decides.
enum class OpenedAs {
  File,        // a regular file: `fd` and `st` are set
  Missing,     // could not be opened (none, a symbolic link, no permission)
               // or not fstat'ed (a stale network file handle); errno set
  NotAFile,    // something else is there (closed again)
};
OpenedAs open_for_reading(int dirfd, const char* name, Fd& fd, struct stat& st);

// Reads exactly `size` bytes at `offset`; false on an error (errno set) or
// end of file (errno 0).
bool read_at(int fd, void* out, std::size_t size, std::uint64_t offset);

// Tests: the next read_at in this process fails with `error` (0: none), as a
// network file system's read may (ESTALE, EIO).
void fail_next_read(int error);

// Writes all `size` bytes at the current position; false (errno set) on error.
bool write_all(int fd, const void* data, std::size_t size);

// The current time (the system clock, which file times are stamped from) in
// nanoseconds since the epoch.
std::int64_t now_ns();

// Modification time and status-change time in nanoseconds since the epoch.
std::int64_t mtime_ns(const struct stat& st);
std::int64_t ctime_ns(const struct stat& st);

// "No such file or directory" for an errno value.
std::string errno_text(int error);

}  // namespace jk::cache
