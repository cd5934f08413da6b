// The process's Metal device and command queue, opened on first use and kept
// for the life of the process (like the GPU itself; never released, so no
// destructor runs against Metal at interpreter exit), with what the rest of
// the backend reads about it.
#pragma once

#include <string>

#include "jitkernel/metal/metal_cpp.hpp"

namespace jk::metal {

struct MetalDevice {
  MTL::Device* device = nullptr;       // the system default GPU (one reference, held forever)
  MTL::CommandQueue* queue = nullptr;  // one queue for every launch (thread-safe in Metal)
  std::string name;                    // "Apple M2 Pro"
  // Newest Metal Shading Language the OS compiles (as MLX: 3.2 on macOS 15,
  // 3.1 on macOS 14, else 3.0). 3.1 brings `bfloat`.
  MTL::LanguageVersion language_version = MTL::LanguageVersion3_0;
  // Whether MTLCompileOptions has mathMode (macOS 15+); older systems get
  // fastMathEnabled instead.
  bool has_math_mode = false;
  MTL::Size max_threads_per_threadgroup{1, 1, 1};  // per dimension
  NS::UInteger max_buffer_length = 0;              // bytes
};

// The device, opening it on the first call. Throws jk::Error saying why when
// this machine has no Metal device (a later call tries again).
const MetalDevice& metal_device();

}  // namespace jk::metal
