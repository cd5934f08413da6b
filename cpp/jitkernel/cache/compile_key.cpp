// The compile key of compile_key.hpp: the fields in a fixed order, then each
// -I folder (a toolkit's by its content fingerprint, taken once per process,
// not by its path), then the include closure of the source. Nothing in it
// depends on where a toolkit is installed or when: a cache filled on one
// machine answers another with the same toolkit and arguments.
#include "jitkernel/cache/compile_key.hpp"

#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

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
// How much of each header the fingerprint hashes: the version macros sit in
// the first few KiB (CUDART_VERSION ~6 KiB into cuda_runtime_api.h); the
// size covers the rest. Whole files would cost milliseconds per process.
constexpr std::size_t kHeadBytes = 16 * 1024;

struct IncludeFolder {
  std::string fingerprint;  // its toolkit headers' sizes and heads
  bool toolkit = false;
};

std::mutex g_heads_mutex;
// Header path -> its head_fingerprint, as remember_toolkit_heads() was told.
std::unordered_map<std::string, std::string>& remembered_heads() {
  static auto* heads = new std::unordered_map<std::string, std::string>;  // used until exit
  return *heads;
}

std::string head_of(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(g_heads_mutex);
    auto it = remembered_heads().find(path);
    if (it != remembered_heads().end()) return it->second;
  }
  return head_fingerprint(path, kHeadBytes);
}

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
  for (const char* header : kToolkitHeaders) {
    const std::string identity = head_of(dir + "/" + header);
    f.fingerprint += std::string(header) + ": " + identity + "\n";
    for (const char* marker : kToolkitMarkers)
      if (identity != "missing" && std::string_view(header) == marker) f.toolkit = true;
  }
  std::lock_guard<std::mutex> lock(mutex);
  return memo->emplace(dir, std::move(f)).first->second;
}

}  // namespace

std::vector<std::string> toolkit_header_paths(const std::string& dir) {
  std::vector<std::string> paths;
  for (const char* header : kToolkitHeaders) paths.push_back(dir + "/" + header);
  return paths;
}

std::string toolkit_head(const std::string& path) { return head_fingerprint(path, kHeadBytes); }

void remember_toolkit_heads(const std::vector<std::pair<std::string, std::string>>& heads) {
  std::lock_guard<std::mutex> lock(g_heads_mutex);
  for (const auto& [path, head] : heads) remembered_heads().insert_or_assign(path, head);
}

CompileKey compile_key(const CompileKeyFields& in) {
  IncludeSearch search;
  search.program_name = in.program_name;
  search.include_dirs = in.include_dirs;
  // A toolkit folder is named by its place among the toolkit folders, in the
  // key's fields and in the options that name it ("-I<toolkit 0>").
  std::unordered_map<std::string, std::string> toolkit_flags;
  std::vector<std::pair<std::string, std::string>> dir_fields;
  for (const std::string& dir : in.include_dirs) {
    // Another folder's files are covered one by one by the closure (its own
    // mtime, which any editor's temp file changes, would only cost misses).
    const IncludeFolder& f = include_folder(dir);
    if (!f.toolkit) {
      dir_fields.emplace_back("include dir", dir);
      continue;
    }
    const std::string name = "<toolkit " + std::to_string(search.toolkit_dirs.size()) + ">";
    dir_fields.emplace_back("toolkit folder " + name, f.fingerprint);
    toolkit_flags.emplace("-I" + dir, "-I" + name);
    search.toolkit_dirs.push_back(dir);
  }
  KeyBuilder key;
  key.add("source", in.source)
      .add("program name", in.program_name)
      .add("target", in.target)
      .add("arch", in.arch)
      .add("compiler", in.compiler);
  for (const std::string& option : in.options) {
    auto portable = toolkit_flags.find(option);
    key.add("option", portable == toolkit_flags.end() ? option : portable->second);
  }
  for (const auto& [label, value] : dir_fields) key.add(label, value);
  IncludeClosure closure = include_closure(in.source, search);
  for (const auto& [path, state] : closure.files) key.add(path, state);
  if (!closure.incomplete.empty()) key.add("not covered", closure.incomplete);
  return {key.finish(), std::move(closure.incomplete)};
}

}  // namespace jk::cache
