// A kernel call site of an XLA program, ready to launch: the engine's Kernel
// rebuilt from the call's attribute text (a serialised call record,
// engine/call_record.hpp, with every size and scalar fixed), the KernelCall every launch starts
// from (shapes, dtypes, scalars, template arguments, geometry; data pointers
// filled per launch from XLA's buffers) and the devices it is loaded on.
// Prepared calls live in a process-wide registry keyed by their attribute
// key, made at lowering time (Python), or by XLA's instantiate stage in a
// process that loaded the program from a cache; they live for the process,
// like the engine's plan caches.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "jitkernel/cuda/launch/recorded_target.hpp"
#include "jitkernel/engine/call_record.hpp"
#include "jitkernel/xla/ffi_abi.hpp"

namespace jk::xla {

class PreparedCall {
 public:
  // Validates the spec and generates the source (typed errors, no GPU).
  PreparedCall(std::string text, RecordedKernel kernel, RecordedCall call);

  const std::string& text() const { return text_; }
  // Whether `text` is this call's attribute text, byte for byte.
  bool has_text(std::string_view text) const;
  const RecordedKernel& kernel() const { return recorded_kernel_; }

  // Compiles and loads the kernel on `device` (lowering time: no buffers
  // yet), and what its init_value fill launches, on `stream`.
  void load(int device, std::uintptr_t stream);

  // Checks XLA's buffers against the description (counts, dtypes, shapes),
  // then compiles and loads the kernel on `device`, once per device. Never
  // launches. After it, launches on `device` compile and load nothing.
  void make_ready(const abi::CallFrame& frame, int device, std::uintptr_t stream);
  bool ready(int device) const;

  // Launches on XLA's buffers and stream (the call was made ready on `device`).
  void launch(const abi::CallFrame& frame, int device, std::uintptr_t stream);

 private:
  void check_frame(const abi::CallFrame& frame) const;
  bool aliases_an_operand(const abi::CallFrame& frame) const;

  const std::string text_;
  const RecordedKernel recorded_kernel_;
  const RecordedCall call_;
  KernelCall template_;
  std::unique_ptr<cuda::RecordedTarget> target_;  // made from template_ (which it may change)
  std::atomic<bool> ready_[kPlanDevices] = {};
};

// The prepared call of an attribute text, made (and registered) on first
// use; every stage that resolves a call comes here. A registered call is
// returned only for its own text (compared byte for byte on every call, the
// key is never trusted alone): ArgumentError("jk_key") when `key` is not the
// text's key, Error when two texts share a key.
PreparedCall& prepare_call(std::string_view text, std::uint64_t key);

// The key of an attribute text: the first 8 bytes of its SHA-256.
std::uint64_t call_key(std::string_view text);

}  // namespace jk::xla
