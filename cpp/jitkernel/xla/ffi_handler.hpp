// jitkernel's XLA FFI handler: one custom-call target (registered by the
// Python package for the CUDA platform) with three stages:
//  - instantiate (XLA loads the executable, also one served from a cache in
//    a new process): parse the call's attributes, rebuild the kernel,
//    generate its source; no device work.
//  - initialize (before each run, outside any CUDA graph capture, with the
//    device known): check XLA's buffers against the call and compile/load
//    the kernel on that device, once per device.
//  - execute: read the buffers and the stream and launch on XLA's stream;
//    nothing is compiled, loaded, allocated or synchronised, so the handler
//    declares itself command-buffer compatible (XLA may capture it in a CUDA
//    graph).
// Every failure comes back to XLA as an FFI error carrying jitkernel's message.
#pragma once

#include <cstdint>

#include "jitkernel/xla/ffi_abi.hpp"

namespace jk::xla {

abi::Error* instantiate_stage(abi::CallFrame* frame);
abi::Error* initialize_stage(abi::CallFrame* frame);
abi::Error* execute_stage(abi::CallFrame* frame);

// How many times the execute stage has run in this process (tests: a call
// XLA captured in a CUDA graph runs it once, however often the graph replays).
std::uint64_t execute_count();

// Profiling (benchmarks): while on, the execute stage adds its own wall time
// and its launch's to two counters, so a benchmark can split a jitted call's
// cost into the handler's part and XLA's. Off by default (one relaxed load).
void time_executes(bool on);
struct ExecuteTimes {
  std::uint64_t calls = 0, handler_ns = 0, launch_ns = 0;
};
ExecuteTimes execute_times();

}  // namespace jk::xla
