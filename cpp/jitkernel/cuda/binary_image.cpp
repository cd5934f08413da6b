// Parsing of PTX text, ELF cubins and fatbins (see binary_image.hpp).
//
// Encoding facts, checked against cuobjdump -elf on cubins from nvcc 13.0,
// NVRTC 13.5 and NVRTC 12.9 for sm_75 ... sm_120a:
// - cubin: ELF64 little-endian, e_machine EM_CUDA (190), EI_OSABI 0x41.
//   EI_ABIVERSION 7 (CUDA <= 12, pre-Blackwell): SM number in e_flags bits
//   0-7, virtual SM in bits 16-23, 0x800 = arch-specific 'a' (sm_90a:
//   0x5a0d5a, sm_90: 0x5a055a). EI_ABIVERSION 8 (CUDA 13, and CUDA 12 for
//   sm_100+): SM number in bits 8-15 (sm_90: 0x06005a04, sm_100: 0x06006402);
//   CUDA 12.9 marks 'a' with bit 0x8, CUDA 13 leaves it clear and instead
//   writes EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET (attribute 9) = 1 in the
//   .nv.compat section. 'f' cubins are identical to plain ones.
// - Entry points are STT_FUNC symbols whose st_other has 0x10 (cuobjdump
//   prints ENTRY); device functions lack it. Each entry has a SHT_CUDA_INFO
//   (0x70000000) section ".nv.info.<name>" whose sh_info is the entry's
//   .text section index.
// - .nv.info / .nv.compat records: u8 format, u8 attribute, u16 value; format
//   4 (SVAL) means the u16 is a payload size and the payload follows.
//   EIATTR_KPARAM_INFO (0x17) payload, 12 bytes: u32 index, u16 ordinal,
//   u16 offset, u32 flags with the size in bits 18-31. Records are stored
//   from the last parameter to the first. Kernels with more than 4 KiB of
//   parameters use EIATTR_KPARAM_INFO_V2 (0x45): same, but the size is the
//   low 16 bits of the last u32. EIATTR_CBANK_PARAM_SIZE (0x19)
//   holds the total parameter bytes. A kernel without parameters has none.
// - fatbin: u32 magic 0xBA55ED50, u16 version, u16 header size, u64 payload
//   size; then images, each: u16 kind (1 PTX, 2 ELF), u16, u32 header size,
//   u64 payload size, ..., at +28 u32 SM number, at +40 u64 flags (0x100000
//   'a', 0x200000 'f', 0x2000 / 0x8000 compressed with LZ4 / zstd).
// - PTX: `.version X.Y` is the first directive; `.target sm_XY[a|f][, ...]`;
//   kernels are `.entry name ( .param .<type> [.ptr ...] [.align N] name[K], ... )`.
//
// The bytes are untrusted (any file a user passes), so parsing is linear in
// their size whatever they hold: every read is bounds-checked, every sum or
// product of numbers read from them is overflow-checked, every loop advances
// through the input, names are views into it (never copied per section), and
// the bytes read from sections, like the names copied or hashed, add up to at
// most the size of the file (a table whose sections overlap cannot make us
// read the same bytes 65,535 times).
#include "jitkernel/cuda/binary_image.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <unordered_map>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/device.hpp"

namespace jk::cuda {
namespace {

constexpr const char* kArg = "compiled_source";

[[noreturn]] void malformed(const std::string& what, const std::string& detail) {
  throw ArgumentError(kArg, "malformed " + what + ": " + detail);
}

// ---------------------------------------------------------------- bytes ---

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

std::string hex_prefix(std::string_view bytes, std::size_t n = 8) {
  std::string out;
  char buf[4];
  for (std::size_t i = 0; i < std::min(n, bytes.size()); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(bytes[i]));
    if (i) out += ' ';
    out += buf;
  }
  if (bytes.size() > n) out += " ...";
  return out;
}

// `text` with bytes outside printable ASCII escaped (names from damaged files
// end up in messages, which must be valid UTF-8), cut after `max` bytes.
std::string printable(std::string_view text, std::size_t max = 200) {
  std::string out;
  char buf[8];
  const bool cut = text.size() > max;
  if (cut) text = text.substr(0, max);
  for (char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += c;
    } else {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  if (cut) out += "...";
  return out;
}

bool is_printable(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

// ------------------------------------------------------------- numbers ---

// Numbers written in the input (architecture and PTX ISA versions, PTX
// array sizes and alignments) are parsed with overflow checks: a number that
// does not fit is an error, never a wrapped value.
enum class Decimal { Ok, NotANumber, TooLarge };

Decimal parse_decimal(std::string_view text, std::uint64_t max, std::uint64_t* out) {
  if (text.empty()) return Decimal::NotANumber;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Decimal::NotANumber;
    if (__builtin_mul_overflow(value, 10u, &value) ||
        __builtin_add_overflow(value, static_cast<unsigned>(c - '0'), &value) || value > max) {
      return Decimal::TooLarge;
    }
  }
  *out = value;
  return Decimal::Ok;
}

// Largest SM number an architecture may have (sm_10 ... sm_65535): far above
// any GPU, small enough that no arithmetic on it overflows.
constexpr std::uint64_t kMaxSm = 65535;
// Largest PTX ISA version component.
constexpr std::uint64_t kMaxPtxVersion = 65535;

// `items` separated by ", ", the first `max` of them (a crafted binary can
// list a million entry points; a message names a few and counts the rest).
std::string join(const std::vector<std::string>& items, std::size_t max = 64) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max; ++i) {
    if (i) out += ", ";
    out += printable(items[i], 4096);
  }
  if (items.size() > max) out += " and " + std::to_string(items.size() - max) + " more";
  return out;
}

// ------------------------------------------------------------------ PTX ---

// Strips // and /* */ comments (PTX has no string literals in directives we read).
std::string strip_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (text.compare(i, 2, "/*") == 0) {
      std::size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
      out += ' ';
    } else {
      out += text[i++];
    }
  }
  return out;
}

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' ||
         c == '.';
}

// Tokens of PTX after comment stripping, read one at a time as views into the
// text (a module of millions of one-character tokens costs no memory per
// token): identifiers/directives/numbers, and single punctuation characters.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) { advance(); }
  bool done() const { return current_.empty(); }  // tokens are never empty
  std::string_view peek() const { return current_; }
  std::string_view next() {
    std::string_view token = current_;
    advance();
    return token;
  }

 private:
  void advance() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    std::size_t end = pos_;
    if (end < text_.size() && is_ident_char(text_[end])) {
      while (end < text_.size() && is_ident_char(text_[end])) ++end;
    } else if (end < text_.size()) {
      ++end;
    }
    current_ = text_.substr(pos_, end - pos_);
    pos_ = end;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string_view current_;
};

// [A-Za-z_$%][A-Za-z0-9_$]*, as PTX spells names (mangled C++ names included).
bool is_ptx_identifier(std::string_view t) {
  if (t.empty() || std::isdigit(static_cast<unsigned char>(t[0]))) return false;
  for (char c : t) {
    if (c == '.' || !is_ident_char(c)) return false;
  }
  return t[0] != '%' || t.size() > 1;
}

std::optional<std::size_t> ptx_type_size(std::string_view type) {
  static constexpr std::pair<std::string_view, std::size_t> kSizes[] = {
      {".b8", 1},  {".s8", 1},  {".u8", 1},  {".b16", 2},   {".s16", 2},  {".u16", 2},
      {".f16", 2}, {".bf16", 2}, {".b32", 4}, {".s32", 4},  {".u32", 4},  {".f32", 4},
      {".f16x2", 4}, {".bf16x2", 4}, {".b64", 8}, {".s64", 8}, {".u64", 8}, {".f64", 8},
      {".b128", 16}, {".pred", 1},
  };
  for (const auto& [name, size] : kSizes) {
    if (name == type) return size;
  }
  return std::nullopt;
}

// `.target sm_90a` / `sm_100f` / `sm_80`: the architecture, or an error naming
// the target (an SM number too large to be one is refused, not wrapped).
SmArch parse_ptx_target(std::string_view text) {
  const std::string shown = "PTX .target '" + printable(text) + "'";
  std::size_t digits = 0;
  if (text.substr(0, 3) == "sm_") {
    while (3 + digits < text.size() && std::isdigit(static_cast<unsigned char>(text[3 + digits]))) {
      ++digits;
    }
  }
  std::string_view rest = text.substr(std::min(text.size(), 3 + digits));
  char variant = '\0';
  if (!rest.empty() && (rest[0] == 'a' || rest[0] == 'f')) {
    variant = rest[0];
    rest.remove_prefix(1);
  }
  std::uint64_t number = 0;
  if (digits == 0 || !rest.empty()) {
    throw ArgumentError(kArg, shown + " names no sm_XY architecture");
  }
  if (parse_decimal(text.substr(3, digits), kMaxSm, &number) != Decimal::Ok) {
    throw ArgumentError(kArg, shown + ": the architecture number is too large (at most sm_" +
                                  std::to_string(kMaxSm) + ")");
  }
  if (number < 10) throw ArgumentError(kArg, shown + " names no sm_XY architecture");
  return SmArch::from_number(static_cast<int>(number), variant);
}

// `.version X.Y` into the image.
void parse_ptx_version(std::string_view text, BinaryImage* image) {
  const std::string shown = "PTX .version '" + printable(text) + "'";
  const std::size_t dot = text.find('.');
  std::uint64_t major = 0, minor = 0;
  const Decimal a = dot == std::string_view::npos
                        ? Decimal::NotANumber
                        : parse_decimal(text.substr(0, dot), kMaxPtxVersion, &major);
  const Decimal b = dot == std::string_view::npos
                        ? Decimal::NotANumber
                        : parse_decimal(text.substr(dot + 1), kMaxPtxVersion, &minor);
  if (a == Decimal::NotANumber || b == Decimal::NotANumber) {
    throw ArgumentError(kArg, shown + " is not of the form X.Y");
  }
  if (a == Decimal::TooLarge || b == Decimal::TooLarge) {
    throw ArgumentError(kArg, shown + ": a version number is too large (at most " +
                                  std::to_string(kMaxPtxVersion) + ")");
  }
  image->ptx_version_major = static_cast<int>(major);
  image->ptx_version_minor = static_cast<int>(minor);
}

// Parameter list of one .entry: tokens from just after '(' through the
// matching ')'. nullopt when it holds a form we do not know; an error when
// its sizes do not fit in 64 bits.
std::optional<std::vector<KernelParam>> parse_ptx_params(Lexer& lex, std::string_view entry) {
  auto too_large = [&]() {
    throw ArgumentError(kArg, "PTX .entry '" + printable(entry) +
                                  "' declares parameters whose sizes do not fit in 64 bits");
  };
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  std::vector<KernelParam> params;
  std::uint64_t offset = 0;
  bool ok = true;
  while (!lex.done() && lex.peek() != ")") {
    std::string_view t = lex.next();
    if (t == ",") continue;
    if (t != ".param") {  // unexpected: skip to the end of the list
      ok = false;
      continue;
    }
    std::uint64_t align = 0, elem = 0, count = 1;
    while (!lex.done() && lex.peek() != "," && lex.peek() != ")") {
      t = lex.next();
      if (t == ".align" && !lex.done()) {
        const Decimal d = parse_decimal(lex.next(), kMax, &align);
        if (d == Decimal::TooLarge) too_large();
        if (d == Decimal::NotANumber) ok = false;
        continue;
      }
      if (auto size = ptx_type_size(t)) {
        elem = *size;
      } else if (t == "[" && !lex.done()) {
        std::uint64_t n = 0;
        const Decimal d = parse_decimal(lex.peek(), kMax, &n);
        if (d == Decimal::TooLarge) too_large();
        if (d == Decimal::NotANumber) {
          ok = false;  // `[]` or a non-number: a layout we do not know
          continue;
        }
        lex.next();
        if (__builtin_mul_overflow(count, n, &count)) too_large();
      }
      // state spaces (.ptr .global ...), the name, ']' are skipped
    }
    if (elem == 0) {
      ok = false;
      continue;
    }
    const std::uint64_t a = std::max(align, elem);
    std::uint64_t size = 0, end = 0;
    if (__builtin_mul_overflow(elem, count, &size) || __builtin_add_overflow(offset, a - 1, &end)) {
      too_large();
    }
    offset = end / a * a;
    params.push_back({offset, size});
    if (__builtin_add_overflow(offset, size, &offset)) too_large();
  }
  if (!lex.done()) lex.next();  // ')'
  if (!ok) return std::nullopt;
  return params;
}

BinaryImage parse_ptx(std::string_view bytes) {
  // Text up to the first NUL; anything but NULs after it is not PTX.
  std::size_t nul = bytes.find('\0');
  if (nul != std::string_view::npos &&
      bytes.find_first_not_of('\0', nul) != std::string_view::npos) {
    throw ArgumentError(kArg, "PTX text contains a NUL byte at offset " + std::to_string(nul) +
                                  " followed by more data");
  }
  const std::string text = strip_comments(bytes.substr(0, nul));
  BinaryImage image;
  image.format = BinaryFormat::Ptx;

  Lexer lex(text);
  // `.version X.Y`: tokenized as ".version" "X.Y" since '.' is an identifier char.
  if (lex.next() != ".version" || lex.done()) {
    throw ArgumentError(kArg, "PTX text must start with a .version directive");
  }
  parse_ptx_version(lex.next(), &image);
  // One pass: the first `.target` ("sm_90a" or "sm_80, debug"), every `.entry`.
  while (!lex.done()) {
    const std::string_view t = lex.next();
    if (t == ".target" && !image.arch) {
      image.arch = parse_ptx_target(lex.done() ? std::string_view() : lex.next());
    } else if (t == ".entry" && !lex.done()) {
      const std::string_view name = lex.next();
      if (!is_ptx_identifier(name)) {
        throw ArgumentError(kArg, "PTX .entry followed by '" + printable(name) +
                                      "', which is not a name");
      }
      EntryPoint entry;
      entry.name = std::string(name);
      if (lex.peek() == "(") {
        lex.next();
        entry.params = parse_ptx_params(lex, name);
      } else {
        entry.params = std::vector<KernelParam>{};  // `.entry name {` : no parameters
      }
      image.entries.push_back(std::move(entry));
    }
  }
  if (!image.arch) throw ArgumentError(kArg, "PTX text has no .target directive");
  return image;
}

// A PTX module: optional whitespace/comments, then `.version`.
bool looks_like_ptx(std::string_view bytes) {
  std::size_t i = 0;
  while (i < bytes.size()) {
    if (std::isspace(static_cast<unsigned char>(bytes[i]))) {
      ++i;
    } else if (bytes.compare(i, 2, "//") == 0) {
      while (i < bytes.size() && bytes[i] != '\n') ++i;
    } else if (bytes.compare(i, 2, "/*") == 0) {
      std::size_t end = bytes.find("*/", i + 2);
      if (end == std::string_view::npos) return false;
      i = end + 2;
    } else {
      break;
    }
  }
  return bytes.compare(i, 8, ".version") == 0;
}

// ------------------------------------------------------------------ ELF ---

constexpr const char* kElf = "ELF cubin";
constexpr std::uint16_t kEmCuda = 190;
constexpr std::uint32_t kShtSymtab = 2;
constexpr std::uint32_t kShtNobits = 8;
constexpr std::uint32_t kShtCudaInfo = 0x70000000;
constexpr std::uint8_t kSttFunc = 2;
constexpr std::uint8_t kStoCudaEntry = 0x10;
constexpr std::uint8_t kEifmtSval = 4;
constexpr std::uint8_t kEiattrKparamInfo = 0x17;
constexpr std::uint8_t kEiattrKparamInfoV2 = 0x45;
constexpr std::uint8_t kEicompatAcceleratorTarget = 9;
constexpr std::string_view kInfoPrefix = ".nv.info.";

struct Section {
  std::string_view name;  // into the section name table
  std::uint32_t name_index = 0;
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0;
  std::uint32_t link = 0, info = 0;
};

// Bytes read from sections (or names copied out of string tables), which a
// well-formed cubin keeps within its size: its sections do not overlap and
// its entry names are stored once each. Without this bound, 65,535 section
// headers naming the same megabyte would have it read 65,535 times.
class ReadBudget {
 public:
  ReadBudget(std::size_t limit, const char* what) : left_(limit), what_(what) {}
  void spend(std::uint64_t n) {
    if (n > left_) {
      malformed(kElf, std::string(what_) + " overlap: reading them takes more bytes than the " +
                          "file holds");
    }
    left_ -= n;
  }

 private:
  std::uint64_t left_;
  const char* what_;
};

// A string table: names as views into the file. The ends of its strings are
// found in one pass over the table, so a lookup costs the same however long
// the name is and however many sections share it.
class StringTable {
 public:
  StringTable(const Reader& elf, const Section& s)
      : strings_(elf.slice(s.offset, s.size, "string table")) {
    for (std::size_t i = 0; i < strings_.size(); ++i) {
      if (strings_[i] == '\0') nuls_.push_back(i);
    }
  }
  std::string_view at(std::uint64_t index) const {
    if (index >= strings_.size()) malformed(kElf, "string index out of range");
    auto end = std::lower_bound(nuls_.begin(), nuls_.end(), index);
    if (end == nuls_.end()) malformed(kElf, "unterminated string");
    return strings_.substr(index, *end - index);
  }

 private:
  std::string_view strings_;
  std::vector<std::size_t> nuls_;  // positions of the NUL bytes, ascending
};

// The bytes of section `s`, counted against `budget`.
std::string_view contents(const Reader& elf, const Section& s, ReadBudget& budget) {
  std::string_view bytes = elf.slice(s.offset, s.size, "section contents");
  budget.spend(bytes.size());
  return bytes;
}

struct Record {
  std::uint8_t format, attribute;
  std::uint16_t value;       // non-SVAL value
  std::string_view payload;  // SVAL payload
};

// Calls `f(record)` for each record of a .nv.info / .nv.compat section.
template <typename F>
void for_each_record(std::string_view bytes, const Section& s, F&& f) {
  std::size_t pos = 0;
  while (bytes.size() - pos >= 4) {
    Record r{static_cast<std::uint8_t>(bytes[pos]), static_cast<std::uint8_t>(bytes[pos + 1]), 0,
             {}};
    std::memcpy(&r.value, bytes.data() + pos + 2, 2);
    pos += 4;
    if (r.format == kEifmtSval) {
      if (r.value > bytes.size() - pos) {
        malformed(kElf, "attribute record past the end of section " + printable(s.name));
      }
      r.payload = bytes.substr(pos, r.value);
      pos += r.value;
    }
    f(r);
  }
}

std::optional<std::vector<KernelParam>> params_from_info(std::string_view bytes,
                                                         const Section& info) {
  std::map<std::uint16_t, KernelParam> by_ordinal;
  bool understood = true;
  for_each_record(bytes, info, [&](const Record& r) {
    const bool v1 = r.attribute == kEiattrKparamInfo, v2 = r.attribute == kEiattrKparamInfoV2;
    if (!understood || r.format != kEifmtSval || !(v1 || v2)) return;
    if (r.payload.size() < 12) {
      understood = false;
      return;
    }
    std::uint16_t ordinal, offset;
    std::uint32_t word;
    std::memcpy(&ordinal, r.payload.data() + 4, 2);
    std::memcpy(&offset, r.payload.data() + 6, 2);
    std::memcpy(&word, r.payload.data() + 8, 4);
    const std::size_t size = v1 ? (word >> 18) & 0x3fff : word & 0xffff;
    if (!by_ordinal.emplace(ordinal, KernelParam{offset, size}).second) {
      understood = false;  // duplicate ordinal: not a layout we understand
    }
  });
  if (!understood) return std::nullopt;
  std::vector<KernelParam> params;
  for (const auto& [ordinal, param] : by_ordinal) {
    if (ordinal != params.size()) return std::nullopt;  // gap
    params.push_back(param);
  }
  return params;
}

BinaryImage parse_cubin(std::string_view bytes) {
  const char* what = kElf;
  Reader elf(bytes, what);
  elf.need(0, 64, "ELF header");
  if (std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0) malformed(what, "no ELF magic number");
  if (bytes[4] != 2) {
    throw ArgumentError(kArg, "a 32-bit ELF file; CUDA cubins for 64-bit hosts are ELF64");
  }
  if (bytes[5] != 1) throw ArgumentError(kArg, "a big-endian ELF file; cubins are little-endian");
  const auto machine = elf.get<std::uint16_t>(18);
  if (machine != kEmCuda) {
    throw ArgumentError(kArg, "an ELF file for machine " + std::to_string(machine) +
                                  ", not a CUDA cubin (machine 190); pass the cubin "
                                  "(nvcc -cubin), the fatbin (nvcc -fatbin) or PTX (nvcc -ptx), "
                                  "not a host object or library");
  }
  BinaryImage image;
  image.format = BinaryFormat::Cubin;
  image.elf_abi_version = static_cast<unsigned char>(bytes[8]);
  const auto flags = elf.get<std::uint32_t>(48);
  const auto shoff = elf.get<std::uint64_t>(40, "e_shoff");
  const auto shentsize = elf.get<std::uint16_t>(58);
  const auto shnum = elf.get<std::uint16_t>(60);
  const auto shstrndx = elf.get<std::uint16_t>(62);

  int sm;
  bool accelerated;
  if (image.elf_abi_version >= 8) {
    sm = (flags >> 8) & 0xff;
    accelerated = (flags & 0x8) != 0;
  } else {
    sm = flags & 0xff;
    accelerated = (flags & 0x800) != 0;
  }

  // Program headers and the segments they describe must lie in the data
  // (the driver loads segments; a truncated file cannot be loaded).
  const auto phoff = elf.get<std::uint64_t>(32, "e_phoff");
  const auto phentsize = elf.get<std::uint16_t>(54);
  const auto phnum = elf.get<std::uint16_t>(56);
  if (phnum) {
    if (phentsize < 56) {
      malformed(what, "program header entries of " + std::to_string(phentsize) + " bytes");
    }
    elf.need(phoff, std::size_t(phnum) * phentsize, "program header table");
    for (std::size_t i = 0; i < phnum; ++i) {
      const std::size_t h = phoff + i * phentsize;  // within the table checked above
      elf.need(elf.get<std::uint64_t>(h + 8), elf.get<std::uint64_t>(h + 32), "program segment");
    }
  }

  // Section headers (at most 65,535 of at least 64 bytes each, all in the data).
  if (shnum == 0 || shentsize < 64) malformed(what, "no section header table");
  if (shstrndx >= shnum) malformed(what, "section name table index out of range");
  elf.need(shoff, std::size_t(shnum) * shentsize, "section header table");
  std::vector<Section> sections(shnum);
  for (std::size_t i = 0; i < shnum; ++i) {
    const std::size_t h = shoff + i * shentsize;
    Section& s = sections[i];
    s.name_index = elf.get<std::uint32_t>(h);
    s.type = elf.get<std::uint32_t>(h + 4);
    s.offset = elf.get<std::uint64_t>(h + 24);
    s.size = elf.get<std::uint64_t>(h + 32);
    s.link = elf.get<std::uint32_t>(h + 40);
    s.info = elf.get<std::uint32_t>(h + 44);
    if (s.type != kShtNobits) elf.need(s.offset, s.size, "section contents");
  }
  const StringTable section_names(elf, sections[shstrndx]);
  for (Section& s : sections) s.name = section_names.at(s.name_index);

  ReadBudget sections_read(bytes.size(), "its sections");
  ReadBudget names_read(bytes.size(), "its names");

  // 'a' marker of CUDA 13 cubins, in .nv.compat.
  for (const Section& s : sections) {
    if (s.name != ".nv.compat") continue;
    for_each_record(contents(elf, s, sections_read), s, [&](const Record& r) {
      if (r.format != kEifmtSval && r.attribute == kEicompatAcceleratorTarget && r.value != 0) {
        accelerated = true;
      }
    });
  }
  if (sm < 10) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", flags);
    malformed(what, std::string("e_flags ") + buf + " name no SM architecture");
  }
  image.arch = SmArch::from_number(sm, accelerated ? 'a' : '\0');

  // Entry symbols.
  const Section* symtab = nullptr;
  for (const Section& s : sections) {
    if (s.type == kShtSymtab) symtab = &s;
  }
  if (!symtab) return image;  // no symbols: no entry points
  if (symtab->link >= sections.size()) malformed(what, "symbol string table index out of range");
  const StringTable symbol_names(elf, sections[symtab->link]);
  const std::string_view symbols = contents(elf, *symtab, sections_read);
  std::map<std::uint32_t, std::size_t> entry_by_section;  // .text section index -> entry
  for (std::size_t p = 0; symbols.size() - p >= 24; p += 24) {
    std::uint32_t name;
    std::uint16_t shndx;
    std::memcpy(&name, symbols.data() + p, 4);
    const auto info = static_cast<std::uint8_t>(symbols[p + 4]);
    const auto other = static_cast<std::uint8_t>(symbols[p + 5]);
    std::memcpy(&shndx, symbols.data() + p + 6, 2);
    if ((info & 0xf) != kSttFunc || !(other & kStoCudaEntry)) continue;
    const std::string_view symbol = symbol_names.at(name);
    names_read.spend(symbol.size());
    if (symbol.empty() || !is_printable(symbol)) {
      malformed(what, "entry point name '" + printable(symbol) + "' is not printable ASCII");
    }
    entry_by_section[shndx] = image.entries.size();
    image.entries.push_back({std::string(symbol), std::nullopt});
  }
  // Parameters from each entry's .nv.info.<name>: the entry whose .text
  // section is its sh_info, else the entry of that name.
  std::unordered_map<std::string_view, std::size_t> entry_by_name;
  for (std::size_t i = 0; i < image.entries.size(); ++i) {
    entry_by_name.emplace(image.entries[i].name, i);
  }
  for (const Section& s : sections) {
    if (s.type != kShtCudaInfo || s.name.substr(0, kInfoPrefix.size()) != kInfoPrefix) continue;
    EntryPoint* entry = nullptr;
    if (auto it = entry_by_section.find(s.info); it != entry_by_section.end()) {
      entry = &image.entries[it->second];
    } else {
      const std::string_view entry_name = s.name.substr(kInfoPrefix.size());
      names_read.spend(entry_name.size());  // hashed for the lookup
      if (auto named = entry_by_name.find(entry_name); named != entry_by_name.end()) {
        entry = &image.entries[named->second];
      }
    }
    if (entry) entry->params = params_from_info(contents(elf, s, sections_read), s);
  }
  return image;
}

// --------------------------------------------------------------- fatbin ---

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;

BinaryImage parse_fatbin(std::string_view bytes) {
  const char* what = "fatbin";
  Reader fat(bytes, what);
  BinaryImage image;
  image.format = BinaryFormat::Fatbin;
  image.entries_known = false;
  const auto header_size = fat.get<std::uint16_t>(6, "fatbin header");
  const auto payload_size = fat.get<std::uint64_t>(8, "fatbin header");
  if (header_size < 16) malformed(what, "header size " + std::to_string(header_size));
  fat.need(header_size, payload_size, "fatbin payload");
  std::size_t pos = header_size, end = header_size + payload_size;
  while (pos + 48 <= end) {
    const auto kind = fat.get<std::uint16_t>(pos);
    const auto entry_header = fat.get<std::uint32_t>(pos + 4);
    const auto size = fat.get<std::uint64_t>(pos + 8);
    const auto sm = fat.get<std::uint32_t>(pos + 28);
    const auto flags = fat.get<std::uint64_t>(pos + 40);
    // pos <= end <= bytes.size() and entry_header < 2**32: the sums cannot wrap.
    if (entry_header < 48 || pos + entry_header > end || size > end - (pos + entry_header)) {
      malformed(what, "image at byte " + std::to_string(pos) + " runs past the payload");
    }
    if (sm > kMaxSm) {
      malformed(what, "image at byte " + std::to_string(pos) + " is for architecture number " +
                          std::to_string(sm) + ", which is too large (at most sm_" +
                          std::to_string(kMaxSm) + ")");
    }
    if (kind == 1 || kind == 2) {
      FatbinImage im;
      im.is_ptx = kind == 1;
      char variant = (flags & 0x100000) ? 'a' : (flags & 0x200000) ? 'f' : '\0';
      im.arch = SmArch::from_number(static_cast<int>(sm), variant);
      im.compressed = (flags & 0xA000) != 0;
      im.offset = pos + entry_header;
      im.size = size;
      image.images.push_back(im);
    }
    pos += entry_header + size;
  }
  if (image.images.empty()) malformed(what, "it holds no cubin or PTX image");
  // Entry points from the first image we can read (all come from one source).
  for (const FatbinImage& im : image.images) {
    if (im.compressed) continue;
    std::string_view payload = bytes.substr(im.offset, im.size);
    try {
      BinaryImage inner = im.is_ptx ? parse_ptx(payload) : parse_cubin(payload);
      image.entries = std::move(inner.entries);
      image.entries_known = true;
      break;
    } catch (const ArgumentError&) {
      // an image we cannot read: try the next one
    }
  }
  return image;
}

// The image of a fatbin the driver would pick for the device (best cubin,
// else PTX), or nullptr when none fits.
const FatbinImage* fatbin_image_for(const BinaryImage& image, int cc_major, int cc_minor) {
  const FatbinImage* best = nullptr;
  for (const FatbinImage& im : image.images) {  // best cubin: highest compatible SM
    if (!im.is_ptx && cubin_runs_on(im.arch, cc_major, cc_minor) &&
        (!best || im.arch.number() > best->arch.number())) {
      best = &im;
    }
  }
  if (best) return best;
  for (const FatbinImage& im : image.images) {
    if (im.is_ptx && ptx_runs_on(im.arch, cc_major, cc_minor) &&
        (!best || im.arch.number() > best->arch.number())) {
      best = &im;
    }
  }
  return best;
}

}  // namespace

// ----------------------------------------------------------------- API ---

const char* binary_format_name(BinaryFormat format) {
  switch (format) {
    case BinaryFormat::Ptx: return "ptx";
    case BinaryFormat::Cubin: return "cubin";
    case BinaryFormat::Fatbin: return "fatbin";
  }
  return "?";
}

std::string SmArch::name() const {
  std::string out = "sm_" + std::to_string(number());
  if (variant) out += variant;
  return out;
}

SmArch SmArch::from_number(int sm, char variant) {
  return SmArch{sm / 10, sm % 10, variant};
}

bool cubin_runs_on(const SmArch& code, int cc_major, int cc_minor) {
  if (code.major != cc_major) return false;
  return code.variant == 'a' ? code.minor == cc_minor : code.minor <= cc_minor;
}

bool ptx_runs_on(const SmArch& code, int cc_major, int cc_minor) {
  if (code.variant == 'a') return code.major == cc_major && code.minor == cc_minor;
  if (code.variant == 'f') return code.major == cc_major && code.minor <= cc_minor;
  return code.number() <= cc_major * 10 + cc_minor;
}

BinaryImage parse_binary(std::string_view bytes) {
  if (bytes.empty()) {
    throw ArgumentError(kArg, "is empty; expected PTX text, an ELF cubin or a fatbin");
  }
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "\x7f" "ELF", 4) == 0) {
    return parse_cubin(bytes);
  }
  if (bytes.size() >= 4) {
    std::uint32_t magic;
    std::memcpy(&magic, bytes.data(), 4);
    if (magic == kFatbinMagic) return parse_fatbin(bytes);
  }
  if (looks_like_ptx(bytes)) return parse_ptx(bytes);
  std::string message = "expected PTX text, an ELF cubin or a fatbin; got " +
                        std::to_string(bytes.size()) + " bytes starting " + hex_prefix(bytes);
  if (bytes.find("__global__") != std::string_view::npos) {
    message += " (this looks like CUDA C++ source: compile it first, e.g. with "
               "jitkernel.compile_cuda(source), or use jitkernel.cuda_kernel)";
  }
  throw ArgumentError(kArg, message);
}

const EntryPoint* find_entry(const BinaryImage& image, const std::string& name) {
  if (!image.entries_known) return nullptr;
  for (const EntryPoint& e : image.entries) {
    if (e.name == name) return &e;
  }
  std::vector<std::string> names;
  for (const EntryPoint& e : image.entries) names.push_back(e.name);
  throw_missing_entry(name, image.format, names);
}

void throw_missing_entry(const std::string& name, BinaryFormat format,
                         const std::optional<std::vector<std::string>>& entry_names) {
  std::string listed;
  if (!entry_names) {
    listed = " (its entry points could not be listed)";
  } else if (entry_names->empty()) {
    listed = "; it has no entry points";
  } else {
    listed = "; entry points in this binary: " + join(*entry_names);
  }
  throw ArgumentError("name", "no entry point '" + name + "' in this " +
                                  binary_format_name(format) + listed +
                                  " (C++ kernels need their mangled name, or extern \"C\")");
}

void check_arch(const BinaryImage& image, int cc_major, int cc_minor,
                const std::string& device_label, const std::string& device_name) {
  const std::string device = device_label + " is sm_" + std::to_string(cc_major * 10 + cc_minor) +
                             " (" + device_name + ")";
  const std::string suggestion = arch_for(cc_major, cc_minor);  // what NVRTC compiles for it
  switch (image.format) {
    case BinaryFormat::Cubin:
      if (!cubin_runs_on(*image.arch, cc_major, cc_minor)) {
        throw ArgumentError(kArg, "cubin built for " + image.arch->name() + " but " + device +
                                      "; compile it for " + suggestion +
                                      " (e.g. nvcc -cubin -arch=" + suggestion + ") or pass PTX");
      }
      return;
    case BinaryFormat::Ptx:
      if (!ptx_runs_on(*image.arch, cc_major, cc_minor)) {
        throw ArgumentError(kArg, "PTX targets " + image.arch->name() + " but " + device +
                                      ", which cannot run it; compile for " + suggestion +
                                      " or an older architecture");
      }
      return;
    case BinaryFormat::Fatbin:
      if (!fatbin_image_for(image, cc_major, cc_minor)) {
        std::vector<std::string> held;
        for (const FatbinImage& im : image.images) {
          held.push_back((im.is_ptx ? "PTX for " : "cubin for ") + im.arch.name());
        }
        throw ArgumentError(kArg, "fatbin holds " + join(held) + " but " + device +
                                      " and can run none of them; add -gencode for " + suggestion);
      }
      return;
  }
}

void check_params(const std::vector<KernelParam>& params, const ParamCheck& call) {
  auto bytes_text = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); };
  const std::size_t pointers = std::size_t(call.num_inputs) + call.num_outputs;
  const std::size_t given = pointers + call.scalar_dtypes.size();
  const std::string kernel = "kernel '" + call.kernel_name + "'";
  const char* order = "; parameters are passed as: input pointers, output pointers, then scalars";
  if (params.size() != given) {
    std::string message = kernel + " takes " + std::to_string(params.size()) +
                          " parameters but the call passes " + std::to_string(given) + " (" +
                          std::to_string(call.num_inputs) + " inputs, " +
                          std::to_string(call.num_outputs) + " outputs, " +
                          std::to_string(call.scalar_dtypes.size()) + " scalars)" + order;
    throw ArgumentError(params.size() < pointers ? "inputs" : "scalars", message);
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::size_t expected;
    std::string what;
    const char* argument;
    if (i < pointers) {
      const bool is_input = i < std::size_t(call.num_inputs);
      expected = 8;
      argument = is_input ? "inputs" : "output_shapes";
      what = (is_input ? "inputs[" + std::to_string(i) + "]"
                       : "output " + std::to_string(i - call.num_inputs)) +
             " is passed as a pointer (8 bytes)";
    } else {
      const std::size_t s = i - pointers;
      const DType dtype = call.scalar_dtypes[s];
      expected = dtype_size(dtype);
      argument = "scalars";
      what = "scalars[" + std::to_string(s) + "] is " + dtype_name(dtype) + " (" +
             bytes_text(expected) + ")";
    }
    if (params[i].size == expected) continue;
    std::string hint;
    if (i >= pointers) {
      hint = "; pass a NumPy scalar of the parameter's C type (numpy.int64 / numpy.float64 for 8 "
             "bytes, numpy.int16 / numpy.float16 for 2, numpy.bool_ / numpy.int8 for 1)";
    }
    throw ArgumentError(argument, "parameter " + std::to_string(i) + " of " + kernel + " is " +
                                      bytes_text(params[i].size) + " but " + what + hint + order);
  }
}

std::optional<std::pair<int, int>> max_ptx_version_for_driver(int driver_version) {
  const int major = driver_version / 1000, minor = (driver_version % 1000) / 10;
  if (major == 13) return std::make_pair(9, minor);
  if (major == 12) {
    static const int kMinor[10] = {0, 1, 2, 3, 4, 5, 5, 6, 7, 8};  // 12.6 kept 8.5
    return std::make_pair(8, kMinor[std::min(minor, 9)]);
  }
  if (major == 11) return std::make_pair(7, std::min(minor, 8));
  return std::nullopt;
}

}  // namespace jk::cuda
