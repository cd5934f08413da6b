// Serving aliases: how a machine without NVRTC or the CUDA headers (a C++
// inference server, an AOTInductor package's host) finds the binaries a
// machine with them compiled. A compile key (compile_key.hpp) covers the
// NVRTC build and the headers' content, which such a machine cannot compute;
// the serving key covers only what it can: the generated source, the program
// name, target, architecture and the options that do not name a toolkit
// folder. Beside every binary it stores, the compile cache stores an alias
// entry (store.hpp's EntryKind::Alias, "<serving key>.jka") holding the
// binary's compile key; bundles and read-only tiers carry aliases like
// entries. A lookup through an alias happens only where the compile key
// cannot be computed, and yields a binary whose own entry checks passed.
//
// Alias payload (exactly 91 bytes): "jitkernel serving alias 1\n" then the
// compile key as 64 lowercase hex digits and "\n".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cache/store.hpp"

namespace jk::cache {

// The fields a serving key covers; `options` are the compile's options less
// the toolkit's -I folders (cuda/nvrtc/compile.hpp's portable_compile_options).
struct ServingKeyFields {
  std::string_view source;
  std::string_view program_name;
  std::string_view target;  // "cubin" / "ptx"
  std::string_view arch;
  std::vector<std::string> options;
};

Key serving_key(const ServingKeyFields& fields);

std::string encode_alias(const Key& compile_key);
// The compile key an alias payload names; nullopt for anything else.
std::optional<Key> decode_alias(std::string_view payload);

// Stores the alias `serving` -> `compile_key` in the writable folder (not
// counted as a store; nothing thrown).
void store_alias(const Key& serving, const Key& compile_key);

// The binary the alias `serving` names: the alias, then the entry it names,
// each from the folder or the first tier that has a valid one (the entry's
// load is counted as a hit or a miss); nullopt when either is missing or bad.
std::optional<std::string> load_through_alias(const Key& serving);

}  // namespace jk::cache
