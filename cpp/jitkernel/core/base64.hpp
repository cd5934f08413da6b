// Base64 (RFC 4648, standard alphabet, padded) for bytes that travel inside
// text: a precompiled kernel's binary in its serialised form. Decoding reads
// each character once and accepts only the one spelling the encoder writes
// (no whitespace, padding exactly where needed, unused bits zero), so equal
// bytes always have equal text.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace jk::base64 {

void append(std::string& out, std::string_view bytes);
std::string encode(std::string_view bytes);

// The decoded bytes, or nullopt with `why` set (what is wrong, and where).
std::optional<std::string> decode(std::string_view text, std::string* why);

}  // namespace jk::base64
