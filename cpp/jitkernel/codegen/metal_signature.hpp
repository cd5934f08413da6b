// Metal code generation: from a kernel spec (what the user gave
// jitkernel.metal_kernel) and a call description (dtypes and sizes of what a
// call passes) to the Metal source text, byte-identical with what MLX 0.32.4's
// mx.fast.metal_kernel generates (where MLX's text is correct; the deliberate
// differences are listed in docs/metal_codegen_differences.md), plus the
// buffer layout a runtime binds. Pure text: no Metal, no Python, any OS.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/codegen/cuda_signature.hpp"  // jk::TemplateArg (shared by both backends)
#include "jitkernel/core/dtype.hpp"

namespace jk::codegen {

// MTLCompileOptions' math mode ("safe" preserves IEEE special values, e.g.
// exp(-inf) == 0). MLX's default is Safe.
enum class MetalMathMode : std::uint8_t { Safe, Relaxed, Fast };

// "safe" / "relaxed" / "fast".
const char* metal_math_mode_name(MetalMathMode mode);

// What the user gave the factory.
struct MetalKernelSpec {
  std::string name;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  std::string source;  // kernel body
  std::string header;  // file-scope code, placed before the kernel
  bool ensure_row_contiguous = true;  // runtime: copy non-row-contiguous inputs first
  bool atomic_outputs = false;        // outputs are `device atomic<T>*`
  MetalMathMode math_mode = MetalMathMode::Safe;  // compile_options={"math_mode": ...}
};

// Throws ArgumentError naming the argument ("name", "input_names",
// "output_names") when a name is not a C identifier, is duplicated, is
// reserved (C++ / Metal keywords, type names the generated code spells,
// Metal attribute names), or collides with a parameter the generator adds
// (input "a_shape" while the source uses input a's a_shape); when there is no
// output. Names with "__" are allowed, as in MLX.
void validate_metal_kernel_spec(const MetalKernelSpec& spec);

// The kernel name alone (ArgumentError("name") unless it is a C identifier),
// for factories that learn the parameter names at the first call.
void validate_metal_kernel_name(const std::string& name);

// One input of a call. Only what changes the generated text: the dtype, the
// number of dimensions and the number of elements. Python scalars are 0-d
// inputs (as in MLX: bool -> bool, int -> int32, float -> float32).
struct MetalInputDescription {
  DType dtype = DType::Float32;
  std::vector<std::int64_t> shape;  // empty: 0-d
  bool is_scalar = false;           // a Python scalar (informational: codegen treats it as 0-d)

  int ndim() const { return static_cast<int>(shape.size()); }
  std::int64_t size() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

// Everything about a call that changes the generated source.
struct MetalCallDescription {
  std::vector<MetalInputDescription> inputs;
  std::vector<DType> output_dtypes;
  // In order. Kind::Int values must fit in int32 (Metal `int` template
  // parameters); Kind::Bool uses int_value 0/1.
  std::vector<TemplateArg> template_args;
};

// Inputs with fewer elements than this are declared in the `constant`
// address space (MLX's rule); others in `device`.
inline constexpr std::int64_t kMetalMaxConstantArraySize = 8;

// What one [[buffer(n)]] of the generated kernel receives, in signature order.
enum class MetalBufferKind : std::uint8_t {
  InputData,     // input `index`'s elements (0-d: one element, declared `const constant T&`)
  InputShape,    // ndim x int32, the input's shape
  InputStrides,  // ndim x int64, the input's strides in elements
  InputNdim,     // one int32, the input's ndim
  OutputData,    // output `index`'s elements (row-contiguous; `device atomic<T>*` when atomic)
};

enum class MetalAddressSpace : std::uint8_t { Device, Constant };

// How the runtime sets a buffer: a Metal buffer (setBuffer), or the bytes
// themselves (setBytes; MLX does so for shape / strides / ndim).
enum class MetalPassing : std::uint8_t { Buffer, Bytes };

struct MetalBufferBinding {
  int buffer_index;  // n in [[buffer(n)]]; bindings[k].buffer_index == k
  MetalBufferKind kind;
  int index;  // input index (Input*) or output index (OutputData)
  MetalAddressSpace address_space;
  MetalPassing passing;  // InputData / OutputData: Buffer; shape / strides / ndim: Bytes
};

struct GeneratedMetalKernel {
  // The [[kernel]] function's name: the host_name to look up in the compiled
  // library (custom_kernel_<name>[_<template values>]_<input dtypes>_<output dtypes>).
  std::string kernel_name;
  std::string source;                // full text to compile: metal_utils preamble + source_without_utils
  std::string source_without_utils;  // MLX's text: what verbose=True prints and source(...) returns
  std::vector<MetalBufferBinding> bindings;  // every [[buffer(n)]], in order
  // Line layout of `source` for compile-log mapping (1-based; 0 / 0 when
  // absent): the user's header and the user's body.
  int header_first_line = 0;
  int header_line_count = 0;
  int body_first_line = 0;
  int body_line_count = 0;
};

// Throws ArgumentError for call problems: wrong counts ("inputs",
// "output_dtypes"), float64 inputs or outputs (Metal has no double), a 0-d input whose name_shape / name_strides / name_ndim
// the source uses ("inputs"), a shape entry over int32 ("inputs"), bad
// template names or int values out of int32 range ("template"); validates
// the spec too. name_shape / name_strides / name_ndim and Metal attributes
// (thread_position_in_grid, ...) are added when the body mentions them as
// whole identifiers (outside comments and literals).
GeneratedMetalKernel generate_metal_kernel(const MetalKernelSpec& spec,
                                           const MetalCallDescription& call);

// The metal_utils/*.h headers, concatenated (what `source` starts with).
std::string_view metal_utils_preamble();

// Rewrites a Metal compiler log so that "<file>:LINE:COL: ..." locations
// inside the user's header or body read "header line N:COL: ..." /
// "source line N:COL: ..."; other lines are kept as they are.
std::string map_metal_compile_log(const GeneratedMetalKernel& kernel, const std::string& log);

}  // namespace jk::codegen
