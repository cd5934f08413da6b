// Strict JSON for the data jitkernel writes and must read back from places
// it does not control (an exported program, an XLA attribute, a record
// file): one value tree, parsed in one pass over the bytes (time and memory
// linear in the text), nesting bounded, duplicate keys, lone surrogates,
// invalid UTF-8, NaN/Infinity and integers outside int64 refused, each
// refusal saying where. The writer side is the one string escaper every
// JSON this library writes goes through.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jk::json {

struct Value {
  enum class Kind : std::uint8_t { Null, Bool, Int, Double, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::int64_t integer = 0;  // Kind::Int: a number written without fraction or exponent
  double number = 0;         // Kind::Double
  std::string text;          // Kind::String
  std::vector<Value> items;  // Kind::Array
  std::vector<std::pair<std::string, Value>> members;  // Kind::Object, in the text's order

  // The member named `key`, or nullptr.
  const Value* find(std::string_view key) const;
};

// What went wrong, and at which byte of the text.
class ParseError : public std::runtime_error {
 public:
  ParseError(std::size_t offset, const std::string& why)
      : std::runtime_error(why + " at byte " + std::to_string(offset)), offset_(offset) {}
  std::size_t offset() const { return offset_; }

 private:
  std::size_t offset_;
};

inline constexpr int kMaxDepth = 32;

// The one value `text` holds (whitespace around it allowed); ParseError otherwise.
Value parse(std::string_view text, int max_depth = kMaxDepth);

// Appends `s` as a JSON string literal: quotes, backslashes and control
// characters escaped, other bytes (UTF-8) as they are.
void append_string(std::string& out, std::string_view s);

// The name of a kind, for messages: "null", "a bool", "an int", ...
const char* kind_name(Value::Kind kind);

}  // namespace jk::json
