// The Metal signature writer: from a kernel spec (what the user gave
// jitkernel.metal_kernel) and a call signature (dtypes, ndims and sizes of what a
// call passes) to the Metal source text, byte-identical with what MLX 0.32.4's
// mx.fast.metal_kernel generates (where MLX's text is correct; the deliberate
// differences are listed in docs/metal_codegen_differences.md), plus the
// buffer layout a runtime binds. Pure text: no Metal, no Python, any OS.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "jitkernel/engine/call_signature.hpp"
#include "jitkernel/engine/generated_kernel.hpp"
#include "jitkernel/engine/kernel_spec.hpp"

namespace jk::codegen {

// Throws ArgumentError naming the argument ("name", "input_names",
// "output_names") when a name is not a C identifier, is duplicated, is
// reserved (C++ / Metal keywords, type names the generated code spells,
// Metal attribute names), or collides with a parameter the generator adds
// (input "a_shape" while the source uses input a's a_shape); when there is no
// output. Names with "__" are allowed, as in MLX.
void validate_metal_kernel_spec(const KernelSpec& spec);

// The kernel name alone (ArgumentError("name") unless it is a C identifier),
// for factories that learn the parameter names at the first call.
void validate_metal_kernel_name(const std::string& name);

// The Metal parameter layout (GeneratedKernel::params): every [[buffer(n)]]
// in order (params[n] is buffer n). Per input: InputData (Constant address
// space below kSmallInputElements elements, `const constant T&` for 0-d
// inputs and Python scalars, which MLX treats as 0-d: bool -> bool, int ->
// int32, float -> float32), then InputShape / InputStrides / InputNdim
// (Constant, passed as Bytes) when the body mentions name_shape / ... ;
// then OutputData per output (`device atomic<T>*` when atomic_outputs).
// Kind::Int template values must fit in int32 (Metal `int` template
// parameters).

// Throws ArgumentError for call problems: wrong counts ("inputs",
// "output_dtypes"), float64 inputs or outputs (Metal has no double), a 0-d input whose name_shape / name_strides / name_ndim
// the source uses ("inputs"), a shape entry over int32 ("inputs"), bad
// template names or int values out of int32 range ("template"); validates
// the spec too. name_shape / name_strides / name_ndim and Metal attributes
// (thread_position_in_grid, ...) are added when the body mentions them as
// whole identifiers (outside comments and literals).
// The text's parts: `source` is metal_utils_preamble() + display_source
// (MLX's text: what verbose=True prints and source(...) returns);
// entry_name is the [[kernel]] function's host_name
// (custom_kernel_<name>[_<template values>]_<input dtypes>_<output dtypes>).
GeneratedKernel generate_metal_kernel(const KernelSpec& spec, const CallSignature& call);

// ArgumentError("inputs") when input `name`'s largest dimension `extent`
// does not fit the int32 shape the kernel receives (`used`: "_shape", ...).
// Codegen checks the call that made the signature; the Metal launch checks
// every call.
void check_metal_shape_range(const std::string& name, std::int64_t extent, const char* used);

// The metal_utils/*.h headers, concatenated (what `source` starts with).
std::string_view metal_utils_preamble();

// Rewrites a Metal compiler log so that "<file>:LINE:COL: ..." locations
// inside the user's header or body read "header line N:COL: ..." /
// "source line N:COL: ..."; other lines are kept as they are.
std::string map_metal_compile_log(const GeneratedKernel& kernel, const std::string& log);

}  // namespace jk::codegen
