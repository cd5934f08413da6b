// The byte and message helpers of readers.hpp.
#include <algorithm>
#include <cstdio>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/binary/readers.hpp"

namespace jk::cuda::binary_detail {

void malformed(const std::string& what, const std::string& detail) {
  throw ArgumentError(kArg, "malformed " + what + ": " + detail);
}

std::string hex_prefix(std::string_view bytes, std::size_t n) {
  std::string out;
  char buf[4];
  for (std::size_t i = 0; i < std::min(n, bytes.size()); ++i) {
    std::snprintf(buf, sizeof buf, "%02x", static_cast<unsigned char>(bytes[i]));
    if (i) out += ' ';
    out += buf;
  }
  if (bytes.size() > n) out += " ...";
  return out;
}


std::string printable(std::string_view text, std::size_t max) {
  std::string out;
  char buf[8];
  const bool cut = text.size() > max;
  if (cut) text = text.substr(0, max);
  for (char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += c;
    } else {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    }
  }
  if (cut) out += "...";
  return out;
}

bool is_printable(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

Decimal parse_decimal(std::string_view text, std::uint64_t max, std::uint64_t* out) {
  if (text.empty()) return Decimal::NotANumber;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return Decimal::NotANumber;
    if (__builtin_mul_overflow(value, 10u, &value) ||
        __builtin_add_overflow(value, static_cast<unsigned>(c - '0'), &value) || value > max) {
      return Decimal::TooLarge;
    }
  }
  *out = value;
  return Decimal::Ok;
}

std::string join(const std::vector<std::string>& items, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < max; ++i) {
    if (i) out += ", ";
    out += printable(items[i], 4096);
  }
  if (items.size() > max) out += " and " + std::to_string(items.size() - max) + " more";
  return out;
}

}  // namespace jk::cuda::binary_detail
