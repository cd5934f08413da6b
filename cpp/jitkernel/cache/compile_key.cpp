// The compile key of compile_key.hpp: the fields in a fixed order, then each
// -I folder with, for a toolkit's, its fingerprint (taken once per process),
// then the include closure of the source.
#include "jitkernel/cache/compile_key.hpp"

#include <mutex>
#include <unordered_map>

#include "jitkernel/cache/file_identity.hpp"
#include "jitkernel/cache/key_builder.hpp"

namespace jk::cache {
namespace {

// Toolkit headers that the headers the preamble includes (cuda_fp16.h,
// cuda_bf16.h, cooperative_groups.h, ...: #include targets of the source, so
// fingerprinted per key) pull in, and the version files of the CUDA runtime
// headers and of CCCL.
constexpr const char* kToolkitHeaders[] = {
    "cuda_fp16.hpp",
    "cuda_bf16.hpp",
    "cuda_runtime_api.h",
    "cuda/std/__cccl/version.h",
};
// A folder holding one of these is a toolkit's (CUDA runtime headers, CCCL).
constexpr const char* kToolkitMarkers[] = {"cuda_runtime_api.h", "cuda/std/__cccl/version.h"};

struct IncludeFolder {
  std::string fingerprint;  // the folder's own size+mtime and its toolkit headers'
  bool toolkit = false;
};

// Once per process per folder.
const IncludeFolder& include_folder(const std::string& dir) {
  static std::mutex mutex;
  static auto* memo = new std::unordered_map<std::string, IncludeFolder>;  // nodes never move or die
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = memo->find(dir);
    if (it != memo->end()) return it->second;
  }
  IncludeFolder f;
  f.fingerprint = stat_fingerprint(dir);
  for (const char* header : kToolkitHeaders) {
    const std::string stat = stat_fingerprint(dir + "/" + header);
    f.fingerprint += std::string("\n") + header + ": " + stat;
    for (const char* marker : kToolkitMarkers)
      if (stat != "missing" && std::string_view(header) == marker) f.toolkit = true;
  }
  std::lock_guard<std::mutex> lock(mutex);
  return memo->emplace(dir, std::move(f)).first->second;
}

}  // namespace

CompileKey compile_key(const CompileKeyFields& in) {
  KeyBuilder key;
  key.add("source", in.source)
      .add("program name", in.program_name)
      .add("target", in.target)
      .add("arch", in.arch)
      .add("compiler", in.compiler);
  for (const std::string& option : in.options) key.add("option", option);
  IncludeSearch search;
  search.program_name = in.program_name;
  search.include_dirs = in.include_dirs;
  for (const std::string& dir : in.include_dirs) {
    key.add("include dir", dir);
    // Another folder's files are covered one by one by the closure (its own
    // mtime, which any editor's temp file changes, would only cost misses).
    const IncludeFolder& f = include_folder(dir);
    if (!f.toolkit) continue;
    key.add("toolkit folder", f.fingerprint);
    search.toolkit_dirs.push_back(dir);
  }
  IncludeClosure closure = include_closure(in.source, search);
  for (const auto& [path, state] : closure.files) key.add(path, state);
  if (!closure.incomplete.empty()) key.add("not covered", closure.incomplete);
  return {key.finish(), std::move(closure.incomplete)};
}

}  // namespace jk::cache
