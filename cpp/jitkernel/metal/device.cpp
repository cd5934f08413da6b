// Opens the Metal device once (metal_device()) and answers available() of
// runtime.hpp.
#include "jitkernel/metal/device.hpp"

#include "jitkernel/core/errors.hpp"
#include "jitkernel/metal/runtime.hpp"

namespace jk::metal {
namespace {

bool os_at_least(NS::Integer major, NS::Integer minor) {
  NS::OperatingSystemVersion version{major, minor, 0};
  return NS::ProcessInfo::processInfo()->isOperatingSystemAtLeastVersion(version);
}

const MetalDevice* open_device() {
  AutoreleaseScope pool;
  MTL::Device* device = MTL::CreateSystemDefaultDevice();  // +1
  if (device == nullptr) {
    throw Error("Metal: this machine has no Metal GPU (MTLCreateSystemDefaultDevice returned nothing); "
                "metal_kernel runs on macOS with Apple silicon or a Metal-capable GPU");
  }
  const std::string name = to_string(device->name());
  MTL::CommandQueue* queue = device->newCommandQueue();  // +1
  if (queue == nullptr) {
    device->release();
    throw Error("Metal: could not create a command queue on " + name);
  }
  auto* d = new MetalDevice;
  d->device = device;
  d->queue = queue;
  d->name = name;
  if (os_at_least(15, 0)) {
    d->language_version = MTL::LanguageVersion3_2;
    d->has_math_mode = true;
  } else if (os_at_least(14, 0)) {
    d->language_version = MTL::LanguageVersion3_1;
  } else {
    d->language_version = MTL::LanguageVersion3_0;
  }
  d->max_threads_per_threadgroup = device->maxThreadsPerThreadgroup();
  d->max_buffer_length = device->maxBufferLength();
  return d;
}

}  // namespace

const MetalDevice& metal_device() {
  // Initialised once; if open_device throws, the next call tries again.
  static const MetalDevice* const device = open_device();
  return *device;
}

bool available(std::string* reason) {
  try {
    metal_device();
    return true;
  } catch (const Error& e) {
    if (reason) *reason = e.what();
    return false;
  }
}

}  // namespace jk::metal
