// Kernels a Python program defined, for a C++ program without Python: a
// records file (the lines JITKERNEL_RECORD writes and `precompile --record`
// reads, engine/record_file.hpp, docs/precompile.md) read once, each
// recorded kernel rebuilt as an engine Kernel (engine/kernel.hpp) and found
// by its name. A launch through it generates the same source as the recorded
// Python call, so its binary is the one `precompile` put in the compile cache
// or a bundle (a bundle file named in JITKERNEL_CACHE_READONLY_DIRS is read in
// place, cache/tiers.hpp); a kernel missing there compiles with NVRTC.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "jitkernel/engine/call_record.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace jk {

// The largest records file KernelProgram reads.
inline constexpr std::uint64_t kMaxRecordsFileBytes = std::uint64_t{64} << 20;

class KernelProgram {
 public:
  // Reads and checks every line of the records file at `path`: untrusted
  // bytes, at most kMaxRecordsFileBytes, each line decoded as a call record
  // in time linear in its size (ArgumentError "records" naming the line on
  // the first bad one, Error when the file cannot be read). Lines of
  // precompiled kernels are left out (counted in precompiled_lines(); the
  // C++ API's PrecompiledKernel serves those). Two different kernels of one
  // name are an ArgumentError naming it.
  explicit KernelProgram(const std::string& path);

  // The recorded kernels' names, sorted.
  std::vector<std::string> names() const;
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  // The kernel recorded as `name` (ArgumentError listing the names when none).
  Kernel& kernel(const std::string& name);
  // The calls recorded for it (dtypes, ranks, template arguments), in file order.
  const std::vector<RecordedCall>& calls(const std::string& name) const;
  std::size_t precompiled_lines() const { return precompiled_lines_; }

 private:
  struct Entry {
    std::string kernel_text;  // the kernel's canonical text (encode_kernel): one name, one kernel
    std::vector<RecordedCall> calls;
    std::unique_ptr<Kernel> kernel;
  };
  const Entry& entry(const std::string& name) const;

  std::string path_;
  std::map<std::string, Entry> entries_;
  std::size_t precompiled_lines_ = 0;
};

}  // namespace jk
