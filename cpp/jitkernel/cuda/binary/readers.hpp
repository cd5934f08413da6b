// Shared by the readers of compiled CUDA binaries (ptx_reader.cpp,
// cubin_reader.cpp, fatbin_reader.cpp) and binary_image.cpp: bounds-checked
// reads, overflow-checked numbers, the wording of messages, and the three
// format readers themselves. Internal to cuda/binary/.
//
// The bytes are untrusted (any file a user passes), so parsing is linear in
// their size whatever they hold: every read is bounds-checked, every sum or
// product of numbers read from them is overflow-checked, every loop advances
// through the input, names are views into it (never copied per section), and
// the bytes read from sections, like the names copied or hashed, add up to at
// most the size of the file (a table whose sections overlap cannot make us
// read the same bytes 65,535 times).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cuda/binary/binary_image.hpp"

namespace jk::cuda::binary_detail {

// The argument every error about the bytes names.
inline constexpr const char* kArg = "compiled_source";

// Throws ArgumentError(kArg, "malformed <what>: <detail>").
[[noreturn]] void malformed(const std::string& what, const std::string& detail);

// Bounds-checked little-endian reads over the input.
class Reader {
 public:
  Reader(std::string_view bytes, const char* what) : bytes_(bytes), what_(what) {}
  bool has(std::size_t offset, std::size_t n) const {
    return offset <= bytes_.size() && n <= bytes_.size() - offset;
  }
  void need(std::size_t offset, std::size_t n, const char* field) const {
    if (!has(offset, n)) {
      malformed(what_, std::string(field) + " at byte " + std::to_string(offset) + " (+" +
                           std::to_string(n) + ") runs past the end of the " +
                           std::to_string(bytes_.size()) + " bytes");
    }
  }
  template <typename T>
  T get(std::size_t offset, const char* field = "field") const {
    need(offset, sizeof(T), field);
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;  // hosts are little-endian, as cubins are
  }
  std::string_view slice(std::size_t offset, std::size_t n, const char* field) const {
    need(offset, n, field);
    return bytes_.substr(offset, n);
  }

 private:
  std::string_view bytes_;
  const char* what_;
};

// The first `n` bytes as hex ("7f 45 4c 46 ...").
std::string hex_prefix(std::string_view bytes, std::size_t n = 8);

// `text` with bytes outside printable ASCII escaped (names from damaged files
// end up in messages, which must be valid UTF-8), cut after `max` bytes.
std::string printable(std::string_view text, std::size_t max = 200);
bool is_printable(std::string_view text);

// Numbers written in the input (architecture and PTX ISA versions, PTX
// array sizes and alignments) are parsed with overflow checks: a number that
// does not fit is an error, never a wrapped value.
enum class Decimal { Ok, NotANumber, TooLarge };

Decimal parse_decimal(std::string_view text, std::uint64_t max, std::uint64_t* out);

// Largest SM number an architecture may have (sm_10 ... sm_65535): far above
// any GPU, small enough that no arithmetic on it overflows.
constexpr std::uint64_t kMaxSm = 65535;
// Largest PTX ISA version component.
constexpr std::uint64_t kMaxPtxVersion = 65535;

// `items` separated by ", ", the first `max` of them (a crafted binary can
// list a million entry points; a message names a few and counts the rest).
std::string join(const std::vector<std::string>& items, std::size_t max = 64);

// The format readers: each throws ArgumentError(kArg, ...) for bytes that are
// not a well-formed binary of its format.
BinaryImage parse_ptx(std::string_view bytes);
// A PTX module: optional whitespace/comments, then `.version`.
bool looks_like_ptx(std::string_view bytes);
BinaryImage parse_cubin(std::string_view bytes);
inline constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
BinaryImage parse_fatbin(std::string_view bytes);
// The image of a fatbin the driver would pick for the device (best cubin,
// else PTX), or nullptr when none fits.
const FatbinImage* fatbin_image_for(const BinaryImage& image, int cc_major, int cc_minor);

}  // namespace jk::cuda::binary_detail
