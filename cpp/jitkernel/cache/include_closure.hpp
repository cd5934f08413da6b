// The files an NVRTC compile can read through #include, found before the
// compile so that the compile key (compile_key.hpp) can cover their content:
// NVRTC has no dependency output and no preprocess-only mode, so the source
// and every file it reaches are scanned for #include / #include_next /
// __has_include, and each name is looked up the way NVRTC 13 does (checked
// against it): "quoted" names first in the folder of the file that names
// them (for the source itself, the folder of the program name, so the
// current folder for "k.cu"), then in each -I folder in order; <angle>
// names in the -I folders only; absolute names as they are. The folder of
// a header is that of the path it was opened by (symlinks not followed, as
// NVRTC does); #line does not change it.
//
// The scan over-approximates, which is always safe: directives in inactive
// #if branches count, and #include_next looks in every folder. Comments,
// string literals and line splices are honoured so that nothing real is
// skipped. A name given by a macro (#include HEADER) cannot be looked up
// before preprocessing: the closure is then incomplete and says why.
//
// Files inside the toolkit's folders are neither read nor scanned (CCCL
// alone is hundreds of headers, and a warm start must stay one stat per
// toolkit header): the key covers them by the toolkit's fingerprint and
// their size, named relative to their toolkit folder ("<toolkit i>/name", i
// its place in IncludeSearch::toolkit_dirs), so that the same toolkit
// installed at another path or at another time gives the same closure.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jitkernel/cache/include_scan.hpp"

namespace jk::cache {

struct IncludeSearch {
  std::string program_name;               // its folder is where the source's "quoted" names are looked up first
  std::vector<std::string> include_dirs;  // the -I folders, in order
  std::vector<std::string> toolkit_dirs;  // those of them whose files are not read (see above)
};

struct IncludeClosure {
  // (absolute path, state) for every path the compile may look at, each
  // once, depth first in the order the directives name them (paths in a
  // toolkit folder as "<toolkit i>/relative"): "sha256 <hex>"
  // for a file read, "toolkit size S" for one in a toolkit folder,
  // "absent" where a name was looked for and nothing is, "not a regular
  // file" (a folder) / "unusable: <errno text>" where the search went on
  // past it.
  std::vector<std::pair<std::string, std::string>> files;
  // Empty when `files` covers everything the compile can read; else why not
  // (e.g. "'#include HEADER' in /work/h.h names its file through a macro").
  std::string incomplete;
};

// The closure of `source` (the program NVRTC is given) under `search`. A
// FIFO, socket or device where a directive looks is a CompileError naming
// the directive and the path (NVRTC would read it, or block on it). File
// contents are hashed once per process while their device, inode, size,
// modification and status-change times stay the same (and the file was not
// modified within the timestamps' resolution of being hashed). Thread-safe.
IncludeClosure include_closure(std::string_view source, const IncludeSearch& search);

}  // namespace jk::cache
