// The disk cache's settings from the environment: JITKERNEL_CACHE (on/off),
// JITKERNEL_CACHE_MAX_BYTES (the size cap), JITKERNEL_CACHE_READONLY_DIRS
// (read-only tiers), JITKERNEL_CACHE_CLAIM and JITKERNEL_CACHE_CLAIM_WAIT
// (compile claims between processes). Pure parsing, so that every accepted
// and rejected spelling is tested without touching the disk.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace jk::cache {

inline constexpr std::uint64_t kDefaultMaxBytes = std::uint64_t(1) << 30;  // 1 GiB

// JITKERNEL_CACHE: unset, "" or "1" -> true; "0" -> false; anything else
// -> nullopt (the caller warns and keeps the cache on).
std::optional<bool> parse_enabled(const char* value);

// JITKERNEL_CACHE_MAX_BYTES: a whole number of bytes, optionally followed by
// K, M, G or T (powers of 1024, also written KiB/KB, MiB/MB, ...), e.g.
// "1073741824", "512M", "2GiB". nullopt for anything else (negative, empty,
// fractional, overflowing 64 bits, unknown suffix).
std::optional<std::uint64_t> parse_max_bytes(const std::string& value);

// JITKERNEL_CACHE_CLAIM_WAIT: how long a process waits for another's compile.
inline constexpr std::int64_t kDefaultClaimWaitNs = std::int64_t(30) * 1000000000;

// A number of seconds, whole or with a fraction ("30", "0.5"), at most a
// day; in nanoseconds. nullopt for anything else (negative, empty, a unit).
std::optional<std::int64_t> parse_seconds(const std::string& value);

// JITKERNEL_CACHE_READONLY_DIRS: the folders of a ':'-separated list, empty
// components skipped, in order.
std::vector<std::string> split_folders(const std::string& value);

}  // namespace jk::cache
