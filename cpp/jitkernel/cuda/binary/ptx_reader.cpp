// The PTX text reader of readers.hpp.
//
// Encoding facts: `.version X.Y` is the first directive; `.target
// sm_XY[a|f][, ...]`; kernels are `.entry name ( .param .<type> [.ptr ...]
// [.align N] name[K], ... )`.
#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/binary/readers.hpp"

namespace jk::cuda::binary_detail {
namespace {

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

}  // namespace

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

}  // namespace jk::cuda::binary_detail
