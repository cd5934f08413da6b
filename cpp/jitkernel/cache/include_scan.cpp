// The #include scanner of include_scan.hpp, over the tokens of the shared
// lexer (core/lexer.hpp: comments, string, character and raw string literals
// and numbers stepped over, so that "/*" inside a literal does not hide a
// directive and a ' digit separator is no quote), on the text with its line
// splices removed, or on its directive lines alone when nothing spans lines.
#include "jitkernel/cache/include_scan.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "jitkernel/core/lexer.hpp"

namespace jk::cache {
namespace {

using lex::is_eol;
using lex::is_hspace;
using lex::is_ident_char;
using lex::Token;

bool has_block_comment(std::string_view text) {
  if (text.empty()) return false;
  for (const char* p = text.data(); (p = static_cast<const char*>(std::memchr(
                                        p, '*', text.size() - (p - text.data())))) != nullptr;
       ++p) {
    if (p > text.data() && p[-1] == '/') return true;
  }
  return false;
}

class IncludeScanner {
 public:
  explicit IncludeScanner(std::string_view text)
      : t_(text),
        operators_(text.find("__has_include") != std::string_view::npos),
        lex_(text, lex::Wanted{operators_, false}) {}

  std::vector<IncludeDirective> run() {
    for (Token token = lex_.next(); token.kind != Token::Kind::End; token = lex_.next()) {
      if (token.kind == Token::Kind::Directive) {
        directive(token.at);
      } else if (token.kind == Token::Kind::Identifier &&
                 (token.text == "__has_include" || token.text == "__has_include_next")) {
        has_include(token.at, token.text.size() > 13);
      }
    }
    return std::move(out_);
  }

 private:
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
    const std::optional<lex::HeaderName> header = lex_.header_name();
    if (!header) return false;
    IncludeDirective d;
    d.form = header->angle ? IncludeDirective::Form::Angle : IncludeDirective::Form::Quoted;
    d.every_folder = every_folder;
    d.name.assign(header->name);
    out_.push_back(std::move(d));
    return true;
  }

  void computed(std::string text, bool every_folder) {
    IncludeDirective d;
    d.form = IncludeDirective::Form::Computed;
    d.every_folder = every_folder;
    d.name = std::move(text);
    out_.push_back(std::move(d));
  }

  // After a directive mark at `start`: #include and #include_next; other
  // directives are lexed like code (their __has_include operators count).
  void directive(std::size_t start) {
    const std::string_view word = lex_.directive_name();
    if (word != "include" && word != "include_next") {
      lex_.seek(lex_.position() - word.size());
      return;
    }
    const bool next = word.size() > 7;
    lex_.skip_hspace_and_comments();
    if (lex_.at_end() || is_eol(lex_.peek())) return;  // no name: an error, reads nothing
    if (header_name(next)) return;
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

  // After __has_include (at `word_at`): `( "name" )` or `( <name> )`; a
  // macro argument cannot be looked up.
  void has_include(std::size_t word_at, bool every_folder) {
    lex_.skip_hspace_and_comments();
    if (lex_.peek() != '(') {
      // Asking whether it exists is fine; anything else is a macro made of it
      // (#define HAS __has_include), whose use cannot be followed.
      if (!tested_for_existence(word_at)) computed(line_text(word_at), every_folder);
      return;
    }
    lex_.seek(lex_.position() + 1);
    lex_.skip_hspace_and_comments();
    if (header_name(every_folder)) return;
    computed(line_text(word_at), every_folder);
  }

  std::string_view t_;
  bool operators_;  // the text mentions __has_include
  lex::Lexer lex_;  // identifiers only where they may be __has_include
  std::vector<IncludeDirective> out_;
};

// scan_includes of a text without line splices.
std::vector<IncludeDirective> scan_spliced(std::string_view text) {
  // Only block comments and raw strings span lines: without them every line
  // starts outside any comment or literal, and lexing just the directive
  // lines (where every #include is, and where __has_include may appear)
  // finds what lexing the whole text does, at a fraction of the cost (a few
  // memchr calls: this runs on every compile key).
  if (has_block_comment(text) || text.find("R\"") != std::string_view::npos) return IncludeScanner(text).run();
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
    for (IncludeDirective& d : IncludeScanner(text.substr(begin, end - begin)).run()) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

std::vector<IncludeDirective> scan_includes(std::string_view text) {
  std::string spliced;
  return scan_spliced(lex::without_splices(text, spliced));
}

std::vector<std::string> include_targets(std::string_view source) {
  std::vector<std::string> out;
  for (IncludeDirective& d : scan_includes(source)) {
    if (d.form != IncludeDirective::Form::Computed && !d.name.empty()) out.push_back(std::move(d.name));
  }
  return out;
}

}  // namespace jk::cache
