// Private pieces of the CUDA code generator, shared by its .cpp files (each
// does one thing): scanning user code for identifiers, checking names,
// choosing cooperative groups' header or light definitions, choosing and
// writing the preamble, naming the entry point. Not a contract:
// other parts of jitkernel use cuda_signature.hpp only.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "jitkernel/core/dtype.hpp"

namespace jk::codegen {

// ASCII character classes of C identifiers (no locale, no universal names).
inline bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

// ---- text_lines.cpp -----------------------------------------------------------
// Line counting for the line maps of generated sources (both backends).
// Lines of `text` (a last line without '\n' counts; "" has none).
int count_lines(const std::string& text);
// 1-based number of the line on which the character at `offset` lies
// (offset == text.size(): the line the next appended character lands on).
int line_at(const std::string& text, std::size_t offset);

// ---- source_scan.cpp --------------------------------------------------------
// What user code (kernel body and header) mentions. Comments, string and
// character literals and number literals are skipped, so a word in a comment
// never changes the generated code.
struct SourceScan {
  std::unordered_set<std::string> identifiers;  // every identifier token
  std::unordered_set<std::string> qualifiers;   // identifiers directly followed by `::`
  std::unordered_set<std::string> unqualifying; // identifiers seen at least once NOT followed by `::`
  // "A::B" for every identifier A followed by `::` and identifier B ("A::"
  // when something else follows the `::`).
  std::unordered_set<std::string> scoped;
  std::vector<std::string> includes;            // targets of #include lines
  // Names the user code declares: #define names anywhere; in a header at file
  // scope also struct/class/union/enum names, `using X =` aliases and
  // function names (an identifier followed by `(` outside braces/parentheses).
  std::unordered_set<std::string> declared;

  bool has(const std::string& name) const { return identifiers.count(name) != 0; }
  bool qualifies(const std::string& name) const { return qualifiers.count(name) != 0; }
  // True when `name` appears somewhere other than right before `::`
  // (`using namespace name;`, `namespace x = name;`, a variable `name`).
  bool used_unqualifying(const std::string& name) const { return unqualifying.count(name) != 0; }
  bool declares(const std::string& name) const { return declared.count(name) != 0; }
};

// Adds what `text` mentions to `scan` (call once per text: body, header).
// `file_scope`: the text's top level is file scope (a header, a whole file),
// where struct and function names count as declarations.
void scan_into(std::string_view text, SourceScan& scan, bool file_scope = false);
SourceScan scan_user_code(const std::string& source, const std::string& header);

// ---- names.cpp -------------------------------------------------------------
// Shared by the CUDA and Metal generators; each passes its own list of
// reserved names (reserved_name_reason here, metal_reserved_name_reason).
using Identifiers = std::unordered_set<std::string>;
using ReservedReason = const char* (*)(std::string_view name);

bool is_c_identifier(std::string_view name);

// C++ keywords (through C++20).
bool is_cpp_keyword(std::string_view name);

// Why `name` cannot name a CUDA kernel parameter or template argument, or
// nullptr when it can (C++ keywords, CUDA built-ins, names the generated code
// spells, identifiers C++ reserves for the implementation).
const char* reserved_name_reason(std::string_view name);

// Which of name_shape / name_strides / name_ndim the user code mentions.
struct ShapeUse {
  bool shape = false;
  bool strides = false;
  bool ndim = false;
  bool any() const { return shape || strides || ndim; }
};
ShapeUse shape_use(const Identifiers& identifiers, const std::string& input_name);
ShapeUse shape_use(const SourceScan& scan, const std::string& input_name);

// ArgumentError("name", ...) unless the kernel name is a C identifier.
void check_kernel_name(const std::string& name);

// ArgumentError(argument, "<role> name 'x' ...") unless `name` is a C
// identifier that `reserved` accepts.
void check_name(const char* argument, const char* role, const std::string& name,
                ReservedReason reserved);

// Input and output names: each checked (check_name), unique across both lists,
// and none equal to a name the generator adds for an input because
// `identifiers` (what the user code mentions) contains it (input "a_shape"
// next to input "a" whose shape is used).
void check_parameter_names(const std::vector<std::string>& input_names,
                           const std::vector<std::string>& output_names,
                           const Identifiers& identifiers, ReservedReason reserved);

// Template argument names: identifiers, not reserved, unique, and not already
// a parameter name or a generated name (ArgumentError("template", ...)).
void check_template_names(const std::vector<std::string>& template_names,
                          const std::vector<std::string>& input_names,
                          const std::vector<std::string>& output_names,
                          const Identifiers& identifiers, ReservedReason reserved);
// The CUDA generator's: reserved_name_reason, names in source and header.
void check_template_names(const std::vector<std::string>& template_names,
                          const std::vector<std::string>& input_names,
                          const std::vector<std::string>& output_names,
                          const SourceScan& scan);

// ArgumentError("inputs" / "output_dtypes", "expected 2 inputs (a, b), got 3")
// when a call's counts differ from the kernel's names.
void check_call_counts(const std::vector<std::string>& input_names, std::size_t inputs,
                       const std::vector<std::string>& output_names, std::size_t output_dtypes);

// ---- compile-log mapping (compile_log.cpp, metal_compile_log.cpp) -----------
// "header line N" / "source line N" for line `n` of a generated text whose
// user header and body start at kernel.header_first_line / body_first_line
// (GeneratedKernel, GeneratedMetalKernel), or "" for a generated line.
template <typename Kernel>
std::string user_line(const Kernel& kernel, long n) {
  if (kernel.header_first_line > 0 && n >= kernel.header_first_line &&
      n < kernel.header_first_line + kernel.header_line_count) {
    return "header line " + std::to_string(n - kernel.header_first_line + 1);
  }
  if (n >= kernel.body_first_line && n < kernel.body_first_line + kernel.body_line_count) {
    return "source line " + std::to_string(n - kernel.body_first_line + 1);
  }
  return {};
}

// `log` with every line (without its '\n') replaced by rewrite(line).
template <typename Rewrite>
std::string map_log_lines(const std::string& log, Rewrite rewrite) {
  std::string out;
  out.reserve(log.size() + 64);
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    bool has_newline = end != std::string::npos;
    out += rewrite(log.substr(start, has_newline ? end - start : std::string::npos));
    if (has_newline) out += '\n';
    start = has_newline ? end + 1 : log.size();
  }
  return out;
}

// ---- cooperative_groups.cpp -------------------------------------------------
// Whether the user code mentions cooperative groups at all
// (`cooperative_groups` or `cg::`).
bool uses_cooperative_groups(const SourceScan& scan);

// True when jitkernel's light definitions (cooperative_groups_shim) cover
// every use: cooperative groups reached only as `cooperative_groups::` /
// `cg::` + this_grid, this_thread_block, grid_group, thread_block, sync,
// thread_rank, group_size; members only those the light types have; none of
// the API's other names anywhere (tiled_partition, reduce, is_valid, ...); no
// grid-wide sync (`sync` together with this_grid / grid_group); no #include
// lines, no `cuda::` / `nv::`, no macros of the real header. Otherwise the
// real <cooperative_groups.h> is included.
bool cooperative_groups_shim_suffices(const SourceScan& scan);

// `namespace cooperative_groups { ... }` with grid_group / thread_block and
// this_grid() / this_thread_block() (ends with a newline).
std::string_view cooperative_groups_shim();

// True when `source` or `header` syncs the whole grid: `this_grid().sync()`,
// `cg::sync(this_grid())`, or `g.sync()` / `sync(g)` on a variable declared
// as a grid_group or initialised from this_grid(). Such kernels need a
// cooperative launch.
bool syncs_grid(const std::string& source, const std::string& header);

// ---- nvcc_macros.cpp -------------------------------------------------------
// Whether `identifier` is a CUDART_* math constant of <math_constants.h>.
bool mentions_math_constants(const std::string& identifier);
// `#ifndef X / #define X ... / #endif` for each math macro and limit that nvcc
// gives implicitly (INFINITY, NAN, HUGE_VALF, M_PI, FLT_MAX, INT_MAX,
// INT32_MAX, ...) which the user code mentions and does not #define.
std::string nvcc_macros_text(const SourceScan& scan);

// ---- mlx_device_utils.cpp --------------------------------------------------
// Which groups of MLX's device utilities the user code mentions (and does
// not declare itself).
struct MlxUtils {
  bool vector_io = false;  // AlignedVector, load_vector, store_vector, ...
  bool limits = false;     // Limits<T>
  bool locations = false;  // elem_to_loc_nd, multi-stride elem_to_loc
  bool complex = false;    // complex_t (needs <cuda/std/complex>)
};
MlxUtils detect_mlx_utils(const SourceScan& scan);
// Their definitions (for namespace jitkernel). Limits gets __half /
// __nv_bfloat16 specializations when those headers are included; the
// multi-location forms return cuda::std::tuple when `cuda_std`.
std::string mlx_utils_text(const MlxUtils& utils, bool fp16, bool bf16, bool cuda_std);

// ---- preamble.cpp ----------------------------------------------------------
// Headers the generated file needs, decided from the dtypes in the signature
// and what the user code mentions. Heavy headers only when used.
enum class CooperativeGroups : unsigned char {
  None,    // not used
  Shim,    // jitkernel's light definitions (+ `namespace cg`)
  Header,  // <cooperative_groups.h> (+ `namespace cg`)
};
struct Features {
  bool fp16 = false;     // cuda_fp16.h
  bool bf16 = false;     // cuda_bf16.h (includes cuda_fp16.h)
  bool complex = false;  // cuComplex.h
  CooperativeGroups cooperative_groups = CooperativeGroups::None;
  bool cuda_std = false;       // a few light cuda/std headers (user writes `cuda::`)
  bool user_includes = false;  // user code has #include lines of its own
  bool math_constants = false; // math_constants.h (CUDART_INF_F, CUDART_PI_F, ...)
  std::string macros;          // nvcc_macros_text
  MlxUtils mlx;
  bool checked = false;        // checked mode's accessors (checked_accessors_text)
  bool needs_cccl() const {
    return cooperative_groups == CooperativeGroups::Header || cuda_std || user_includes ||
           mlx.complex;
  }
};
Features detect_features(const SourceScan& scan, const std::vector<DType>& dtypes);

// The text before the user's header: includes, fixed-width integer types,
// the math macros used, the cooperative groups shim when chosen, WARP_SIZE /
// MAX_NDIM, and the jitkernel helpers (Shape, Strides, inf, elem_to_loc, and
// the MLX device utilities used). The generated
// definitions sit between `#pragma nv_diagnostic push` / `pop` that silence
// "declared but never referenced" (177) for them only (when NVRTC supports
// these pragmas). Ends with a newline.
std::string preamble_text(const Features& features);

// Whether `identifier` may name something NVRTC's -minimal leaves undeclared
// (the CUDA runtime API, textures and surfaces, library_types.h). Errs on the
// side of a match.
bool omitted_by_minimal(const std::string& identifier);

// True when code whose scan is `scan` can be compiled with NVRTC's -minimal:
// it names nothing omitted_by_minimal and includes no header but those the
// preamble uses. Holds for every preamble_text (tests/cpu/
// test_compile_options.py checks it), so a generated kernel is decided from
// its user code (and the names it declares) alone.
bool scan_fits_minimal(const SourceScan& scan);

// ---- checked_accessors.cpp -------------------------------------------------
// Checked mode's definitions: jitkernel::checked_ptr<T> (the type of each
// array parameter), jitkernel::Index, the report slot
// `jitkernel_checked_report` (layout: cuda/launch/checked_launch.cpp) and the
// dummy elements an out-of-bounds access is given. Ends with a newline.
std::string_view checked_accessors_text();

// ---- entry_name.cpp --------------------------------------------------------
// `<name>_<16 hex digits>`: a valid C identifier (name is one) that differs
// whenever `content` (the generated text without the entry name) differs.
std::string make_entry_name(const std::string& name, std::string_view content);

}  // namespace jk::codegen
