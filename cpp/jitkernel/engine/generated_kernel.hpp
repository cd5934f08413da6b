// Stage 3: the generated kernel, the complete source text a backend compiles
// and the parameter layout its launch binds, as written by the backend's
// signature writer (codegen/cuda_signature.cpp, codegen/metal_signature.cpp).
// Pure text: no GPU, no Python.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jitkernel/engine/kernel_spec.hpp"

namespace jk {

// What one kernel parameter receives, in declaration order.
//   InputData    input `index`'s elements: a pointer (CUDA: 8 bytes; Metal:
//                a buffer, or for small inputs and 0-d ones their bytes)
//   InputScalar  CUDA: the value itself, dtype_size bytes (Scalar::bytes);
//                Metal passes scalars as 0-d InputData instead
//   InputShape   CUDA: kMaxNdim x int32 by value; Metal: ndim x int32 bytes
//   InputStrides CUDA: kMaxNdim x int64 by value; Metal: ndim x int64 bytes
//   InputNdim    int32
//   OutputData   output `index`'s elements (row-contiguous)
enum class ParamKind : std::uint8_t { InputData, InputScalar, InputShape, InputStrides, InputNdim, OutputData };

// Metal only: the address space a parameter is declared in, and how the
// runtime sets it (a buffer, or setBytes as MLX does for shape/strides/ndim).
enum class AddressSpace : std::uint8_t { Device, Constant };
enum class Passing : std::uint8_t { Buffer, Bytes };

struct ParamSlot {
  ParamKind kind;
  int index;  // input or output index
  AddressSpace space = AddressSpace::Device;
  Passing passing = Passing::Buffer;
};

struct GeneratedKernel {
  // The function to look up in the compiled code: CUDA's unique extern "C"
  // symbol; Metal's host_name (custom_kernel_<name>_<...>).
  std::string entry_name;
  std::string source;  // full text handed to the compiler
  // Metal: MLX's text without the metal_utils preamble (what verbose=True
  // prints). Empty for CUDA (its verbose output is `source`).
  std::string display_source;
  // CUDA: the name given to nvrtcCreateProgram; the generated #line
  // directives use it, so the whole log refers to one file ("<name>.cu").
  std::string program_name;
  std::vector<ParamSlot> params;  // every parameter, in order
  // CUDA compile options decided while generating from the user's code:
  bool needs_cccl = false;        // cooperative_groups or cuda:: headers are used
  bool fits_minimal = false;      // NVRTC's --minimal front end suffices (codegen/source_scan.cpp)
  CudaCompileOptions options;     // the spec's compile_options (the backend copies them)
  // Line mapping for compile errors (1-based lines of `source`; 0 / 0 when absent).
  int header_first_line = 0;
  int header_line_count = 0;
  int body_first_line = 0;
  int body_line_count = 0;
};

}  // namespace jk
