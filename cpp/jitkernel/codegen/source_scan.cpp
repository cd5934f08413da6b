// A small C++ tokenizer, just enough to know which identifiers user code
// mentions: it skips comments, string/character literals (raw strings too)
// and number literals (with ' digit separators), records identifiers, the
// identifiers used as `name::` qualifiers (and what they qualify), #include
// targets, and the names the user code declares itself (#define, and in the
// header at file scope struct/class/union/enum names, `using X =` aliases
// and function names), so that generated helpers of the same names are left
// out. The code generator decides from this which parameters, headers and
// helpers to emit.
#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"

namespace jk::codegen {
namespace {

bool digit(char c) { return c >= '0' && c <= '9'; }

class Scanner {
 public:
  Scanner(std::string_view text, SourceScan& out, bool file_scope)
      : t_(text), out_(out), file_scope_(file_scope) {}

  void run() {
    bool line_start = true;  // only whitespace so far on this line
    while (i_ < t_.size()) {
      char c = t_[i_];
      if (c == '\n') {
        line_start = true;
        ++i_;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
      } else if (c == '/' && peek(1) == '/') {
        skip_line_comment();
      } else if (c == '/' && peek(1) == '*') {
        skip_block_comment();
      } else if (c == '#' && line_start) {
        ++i_;
        directive();
        line_start = false;
      } else if (c == '"' || c == '\'') {
        skip_quoted(c);
        line_start = false;
      } else if (digit(c) || (c == '.' && digit(peek(1)))) {
        skip_number();
        line_start = false;
      } else if (is_ident_start(c)) {
        identifier();
        line_start = false;
      } else {
        punctuation(c);
        ++i_;
        line_start = false;
      }
    }
  }

 private:
  char peek(std::size_t k) const { return i_ + k < t_.size() ? t_[i_ + k] : '\0'; }

  void skip_line_comment() {
    while (i_ < t_.size() && t_[i_] != '\n') {
      // a backslash-newline continues a // comment onto the next line
      if (t_[i_] == '\\' && peek(1) == '\n') ++i_;
      ++i_;
    }
  }

  void skip_block_comment() {
    std::size_t end = t_.find("*/", i_ + 2);
    i_ = end == std::string_view::npos ? t_.size() : end + 2;
  }

  void skip_quoted(char quote) {
    ++i_;
    while (i_ < t_.size() && t_[i_] != quote && t_[i_] != '\n') {
      if (t_[i_] == '\\') ++i_;
      ++i_;
    }
    if (i_ < t_.size() && t_[i_] == quote) ++i_;
  }

  // R"delim( ... )delim" (after the prefix identifier; i_ is at the quote).
  void skip_raw_string() {
    std::size_t open = t_.find('(', i_);
    if (open == std::string_view::npos) {
      i_ = t_.size();
      return;
    }
    std::string closing = ")";
    closing.append(t_.substr(i_ + 1, open - i_ - 1));
    closing.push_back('"');
    std::size_t end = t_.find(closing, open + 1);
    i_ = end == std::string_view::npos ? t_.size() : end + closing.size();
  }

  // A preprocessing number: digits, letters, '.', digit separators, and
  // exponent signs (1e-5f, 0x1p+3, 1'000'000ull).
  void skip_number() {
    while (i_ < t_.size()) {
      char c = t_[i_];
      char prev = i_ > 0 ? t_[i_ - 1] : '\0';
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

  std::string_view read_identifier() {
    std::size_t start = i_;
    while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
    return t_.substr(start, i_ - start);
  }

  void identifier() {
    std::string_view word = read_identifier();
    if (peek(0) == '"' && (word == "R" || word == "LR" || word == "uR" || word == "UR" ||
                           word == "u8R")) {
      skip_raw_string();
      return;
    }
    out_.identifiers.emplace(word);
    std::size_t j = skip_spaces(i_);
    note_declaration(word, j);
    if (j + 1 < t_.size() && t_[j] == ':' && t_[j + 1] == ':') {
      out_.qualifiers.emplace(word);
      j = skip_spaces(j + 2);
      std::size_t end = j;
      while (end < t_.size() && is_ident_char(t_[end])) ++end;
      bool ident = end > j && is_ident_start(t_[j]);
      std::string pair(word);
      pair += "::";
      if (ident) pair.append(t_.substr(j, end - j));
      out_.scoped.emplace(std::move(pair));
    } else {
      out_.unqualifying.emplace(word);
    }
  }

  // Brace and parenthesis depth (for file-scope declarations in a header).
  void punctuation(char c) {
    // `struct alignas(16) X`: what lies in parentheses after the keyword is
    // skipped; any other punctuation (`{`, `;`, `*`) ends the search for a name.
    bool bracket = c == '(' || c == ')' || c == '[' || c == ']';
    if (tag_ && parens_ == tag_parens_ && !bracket) tag_ = false;
    if (c == '{') ++braces_;
    if (c == '}' && braces_ > 0) --braces_;
    if (c == '(') ++parens_;
    if (c == ')' && parens_ > 0) --parens_;
    last_word_ = {};
  }

  // Records `word` in out_.declared when it is the name of a #define, or in a
  // file-scope header of a struct/class/union/enum, an alias (`using word =`)
  // or a function (`word(` outside braces and parentheses). `j` is the next
  // non-space position after it.
  void note_declaration(std::string_view word, std::size_t j) {
    char next = j < t_.size() ? t_[j] : '\0';
    if (defining_) {
      out_.declared.emplace(word);
      defining_ = false;
    } else if (file_scope_ && braces_ == 0) {
      bool attribute = word == "alignas" || word == "__align__" || word == "final" ||
                       word == "__declspec" || word == "class";
      if (tag_ && parens_ == tag_parens_ && !attribute) {
        out_.declared.emplace(word);
        tag_ = false;
      } else if (word == "struct" || word == "class" || word == "union" || word == "enum") {
        tag_ = true;
        tag_parens_ = parens_;
      } else if (last_word_ == "using" && next == '=') {
        out_.declared.emplace(word);
      } else if (parens_ == 0 && next == '(' && !is_function_like_keyword(word)) {
        out_.declared.emplace(word);
      }
    }
    last_word_ = word;
  }

  static bool is_function_like_keyword(std::string_view w) {
    for (std::string_view k : {"alignas", "__align__", "decltype", "sizeof", "alignof", "noexcept",
                               "__launch_bounds__", "__declspec", "__attribute__", "static_assert",
                               "operator", "if", "while", "for", "switch", "return", "defined"}) {
      if (w == k) return true;
    }
    return false;
  }

  // First position at or after `j` that is not a space, tab or line break.
  std::size_t skip_spaces(std::size_t j) const {
    while (j < t_.size() && (t_[j] == ' ' || t_[j] == '\t' || t_[j] == '\n' || t_[j] == '\r')) ++j;
    return j;
  }

  // After '#': records `#include <x>` / `#include "x"`; any other directive
  // is scanned like ordinary code (its identifiers count, e.g. in #define).
  void directive() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
    if (!is_ident_start(peek(0))) return;
    std::size_t start = i_;
    std::string_view word = read_identifier();
    if (word == "define") {
      defining_ = true;  // the macro's name is the next identifier
      return;
    }
    if (word != "include") {
      i_ = start;
      return;
    }
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
    char open = peek(0);
    if (open != '<' && open != '"') return;
    char close = open == '<' ? '>' : '"';
    std::size_t end = t_.find(close, i_ + 1);
    std::size_t eol = t_.find('\n', i_);
    if (end == std::string_view::npos || (eol != std::string_view::npos && end > eol)) return;
    std::string target(t_.substr(i_ + 1, end - i_ - 1));
    // The header name's words count as identifiers too (cooperative_groups).
    Scanner(target, out_, false).run();
    out_.includes.push_back(std::move(target));
    i_ = end + 1;
  }

  std::string_view t_;
  SourceScan& out_;
  bool file_scope_;  // a header: its top level is file scope
  std::size_t i_ = 0;
  int braces_ = 0;
  int parens_ = 0;
  bool defining_ = false;  // after `#define`
  bool tag_ = false;       // after struct/class/union/enum, before the name
  int tag_parens_ = 0;
  std::string_view last_word_;
};

}  // namespace

void scan_into(std::string_view text, SourceScan& scan, bool file_scope) {
  Scanner(text, scan, file_scope).run();
}

SourceScan scan_user_code(const std::string& source, const std::string& header) {
  SourceScan scan;
  scan_into(source, scan, false);
  scan_into(header, scan, true);
  return scan;
}


bool uses_identifier(const std::string& text, const std::string& identifier) {
  codegen::SourceScan scan;
  codegen::scan_into(text, scan);
  return scan.has(identifier);
}

}  // namespace jk::codegen
