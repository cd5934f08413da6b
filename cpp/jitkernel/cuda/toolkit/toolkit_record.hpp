// A toolkit search result kept across processes. Finding NVRTC and the CUDA
// headers (python/jitkernel/_toolkit_search.py, with cuda-pathfinder) takes tens of
// milliseconds and loads NVRTC, more than a compile-cache hit should cost, so
// the result is stored as a record of the disk cache (cache/disk_cache.hpp:
// checksummed, replaced atomically, in the private folder) under a key of the
// search's inputs (environment, interpreter, ...: the searcher's text, and
// the NVRTC libraries the process had loaded before searching: cuda-pathfinder
// takes one another package loaded, e.g. torch's). With
// it go the searcher's notes, the NVRTC identity
// (nvrtc/compiler_identity.hpp library_identity) and the stat identities
// (cache/file_identity.hpp stat_identity) of
// the files found and of every place the search looked; the record is used
// only while each of those is unchanged, so a new, removed or replaced
// library, header folder or package makes the searcher search again. The
// recorded NVRTC identity, and the heads of the toolkit headers that
// fingerprint the include folders, go into compile keys without reading the
// files again: a file whose device, inode, size, mtime and ctime (which
// cannot be set back) are unchanged has not been written or replaced since.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jitkernel/cuda/toolkit/toolkit_paths.hpp"

namespace jk::cuda {

// (path, its stat_identity) pairs.
using Watched = std::vector<std::pair<std::string, std::string>>;

// Stat identities of `paths`, taken now.
Watched watch(const std::vector<std::string>& paths);

// The NVRTC libraries loaded in this process now, by whoever loaded them:
// each loaded object whose file name starts with "libnvrtc.so" (not
// libnvrtc-builtins), as the loader names it, with its stat identity, in
// load order. A search's result depends on them (an NVRTC already loaded is
// the one cuda-pathfinder returns), so they are part of a record's key: take
// them before searching (the search loads NVRTC). Empty outside Linux.
Watched loaded_nvrtc();

// Stores the record of a search for `inputs` made while the NVRTC libraries
// `loaded` (loaded_nvrtc() taken before it) were loaded: `paths` (the NVRTC library by
// absolute path), the searcher's `notes` (one line each, given back as they
// are), the places the search looked with their identities taken before it
// searched (`places`), and the files of `paths` with their identities and
// NVRTC's, taken now. False when the result cannot be recorded (NVRTC named
// by a soname or not readable, a value with a line break); else the record
// goes to the disk cache, which drops it when it is off or not writable.
bool store_toolkit_record(const std::string& inputs, const Watched& loaded,
                          const ToolkitPaths& paths, const std::vector<std::string>& notes,
                          const Watched& places);

struct ToolkitRecord {
  ToolkitPaths paths;
  std::vector<std::string> notes;
  std::string nvrtc_identity;  // library_identity(paths) when it was stored
  // (path, cache::toolkit_head(path)) of the headers that fingerprint the
  // include folders in compile keys (cache/compile_key.hpp), read when it
  // was stored.
  std::vector<std::pair<std::string, std::string>> heads;
};

// The record stored for `inputs` and `loaded` (loaded_nvrtc() now) when
// there is a valid one that watches every file it names and whose every
// watched file and place is unchanged; nullopt otherwise (none, damaged,
// stale, disk cache off). Without one for `loaded`, the valid record of a
// search made with no NVRTC loaded, when each loaded library is the file it
// names (a search returns the NVRTC already loaded, so the answer is that
// same file: a process where torch loaded the NVRTC wheel jitkernel uses
// shares the record of processes without torch). When there is one,
// compiler_identity() of its paths and the include folders' header heads
// are answered from it from now on (no file read).
std::optional<ToolkitRecord> load_toolkit_record(const std::string& inputs,
                                                 const Watched& loaded);

}  // namespace jk::cuda
