// Checked mode's host side (docs/checked.md): around each launch of a
// checked kernel, reset the module's report slot (jitkernel_checked_report,
// codegen/checked_accessors.cpp) on the launch stream and poison the outputs
// allocated for the call; after it, wait for the stream and raise the first
// out-of-bounds access (KernelBoundsError) or the first output element the
// kernel left unwritten (UnwrittenOutput). A stream being captured into a
// CUDA graph cannot be waited on: the kernel is then registered as captured,
// and its slot is read (after waiting for the device) by each later launch
// of it outside a capture and by raise_pending_checks (jk.synchronize), since
// any replay of the graph may have written it. The launches of one checked
// kernel are serialised in the process (CheckedLaunchLock), so that two of
// them never share the slot at once.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "jitkernel/cuda/driver/driver_api.hpp"
#include "jitkernel/cuda/launch/launch.hpp"
#include "jitkernel/engine/kernel_spec.hpp"

namespace jk::cuda {

// The bit patterns unwritten outputs are filled with: 16-bit floats
// 0xFFFA, 32-/64-bit floats and complex64 0xFFFADBAD per 32-bit word (each a
// quiet NaN with a payload arithmetic does not produce), integers and bool
// 0xA5 per byte.
inline constexpr std::uint16_t kPoison16 = 0xFFFA;
inline constexpr std::uint32_t kPoison32 = 0xFFFADBADu;
inline constexpr std::uint8_t kPoison8 = 0xA5;

// Whether checked mode raises when an output of `dtype` still holds the
// poison: floating-point and complex outputs only (any integer value may be a
// real result, so integer outputs are poisoned but not checked).
bool poison_is_checked(DType dtype);

// Held by a checked launch of `function` from before its slot is reset until
// its report has been read (or, under capture, until it is enqueued): the
// slot is the module's, one per kernel and device, so a second launch in
// flight (another thread, another stream, XLA's threads) would reset it or
// read it for the other. A thread that finds it taken waits with the
// embedding runtime stepped aside (the GIL released, core/blocking.hpp).
class CheckedLaunchLock {
 public:
  explicit CheckedLaunchLock(CUfunction function);
  CheckedLaunchLock(const CheckedLaunchLock&) = delete;
  CheckedLaunchLock& operator=(const CheckedLaunchLock&) = delete;

 private:
  std::unique_lock<std::mutex> lock_;
};

// Before the launch (the device's context current): when `function` was
// captured and `prepared.stream` is not capturing, waits for the device and
// raises what its slot holds; resets the slot; fills the outputs in
// `poisoned` with the poison.
void checked_before_launch(CUfunction function, const PreparedCall& prepared,
                           const std::vector<const ArrayView*>& poisoned);

// After a successful enqueue: waits for the stream and raises what the
// launch reported, or registers the kernel as captured while the stream is.
void checked_after_launch(CUfunction function, const KernelSpec& spec, const PreparedCall& prepared,
                          const std::vector<const ArrayView*>& poisoned);

// After the device has been synchronised: reads the slot of every kernel
// captured on `device` and raises the first report (the others stay in their
// slots for the next call).
void raise_pending_checks(int device);

}  // namespace jk::cuda
