// The file identities of file_identity.hpp. The build-id is read from the
// ELF program headers' PT_NOTE segments (note type NT_GNU_BUILD_ID, owner
// "GNU"), which sit in the first pages of a shared library.
#include "jitkernel/cache/file_identity.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {
namespace {

template <typename T>
T get_le(const unsigned char* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= T(p[i]) << (8 * i);
  return v;
}

// The build-id of a 64-bit little-endian ELF file, as hex.
std::optional<std::string> elf_build_id(int fd) {
  constexpr std::uint32_t kPtNote = 4;
  constexpr std::uint32_t kNtGnuBuildId = 3;
  unsigned char eh[64];
  if (!read_at(fd, eh, sizeof(eh), 0)) return std::nullopt;
  if (std::memcmp(eh, "\x7f" "ELF", 4) != 0 || eh[4] != 2 /* 64-bit */ || eh[5] != 1 /* LE */)
    return std::nullopt;
  const auto phoff = get_le<std::uint64_t>(eh + 32);
  const auto phentsize = get_le<std::uint16_t>(eh + 54);
  const auto phnum = get_le<std::uint16_t>(eh + 56);
  if (phentsize < 56 || phnum == 0 || phnum > 256) return std::nullopt;
  std::vector<unsigned char> ph(std::size_t(phentsize) * phnum);
  if (!read_at(fd, ph.data(), ph.size(), phoff)) return std::nullopt;
  for (std::size_t i = 0; i < phnum; ++i) {
    const unsigned char* h = ph.data() + i * phentsize;
    if (get_le<std::uint32_t>(h) != kPtNote) continue;
    const auto offset = get_le<std::uint64_t>(h + 8);
    const auto size = get_le<std::uint64_t>(h + 32);
    if (size > 65536) continue;
    std::vector<unsigned char> notes(size);
    if (!read_at(fd, notes.data(), notes.size(), offset)) continue;
    // Notes: namesz, descsz, type (4 bytes each), name and desc padded to 4.
    for (std::size_t at = 0; at + 12 <= notes.size();) {
      const auto namesz = get_le<std::uint32_t>(&notes[at]);
      const auto descsz = get_le<std::uint32_t>(&notes[at + 4]);
      const auto type = get_le<std::uint32_t>(&notes[at + 8]);
      const std::size_t name_at = at + 12;
      const std::size_t desc_at = name_at + ((std::size_t(namesz) + 3) & ~std::size_t(3));
      const std::size_t next = desc_at + ((std::size_t(descsz) + 3) & ~std::size_t(3));
      if (next > notes.size() || next <= at) break;
      if (type == kNtGnuBuildId && namesz == 4 && std::memcmp(&notes[name_at], "GNU", 4) == 0 &&
          descsz > 0) {
        static constexpr char kDigits[] = "0123456789abcdef";
        std::string hex;
        for (std::size_t k = 0; k < descsz; ++k) {
          hex += kDigits[notes[desc_at + k] >> 4];
          hex += kDigits[notes[desc_at + k] & 0xf];
        }
        return hex;
      }
      at = next;
    }
  }
  return std::nullopt;
}

std::string size_and_mtime(const struct stat& st) {
  return "size " + std::to_string(st.st_size) + " mtime " + std::to_string(mtime_ns(st));
}

}  // namespace

std::string file_identity(const std::string& path) {
  // O_NONBLOCK: a FIFO in the library's place would otherwise wait for a writer for ever.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  struct stat st;
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "missing";
  if (auto id = elf_build_id(fd.get()))
    return "build-id " + *id + " size " + std::to_string(st.st_size);
  return size_and_mtime(st);
}

std::string stat_fingerprint(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return size_and_mtime(st);
}

std::string head_fingerprint(const std::string& path, std::size_t head_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  struct stat st;
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "missing";
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  std::string head(size < head_bytes ? size : head_bytes, '\0');
  if (!head.empty() && !read_at(fd.get(), head.data(), head.size(), 0)) return "unreadable";
  return "size " + std::to_string(st.st_size) + " head " + to_hex(sha256(head));
}

std::string stat_identity(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return std::to_string(st.st_dev) + " " + std::to_string(st.st_ino) + " " +
         std::to_string(st.st_size) + " " + std::to_string(mtime_ns(st)) + " " +
         std::to_string(ctime_ns(st));
}

}  // namespace jk::cache
