// The lexer of lexer.hpp. Every skip moves forward and never rescans what it
// passed; the one search ahead (a raw string's closing delimiter) ends the
// string where it finds it or the text where it does not.
#include "jitkernel/core/lexer.hpp"

#include <array>

namespace jk::lex {
namespace {

// Where translation phase 2 removes a line splice at `at` (a backslash), the
// number of characters it removes; 0 where there is none.
std::size_t splice_at(std::string_view text, std::size_t at) {
  if (at + 1 < text.size() && text[at + 1] == '\n') return 2;
  if (at + 2 < text.size() && text[at + 1] == '\r' && text[at + 2] == '\n') return 3;
  return 0;
}

bool is_raw_prefix(std::string_view word) {
  return word == "R" || word == "LR" || word == "uR" || word == "UR" || word == "u8R";
}

// What a character may start, for next(); kOther is punctuation.
enum CharClass : unsigned char { kOther, kEol, kSpace, kSlash, kHash, kQuote, kNumber, kIdent };

const CharClass* char_classes() {
  static const std::array<CharClass, 256> table = [] {
    std::array<CharClass, 256> t{};
    for (int b = 0; b < 256; ++b) {
      const char c = static_cast<char>(b);
      t[b] = is_eol(c) ? kEol
             : is_hspace(c) ? kSpace
             : c == '/' ? kSlash
             : c == '#' || c == '%' ? kHash  // '%' for the digraph %:
             : c == '"' || c == '\'' ? kQuote
             : is_digit(c) || c == '.' ? kNumber
             : is_ident_start(c) ? kIdent
             : kOther;
    }
    return t;
  }();
  return table.data();
}

}  // namespace

std::string_view without_splices(std::string_view text, std::string& storage) {
  std::size_t at = text.find('\\');
  while (at != std::string_view::npos && splice_at(text, at) == 0) at = text.find('\\', at + 1);
  if (at == std::string_view::npos) return text;
  storage.assign(text.substr(0, at));
  storage.reserve(text.size());
  for (std::size_t i = at; i < text.size(); ++i) {
    if (text[i] == '\\') {
      if (std::size_t removed = splice_at(text, i)) {
        i += removed - 1;
        continue;
      }
    }
    storage.push_back(text[i]);
  }
  return storage;
}

Token Lexer::next() {
  const CharClass* cls = char_classes();
  const std::size_t n = t_.size();
  while (i_ < n) {
    const char c = t_[i_];
    switch (cls[static_cast<unsigned char>(c)]) {
      case kEol:
        line_start_ = true;
        ++i_;
        continue;
      case kSpace:
        ++i_;
        while (i_ < n && is_hspace(t_[i_])) ++i_;
        continue;
      case kSlash:
        if (peek(1) == '/') {
          while (i_ < n && !is_eol(t_[i_])) ++i_;
          continue;
        }
        if (peek(1) == '*') {
          skip_block_comment();
          continue;
        }
        break;
      case kHash:
        if (line_start_ && (c == '#' || peek(1) == ':')) {
          line_start_ = false;
          const Token mark{Token::Kind::Directive, t_.substr(i_, c == '#' ? 1 : 2), i_};
          i_ += mark.text.size();
          return mark;
        }
        break;
      case kQuote:
        line_start_ = false;
        skip_quoted(c);
        continue;
      case kNumber:
        if (c != '.' || is_digit(peek(1))) {
          line_start_ = false;
          skip_number();
          continue;
        }
        break;
      case kIdent: {
        line_start_ = false;
        const std::size_t at = i_;
        const std::string_view word = read_identifier();
        if (peek() == '"' && is_raw_prefix(word)) {
          skip_raw_string();
        } else if (wanted_.identifiers) {
          return {Token::Kind::Identifier, word, at};
        }
        continue;
      }
      case kOther:
        break;
    }
    // Punctuation: one character handed out, or a run of them stepped over.
    line_start_ = false;
    if (wanted_.punctuation) return {Token::Kind::Punctuation, t_.substr(i_++, 1), i_ - 1};
    ++i_;
    while (i_ < n && cls[static_cast<unsigned char>(t_[i_])] == kOther) ++i_;
  }
  return {Token::Kind::End, {}, n};
}

std::string_view Lexer::directive_name() {
  skip_hspace_and_comments();
  if (!is_ident_start(peek())) return {};
  return read_identifier();
}

std::optional<HeaderName> Lexer::header_name() {
  if (peek() != '<' && peek() != '"') return std::nullopt;
  const char close = t_[i_] == '<' ? '>' : '"';
  std::size_t end = i_ + 1;
  while (end < t_.size() && t_[end] != close && !is_eol(t_[end])) ++end;
  if (end >= t_.size() || t_[end] != close) return std::nullopt;
  const HeaderName name{t_.substr(i_ + 1, end - i_ - 1), close == '>'};
  i_ = end + 1;
  return name;
}

void Lexer::skip_hspace_and_comments() {
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

std::string_view Lexer::read_identifier() {
  const std::size_t start = i_;
  while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
  return t_.substr(start, i_ - start);
}

void Lexer::skip_block_comment() {
  const std::size_t end = t_.find("*/", i_ + 2);
  i_ = end == std::string_view::npos ? t_.size() : end + 2;
}

// A string or character literal; it ends at its line's end at the latest.
void Lexer::skip_quoted(char quote) {
  ++i_;
  while (i_ < t_.size() && t_[i_] != quote && !is_eol(t_[i_])) {
    if (t_[i_] == '\\' && i_ + 1 < t_.size() && !is_eol(t_[i_ + 1])) ++i_;
    ++i_;
  }
  if (i_ < t_.size() && t_[i_] == quote) ++i_;
}

// At the quote of R"delim( ... )delim". A delimiter that is not one (longer
// than 16 characters, or with a character a delimiter cannot hold) makes it an
// ordinary string, whose end is its line's at the latest.
void Lexer::skip_raw_string() {
  std::size_t open = i_ + 1;
  while (open < t_.size() && open - i_ <= 17 && t_[open] != '(') {
    const char c = t_[open];
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
  const std::size_t end = t_.find(closing, open + 1);
  i_ = end == std::string_view::npos ? t_.size() : end + closing.size();
}

// A preprocessing number: digits, letters, '.', digit separators and exponent
// signs (1e-5f, 0x1p+3, 1'000'000ull), so that a separator is never a quote.
void Lexer::skip_number() {
  while (i_ < t_.size()) {
    const char c = t_[i_];
    const char prev = i_ > 0 ? t_[i_ - 1] : '\0';
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

}  // namespace jk::lex
