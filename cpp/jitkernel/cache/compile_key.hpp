// The disk cache key of one NVRTC compile: everything that changes the
// binary. Besides the format and jitkernel versions every key has
// (key.hpp): the full source text (jitkernel's preamble and helpers are
// written into it), the program name (it is __FILE__, appears in
// #line-mapped diagnostics, and its folder is where the source's "quoted"
// #includes are looked up first), the target (cubin / PTX), the
// architecture, every option (which include the -I folders), the identity
// of the NVRTC library (its ELF build-id, which changes with every NVRTC
// release), and every file the compile can read through #include
// (include_closure.hpp): the content of each one outside the toolkit's
// folders wherever it is (absolute or relative path, -I folder, nested in
// another header), the places looked at before it, and for a file in a
// toolkit folder its size+mtime. A toolkit folder (one holding the CUDA
// runtime's or CCCL's headers) is covered once per process by its own
// size+mtime and those of the headers that pull in the rest and of the
// version headers; editing a header inside an installed toolkit in place is
// not noticed (reinstalling it is).
//
// When the closure cannot be known before compiling (an #include whose file
// a macro names), the key says so: such a compile is kept in memory only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cache/include_closure.hpp"
#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {

struct CompileKeyInputs {
  std::string_view source;
  std::string_view program_name;
  std::string_view arch;    // "sm_90a"
  std::string_view target;  // "cubin" / "ptx"
  std::vector<std::string> options;
  std::string compiler;     // identity of the compiler library (see key.hpp file_identity)
  std::vector<std::string> include_dirs;  // the -I folders of `options`, in order
};

struct CompileKey {
  Digest digest;
  // Empty when `digest` covers every file the compile can read; else why not
  // (IncludeClosure::incomplete). Such a compile must neither be answered
  // from the disk cache nor stored in it.
  std::string not_covered;
};

CompileKey compile_key_of(const CompileKeyInputs& inputs);

// compile_key_of(inputs).digest.
Digest compile_key(const CompileKeyInputs& inputs);

}  // namespace jk::cache
