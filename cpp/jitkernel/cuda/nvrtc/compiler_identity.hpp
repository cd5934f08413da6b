// Which NVRTC library compiles: the identity of its file (ELF build-id, which
// changes with every NVRTC release), one of the compile key's fields
// (cache/compile_key.hpp), so that a binary from another NVRTC is never
// answered from the disk cache.
#pragma once

#include <string>

#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"

namespace jk::cuda {

// The identity of the NVRTC library compiles use: the ELF build-id of the
// configured file (or, for a soname, of the file the loader mapped) and of
// its preloads; memoized per configuration.
std::string compiler_identity();

// compiler_identity() of `paths` read from the files they name, without
// loading anything (a few small reads of ELF headers); "" when the library
// is named by a soname or its file cannot be read.
std::string library_identity(const ToolkitPaths& paths);

// Makes compiler_identity() answer `identity` for `paths` without reading
// the files: for a toolkit record (toolkit_record.hpp) that computed it with
// library_identity() and has checked since that the files are unchanged.
void remember_compiler_identity(const ToolkitPaths& paths, std::string identity);

}  // namespace jk::cuda
