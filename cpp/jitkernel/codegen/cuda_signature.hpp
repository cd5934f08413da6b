// CUDA code generation: from a kernel spec (what the user wrote) and a call
// signature (dtypes/ndims of what they passed) to the complete source text
// NVRTC compiles, plus the parameter layout the launcher packs. Pure text:
// no CUDA, no Python, runs on any machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jitkernel/core/dtype.hpp"

namespace jk {

// What the user gave the factory.
struct CudaKernelSpec {
  std::string name;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  std::string source;  // kernel body
  std::string header;  // file-scope code
  bool ensure_row_contiguous = true;
  int shared_memory = 0;  // default dynamic shared memory bytes
};

// Throws ArgumentError naming the argument ("name", "input_names",
// "output_names", "shared_memory") when a name is not a C identifier, is
// duplicated, is reserved (C++ keywords, CUDA built-ins, names the generated
// code spells, identifiers with "__"), or collides with a parameter the
// generator adds (input "a_shape" while the source uses input a's a_shape);
// when there is no output; when shared_memory < 0.
void validate_cuda_kernel_spec(const CudaKernelSpec& spec);

struct TemplateArg {
  enum class Kind : std::uint8_t { Int, Bool, DType };
  std::string name;
  Kind kind = Kind::Int;
  std::int64_t int_value = 0;  // Kind::Int (bool value as 0/1 for Kind::Bool)
  DType dtype = DType::Float32;  // Kind::DType
};

struct InputSignature {
  bool is_scalar = false;  // a Python scalar passed by value
  DType dtype = DType::Float32;
  int ndim = 0;
};

// Everything about a call that changes the generated source.
struct CallSignature {
  std::vector<InputSignature> inputs;
  std::vector<DType> output_dtypes;
  std::vector<TemplateArg> template_args;
};

// One kernel parameter, in order, as the launcher must pack it. Order: for
// each input, its pointer (or scalar value), then its shape, strides, ndim
// when the source/header uses name_shape / name_strides / name_ndim (whole
// words); then every output pointer. Byte layout of each slot (the pointer in
// kernelParams points at exactly these bytes):
//   InputPointer   8 bytes, device address (0-d arrays too)
//   InputScalar    dtype_size(dtype) bytes, the value (Scalar::bytes); the
//                  kernel sees `const T* name` pointing at it, so name[0] works
//   InputShape     32 bytes: kMaxNdim x int32 (dims 0..ndim-1, rest 0), align 4
//   InputStrides   64 bytes: kMaxNdim x int64 element strides (rest 0), align 8
//   InputNdim      4 bytes: int32 ndim
//   OutputPointer  8 bytes, device address
// Scalar inputs get no shape/strides/ndim slots (the kernel defines them as
// constants: empty shape, ndim 0). Shape values must fit in int32.
enum class ParamKind : std::uint8_t {
  InputPointer,  // const T* (8 bytes)
  InputScalar,   // T by value (dtype size)
  InputShape,    // Shape (kMaxNdim x int32, by value)
  InputStrides,  // Strides (kMaxNdim x int64, by value)
  InputNdim,     // int
  OutputPointer, // T* (8 bytes)
};
struct ParamSlot {
  ParamKind kind;
  int index;  // input or output index
};

struct GeneratedKernel {
  std::string entry_name;  // unique extern "C" symbol
  std::string source;      // full text handed to NVRTC
  // Name to give nvrtcCreateProgram: the generated #line directives use it
  // for generated lines, so the whole log refers to one file ("<name>.cu").
  std::string program_name;
  std::vector<ParamSlot> params;
  bool needs_cccl = false;  // source/header use cooperative_groups or cuda:: headers
  // `source` can be compiled with NVRTC's --minimal: the answer
  // fits_minimal_builtins(source) gives, decided while generating from the
  // user's code alone (no second scan of the whole file per compile key).
  bool fits_minimal = false;
  // Line mapping for compile errors: generated line -> user line.
  int header_first_line = 0;  // 1-based line in `source` where the header starts (0: no header)
  int header_line_count = 0;
  int body_first_line = 0;    // 1-based line in `source` where the body starts
  int body_line_count = 0;
};

// Throws ArgumentError for signature problems: wrong counts ("inputs",
// "output_dtypes"), ndim > kMaxNdim for inputs whose shape/strides are used
// ("inputs"), bad template names ("template"); validates the spec too.
// name_shape / name_strides / name_ndim are generated when the source or the
// header mentions them as whole words (outside comments and literals).
GeneratedKernel generate_cuda_kernel(const CudaKernelSpec& spec, const CallSignature& call);

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

}  // namespace jk
