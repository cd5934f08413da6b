// The disk cache key of one NVRTC compile: everything that changes the
// binary. Besides the format and jitkernel versions every key has
// (key.hpp): the full source text (jitkernel's preamble and helpers are
// written into it), the program name (it is __FILE__ and appears in
// #line-mapped diagnostics), the target (cubin / PTX), the architecture,
// every option (which include the -I folders), the identity of the NVRTC
// library (its ELF build-id, which changes with every NVRTC release), and a
// fingerprint of the headers the source can pull in from the include
// folders: the size+mtime of every file the source #includes directly
// (jitkernel's preamble includes cuda_fp16.h, cooperative_groups.h, ...
// that way), and per folder (once per process) its own size+mtime and those
// of the headers those pull in and of the CUDA runtime's and CCCL's version
// headers. Headers included only indirectly from a user's own include
// folder are not fingerprinted: after editing one, clear the cache (or touch
// the file the kernel includes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {

struct CompileKeyInputs {
  std::string_view source;
  std::string_view program_name;
  std::string_view arch;    // "sm_90a"
  std::string_view target;  // "cubin" / "ptx"
  std::vector<std::string> options;
  std::string compiler;     // identity of the compiler library (see key.hpp file_identity)
  std::vector<std::string> include_dirs;
};

Digest compile_key(const CompileKeyInputs& inputs);

// The targets of the source's #include lines ("cuda_fp16.h", "my/helper.h").
std::vector<std::string> include_targets(std::string_view source);

}  // namespace jk::cache
