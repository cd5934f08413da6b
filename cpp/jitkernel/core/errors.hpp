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

}  // namespace jk
