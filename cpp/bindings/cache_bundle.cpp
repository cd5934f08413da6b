// What bundles (python/jitkernel/_bundle.py) need of the compile cache:
// checking that bytes are a valid entry file for the key their name gives
// (the cache's own header and checksum check), and storing a payload through
// the cache's own atomic store (cap, private folder, temp file + rename).
#include <cstring>
#include <string>
#include <string_view>

#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/entry.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {
namespace {

// 64 lowercase hex digits -> the key; false for anything else.
bool key_from_hex(std::string_view hex, cache::Digest& key) {
  if (hex.size() != 2 * key.size()) return false;
  auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < key.size(); ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    key[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

cache::Digest key_arg(const std::string& hex) {
  cache::Digest key{};
  if (!key_from_hex(hex, key))
    throw ArgumentError("key", "expected 64 lowercase hex digits, got '" + hex.substr(0, 80) + "'");
  return key;
}

// "" when `data` is a valid entry file for `key_hex`, else why not.
std::string check_entry(const std::string& key_hex, nb::bytes data) {
  const cache::Digest key = key_arg(key_hex);
  const std::string_view bytes(data.c_str(), data.size());
  if (bytes.size() < cache::kEntryHeaderSize) return "shorter than an entry header";
  cache::EntryHeaderBytes header;
  std::memcpy(header.data(), bytes.data(), header.size());
  if (const char* why = cache::check_entry_header(header, key, bytes.size())) return why;
  if (!cache::payload_matches(header, bytes.substr(cache::kEntryHeaderSize))) return "bad checksum";
  return "";
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def("_cache_entry_check", &check_entry, "key"_a, "data"_a,
        "'' when data is a valid cache entry file for the key (hex), else why not (internal: bundles).");
  m.def(
      "_cache_store_entry",
      [](const std::string& key_hex, nb::bytes data) {
        const cache::Digest key = key_arg(key_hex);
        if (!check_entry(key_hex, data).empty()) throw ArgumentError("data", "not a valid cache entry");
        const std::string payload(data.c_str() + cache::kEntryHeaderSize,
                                  data.size() - cache::kEntryHeaderSize);
        nb::gil_scoped_release unlocked;
        cache::store(key, payload);
      },
      "key"_a, "data"_a,
      "Stores a checked entry file's payload under its key through the cache's atomic store (internal: bundles).");
}

const Registration reg(order::toolkit, "cache_bundle", bind);

}  // namespace
}  // namespace jk::py
