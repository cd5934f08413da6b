// precompiled_cuda_kernel: launch PTX, cubin or fatbin built elsewhere,
// through the same launch path as cuda_kernel (launch.hpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/cuda/launch/launch.hpp"
#include "jitkernel/engine/call_record.hpp"

namespace jk::cuda {

// The entry point: what a recorded call (the torch op, an XLA custom call)
// fixes once.
struct PrecompiledEntry {
  std::string name;             // exact entry symbol
  std::string compiled_source;  // PTX text, cubin or fatbin bytes
  // SHA-256 of compiled_source when the caller knows it (else computed): the
  // key of every per-binary cache.
  std::optional<cache::Digest> content_digest;
};

struct PrecompiledCall : PrecompiledEntry {
  KernelCall args;
  std::vector<Scalar> scalars;  // passed after input and output pointers
};

// Parameters, in order: each input as a pointer (array inputs, and scalar
// inputs after upload as 0-d device arrays, as MLX does), each output as a
// pointer, then each of `scalars` by value. The binary is loaded once per
// (content, device); the entry's parameter sizes are checked before launch
// where the binary records them (or the driver reports them). Every check
// that needs no GPU (binary_image.hpp: format, entry name, parameter sizes;
// launch.hpp: counts, grid) runs before the driver is touched.
std::vector<OwnedArray> precompiled_cuda_kernel(const PrecompiledCall& call);
std::vector<OwnedArray> precompiled_cuda_kernel(const PrecompiledEntry& entry, const KernelCall& args,
                                               const std::vector<Scalar>& scalars);

// The checks that need no GPU, for a recorded call made before any launch:
// `entry`'s bytes parse, name one of their entry points, and its parameters
// (where the binary records them) match the call. ArgumentError otherwise.
void check_precompiled(const PrecompiledEntry& entry, const KernelCall& args, const std::vector<Scalar>& scalars);

// The entry of a recorded precompiled kernel (`kernel.binary` set), its bytes
// parsed: ArgumentError(`argument`, ...) when they are not the recorded format.
PrecompiledEntry recorded_entry(const RecordedKernel& kernel, const char* argument);

// Loads the binary on `device` and looks its entry up (what a first launch
// does), so that later launches load nothing.
void load_precompiled(const PrecompiledEntry& entry, int device);

// Binaries are parsed once per content (SHA-256 of the bytes) and kept, least
// recently used first out, up to these limits: parses are cheap to redo, and
// a process that passes ever new binaries must not grow without bound.
inline constexpr std::size_t kMaxParsedBinaries = 256;
inline constexpr std::size_t kMaxParsedBinaryBytes = 16u << 20;  // entry names and parameters

struct ParsedCacheInfo {
  std::size_t entries = 0;
  std::size_t bytes = 0;  // what the parsed binaries hold (see kMaxParsedBinaryBytes)
  std::size_t max_entries = 0;
  std::size_t max_bytes = 0;
};
ParsedCacheInfo parsed_cache_info();

}  // namespace jk::cuda
