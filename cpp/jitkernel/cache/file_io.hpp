// Small POSIX file helpers for the disk cache: an owning file descriptor,
// reads/writes that retry until complete (EINTR, short transfers), and file
// times.
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
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Closes now; returns false (errno set) when close reports an error.
  bool reset();

 private:
  int fd_;
};

// Reads exactly `size` bytes at `offset`; false on an error or end of file.
bool read_at(int fd, void* out, std::size_t size, std::uint64_t offset);

// Writes all `size` bytes at the current position; false (errno set) on error.
bool write_all(int fd, const void* data, std::size_t size);

// Modification time and status-change time in nanoseconds since the epoch.
std::int64_t mtime_ns(const struct stat& st);
std::int64_t ctime_ns(const struct stat& st);

// "No such file or directory" for an errno value.
std::string errno_text(int error);

}  // namespace jk::cache
