// The files the include closure reads (include_closure.hpp), each read,
// hashed and scanned for #includes once per process while its stat identity
// (device, inode, size, modification and status-change times) stays the same.
// Internal to cache/.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "jitkernel/cache/include_scan.hpp"

namespace jk::cache {

struct ScannedFile {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime = 0;
  std::int64_t ctime = 0;
  std::string state;  // "sha256 <hex>"
  std::vector<IncludeDirective> includes;
};

// `path`'s hash and directives, from the memo while `st` (a fresh stat of
// it) says it is unchanged; nullptr and errno set when it cannot be read.
// A file changed within the timestamps' resolution of being hashed is not
// memoized (it could change again with the same size and times).
// Thread-safe.
std::shared_ptr<const ScannedFile> scanned(const std::string& path, const struct stat& st);

}  // namespace jk::cache
