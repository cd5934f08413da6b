// The compiled-binary caches of compile_cache.hpp. Compiles run outside the
// lock (they take milliseconds to seconds). Compiled binaries go through the
// disk cache (cache/disk_cache.hpp) keyed by cache/compile_key.hpp, which also
// keys the in-memory cache (so a kernel whose launch plan is built after one
// of its headers changed is compiled again); a binary is stored only when the
// key computed again after the compile is unchanged. On a disk miss, a
// process that finds another compiling the same key waits for its entry
// rather than compiling it too (cache/claims.hpp). Each request is
// reported (core/compile_events.hpp) with where its binary came from.
#include "jitkernel/cuda/nvrtc/compile_cache.hpp"

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/serving_alias.hpp"
#include "jitkernel/core/compile_events.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/hash.hpp"
#include "jitkernel/core/stage_clock.hpp"
#include "jitkernel/cuda/nvrtc/compile_options.hpp"
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
  BinarySource from = BinarySource::Compiled;
};

// Reports the request that started at `start` as answered from `from`.
class Answer {
 public:
  Answer(const std::string& name, const std::string& arch, std::size_t source_bytes)
      : name_(name), arch_(arch), source_bytes_(source_bytes),
        start_(std::chrono::steady_clock::now()) {}
  void operator()(BinarySource from) const {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    report_answered("NVRTC", name_, arch_, source_bytes_, from, seconds);
  }

 private:
  const std::string& name_;
  const std::string& arch_;
  std::size_t source_bytes_;
  std::chrono::steady_clock::time_point start_;
};

// A request's serving key (cache/serving_alias.hpp), hashed when first
// needed: only a store or a machine without NVRTC needs it.
class ServingKey {
 public:
  ServingKey(const std::string& source, const std::string& program_name, const std::string& arch,
             CompileTarget target, std::function<std::vector<std::string>()> options)
      : source_(source), program_name_(program_name), arch_(arch), target_(target), options_(std::move(options)) {}
  const cache::Key& get() {
    if (!key_) key_ = cache::serving_key({source_, program_name_, target_name(target_), arch_, options_()});
    return *key_;
  }

 private:
  const std::string& source_;
  const std::string& program_name_;
  const std::string& arch_;
  CompileTarget target_;
  std::function<std::vector<std::string>()> options_;
  std::optional<cache::Key> key_;
};

// The disk cache (or another process's compile of the same key, see
// cache/claims.hpp), else `compile` (whose result is stored on disk if
// `rekey`, the key computed again after the compile, is still `key`; the
// claim is dropped after the store, or when the compile throws). A stored
// binary gets its serving alias (cache/serving_alias.hpp). A compile whose key cannot cover what it reads
// (cache/compile_key.hpp) neither uses nor fills the disk cache, with one
// warning.
template <typename Rekey, typename Compile>
Compiled through_disk(const cache::CompileKey& key, ServingKey& serving, const std::string& program_name,
                      Rekey&& rekey, Compile&& compile) {
  if (!key.not_covered.empty()) {
    if (cache::active_directory()) {
      cache::warn("not covered: " + key.not_covered,
                  "'" + program_name + "' is kept in memory only, not in the compile cache: " +
                      key.not_covered + ", so the cache cannot tell when that file changes");
    }
    return {compile(), true};
  }
  cache::Claim claim;
  if (std::optional<std::string> hit = cache::load_or_claim(key.digest, claim))
    return {std::move(*hit), true, BinarySource::DiskCache};
  Compiled out{compile(), true};
  out.keyed = rekey().digest == key.digest;
  if (out.keyed) {
    cache::store(key.digest, out.binary);
    cache::store_alias(serving.get(), key.digest);
  }
  return out;
}

// The compile key from `make_key`; where NVRTC cannot be loaded (a machine
// that only serves kernels), nullopt with the binary found through the
// serving alias in `served`, else CudaNotAvailable saying that neither is
// there.
template <typename MakeKey>
std::optional<cache::CompileKey> key_or_served(MakeKey&& make_key, ServingKey& serving,
                                               const std::string& program_name, const std::string& arch,
                                               std::string& served) {
  try {
    return make_key();
  } catch (const CudaNotAvailable& e) {
    std::optional<std::string> binary = cache::load_through_alias(serving.get());
    if (!binary) {
      throw CudaNotAvailable(std::string(e.what()) + "\nNo compiled binary of '" + program_name + "' for " + arch +
                             " is in the compile cache or its read-only tiers either (a machine without NVRTC "
                             "serves the kernels of a bundle made by `precompile` and `cache export`: "
                             "docs/deploying.md).");
    }
    served = std::move(*binary);
    return std::nullopt;
  }
}

// The compile key's fields (cache/compile_key.hpp) besides the options,
// which its callers choose; `user` adds its include folders.
cache::CompileKey key_with_options(const std::string& source, const std::string& program_name,
                                   const std::string& arch, CompileTarget target,
                                   std::vector<std::string> options, const CudaCompileOptions& user) {
  StageTimer timer(Stage::CompileKey);
  cache::CompileKeyFields fields;
  fields.source = source;
  fields.program_name = program_name;
  fields.arch = arch;
  fields.target = target_name(target);
  fields.options = std::move(options);
  fields.compiler = compiler_identity();
  fields.include_dirs = user.include_dirs;
  const auto& toolkit = toolkit_paths().include_dirs;
  fields.include_dirs.insert(fields.include_dirs.end(), toolkit.begin(), toolkit.end());
  return cache::compile_key(fields);
}

}  // namespace

cache::CompileKey compile_key(const std::string& source, const std::string& program_name,
                              const std::string& arch, CompileTarget target,
                              const CudaCompileOptions& options) {
  return key_with_options(source, program_name, arch, target,
                          compile_options(arch, target, source, options), options);
}

cache::CompileKey compile_key(const GeneratedKernel& kernel, const std::string& arch,
                              CompileTarget target) {
  return key_with_options(kernel.source, nvrtc_program_name(kernel), arch, target,
                          compile_options(arch, target, kernel), kernel.options);
}

std::string compile_kernel_persistent(const GeneratedKernel& kernel, const std::string& arch,
                                      CompileTarget target) {
  const std::string name = nvrtc_program_name(kernel);
  const Answer answer(name, arch, kernel.source.size());
  ServingKey serving(kernel.source, name, arch, target,
                     [&] { return portable_compile_options(arch, target, kernel); });
  std::string served;
  const std::optional<cache::CompileKey> key =
      key_or_served([&] { return compile_key(kernel, arch, target); }, serving, name, arch, served);
  if (!key) {
    answer(BinarySource::DiskCache);
    return served;
  }
  Compiled compiled = through_disk(
      *key, serving, name, [&] { return compile_key(kernel, arch, target); },
      [&] { return compile_kernel(kernel, arch, target); });
  answer(compiled.from);
  return std::move(compiled.binary);
}

std::string compile_source_persistent(const std::string& source, const std::string& program_name,
                                      const std::string& arch, CompileTarget target,
                                      const CudaCompileOptions& options) {
  const Answer answer(program_name, arch, source.size());
  ServingKey serving(source, program_name, arch, target,
                     [&] { return portable_compile_options(arch, target, source, options); });
  std::string served;
  const std::optional<cache::CompileKey> key = key_or_served(
      [&] { return compile_key(source, program_name, arch, target, options); }, serving, program_name, arch,
      served);
  if (!key) {
    answer(BinarySource::DiskCache);
    return served;
  }
  Compiled compiled = through_disk(
      *key, serving, program_name,
      [&] { return compile_key(source, program_name, arch, target, options); },
      [&] { return compile_source(source, program_name, arch, target, options); });
  answer(compiled.from);
  return std::move(compiled.binary);
}

std::shared_ptr<const std::string> compile_kernel_cached(const GeneratedKernel& kernel,
                                                         const std::string& arch) {
  const std::string name = nvrtc_program_name(kernel);
  const Answer answer(name, arch, kernel.source.size());
  ServingKey serving(kernel.source, name, arch, CompileTarget::Cubin,
                     [&] { return portable_compile_options(arch, CompileTarget::Cubin, kernel); });
  std::string served;
  const std::optional<cache::CompileKey> key = key_or_served(
      [&] { return compile_key(kernel, arch, CompileTarget::Cubin); }, serving, name, arch, served);
  // A binary served through its alias is kept in memory under the serving key (no compile key has that value).
  const cache::Digest memory_key = key ? key->digest : serving.get();
  BinaryCache& memory = binary_cache();
  {
    std::lock_guard<std::mutex> lock(memory.mutex);
    auto it = memory.entries.find(memory_key);
    if (it != memory.entries.end()) {
      answer(BinarySource::MemoryCache);
      return it->second;
    }
  }
  Compiled compiled{std::move(served), true, BinarySource::DiskCache};
  if (key) {
    compiled = through_disk(
        *key, serving, name, [&] { return compile_key(kernel, arch, CompileTarget::Cubin); },
        [&] { return compile_kernel(kernel, arch, CompileTarget::Cubin); });
  }
  answer(compiled.from);
  auto cubin = std::make_shared<const std::string>(std::move(compiled.binary));
  if (!compiled.keyed) return cubin;
  std::lock_guard<std::mutex> lock(memory.mutex);
  return memory.entries.emplace(memory_key, std::move(cubin)).first->second;
}

}  // namespace jk::cuda
