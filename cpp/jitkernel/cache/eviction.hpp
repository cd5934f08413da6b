// The disk cache's size cap (disk_cache.hpp): least-recently-used eviction,
// and making room for a writer without locks, also with concurrent writers.
// Internal to cache/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "jitkernel/cache/cache_files.hpp"

namespace jk::cache {

// Unlinks entries among `files` (never temp files, never `keep`) until
// `total` is at most `max_bytes` and the entries number at most
// `max_entries`: `first` before any other (the entry a store is about to
// replace), then the least recently used. A file found not to be ours stops
// counting (it cannot be evicted). Returns how many it unlinked.
std::uint64_t evict(const std::vector<Folder>& folders, std::vector<CacheFile> files,
                    std::uint64_t& total, std::uint64_t max_bytes, std::size_t max_entries,
                    const FileId& keep, const FileId& first);

// Makes room under `max_bytes` for a writer whose temp file (announcing its
// size) already exists, evicting the file it will replace (`replaced`) first;
// false when there is none to make (the temp files of
// writers still in flight fill the cap).
//
// The cap with concurrent writers, without locks. Every file the cache
// stores counts toward the cap: entries, records and temp files, a temp file
// at the size its name announces while it is younger than
// kReservationSeconds (cache_files.cpp). A writer (write_entry) first
// creates its temp file empty, announcing its size; then lists all folders
// twice, counting each file once (by inode) over both listings; evicts least recently used
// entries until that total is within the cap; and only then writes its bytes
// (or gives the store up when there is no room to make). Guarantee, for N
// writers (threads or processes) with the same cap on one local file system:
// the bytes in the folder never exceed the cap, at any moment. Take, at any
// moment, the writer W that announced last among those that have written
// bytes: no writer that announced after W has written any, and every file
// that existed when W started listing was counted by W or has been removed
// since (a directory listing may miss a file renamed while it runs, but each
// file is renamed at most once, from temp to entry keeping its inode and
// size, so one of W's two listings sees it). That includes the files of
// every other writer that has written bytes, which announced before W. A
// rename replaces and never adds bytes; evictions only remove. What it does
// not cover: a writer slower than kReservationSeconds between announcing and
// writing (its reservation lapses to the bytes written so far), writers
// using different caps (each keeps to its own), network file systems whose
// listings lag behind creates, and files that are not ours.
bool make_room(const std::vector<Folder>& folders, std::uint64_t max_bytes, const FileId& replaced,
               std::uint64_t& evictions);

}  // namespace jk::cache
