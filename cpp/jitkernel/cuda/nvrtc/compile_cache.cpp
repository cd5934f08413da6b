// The compiled-binary caches of compile_cache.hpp. Compiles run outside the
// lock (they take milliseconds to seconds). Compiled binaries go through the
// disk cache (cache/disk_cache.hpp) keyed by cache/compile_key.hpp, which also
// keys the in-memory cache (so a kernel whose launch plan is built after one
// of its headers changed is compiled again); a binary is stored only when the
// key computed again after the compile is unchanged.
#include "jitkernel/cuda/nvrtc/compile_cache.hpp"

#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/core/hash.hpp"
#include "jitkernel/cuda/nvrtc/compiler_identity.hpp"
#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"

namespace jk::cuda {
namespace {

struct DigestHash {
  std::size_t operator()(const cache::Digest& d) const noexcept {
    return static_cast<std::size_t>(hash_bytes(d.data(), d.size()));
  }
};

struct BinaryCache {
  std::mutex mutex;
  std::unordered_map<cache::Digest, std::shared_ptr<const std::string>, DigestHash> entries;
};

// Never destroyed: usable from exit-time code.
BinaryCache& binary_cache() {
  static BinaryCache* cache = new BinaryCache;
  return *cache;
}

const char* target_name(CompileTarget target) {
  return target == CompileTarget::Cubin ? "cubin" : "ptx";
}

struct Compiled {
  std::string binary;
  // False when a file the key covers changed while NVRTC ran: the binary may
  // be of either version, so it is kept under no key.
  bool keyed = true;
};

// The disk cache, else `compile` (whose result is stored on disk if
// `rekey`, the key computed again after the compile, is still `key`). A
// compile whose key cannot cover what it reads (cache/compile_key.hpp)
// neither uses nor fills the disk cache, with one warning.
template <typename Rekey, typename Compile>
Compiled through_disk(const cache::CompileKey& key, const std::string& program_name, Rekey&& rekey,
                      Compile&& compile) {
  if (!key.not_covered.empty()) {
    if (cache::active_directory()) {
      cache::warn("not covered: " + key.not_covered,
                  "'" + program_name + "' is kept in memory only, not in the compile cache: " +
                      key.not_covered + ", so the cache cannot tell when that file changes");
    }
    return {compile(), true};
  }
  if (std::optional<std::string> hit = cache::load(key.digest)) return {std::move(*hit), true};
  Compiled out{compile(), true};
  out.keyed = rekey().digest == key.digest;
  if (out.keyed) cache::store(key.digest, out.binary);
  return out;
}

// The compile key's fields (cache/compile_key.hpp) besides the options,
// which its callers choose.
cache::CompileKey key_with_options(const std::string& source, const std::string& program_name,
                                   const std::string& arch, CompileTarget target,
                                   std::vector<std::string> options) {
  cache::CompileKeyFields fields;
  fields.source = source;
  fields.program_name = program_name;
  fields.arch = arch;
  fields.target = target_name(target);
  fields.options = std::move(options);
  fields.compiler = compiler_identity();
  fields.include_dirs = toolkit_paths().include_dirs;
  return cache::compile_key(fields);
}

}  // namespace

cache::CompileKey compile_key(const std::string& source, const std::string& program_name,
                              const std::string& arch, CompileTarget target) {
  return key_with_options(source, program_name, arch, target,
                          compile_options(arch, target, source));
}

cache::CompileKey compile_key(const GeneratedKernel& kernel, const std::string& arch,
                              CompileTarget target) {
  return key_with_options(kernel.source, nvrtc_program_name(kernel), arch, target,
                          compile_options(arch, target, kernel));
}

std::string compile_kernel_persistent(const GeneratedKernel& kernel, const std::string& arch,
                                      CompileTarget target) {
  return through_disk(
             compile_key(kernel, arch, target), nvrtc_program_name(kernel),
             [&] { return compile_key(kernel, arch, target); },
             [&] { return compile_kernel(kernel, arch, target); })
      .binary;
}

std::string compile_source_persistent(const std::string& source, const std::string& program_name,
                                      const std::string& arch, CompileTarget target) {
  return through_disk(
             compile_key(source, program_name, arch, target), program_name,
             [&] { return compile_key(source, program_name, arch, target); },
             [&] { return compile_source(source, program_name, arch, target); })
      .binary;
}

std::shared_ptr<const std::string> compile_kernel_cached(const GeneratedKernel& kernel,
                                                         const std::string& arch) {
  const cache::CompileKey key = compile_key(kernel, arch, CompileTarget::Cubin);
  BinaryCache& memory = binary_cache();
  {
    std::lock_guard<std::mutex> lock(memory.mutex);
    auto it = memory.entries.find(key.digest);
    if (it != memory.entries.end()) return it->second;
  }
  Compiled compiled = through_disk(
      key, nvrtc_program_name(kernel),
      [&] { return compile_key(kernel, arch, CompileTarget::Cubin); },
      [&] { return compile_kernel(kernel, arch, CompileTarget::Cubin); });
  auto cubin = std::make_shared<const std::string>(std::move(compiled.binary));
  if (!compiled.keyed) return cubin;
  std::lock_guard<std::mutex> lock(memory.mutex);
  return memory.entries.emplace(key.digest, std::move(cubin)).first->second;
}

}  // namespace jk::cuda
