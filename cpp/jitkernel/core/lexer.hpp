// One lexer for C, C++, CUDA and Metal source text, shared by the two scans
// that read user code without compiling it: the identifier scan of the code
// generator (codegen/source_scan.cpp) and the #include scan of the cache key
// (cache/include_scan.cpp). It steps over what could hide code or pass for it
// -- comments, string and character literals (raw strings too) and number
// literals (whose ' digit separators are not quotes) -- and hands out what the
// scans read: identifiers, punctuation, and the '#' (or digraph %:) that starts
// a directive line. The text is untrusted: each character is looked at a
// bounded number of times, so a scan is linear in the text's size.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace jk::lex {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
// Identifier characters as the compilers take them: ASCII letters, '_', and
// every byte of a UTF-8 sequence (identifiers may hold non-ASCII letters).
inline bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
inline bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
inline bool is_hspace(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }
// NVRTC ends a line at a lone carriage return too.
inline bool is_eol(char c) { return c == '\n' || c == '\r'; }

// Translation phase 2: `text` with its line splices (backslash-newline, also
// backslash-CR-LF) removed, kept in `storage` when there are any (else `text`
// itself comes back). NVRTC does not splice a backslash followed by spaces.
std::string_view without_splices(std::string_view text, std::string& storage);

struct Token {
  enum class Kind { End, Identifier, Punctuation, Directive };
  Kind kind = Kind::End;
  std::string_view text;  // the identifier, the punctuation character, or "#" / "%:"
  std::size_t at = 0;     // where it starts
};

struct HeaderName {
  std::string_view name;
  bool angle = false;  // <name> rather than "name"
};

// Which tokens next() hands out besides directive marks (a scan that wants
// fewer is faster: the rest is stepped over without leaving the loop).
struct Wanted {
  bool identifiers = true;
  bool punctuation = true;
};

// Lexes a text without line splices (without_splices) from its start.
class Lexer {
 public:
  explicit Lexer(std::string_view text, Wanted wanted = {}) : t_(text), wanted_(wanted) {}

  // The next identifier, punctuation character or directive mark; Kind::End
  // at the text's end. A directive mark is a '#' or %: with only spaces and
  // comments before it on its line; the caller reads the directive on from
  // there (directive_name) or lets it be lexed like code.
  Token next();

  // After a directive mark: its name ("include", "define"), read past spaces
  // and comments; empty (the position unchanged) when no identifier follows.
  std::string_view directive_name();

  // At '<' or '"': the header name up to its closing character on the same
  // line, the position left after it; nothing (the position unchanged) when
  // the line has no closing character.
  std::optional<HeaderName> header_name();

  // Spaces, tabs and block comments (a comment is one space, even across lines).
  void skip_hspace_and_comments();

  std::string_view text() const { return t_; }
  std::size_t position() const { return i_; }
  void seek(std::size_t at) { i_ = at; }
  char peek(std::size_t k = 0) const { return i_ + k < t_.size() ? t_[i_ + k] : '\0'; }
  bool at_end() const { return i_ >= t_.size(); }

 private:
  std::string_view read_identifier();
  void skip_block_comment();
  void skip_quoted(char quote);
  void skip_raw_string();
  void skip_number();

  std::string_view t_;
  Wanted wanted_;
  std::size_t i_ = 0;
  bool line_start_ = true;  // only spaces and comments so far on this line
};

}  // namespace jk::lex
