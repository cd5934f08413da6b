// Strict JSON (json.hpp): a recursive-descent reader that looks at each byte
// once, and the string escaper.
#include "jitkernel/core/json.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

namespace jk::json {
namespace {

class Reader {
 public:
  Reader(std::string_view text, int max_depth) : t_(text), max_depth_(max_depth) {}

  Value document() {
    Value v = value(0);
    space();
    if (pos_ != t_.size()) fail("unexpected bytes after the value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw ParseError(pos_, why); }

  void space() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\n' || t_[pos_] == '\r' || t_[pos_] == '\t')) ++pos_;
  }

  bool take(char c) {
    if (pos_ < t_.size() && t_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void word(std::string_view w) {
    if (t_.substr(pos_, w.size()) != w) fail("expected a JSON value");
    pos_ += w.size();
  }

  Value value(int depth) {
    space();
    if (pos_ >= t_.size()) fail("the text ends where a value belongs");
    Value v;
    const char c = t_[pos_];
    if (c == '{' || c == '[') {
      if (depth >= max_depth_) fail("nested deeper than " + std::to_string(max_depth_) + " levels");
      return c == '{' ? object(depth + 1) : array(depth + 1);
    }
    if (c == '"') {
      v.kind = Value::Kind::String;
      v.text = string();
    } else if (c == 't' || c == 'f') {
      word(c == 't' ? "true" : "false");
      v.kind = Value::Kind::Bool;
      v.boolean = c == 't';
    } else if (c == 'n') {
      word("null");
    } else {
      number(v);
    }
    return v;
  }

  Value object(int depth) {
    Value v;
    v.kind = Value::Kind::Object;
    std::unordered_set<std::string> seen;  // duplicate keys, in time linear in the object
    ++pos_;
    space();
    if (take('}')) return v;
    for (;;) {
      space();
      if (pos_ >= t_.size() || t_[pos_] != '"') fail("expected a string key");
      const std::size_t at = pos_;
      std::string key = string();
      if (!seen.insert(key).second) throw ParseError(at, "duplicate key \"" + key.substr(0, 40) + "\"");
      space();
      if (!take(':')) fail("expected ':'");
      v.members.emplace_back(std::move(key), value(depth));
      space();
      if (take('}')) return v;
      if (!take(',')) fail("expected ',' or '}'");
    }
  }

  Value array(int depth) {
    Value v;
    v.kind = Value::Kind::Array;
    ++pos_;
    space();
    if (take(']')) return v;
    for (;;) {
      v.items.push_back(value(depth));
      space();
      if (take(']')) return v;
      if (!take(',')) fail("expected ',' or ']'");
    }
  }

  unsigned hex4() {
    if (t_.size() - pos_ < 4) fail("a \\u escape needs 4 hex digits");
    unsigned u = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = t_[pos_++];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) fail("a \\u escape needs 4 hex digits");
      u = (u << 4) | static_cast<unsigned>(d);
    }
    return u;
  }

  static void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // One UTF-8 sequence starting at pos_ (checked: shortest form, no surrogates, <= U+10FFFF), copied to out.
  void utf8(std::string& out) {
    const auto b0 = static_cast<unsigned char>(t_[pos_]);
    const int n = b0 >= 0xF0 && b0 <= 0xF4 ? 3 : b0 >= 0xE0 ? (b0 <= 0xEF ? 2 : -1) : b0 >= 0xC2 ? (b0 <= 0xDF ? 1 : -1) : -1;
    if (n < 0 || t_.size() - pos_ <= static_cast<std::size_t>(n)) fail("invalid UTF-8");
    unsigned cp = b0 & (0x3F >> n);
    for (int i = 1; i <= n; ++i) {
      const auto b = static_cast<unsigned char>(t_[pos_ + static_cast<std::size_t>(i)]);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
      fail("invalid UTF-8");
    }
    out.append(t_.data() + pos_, static_cast<std::size_t>(n) + 1);
    pos_ += static_cast<std::size_t>(n) + 1;
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= t_.size()) fail("a string is not closed");
      const auto c = static_cast<unsigned char>(t_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("a control character in a string");
      if (c >= 0x80) {
        utf8(out);
        continue;
      }
      ++pos_;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= t_.size()) fail("a string is not closed");
      const char e = t_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail("a lone surrogate in a \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (t_.substr(pos_, 2) != "\\u") fail("a lone surrogate in a \\u escape");
            pos_ += 2;
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("a lone surrogate in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: fail("an unknown escape in a string");
      }
    }
  }

  void number(Value& v) {
    const std::size_t start = pos_;
    take('-');
    if (pos_ >= t_.size() || t_[pos_] < '0' || t_[pos_] > '9') fail("expected a JSON value");
    if (t_[pos_] == '0' && pos_ + 1 < t_.size() && t_[pos_ + 1] >= '0' && t_[pos_ + 1] <= '9') {
      fail("a number with a leading zero");
    }
    auto digits = [&] {
      const std::size_t from = pos_;
      while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') ++pos_;
      if (pos_ == from) fail("expected digits");
    };
    digits();
    bool integral = true;
    if (take('.')) integral = false, digits();
    if (pos_ < t_.size() && (t_[pos_] == 'e' || t_[pos_] == 'E')) {
      ++pos_;
      if (!take('+')) take('-');
      integral = false;
      digits();
    }
    const std::string text(t_.substr(start, pos_ - start));
    if (text.size() > 400) throw ParseError(start, "a number of more than 400 characters");
    errno = 0;
    char* end = nullptr;
    if (integral) {
      v.kind = Value::Kind::Int;
      v.integer = std::strtoll(text.c_str(), &end, 10);
      if (errno == ERANGE) throw ParseError(start, "an integer outside the 64-bit range");
    } else {
      v.kind = Value::Kind::Double;
      v.number = std::strtod(text.c_str(), &end);
      if (!std::isfinite(v.number)) throw ParseError(start, "a number outside the double range");
    }
  }

  std::string_view t_;
  int max_depth_;
  std::size_t pos_ = 0;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  for (const auto& m : members) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

Value parse(std::string_view text, int max_depth) { return Reader(text, max_depth).document(); }

void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
}

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::Null: return "null";
    case Value::Kind::Bool: return "a bool";
    case Value::Kind::Int: return "an int";
    case Value::Kind::Double: return "a number";
    case Value::Kind::String: return "a string";
    case Value::Kind::Array: return "a list";
    case Value::Kind::Object: return "an object";
  }
  return "?";
}

}  // namespace jk::json
