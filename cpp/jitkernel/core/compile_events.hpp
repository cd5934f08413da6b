// Compiles are reported, not limited. NVRTC cannot be interrupted inside a
// process, and a source that takes minutes may be legitimate (CCCL-heavy
// kernels), so jitkernel never times a compile out; instead every compile the
// core runs is announced when it starts and when it ends, with its duration,
// to an observer the embedding layer installs (the Python bindings forward
// them to the `jitkernel` logger). Each request for a binary (a kernel's
// first launch on a device, kernel.compile(), compile_cuda) is reported once
// more when it is answered, saying whether the binary came from memory, from
// the disk cache or from the compiler. Observers run on the requesting
// thread, outside any lock of the core, possibly inside a BlockingSection.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace jk {

// Where a requested binary came from.
enum class BinarySource { MemoryCache, DiskCache, Compiled };

struct CompileEvent {
  // Started / Finished / Failed: one compiler run; Answered: one request.
  enum class Stage { Started, Finished, Failed, Answered };
  Stage stage;
  const char* compiler;     // "NVRTC"
  const std::string& name;  // NVRTC program name
  const std::string& arch;  // target architecture
  std::size_t source_bytes;
  double seconds;           // 0 for Started; for Answered the whole request's
  BinarySource from = BinarySource::Compiled;  // Answered only
};

using CompileObserver = void (*)(const CompileEvent&);

// Installs the observer (null: none). Thread-safe.
void set_compile_observer(CompileObserver observer);

// Reports Answered: a request for `name`'s binary took `seconds` and was
// answered from `from`.
void report_answered(const char* compiler, const std::string& name, const std::string& arch,
                     std::size_t source_bytes, BinarySource from, double seconds);

// Reports Started on construction and, on destruction, Finished (after
// finished() was called) or Failed (an exception left the scope).
class CompileReport {
 public:
  CompileReport(const char* compiler, const std::string& name, const std::string& arch,
                std::size_t source_bytes);
  ~CompileReport();
  void finished() { ok_ = true; }
  CompileReport(const CompileReport&) = delete;
  CompileReport& operator=(const CompileReport&) = delete;

 private:
  const char* compiler_;
  const std::string& name_;
  const std::string& arch_;
  std::size_t source_bytes_;
  std::chrono::steady_clock::time_point start_;
  bool ok_ = false;
};

}  // namespace jk
