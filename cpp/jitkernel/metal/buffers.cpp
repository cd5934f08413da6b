// Host arrays to Metal buffers (buffers.hpp), and the SharedBuffer of runtime.hpp.
#include "jitkernel/metal/buffers.hpp"

#include <unistd.h>

#include <cstring>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/host_layout.hpp"
#include "jitkernel/metal/runtime.hpp"

namespace jk::metal {
namespace {

constexpr MTL::ResourceOptions kShared =
    MTL::ResourceStorageModeShared | MTL::ResourceHazardTrackingModeTracked;

void check_length(const MetalDevice& device, std::size_t nbytes, const char* argument,
                  const std::string& what) {
  if (nbytes > device.max_buffer_length) {
    throw ArgumentError(argument, what + " needs a buffer of " + std::to_string(nbytes) +
                                      " bytes; " + device.name + " allows at most " +
                                      std::to_string(device.max_buffer_length));
  }
}

}  // namespace

SharedBuffer::~SharedBuffer() {
  if (buffer_) static_cast<MTL::Buffer*>(buffer_)->release();
}

std::size_t page_size() {
  static const std::size_t size = [] {
    long value = sysconf(_SC_PAGESIZE);
    return value > 0 ? static_cast<std::size_t>(value) : std::size_t{16384};
  }();
  return size;
}

NS::SharedPtr<MTL::Buffer> new_shared_buffer(const MetalDevice& device, std::size_t nbytes,
                                             const char* argument, const std::string& what) {
  const std::size_t length = nbytes == 0 ? 16 : nbytes;
  check_length(device, length, argument, what);
  MTL::Buffer* buffer = device.device->newBuffer(length, kShared);  // +1
  if (buffer == nullptr) {
    throw Error("Metal: could not allocate " + std::to_string(length) + " bytes for " + what +
                " on " + device.name);
  }
  return NS::TransferPtr(buffer);
}

BoundArray bind_as_is(const MetalDevice& device, const ArrayView& array, const char* argument,
                      const std::string& what) {
  BoundArray bound;
  bound.strides = array.strides;
  const ByteSpan span = byte_span(array);
  if (span.size() == 0) {
    bound.buffer = new_shared_buffer(device, 0, argument, what);
    bound.copied = true;
    return bound;
  }
  const auto* first = static_cast<const unsigned char*>(array.data) + span.begin;
  const std::size_t page = page_size();
  const auto address = reinterpret_cast<std::uintptr_t>(first);
  const auto nbytes = static_cast<std::size_t>(span.size());
  bound.offset = static_cast<NS::UInteger>(-span.begin);
  if (address % page == 0) {
    // Whole pages: the tail of the last page is mapped memory too (it holds the array's last bytes).
    const std::size_t length = (nbytes + page - 1) / page * page;
    if (length <= device.max_buffer_length) {
      MTL::Buffer* wrapped = device.device->newBuffer(first, length, kShared, nullptr);  // +1
      if (wrapped != nullptr) {
        bound.buffer = NS::TransferPtr(wrapped);
        return bound;
      }
    }
  }
  bound.buffer = new_shared_buffer(device, nbytes, argument, what);
  std::memcpy(bound.buffer->contents(), first, nbytes);
  bound.copied = true;
  return bound;
}

BoundArray bind_packed(const MetalDevice& device, const ArrayView& array, const char* argument,
                       const std::string& what) {
  BoundArray bound;
  bound.strides = row_major_strides(array.shape);
  bound.copied = true;
  bound.buffer = new_shared_buffer(device, array.nbytes(), argument, what);
  if (array.size() > 0) pack_on_host(array, static_cast<unsigned char*>(bound.buffer->contents()));
  return bound;
}

void fill_elements(void* dst, std::size_t count, std::size_t elem, std::uint64_t pattern) {
  if (count == 0) return;
  auto* out = static_cast<unsigned char*>(dst);
  bool uniform = true;
  for (std::size_t i = 1; i < elem; ++i) {
    uniform = uniform && ((pattern >> (8 * i)) & 0xFF) == (pattern & 0xFF);
  }
  if (uniform) {
    std::memset(out, static_cast<int>(pattern & 0xFF), count * elem);
    return;
  }
  std::memcpy(out, &pattern, elem);  // little-endian: the element's bytes are the low ones
  // Double the filled prefix until it covers everything.
  std::size_t filled = elem, total = count * elem;
  while (filled < total) {
    const std::size_t chunk = filled < total - filled ? filled : total - filled;
    std::memcpy(out + filled, out, chunk);
    filled += chunk;
  }
}

}  // namespace jk::metal
