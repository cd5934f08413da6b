// Stage 4: the compiled kernel, what a backend's compile-or-load returns for
// one generated kernel on one device. An opaque handle that only the same
// backend's launch reads (CUDA: a CUfunction of a module the module cache
// keeps loaded; Metal: an MTL::ComputePipelineState* the pipeline cache
// keeps), valid until the process exits.
#pragma once

namespace jk {

struct CompiledKernel {
  void* handle = nullptr;
};

}  // namespace jk
