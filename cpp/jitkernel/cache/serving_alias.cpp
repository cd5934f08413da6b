// The serving aliases of serving_alias.hpp: the serving key's fields in a
// fixed order (a label of its own, so no serving key equals a compile key),
// and the alias payload, parsed by exact length.
#include "jitkernel/cache/serving_alias.hpp"

#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/key_builder.hpp"
#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {
namespace {

constexpr std::string_view kAliasHead = "jitkernel serving alias 1\n";
constexpr std::size_t kHexDigits = 64;

}  // namespace

Key serving_key(const ServingKeyFields& in) {
  KeyBuilder key;
  key.add("serving key", "1")
      .add("source", in.source)
      .add("program name", in.program_name)
      .add("target", in.target)
      .add("arch", in.arch);
  for (const std::string& option : in.options) key.add("option", option);
  return key.finish();
}

std::string encode_alias(const Key& compile_key) {
  return std::string(kAliasHead) + to_hex(compile_key) + "\n";
}

std::optional<Key> decode_alias(std::string_view payload) {
  if (payload.size() != kAliasHead.size() + kHexDigits + 1 || payload.substr(0, kAliasHead.size()) != kAliasHead ||
      payload.back() != '\n')
    return std::nullopt;
  Key key{};
  if (!from_hex(payload.substr(kAliasHead.size(), kHexDigits), key)) return std::nullopt;
  return key;
}

void store_alias(const Key& serving, const Key& compile_key) {
  store(serving, encode_alias(compile_key), EntryKind::Alias);
}

std::optional<std::string> load_through_alias(const Key& serving) {
  const std::optional<std::string> alias = load_alias(serving);
  if (!alias) return std::nullopt;
  const std::optional<Key> target = decode_alias(*alias);
  if (!target) return std::nullopt;
  return load(*target);
}

}  // namespace jk::cache
