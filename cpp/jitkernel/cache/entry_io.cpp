// The entry reads and writes of entry_io.hpp.
#include "jitkernel/cache/entry_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <stdexcept>

#include "jitkernel/cache/directory.hpp"
#include "jitkernel/cache/entry.hpp"
#include "jitkernel/cache/eviction.hpp"
#include "jitkernel/cache/file_io.hpp"

namespace jk::cache {

Write write_entry(const std::vector<Folder>& folders, std::size_t into, const Digest& key,
                  EntryKind kind, std::string_view payload, std::uint64_t max_bytes,
                  std::uint64_t& evictions, const char** what, int* error) {
  const Folder& folder = folders[into];
  *what = "opening the folder";
  *error = folder.error();
  if (!folder.ok()) return Write::Failed;
  const std::uint64_t size = std::uint64_t(kEntryHeaderSize) + payload.size();
  const std::string temp = temp_name(key, size);
  const std::string final_name = entry_name(key, kind);
  Fd fd(::openat(folder.fd(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) {
    *what = "creating a file";
    *error = errno;
    return Write::Failed;
  }
  auto give_up = [&](Write result) {
    *error = errno;
    fd.reset();
    ::unlinkat(folder.fd(), temp.c_str(), 0);
    return result;
  };
  if (!make_room(folders, max_bytes, FileId{into, final_name}, evictions)) return give_up(Write::NoRoom);
  const EntryHeaderBytes header = encode_entry_header(key, payload);
  *what = "writing";
  if (!write_all(fd.get(), header.data(), header.size()) ||
      !write_all(fd.get(), payload.data(), payload.size()))
    return give_up(Write::Failed);
  *what = "closing";
  if (!fd.reset()) return give_up(Write::Failed);
  *what = "renaming";
  int renamed = ::renameat(folder.fd(), temp.c_str(), folder.fd(), final_name.c_str());
  if (renamed != 0 && (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)) {
    // An empty folder in the entry's place is removed; anything else is kept.
    if (::unlinkat(folder.fd(), final_name.c_str(), AT_REMOVEDIR) == 0)
      renamed = ::renameat(folder.fd(), temp.c_str(), folder.fd(), final_name.c_str());
    else
      errno = EISDIR;
  }
  if (renamed != 0) {
    // The temp file was created and written, so the folder takes files: what
    // failed is this entry's name, unless the disk itself reports trouble.
    // ENOENT: clear() removed the temp file meanwhile.
    const int e = errno;
    // ESTALE: a network file system lost the folder's handle; skipped silently.
    const Write result = e == ENOENT || e == ESTALE                              ? Write::NoRoom
                         : e == EROFS || e == ENOSPC || e == EDQUOT || e == EIO ? Write::Failed
                                                                                 : Write::EntryInTheWay;
    errno = e;
    return give_up(result);
  }
  return Write::Stored;
}

namespace {

// A read error that means the file is gone (or, on a network file system,
// unreachable for now) rather than damaged.
bool vanished(int error) { return error == ENOENT || error == ESTALE || error == EIO; }

}  // namespace

Read read_entry(const Folder& folder, const Digest& key, EntryKind kind, std::uint64_t max_bytes,
                std::string& payload, Folders whose) {
  if (!folder.ok()) return Read::Missing;
  const std::string name = entry_name(key, kind);
  Fd fd;
  struct stat st;
  switch (open_for_reading(folder.fd(), name.c_str(), fd, st)) {
    case OpenedAs::Missing:
      return Read::Missing;  // a link counts as no entry: it is never opened
    case OpenedAs::NotAFile:
      return Read::Bad;
    case OpenedAs::File:
      break;
  }
  if (whose == Folders::ReadOnly &&
      ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || !trusted_owner(st.st_uid, folder.owner())))
    return Read::Bad;
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  EntryHeaderBytes header;
  if (size < kEntryHeaderSize || size > max_bytes) return Read::Bad;
  if (!read_at(fd.get(), header.data(), header.size(), 0))
    return vanished(errno) ? Read::Missing : Read::Bad;
  if (check_entry_header(header, key, size) != nullptr) return Read::Bad;
  try {
    payload.resize(static_cast<std::size_t>(size - kEntryHeaderSize));
  } catch (const std::bad_alloc&) {
    return Read::Bad;
  } catch (const std::length_error&) {
    return Read::Bad;
  }
  // read_at fails when the file shrank since the fstat.
  if (!read_at(fd.get(), payload.data(), payload.size(), kEntryHeaderSize))
    return vanished(errno) ? Read::Missing : Read::Bad;
  if (!payload_matches(header, payload)) return Read::Bad;
  if (whose == Folders::Own) {
    const struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    ::futimens(fd.get(), times);
  }
  return Read::Hit;
}

}  // namespace jk::cache
