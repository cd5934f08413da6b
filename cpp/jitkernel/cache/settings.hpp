// The disk cache's settings from the environment: JITKERNEL_CACHE (on/off)
// and JITKERNEL_CACHE_MAX_BYTES (the size cap). Pure parsing, so that every
// accepted and rejected spelling is tested without touching the disk.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

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

}  // namespace jk::cache
