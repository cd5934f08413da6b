// The #include scanner of include_scan.hpp: a small lexer over the text with
// its line splices removed (over its directive lines alone, when nothing
// spans lines): it skips comments and string, character and raw string
// literals (so that "/*" inside a literal does not hide a directive) and
// number literals (whose ' digit separators are not character literals), and
// reads a directive wherever a '#' (or the digraph %:) starts a line.
#include "jitkernel/cache/include_scan.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace jk::cache {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;  // UTF-8 in identifiers
}
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_hspace(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }
// NVRTC ends a line at a lone carriage return too; ending it early here only
// makes the scan look at more text as code.
bool is_eol(char c) { return c == '\n' || c == '\r'; }

// Translation phase 2: backslash-newline (also backslash-CR-LF) removed.
// NVRTC does not splice a backslash followed by spaces.
std::string remove_splices(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      if (i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;
        continue;
      }
      if (i + 2 < text.size() && text[i + 1] == '\r' && text[i + 2] == '\n') {
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

// Whether remove_splices has anything to remove.
bool has_splice(std::string_view text) {
  for (std::size_t at = text.find('\\'); at != std::string_view::npos; at = text.find('\\', at + 1)) {
    if (at + 1 < text.size() && text[at + 1] == '\n') return true;
    if (at + 2 < text.size() && text[at + 1] == '\r' && text[at + 2] == '\n') return true;
  }
  return false;
}

// What a character means to the lexer's main loop; everything else is
// skipped in a tight loop (identifiers, numbers, operators: they cannot
// start a directive, comment or literal).
enum CharClass : unsigned char { kPlain, kSpace, kEol, kSlash, kHash, kPercent, kDquote, kSquote, kUnder };

struct CharTables {
  // [scan for __has_include][at a line's start] -> class of each byte
  CharClass classes[2][2][256];
};

const CharTables& char_tables() {
  static const CharTables tables = [] {
    CharTables t{};
    for (int operators = 0; operators < 2; ++operators) {
      for (int line_start = 0; line_start < 2; ++line_start) {
        CharClass* c = t.classes[operators][line_start];
        for (int b = 0; b < 256; ++b) c[b] = kPlain;
        c[static_cast<unsigned char>('\n')] = c[static_cast<unsigned char>('\r')] = kEol;
        c[static_cast<unsigned char>('/')] = kSlash;
        c[static_cast<unsigned char>('"')] = kDquote;
        c[static_cast<unsigned char>('\'')] = kSquote;
        if (operators) c[static_cast<unsigned char>('_')] = kUnder;
        if (line_start) {  // mid-line, spaces change nothing and '#' starts no directive
          for (char b : {' ', '\t', '\f', '\v'}) c[static_cast<unsigned char>(b)] = kSpace;
          c[static_cast<unsigned char>('#')] = kHash;
          c[static_cast<unsigned char>('%')] = kPercent;
        }
      }
    }
    return t;
  }();
  return tables;
}

bool has_block_comment(std::string_view text) {
  if (text.empty()) return false;
  for (const char* p = text.data(); (p = static_cast<const char*>(std::memchr(
                                        p, '*', text.size() - (p - text.data())))) != nullptr;
       ++p) {
    if (p > text.data() && p[-1] == '/') return true;
  }
  return false;
}

class Lexer {
 public:
  explicit Lexer(std::string_view text)
      : t_(text), operators_(text.find("__has_include") != std::string_view::npos) {}

  std::vector<IncludeDirective> run() {
    const CharTables& tables = char_tables();
    const CharClass* mid = tables.classes[operators_][0];
    const CharClass* first = tables.classes[operators_][1];
    bool line_start = true;  // only whitespace and comments so far on this line
    const std::size_t n = t_.size();
    while (i_ < n) {
      const char c = t_[i_];
      switch ((line_start ? first : mid)[static_cast<unsigned char>(c)]) {
        case kPlain:
          line_start = false;
          ++i_;
          while (i_ < n && mid[static_cast<unsigned char>(t_[i_])] == kPlain) ++i_;
          break;
        case kSpace:
          ++i_;
          break;
        case kEol:
          line_start = true;
          ++i_;
          break;
        case kSlash:
          if (peek(1) == '/') {
            while (i_ < n && !is_eol(t_[i_])) ++i_;
          } else if (peek(1) == '*') {
            skip_block_comment();
          } else {
            line_start = false;
            ++i_;
          }
          break;
        case kHash:
        case kPercent:
          if (c == '#' || peek(1) == ':') {
            const std::size_t start = i_;
            i_ += c == '#' ? 1 : 2;
            directive(start);
          } else {
            ++i_;
          }
          line_start = false;
          break;
        case kDquote:
          line_start = false;
          if (raw_prefix()) {
            skip_raw_string();
          } else {
            skip_quoted('"');
          }
          break;
        case kSquote:
          line_start = false;
          if (digit_separator()) {
            skip_number_rest();
          } else {
            skip_quoted('\'');
          }
          break;
        case kUnder:
          line_start = false;
          if (i_ > 0 && is_ident_char(t_[i_ - 1])) {
            ++i_;  // inside an identifier
          } else {
            identifier();
          }
          break;
      }
    }
    return std::move(out_);
  }

 private:
  char peek(std::size_t k) const { return i_ + k < t_.size() ? t_[i_ + k] : '\0'; }

  // Where the identifier (or, with `in_number`, the part of a number since
  // its last ') that ends right before `at` starts. Never crosses a quote,
  // so that the scan stays linear however many quotes follow each other.
  std::size_t token_start(std::size_t at, bool in_number) const {
    while (at > 0 && (is_ident_char(t_[at - 1]) || (in_number && t_[at - 1] == '.'))) --at;
    return at;
  }

  // At a digit separator: the rest of the number, separators and exponent
  // signs included (1'000'000ull, 0x1'0p+3), so that its later separators are
  // never taken for quotes.
  void skip_number_rest() {
    ++i_;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      const char prev = t_[i_ - 1];
      if (is_ident_char(c) || c == '.') {
        ++i_;
      } else if (c == '\'' && is_ident_char(peek(1))) {
        i_ += 2;
      } else if ((c == '+' || c == '-') &&
                 (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P')) {
        ++i_;
      } else {
        break;
      }
    }
  }

  // At a '"': is it the quote of a raw string (R, LR, uR, UR, u8R before it)?
  bool raw_prefix() const {
    if (i_ == 0 || t_[i_ - 1] != 'R') return false;
    std::string_view prefix = t_.substr(token_start(i_, false), i_ - token_start(i_, false));
    return prefix == "R" || prefix == "LR" || prefix == "uR" || prefix == "UR" || prefix == "u8R";
  }

  // At a '\'': a digit separator (1'000'000) rather than a character
  // literal (its prefix is an identifier: u8'x', L'x')?
  bool digit_separator() const {
    if (i_ == 0 || !(is_ident_char(t_[i_ - 1]) || t_[i_ - 1] == '.')) return false;
    const std::size_t start = token_start(i_, true);
    return is_digit(t_[start]) || (t_[start] == '.' && start + 1 < i_ && is_digit(t_[start + 1]));
  }

  void skip_block_comment() {
    std::size_t end = t_.find("*/", i_ + 2);
    i_ = end == std::string_view::npos ? t_.size() : end + 2;
  }

  // Spaces, tabs and block comments (a comment is one space, even across lines).
  void skip_hspace_and_comments() {
    while (i_ < t_.size()) {
      if (is_hspace(t_[i_])) {
        ++i_;
      } else if (t_[i_] == '/' && peek(1) == '*') {
        skip_block_comment();
      } else {
        break;
      }
    }
  }

  // A string or character literal; it ends at its line's end at the latest.
  void skip_quoted(char quote) {
    ++i_;
    while (i_ < t_.size() && t_[i_] != quote && !is_eol(t_[i_])) {
      if (t_[i_] == '\\' && i_ + 1 < t_.size() && !is_eol(t_[i_ + 1])) ++i_;
      ++i_;
    }
    if (i_ < t_.size() && t_[i_] == quote) ++i_;
  }

  // At the quote of R"delim( ... )delim". A delimiter that is not one (too
  // long, or with a character a delimiter cannot hold) makes it an ordinary
  // string, whose end is its line's.
  void skip_raw_string() {
    std::size_t open = i_ + 1;
    while (open < t_.size() && open - i_ <= 17 && t_[open] != '(') {
      char c = t_[open];
      if (is_hspace(c) || is_eol(c) || c == ')' || c == '\\' || c == '"') break;
      ++open;
    }
    if (open >= t_.size() || t_[open] != '(' || open - i_ > 17) {
      skip_quoted('"');
      return;
    }
    std::string closing = ")";
    closing.append(t_.substr(i_ + 1, open - i_ - 1));
    closing.push_back('"');
    std::size_t end = t_.find(closing, open + 1);
    i_ = end == std::string_view::npos ? t_.size() : end + closing.size();
  }

  std::string_view read_identifier() {
    const std::size_t start = i_;
    while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
    return t_.substr(start, i_ - start);
  }

  // At an identifier starting with '_' (the text names __has_include).
  void identifier() {
    std::string_view word = read_identifier();
    if (word == "__has_include" || word == "__has_include_next") has_include(word.size() > 13);
  }

  // The rest of the line from `from` (at most 100 characters), for messages.
  std::string line_text(std::size_t from) const {
    std::size_t end = from;
    while (end < t_.size() && end - from < 100 && !is_eol(t_[end])) ++end;
    std::string text(t_.substr(from, end - from));
    while (!text.empty() && is_hspace(text.back())) text.pop_back();
    return text;
  }

  // At the opening '"' or '<': records the header name up to its closing
  // character on the same line; false when there is none.
  bool header_name(bool every_folder) {
    const char close = t_[i_] == '<' ? '>' : '"';
    std::size_t end = i_ + 1;
    while (end < t_.size() && t_[end] != close && !is_eol(t_[end])) ++end;
    if (end >= t_.size() || t_[end] != close) return false;
    IncludeDirective d;
    d.form = close == '>' ? IncludeDirective::Form::Angle : IncludeDirective::Form::Quoted;
    d.every_folder = every_folder;
    d.name.assign(t_.substr(i_ + 1, end - i_ - 1));
    out_.push_back(std::move(d));
    i_ = end + 1;
    return true;
  }

  void computed(std::string text, bool every_folder) {
    IncludeDirective d;
    d.form = IncludeDirective::Form::Computed;
    d.every_folder = every_folder;
    d.name = std::move(text);
    out_.push_back(std::move(d));
  }

  // After '#': #include and #include_next; other directives are lexed like
  // code (their __has_include operators count).
  void directive(std::size_t start) {
    skip_hspace_and_comments();
    if (!is_ident_start(peek(0))) return;
    const std::size_t word_at = i_;
    std::string_view word = read_identifier();
    if (word != "include" && word != "include_next") {
      i_ = word_at;
      return;
    }
    const bool next = word.size() > 7;
    skip_hspace_and_comments();
    if (i_ >= t_.size() || is_eol(t_[i_])) return;  // no name: an error, reads nothing
    if ((t_[i_] == '"' || t_[i_] == '<') && header_name(next)) return;
    computed(line_text(start), next);
  }

  // Is the identifier at `at` the operand of defined, #ifdef or #ifndef?
  bool tested_for_existence(std::size_t at) const {
    auto skip_back = [&](std::size_t j) {
      while (j > 0 && is_hspace(t_[j - 1])) --j;
      return j;
    };
    std::size_t j = skip_back(at);
    if (j > 0 && t_[j - 1] == '(') j = skip_back(j - 1);
    std::size_t start = j;
    while (start > 0 && is_ident_char(t_[start - 1])) --start;
    std::string_view word = t_.substr(start, j - start);
    return word == "defined" || word == "ifdef" || word == "ifndef" || word == "elifdef" ||
           word == "elifndef";
  }

  // After __has_include: `( "name" )` or `( <name> )`; a macro argument
  // cannot be looked up.
  void has_include(bool every_folder) {
    const std::size_t word_at = i_ - (every_folder ? 18 : 13);
    skip_hspace_and_comments();
    if (peek(0) != '(') {
      // Asking whether it exists is fine; anything else is a macro made of it
      // (#define HAS __has_include), whose use cannot be followed.
      if (!tested_for_existence(word_at)) computed(line_text(word_at), every_folder);
      return;
    }
    ++i_;
    skip_hspace_and_comments();
    if (i_ < t_.size() && (t_[i_] == '"' || t_[i_] == '<') && header_name(every_folder)) return;
    computed(line_text(word_at), every_folder);
  }

  std::string_view t_;
  bool operators_;  // the text mentions __has_include
  std::size_t i_ = 0;
  std::vector<IncludeDirective> out_;
};

// scan_includes of a text without line splices.
std::vector<IncludeDirective> scan_spliced(std::string_view text) {
  // Only block comments and raw strings span lines: without them every line
  // starts outside any comment or literal, and lexing just the directive
  // lines (where every #include is, and where __has_include may appear)
  // finds what lexing the whole text does, at a fraction of the cost (a few
  // memchr calls: this runs on every compile key).
  if (has_block_comment(text) || text.find("R\"") != std::string_view::npos) return Lexer(text).run();
  std::vector<std::size_t> lines;  // where directive lines start
  const bool digraphs = text.find("%:") != std::string_view::npos;
  for (char mark : {'#', '%'}) {
    if (mark == '%' && !digraphs) break;
    for (std::size_t at = 0; at < text.size();) {
      const void* hit = std::memchr(text.data() + at, mark, text.size() - at);
      if (hit == nullptr) break;
      at = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
      std::size_t begin = at++;
      if (mark == '%' && (at >= text.size() || text[at] != ':')) continue;
      while (begin > 0 && is_hspace(text[begin - 1])) --begin;
      if (begin == 0 || is_eol(text[begin - 1])) lines.push_back(begin);
    }
  }
  if (digraphs) {
    std::sort(lines.begin(), lines.end());
    lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  }
  std::vector<IncludeDirective> out;
  for (std::size_t begin : lines) {
    std::size_t end = begin;
    while (end < text.size() && !is_eol(text[end])) ++end;
    for (IncludeDirective& d : Lexer(text.substr(begin, end - begin)).run()) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

std::vector<IncludeDirective> scan_includes(std::string_view text) {
  if (!has_splice(text)) return scan_spliced(text);
  const std::string spliced = remove_splices(text);
  return scan_spliced(spliced);
}

std::vector<std::string> include_targets(std::string_view source) {
  std::vector<std::string> out;
  for (IncludeDirective& d : scan_includes(source)) {
    if (d.form != IncludeDirective::Form::Computed && !d.name.empty()) out.push_back(std::move(d.name));
  }
  return out;
}

}  // namespace jk::cache
