// Typed errors of the core. The bindings map each class to one Python
// exception (see python/jitkernel/_errors.py), so C++ code never has to know
// about Python and users always get a typed error naming what was wrong.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace jk {

// Base of every error jitkernel raises.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A bad value for a named argument (Python: jitkernel.ArgumentError, a ValueError).
class ArgumentError : public Error {
 public:
  ArgumentError(std::string argument, const std::string& message)
      : Error(argument + ": " + message), argument_(std::move(argument)) {}
  const std::string& argument() const { return argument_; }

 private:
  std::string argument_;
};

// A value of the wrong type for a named argument (Python: jitkernel.ArgumentTypeError, a TypeError).
class ArgumentTypeError : public Error {
 public:
  ArgumentTypeError(std::string argument, const std::string& message)
      : Error(argument + ": " + message), argument_(std::move(argument)) {}
  const std::string& argument() const { return argument_; }

 private:
  std::string argument_;
};

// NVRTC rejected the generated source. `log` has line numbers already mapped
// back into the user's source/header; `source` is the full generated text.
class CompileError : public Error {
 public:
  CompileError(const std::string& message, std::string log, std::string source)
      : Error(message), log_(std::move(log)), source_(std::move(source)) {}
  const std::string& log() const { return log_; }
  const std::string& source() const { return source_; }

 private:
  std::string log_;
  std::string source_;
};

// The CUDA driver or NVRTC library could not be found or loaded (Python:
// jitkernel.CudaNotAvailableError). The message says what is missing and how
// to install it.
class CudaNotAvailable : public Error {
 public:
  using Error::Error;
};

// The Metal backend cannot run kernels here: this build has no Metal
// runtime (everything but macOS), or the machine has no Metal device
// (Python: jitkernel.MetalNotAvailableError).
class MetalNotAvailable : public Error {
 public:
  using Error::Error;
};

// A CUDA driver call failed (Python: jitkernel.CudaError).
class CudaError : public Error {
 public:
  CudaError(int code, const std::string& message) : Error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// A kernel faulted on the device (illegal address, trap, ...). The message
// names the kernel jitkernel launched last on that device (Python:
// jitkernel.KernelFaultError, a CudaError).
class KernelFault : public CudaError {
 public:
  using CudaError::CudaError;
};

// Checked mode (docs/checked.md): a kernel body indexed an array outside its
// extent. The message reads "y[4096] out of bounds (extent 4096) at body line
// 3, block (16,0,0) thread (0,0,0) in kernel 'add' (a write)"; the fields are
// kept for the Python exception's attributes (Python:
// jitkernel.KernelBoundsError, an IndexError).
struct BoundsReport {
  std::string kernel;
  std::string array;
  long long index = 0;
  long long lo = 0;  // lowest valid offset (0 but for negative strides)
  long long hi = 0;  // one past the highest valid offset: the extent when lo is 0
  int line = 0;      // body line; 0 when unknown (a * or -> dereference)
  unsigned block[3] = {0, 0, 0};
  unsigned thread[3] = {0, 0, 0};
  bool write = false;  // the array is an output
};
class KernelBoundsError : public Error {
 public:
  KernelBoundsError(const std::string& message, BoundsReport report)
      : Error(message), report_(std::move(report)) {}
  const BoundsReport& report() const { return report_; }

 private:
  BoundsReport report_;
};

// Checked mode: an output jitkernel allocated still holds the poison it was
// filled with at element `index` after the kernel ran: the body never wrote
// it (Python: jitkernel.UnwrittenOutputError).
class UnwrittenOutput : public Error {
 public:
  UnwrittenOutput(const std::string& message, std::string kernel, std::string output, long long index)
      : Error(message), kernel_(std::move(kernel)), output_(std::move(output)), index_(index) {}
  const std::string& kernel() const { return kernel_; }
  const std::string& output() const { return output_; }
  long long index() const { return index_; }

 private:
  std::string kernel_;
  std::string output_;
  long long index_;
};

}  // namespace jk
