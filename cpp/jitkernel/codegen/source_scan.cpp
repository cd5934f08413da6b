// What user code mentions, from the tokens of the shared lexer
// (core/lexer.hpp, which steps over comments, literals and numbers): the
// identifiers, the identifiers used as `name::` qualifiers (and what they
// qualify), #include targets, and the names the user code declares itself
// (#define, and in the header at file scope struct/class/union/enum names,
// `using X =` aliases and function names), so that generated helpers of the
// same names are left out. The code generator decides from this which
// parameters, headers and helpers to emit.
#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/core/lexer.hpp"

#include <optional>
#include <string>
#include <utility>

namespace jk::codegen {
namespace {

using lex::Token;

class Scanner {
 public:
  Scanner(std::string_view text, SourceScan& out, bool file_scope)
      : t_(lex::without_splices(text, spliced_)), lex_(t_), out_(out), file_scope_(file_scope) {}

  void run() {
    for (Token token = lex_.next(); token.kind != Token::Kind::End; token = lex_.next()) {
      if (token.kind == Token::Kind::Identifier) {
        identifier(token.text);
      } else if (token.kind == Token::Kind::Directive) {
        directive();
      } else {
        punctuation(token.text[0]);
      }
    }
  }

 private:
  void identifier(std::string_view word) {
    out_.identifiers.emplace(word);
    std::size_t j = skip_spaces(lex_.position());
    note_declaration(word, j);
    if (j + 1 < t_.size() && t_[j] == ':' && t_[j + 1] == ':') {
      out_.qualifiers.emplace(word);
      j = skip_spaces(j + 2);
      std::size_t end = j;
      while (end < t_.size() && lex::is_ident_char(t_[end])) ++end;
      bool ident = end > j && lex::is_ident_start(t_[j]);
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

  // After a directive mark: records `#include <x>` / `#include "x"` (and
  // #include_next); any other directive is scanned like ordinary code (its
  // identifiers count, e.g. in #define).
  void directive() {
    const std::string_view word = lex_.directive_name();
    if (word == "define") {
      defining_ = true;  // the macro's name is the next identifier
      return;
    }
    if (word != "include" && word != "include_next") {
      lex_.seek(lex_.position() - word.size());
      return;
    }
    lex_.skip_hspace_and_comments();
    const std::optional<lex::HeaderName> header = lex_.header_name();
    if (!header) return;
    std::string target(header->name);
    // The header name's words count as identifiers too (cooperative_groups).
    Scanner(target, out_, false).run();
    out_.includes.push_back(std::move(target));
  }

  std::string spliced_;  // the text without line splices, where it had any
  std::string_view t_;
  lex::Lexer lex_;
  SourceScan& out_;
  bool file_scope_;  // a header: its top level is file scope
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
