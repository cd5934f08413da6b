// Base64 in one pass each way (base64.hpp): a table lookup per character.
#include "jitkernel/core/base64.hpp"

#include <array>
#include <cstdint>

namespace jk::base64 {
namespace {

constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Each byte's 6-bit value, or -1 for a byte outside the alphabet.
constexpr std::array<std::int8_t, 256> values() {
  std::array<std::int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kDigits[i])] = static_cast<std::int8_t>(i);
  return t;
}
constexpr std::array<std::int8_t, 256> kValues = values();

}  // namespace

void append(std::string& out, std::string_view bytes) {
  out.reserve(out.size() + (bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto at = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    out += kDigits[v >> 18];
    out += kDigits[(v >> 12) & 63];
    out += kDigits[(v >> 6) & 63];
    out += kDigits[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 0) return;
  const std::uint32_t v = at(i) << 16 | (rest == 2 ? at(i + 1) << 8 : 0);
  out += kDigits[v >> 18];
  out += kDigits[(v >> 12) & 63];
  out += rest == 2 ? kDigits[(v >> 6) & 63] : '=';
  out += '=';
}

std::string encode(std::string_view bytes) {
  std::string out;
  append(out, bytes);
  return out;
}

std::optional<std::string> decode(std::string_view text, std::string* why) {
  if (text.size() % 4 != 0) {
    *why = "its length (" + std::to_string(text.size()) + ") is not a multiple of 4";
    return std::nullopt;
  }
  std::size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t acc = 0;
  const std::size_t digits = text.size() - pad;
  for (std::size_t i = 0; i < digits; ++i) {
    const std::int8_t v = kValues[static_cast<unsigned char>(text[i])];
    if (v < 0) {
      *why = "character " + std::to_string(i) + " is not a base64 digit (A-Z a-z 0-9 + /)";
      return std::nullopt;
    }
    acc = acc << 6 | static_cast<std::uint32_t>(v);
    if (i % 4 == 3) {
      out += static_cast<char>(acc >> 16);
      out += static_cast<char>((acc >> 8) & 0xFF);
      out += static_cast<char>(acc & 0xFF);
      acc = 0;
    }
  }
  if (pad == 0) return out;
  // The last group: 2 digits (one byte) or 3 (two bytes); the bits past them must be zero.
  const std::uint32_t unused = pad == 2 ? (acc & 0xF) : (acc & 0x3);
  if (unused != 0) {
    *why = "the bits after the last byte are not zero (not the one spelling of these bytes)";
    return std::nullopt;
  }
  if (pad == 2) {
    out += static_cast<char>(acc >> 4);
  } else {
    out += static_cast<char>(acc >> 10);
    out += static_cast<char>((acc >> 2) & 0xFF);
  }
  return out;
}

}  // namespace jk::base64
