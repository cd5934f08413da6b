// The persistent compile cache: compiled binaries stored as files in a
// private per-user folder, keyed by a SHA-256 of everything that changes the
// binary (see compile_key.hpp), so a new process finds a kernel compiled by an
// earlier one with one open + read + checksum.
//
// Folder: $JITKERNEL_CACHE_DIR, else $XDG_CACHE_HOME/jitkernel or
// ~/.cache/jitkernel (Linux), ~/Library/Caches/jitkernel (macOS).
// JITKERNEL_CACHE=0 disables it; JITKERNEL_CACHE_MAX_BYTES caps the size of
// everything it stores (default 1 GiB; a store first evicts least recently
// used entries to make room, also with concurrent writers: see make_room in
// eviction.hpp). JITKERNEL_CACHE_READONLY_DIRS (':'-separated) names
// read-only tiers looked in after the folder, never written (tiers.hpp).
// JITKERNEL_CACHE_CLAIM=0 turns off compile claims between processes, and
// JITKERNEL_CACHE_CLAIM_WAIT bounds how long one waits for another's
// compile (claims.hpp). The environment is read on first use (and again
// after reset()).
//
// Network file systems: entries are published by rename, a read that fails
// because the file or its handle went away (ENOENT, ESTALE, EIO) is a plain
// miss without a warning, and nothing relies on another host seeing a
// rename at once (a claim's waiter gives up after its bound).
//
// Never an error: a folder that cannot be used (owned by another user,
// writable by group/others, inside a folder another user could replace it
// from, not creatable) or a write that fails (read-only
// or full disk) turns the disk cache off for the process with one warning
// per cause (see set_warning_handler); compiles then stay in memory only.
// Whatever the folder holds never blocks, crashes or exhausts memory: files
// are opened non-blocking without following links, anything but a regular
// file is a bad entry, reads are bounded by the cap and the file's size.
// Entries carry a checksum; a bad one is ignored (and replaced on the next
// store). One entry that cannot be stored (a folder in its place) is skipped
// with one warning; the others still are. Writes are atomic (temp file +
// rename; not fsync'ed: a file a crash tore fails its checksum, a miss), no
// lock files. All functions are thread-safe and safe
// against concurrent processes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cache/claims.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/cache/store.hpp"

namespace jk::cache {

// The absolute cache folder when the disk cache is enabled and usable
// (created 0700, owned by this user, not writable by group/others, and every
// folder above it owned by root or this user and writable by nobody else
// unless sticky: directory.hpp), else nullopt (JITKERNEL_CACHE=0, or turned
// off after its one warning). Entries live in its "kernels" subfolder,
// records (below) in "records"; both count toward the cap, and neither may
// be a symbolic link. Both are opened when the environment is read and used
// through their descriptors: renaming the folder later changes nothing for
// this process (it goes on in the folder it checked).
std::optional<std::string> active_directory();

// The folder the configuration names, whether or not it is usable or enabled
// (what `python -m jitkernel cache path` prints). Empty when there is no home
// folder to derive it from.
std::string configured_directory();

// The payload stored under `key` in the folder, else in the first read-only
// tier that has a valid entry, or nullopt (no entry, a bad entry, disk cache
// off). A hit in the folder marks the entry recently used. Binaries are
// counted in info()'s hits and misses; decisions (EntryKind::Decision) are
// not: they are no compiled kernels.
std::optional<std::string> load(const Key& key, EntryKind kind = EntryKind::Binary);

// load(), and on a miss when claims are on (and the folder is writable):
// waits for another process compiling (or tuning: a decision) `key` (its
// entry is then returned), or claims it: nullopt with `claim` held, which the
// caller drops after compiling and storing (or failing). nullopt with no
// claim held: compile without one (claims off, waited in vain). A binary is
// counted once: a hit or a miss. A decision's claim is its own (claims.hpp's
// tag): it never meets a compile's claim on the same digest.
std::optional<std::string> load_or_claim(const Key& key, Claim& claim, EntryKind kind = EntryKind::Binary);

// Stores `payload` under `key` (atomic replace), evicting least recently
// used entries first so that everything stored stays within the cap (not
// stored when writers in flight hold all the room). A folder that does not
// take files turns the disk cache off with a warning; an entry whose name is
// taken by something that cannot be replaced is skipped with one warning.
// Nothing is thrown. An alias or a decision (store.hpp's EntryKind) is
// stored the same way but not counted in info().stores.
void store(const Key& key, std::string_view payload, EntryKind kind = EntryKind::Binary);

// The alias stored under `key` (the folder, then the tiers), not counted in
// info()'s hits and misses: cuda/nvrtc/serving_alias.hpp's lookups.
std::optional<std::string> load_alias(const Key& key);

// Records: small payloads that are not compiled code (the toolkit
// discovery python/jitkernel/_toolkit_search.py persists), stored in the entry
// format (checksum, atomic replace) in the folder's "records" subfolder
// (created 0700 and checked like the folder itself), written like entries (a
// record torn by a crash fails its checksum: it only costs redoing the work
// it saved). They count toward the cap and info().bytes (not entries), at
// most 64 are kept (least recently used removed), and clear() removes them.
// Silent: a missing or bad
// record is nullopt, a failed write is ignored (the caller just does its work
// again next time).
std::optional<std::string> load_record(const Key& key);
void store_record(const Key& key, std::string_view payload);

// A read-only tier as info() reports it.
struct TierInfo {
  std::string directory;
  std::string problem;          // why it is not used ("" when it is)
  std::uint64_t entries = 0;    // entry files in it now
  std::uint64_t bytes = 0;
};

struct Info {
  std::string directory;        // configured_directory()
  bool enabled = false;         // active_directory() has a value
  std::string disabled_reason;  // why not, when !enabled
  std::uint64_t entries = 0;    // entry files in the folder now
  std::uint64_t records = 0;    // record files (load_record) in the folder now
  std::uint64_t bytes = 0;      // size of everything the cap counts (entries,
                                // records, temp files being written)
  std::uint64_t max_bytes = 0;  // the cap
  // This process: loads that found a valid entry / found none / found a bad
  // one (counted in misses too), entries written, entries evicted.
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t corrupt = 0;
  std::uint64_t stores = 0;
  std::uint64_t evictions = 0;
  std::vector<TierInfo> readonly;      // JITKERNEL_CACHE_READONLY_DIRS, in order
  std::uint64_t readonly_hits = 0;     // hits (counted in hits) from a read-only tier
  bool claims = false;                 // compile claims are on
  double claim_wait_seconds = 0;       // JITKERNEL_CACHE_CLAIM_WAIT
  std::uint64_t claim_waits = 0;       // loads that waited for another process's compile
  std::uint64_t claim_timeouts = 0;    // ... and gave up after the bound (a miss)
};
Info info();

// Removes every entry, record and temp file of jitkernel's from the folder
// (never from a read-only tier):
// files named like them that are regular files starting with the entry magic
// (temp files: by name), never a link (nor a subfolder that is one) nor any
// other file; returns how many entries and records were removed. Works on the
// configured folder even when it has been turned off for writing, as long as
// it passes the ownership checks.
struct Cleared {
  std::uint64_t entries = 0;
  std::uint64_t records = 0;
};
Cleared clear();

// Forgets the configuration, the causes already warned about and the
// counters, so that the environment is read again on next use (tests, and
// programs that change JITKERNEL_CACHE* at run time).
void reset();

// Where warnings go: the Python bindings turn them into a Python warning.
// Without a handler they are written to stderr. Each cause is reported once
// per process (until reset()). The handler is called with no cache lock held
// and must not throw.
using WarningHandler = void (*)(const std::string& message);
void set_warning_handler(WarningHandler handler);

// Reports `message` like the cache's own warnings, once per `cause` (until
// reset()): for a compile the cache must leave alone (compile_key.hpp).
void warn(const std::string& cause, const std::string& message);

}  // namespace jk::cache
