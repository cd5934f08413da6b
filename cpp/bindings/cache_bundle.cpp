// What bundles (python/jitkernel/_fleet/bundle.py) need of the compile cache:
// checking that bytes are a valid entry file for the key their name gives
// (the cache's own header and checksum check), whole or streamed in pieces
// (import verifies a bundle with memory that does not grow with it), and
// storing a payload through the cache's own atomic store (cap, private
// folder, temp file + rename).
#include <algorithm>
#include <cstdint>
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

// Checks an entry file given in pieces (update) against `key` and the size
// announced for it: the header against the key and the size, the payload
// against the header's checksum, hashed as it comes. Memory does not depend
// on the size.
class EntryCheck {
 public:
  EntryCheck(const std::string& key_hex, std::uint64_t size) : key_(key_arg(key_hex)), size_(size) {}

  void update(std::string_view bytes) {
    if (finished_) throw ArgumentError("data", "the entry check is finished");
    const std::size_t to_header =
        seen_ < header_.size() ? std::min(bytes.size(), header_.size() - static_cast<std::size_t>(seen_)) : 0;
    if (to_header > 0) std::memcpy(header_.data() + seen_, bytes.data(), to_header);
    payload_.update(bytes.data() + to_header, bytes.size() - to_header);
    seen_ += bytes.size();
  }

  // "" when the pieces were a valid entry file for the key, of the size
  // announced, else why not. The answer is kept: later calls repeat it.
  const std::string& finish() {
    if (finished_) return why_;
    finished_ = true;
    const cache::Digest checksum = payload_.finish();
    if (seen_ != size_) {
      why_ = "got " + std::to_string(seen_) + " bytes, expected " + std::to_string(size_);
    } else if (size_ < cache::kEntryHeaderSize) {
      why_ = "shorter than an entry header";
    } else if (const char* why = cache::check_entry_header(header_, key_, size_)) {
      why_ = why;
    } else if (!cache::payload_checksum_matches(header_, checksum)) {
      why_ = "bad checksum";
    }
    return why_;
  }

 private:
  cache::Digest key_;
  std::uint64_t size_;
  std::uint64_t seen_ = 0;
  cache::EntryHeaderBytes header_{};
  cache::Sha256 payload_;
  bool finished_ = false;
  std::string why_;
};

// "" when `data` is a valid entry file for `key_hex`, else why not.
std::string check_entry(const std::string& key_hex, std::string_view data) {
  EntryCheck check(key_hex, data.size());
  check.update(data);
  return check.finish();
}

std::string_view view(const nb::bytes& data) { return {data.c_str(), data.size()}; }

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def(
      "_cache_entry_check",
      [](const std::string& key_hex, nb::bytes data) { return check_entry(key_hex, view(data)); }, "key"_a,
      "data"_a, "'' when data is a valid cache entry file for the key (hex), else why not (internal: bundles).");
  nb::class_<EntryCheck>(m, "_CacheEntryCheck",
                         "Checks a cache entry file given in pieces (internal: bundles stream theirs).")
      .def(nb::init<const std::string&, std::uint64_t>(), "key"_a, "size"_a)
      .def(
          "update",
          [](EntryCheck& self, nb::bytes data) { self.update(view(data)); },
          "data"_a, "Adds the next piece of the file.")
      .def("finish", &EntryCheck::finish,
           "'' when the pieces were a valid entry file for the key, of the announced size, else why not.");
  m.def(
      "_cache_store_entry",
      [](const std::string& key_hex, nb::bytes data) {
        const cache::Digest key = key_arg(key_hex);
        if (!check_entry(key_hex, view(data)).empty()) throw ArgumentError("data", "not a valid cache entry");
        // A view, not a copy: an entry may be as large as the cache's cap.
        const std::string_view payload = view(data).substr(cache::kEntryHeaderSize);
        nb::gil_scoped_release unlocked;  // `data` stays referenced by the caller meanwhile
        cache::store(key, payload);
      },
      "key"_a, "data"_a,
      "Stores a checked entry file's payload under its key through the cache's atomic store (internal: bundles).");
}

const Registration reg(order::toolkit, "cache_bundle", bind);

}  // namespace
}  // namespace jk::py
