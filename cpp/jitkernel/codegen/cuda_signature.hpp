// The CUDA signature writer: from a kernel spec (what the user wrote) and a
// call signature (dtypes/ndims of what they passed) to the complete source
// text NVRTC compiles, plus the parameter layout the launcher packs. Pure
// text: no CUDA, no Python, runs on any machine.
#pragma once

#include <string>

#include "jitkernel/engine/call_signature.hpp"
#include "jitkernel/engine/generated_kernel.hpp"
#include "jitkernel/engine/kernel_spec.hpp"

namespace jk::codegen {

// Throws ArgumentError naming the argument ("name", "input_names",
// "output_names", "shared_memory") when a name is not a C identifier, is
// duplicated, is reserved (C++ keywords, CUDA built-ins, names the generated
// code spells, identifiers with "__"), or collides with a parameter the
// generator adds (input "a_shape" while the source uses input a's a_shape);
// when there is no output; when shared_memory < 0.
void validate_cuda_kernel_spec(const KernelSpec& spec);

// The CUDA parameter layout (GeneratedKernel::params), in order: for each
// input, its pointer (InputData) or, for a Python scalar, its value
// (InputScalar); then its shape, strides, ndim when the source/header uses
// name_shape / name_strides / name_ndim (whole words); then every output
// pointer (OutputData). Byte layout of each slot (the pointer in
// kernelParams points at exactly these bytes):
//   InputData      8 bytes, device address (0-d arrays too)
//   InputScalar    dtype_size(dtype) bytes, the value (Scalar::bytes); the
//                  kernel sees `const T* name` pointing at it, so name[0] works
//   InputShape     40 bytes: kMaxNdim x int32 (dims 0..ndim-1, rest 0), align 4
//   InputStrides   80 bytes: kMaxNdim x int64 element strides (rest 0), align 8
//   InputNdim      4 bytes: int32 ndim
//   OutputData     8 bytes, device address
// In checked mode (compile_options checked) InputData and OutputData are a
// jitkernel::checked_ptr<T> by value instead, 40 bytes, align 8: base and
// current address (the same), the valid offsets [lo, hi) in elements, the
// array id (inputs 0.., outputs after them), 4 bytes of padding.// Scalar inputs get no shape/strides/ndim slots (the kernel defines them as
// constants: empty shape, ndim 0). Shape values must fit in int32.

// Throws ArgumentError for signature problems: wrong counts ("inputs",
// "output_dtypes"), ndim > kMaxNdim for inputs whose shape/strides are used
// ("inputs"), bad template names ("template"); validates the spec too.
// name_shape / name_strides / name_ndim are generated when the source or the
// header mentions them as whole words (outside comments and literals).
GeneratedKernel generate_cuda_kernel(const KernelSpec& spec, const CallSignature& call);

// Rewrites an NVRTC log so that "<file>(N): error" lines point into the user's
// source or header ("source line 3" / "header line 2") instead of the
// generated file.
std::string map_compile_log(const GeneratedKernel& kernel, const std::string& log);

// True when `identifier` appears in `text` as a whole word (not a substring of
// a longer identifier). Comments, string/char literals and number literals are
// skipped: a name mentioned only in a comment does not count.
bool uses_identifier(const std::string& text, const std::string& identifier);

// True when the whole CUDA file `source` can be compiled with NVRTC's
// -minimal (a front end that skips the CUDA runtime API, texture and surface
// declarations: about 12 ms less per compile, the same cubin): it names none
// of those (cuda*, CUDA_*, tex*/surf* functions, ...) and includes no header
// but those jitkernel's preamble uses, which are known to compile with it.
bool fits_minimal_builtins(const std::string& source);

}  // namespace jk::codegen
