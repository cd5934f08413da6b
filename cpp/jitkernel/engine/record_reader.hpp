// The checked reading of serialised records (call_record_read.cpp, tuned_record.cpp): a field's type and range,
// an object's exact fields, each refusal an ArgumentError naming the argument the text came in and the field.
// Internal to the engine's record codecs.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/json.hpp"
#include "jitkernel/engine/call_record.hpp"

namespace jk::record_reader {

using json::Value;
using Kind = json::Value::Kind;

inline constexpr std::size_t kMaxItems = 1 << 16;
inline constexpr std::int64_t kMaxNdim = 64;
inline constexpr std::int64_t kMaxExtent = std::int64_t{1} << 62;

class Reader {
 public:
  Reader(const char* argument, const char* what) : argument_(argument), what_(what) {}

  [[noreturn]] void bad(const std::string& field, const std::string& why) const {
    throw ArgumentError(argument_, std::string("not a jitkernel ") + what_ + " (format " +
                                       std::to_string(kCallFormat) + "): " + field + ": " + why);
  }

  Value parse(std::string_view text) const {
    try {
      return json::parse(text);
    } catch (const json::ParseError& e) {
      bad("the text", e.what());
    }
  }

  // The object's fields, exactly `names` (in any order: the canonical check orders them), looked up by name.
  void object(const Value& v, const std::string& field, std::initializer_list<const char*> names) const {
    if (v.kind != Kind::Object) bad(field, std::string("expected an object, got ") + json::kind_name(v.kind));
    for (const char* n : names) {
      if (v.find(n) == nullptr) bad(field, std::string("missing field \"") + n + "\"");
    }
    for (const auto& m : v.members) {
      bool known = false;
      for (const char* n : names) known = known || m.first == n;
      if (!known) bad(field, "unknown field \"" + m.first.substr(0, 40) + "\"");
    }
  }

  const Value& of(const Value& v, const std::string& field, Kind kind) const {
    if (v.kind != kind) {
      bad(field, std::string("expected ") + json::kind_name(kind) + ", got " + json::kind_name(v.kind));
    }
    return v;
  }
  const Value& list(const Value& v, const std::string& field) const {
    of(v, field, Kind::Array);
    if (v.items.size() > kMaxItems) bad(field, "more than " + std::to_string(kMaxItems) + " items");
    return v;
  }
  std::int64_t integer(const Value& v, const std::string& field, std::int64_t lo, std::int64_t hi) const {
    of(v, field, Kind::Int);
    if (v.integer < lo || v.integer > hi) {
      bad(field, std::to_string(v.integer) + " is outside " + std::to_string(lo) + " to " + std::to_string(hi));
    }
    return v.integer;
  }
  bool boolean(const Value& v, const std::string& field) const { return of(v, field, Kind::Bool).boolean; }
  const std::string& text(const Value& v, const std::string& field) const { return of(v, field, Kind::String).text; }

  std::vector<std::string> strings(const Value& v, const std::string& field) const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < list(v, field).items.size(); ++i) {
      out.push_back(text(v.items[i], field + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  DType dtype(const Value& v, const std::string& field) const {
    std::optional<DType> d = dtype_from_name(text(v, field));
    if (!d) bad(field, "unknown dtype \"" + v.text.substr(0, 40) + "\"");
    return *d;
  }

  void bits(const Value& v, const std::string& field, unsigned char (&bytes)[8]) const {
    const std::string& t = text(v, field);
    if (t.size() != 16) bad(field, "expected 16 hex digits");
    for (std::size_t i = 0; i < 8; ++i) {
      int byte = 0;
      for (std::size_t j = 0; j < 2; ++j) {
        const char c = t[2 * i + j];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0) bad(field, "expected 16 hex digits");
        byte = byte * 16 + d;
      }
      bytes[i] = static_cast<unsigned char>(byte);
    }
  }

  std::int64_t extent(const Value& v, const std::string& field) const {
    return v.kind == Kind::Null ? kUnfixed : integer(v, field, 0, kMaxExtent);
  }

  std::optional<std::vector<std::int64_t>> shape(const Value& v, const std::string& field) const {
    if (v.kind == Kind::Null) return std::nullopt;
    if (list(v, field).items.size() > static_cast<std::size_t>(kMaxNdim)) {
      bad(field, "more than " + std::to_string(kMaxNdim) + " dimensions");
    }
    std::vector<std::int64_t> out;
    for (std::size_t d = 0; d < v.items.size(); ++d) out.push_back(extent(v.items[d], field + "[" + std::to_string(d) + "]"));
    return out;
  }

  std::optional<Dim3> dims(const Value& v, const std::string& field) const {
    if (v.kind == Kind::Null) return std::nullopt;
    if (list(v, field).items.size() != 3) bad(field, "expected [x, y, z]");
    return Dim3{extent(v.items[0], field + ".x"), extent(v.items[1], field + ".y"), extent(v.items[2], field + ".z")};
  }

  void version(const Value& top, const char* field) const {
    const Value* v = top.kind == Kind::Object ? top.find(field) : nullptr;
    if (v == nullptr) bad(field, "missing (text from another program, or from a jitkernel before format 2)");
    if (v->kind != Kind::Int || v->integer != kCallFormat) {
      bad(field, "format " + (v->kind == Kind::Int ? std::to_string(v->integer) : std::string("?")) +
                     " is not the one this jitkernel reads (" + std::to_string(kCallFormat) + ")");
    }
  }

  const char* argument_;
  const char* what_;
};

}  // namespace jk::record_reader
