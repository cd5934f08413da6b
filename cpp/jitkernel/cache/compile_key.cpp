// The compile key of compile_key.hpp: the fields in a fixed order, then the
// header fingerprints (stat calls, no file reads). A folder's own fingerprint
// is taken once per process; the source's #include targets on every key.
#include "jitkernel/cache/compile_key.hpp"

#include <mutex>
#include <unordered_map>

#include "jitkernel/cache/key.hpp"

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

bool is_space(char c) { return c == ' ' || c == '\t'; }

// The folder's own size+mtime and its toolkit headers', once per process.
std::string folder_fingerprint(const std::string& dir) {
  static std::mutex mutex;
  static auto* memo = new std::unordered_map<std::string, std::string>;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = memo->find(dir);
    if (it != memo->end()) return it->second;
  }
  std::string fingerprint = stat_fingerprint(dir);
  for (const char* header : kToolkitHeaders)
    fingerprint += std::string("\n") + header + ": " + stat_fingerprint(dir + "/" + header);
  std::lock_guard<std::mutex> lock(mutex);
  return memo->emplace(dir, std::move(fingerprint)).first->second;
}

}  // namespace

std::vector<std::string> include_targets(std::string_view source) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < source.size()) {
    std::size_t end = source.find('\n', at);
    if (end == std::string_view::npos) end = source.size();
    std::string_view line = source.substr(at, end - at);
    at = end + 1;
    std::size_t i = 0;
    while (i < line.size() && is_space(line[i])) ++i;
    if (i >= line.size() || line[i] != '#') continue;
    ++i;
    while (i < line.size() && is_space(line[i])) ++i;
    if (line.substr(i, 7) != "include") continue;
    i += 7;
    while (i < line.size() && is_space(line[i])) ++i;
    if (i >= line.size() || (line[i] != '<' && line[i] != '"')) continue;
    const char close = line[i] == '<' ? '>' : '"';
    std::size_t stop = line.find(close, i + 1);
    if (stop == std::string_view::npos || stop == i + 1) continue;
    out.emplace_back(line.substr(i + 1, stop - i - 1));
  }
  return out;
}

Digest compile_key(const CompileKeyInputs& in) {
  KeyBuilder key;
  key.add("source", in.source)
      .add("program name", in.program_name)
      .add("target", in.target)
      .add("arch", in.arch)
      .add("compiler", in.compiler);
  for (const std::string& option : in.options) key.add("option", option);
  const std::vector<std::string> targets = include_targets(in.source);
  for (const std::string& dir : in.include_dirs) {
    key.add("include dir", dir).add("folder", folder_fingerprint(dir));
    for (const std::string& target : targets) key.add(target, stat_fingerprint(dir + "/" + target));
  }
  return key.finish();
}

}  // namespace jk::cache
