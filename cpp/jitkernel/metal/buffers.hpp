// How arrays in CPU memory reach a Metal kernel, and where outputs live.
// Apple GPUs share memory with the CPU, so a host array can be handed to a
// kernel without a copy (newBuffer(bytesNoCopy)) when its memory starts on a
// page boundary, Metal's condition for wrapping memory it did not allocate;
// otherwise its bytes are copied into a new shared-storage buffer. Outputs
// are new shared-storage buffers that the CPU reads directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "jitkernel/core/array_view.hpp"
#include "jitkernel/metal/device.hpp"

namespace jk::metal {

// A Metal buffer and the offset at which a kernel sees the array's element 0.
struct BoundArray {
  NS::SharedPtr<MTL::Buffer> buffer;
  NS::UInteger offset = 0;
  std::vector<std::int64_t> strides;  // element strides of the bound layout (what name_strides gets)
  bool copied = false;                // the buffer holds a copy, not the array's own memory
};

// The host page size (16 KiB on Apple silicon).
std::size_t page_size();

// A new shared-storage buffer of at least `nbytes` bytes (Metal rejects
// empty buffers, so 0 gets a small one). Throws ArgumentError(argument)
// when it exceeds the device's largest buffer, jk::Error when Metal cannot
// allocate it.
NS::SharedPtr<MTL::Buffer> new_shared_buffer(const MetalDevice& device, std::size_t nbytes,
                                             const char* argument, const std::string& what);

// `array` as it is (same strides): its own memory when that starts on a page
// boundary, else a copy of the bytes it spans. `what` names it in errors
// ("inputs[2]").
BoundArray bind_as_is(const MetalDevice& device, const ArrayView& array, const char* argument,
                      const std::string& what);

// A row-contiguous copy of `array` in a new shared buffer (ensure_row_contiguous).
BoundArray bind_packed(const MetalDevice& device, const ArrayView& array, const char* argument,
                       const std::string& what);

// Writes `count` copies of the element `pattern` (its low `elem` bytes) at `dst`.
void fill_elements(void* dst, std::size_t count, std::size_t elem, std::uint64_t pattern);

}  // namespace jk::metal
