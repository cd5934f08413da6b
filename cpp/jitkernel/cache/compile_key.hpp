// The disk cache key of one NVRTC compile: everything that changes the
// binary, listed here and nowhere else. The compiler side
// (cuda/nvrtc/compile_cache.cpp) fills a CompileKeyFields; compile_key()
// hashes it, adding what it derives from those fields. In the order hashed:
//
//   format, jitkernel     the entry format and jitkernel's version (every
//                         key starts with them: key_builder.hpp)
//   source, program name, target, arch, compiler, option...   the fields below
//   include dir           each -I folder by its path; one that holds a
//   toolkit folder        toolkit (the CUDA runtime's or CCCL's headers)
//                         instead by its content fingerprint, not its path:
//                         the size and the first 16 KiB of the headers that
//                         pull in the rest and of the version headers, taken
//                         once per process or given by the toolkit record,
//                         which watches those files (so the same toolkit
//                         installed at another path or time gives the same
//                         key; an in-place
//                         edit of a toolkit header that keeps its size is not
//                         noticed, reinstalling another version is); an
//                         option naming a toolkit folder ("-I<path>") is
//                         hashed as "-I<toolkit i>"
//   <path> -> <state>     the include closure (include_closure.hpp): every
//                         file the compile can read through #include, wherever
//                         it is (absolute or relative path, -I folder, nested
//                         in another header), with the places looked at before
//                         it: the content of each file outside the toolkit's
//                         folders, the size of each one inside them (named
//                         relative to its toolkit folder)
//   not covered           why the closure cannot be known before compiling
//                         (an #include whose file a macro names), if so: such
//                         a compile is kept in memory only
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jitkernel/cache/include_closure.hpp"
#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {

// What the compiler side knows of one compile (see above for what the key
// adds). Views must outlive the compile_key() call.
struct CompileKeyFields {
  // The full source text NVRTC compiles (jitkernel's preamble and helpers are
  // written into it).
  std::string_view source;
  // NVRTC's program name: it is __FILE__, appears in #line-mapped
  // diagnostics, and its folder is where the source's "quoted" #includes are
  // looked up first.
  std::string_view program_name;
  std::string_view target;  // "cubin" / "ptx"
  std::string_view arch;    // "sm_90a"
  // Identity of the NVRTC library (its ELF build-id, which changes with
  // every NVRTC release: cuda/nvrtc/compiler_identity.hpp).
  std::string compiler;
  // Every NVRTC option, in order: the architecture, the language standard,
  // the -I folders, and the user's compile options as flags (-D defines,
  // --use_fast_math, -lineinfo, -G, --maxrregcount, extra flags:
  // cuda/nvrtc/compile_options.hpp), so kernels that differ by any option
  // never share an entry.
  std::vector<std::string> options;
  // The -I folders of `options`, in order (the user's include_dirs, then the
  // toolkit's): where the include closure is
  // looked up, and which of them are toolkit folders.
  std::vector<std::string> include_dirs;
};

struct CompileKey {
  Digest digest;
  // Empty when `digest` covers every file the compile can read; else why not
  // (IncludeClosure::incomplete). Such a compile must neither be answered
  // from the disk cache nor stored in it.
  std::string not_covered;
};

// The key of `fields` and of what they lead to (toolkit folder fingerprints,
// the include closure): a few stat calls, and the content of files outside
// the toolkit's folders, hashed once per process while unchanged.
CompileKey compile_key(const CompileKeyFields& fields);

// The headers whose heads fingerprint include folder `dir` (whether they
// exist or not), and the head fingerprint of one of them (read now).
std::vector<std::string> toolkit_header_paths(const std::string& dir);
std::string toolkit_head(const std::string& path);

// Makes the folder fingerprints of this process take each header's head
// from `heads` ((path, toolkit_head(path)) pairs) instead of reading it: for
// a toolkit record (cuda/toolkit/toolkit_record.hpp) that read them with
// toolkit_head() and has checked since that the files are unchanged.
void remember_toolkit_heads(const std::vector<std::pair<std::string, std::string>>& heads);

}  // namespace jk::cache
