// The generated file's preamble: which headers a kernel needs (decided from
// the dtypes of its signature and the identifiers its body/header mention)
// and the light helpers every kernel gets, in the spellings MLX kernel
// sources expect: fixed-width integer types, WARP_SIZE, MAX_NDIM, Shape /
// Strides (with .data() and []), inf and elem_to_loc, plus, when mentioned,
// the macros nvcc kernels get implicitly (nvcc_macros.cpp) and MLX's other
// device utilities (mlx_device_utils.cpp). Heavy headers
// (cooperative_groups, CCCL's cuda::std) cost seconds in NVRTC and are
// included only when the user code names them; cooperative groups used only
// through this_grid() / this_thread_block() get light definitions instead
// (cooperative_groups.cpp). Also decides whether code compiles with NVRTC's
// -minimal (fits_minimal: for the user's code of a generated kernel, whose
// preamble always fits; fits_minimal_builtins: for a whole file).
#include <string>
#include <string_view>

#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/core/array_view.hpp"

namespace jk::codegen {
namespace {

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}
bool has_part(const std::string& s, std::string_view p) { return s.find(p) != std::string::npos; }

// Math functions of cuda_fp16.h / cuda_bf16.h without "half" in their names
// (also with an "h2" prefix: h2exp, ...).
constexpr std::string_view kHalfMath[] = {
    "ceil", "cos", "exp", "exp10", "exp2", "floor", "log", "log10", "log2",
    "rcp", "rint", "rsqrt", "sin", "sqrt", "tanh", "tanh_approx", "trunc",
};

bool is_half_math(const std::string& s) {
  std::string_view rest;
  if (starts_with(s, "h2")) {
    rest = std::string_view(s).substr(2);
  } else if (starts_with(s, "h")) {
    rest = std::string_view(s).substr(1);
  } else {
    return false;
  }
  for (auto m : kHalfMath) {
    if (rest == m) return true;
  }
  return false;
}

// Names from cuda_fp16.h: __half, half2, __float2half, __hadd, __low2float,
// hexp, make_half2, CUDART_INF_FP16, ...
bool mentions_fp16(const std::string& s) {
  if (s == "half" || s == "half2" || is_half_math(s)) return true;
  if (starts_with(s, "__") && !ends_with(s, "__")) {  // not __host__ & co.
    return starts_with(s, "__h") || starts_with(s, "__low") || has_part(s, "half");
  }
  if (starts_with(s, "make_half")) return true;
  return starts_with(s, "CUDART_") && ends_with(s, "_FP16");
}

// Names from cuda_bf16.h: __nv_bfloat16, nv_bfloat162, __float2bfloat16,
// CUDART_INF_BF16, ...
bool mentions_bf16(const std::string& s) {
  return has_part(s, "bfloat16") || (starts_with(s, "CUDART_") && ends_with(s, "_BF16"));
}

// Names from cuComplex.h: cuComplex, cuFloatComplex, cuCaddf, make_cuComplex, ...
bool mentions_complex(const std::string& s) {
  return starts_with(s, "cuC") || s == "cuFloatComplex" || s == "cuDoubleComplex" ||
         starts_with(s, "make_cu");
}

constexpr const char* kIntegerTypes =
    "// Fixed-width integer types (NVRTC has no <cstdint>; same types as CCCL's).\n"
    "using int8_t = signed char;\n"
    "using int16_t = signed short;\n"
    "using int32_t = signed int;\n"
    "using int64_t = signed long long;\n"
    "using uint8_t = unsigned char;\n"
    "using uint16_t = unsigned short;\n"
    "using uint32_t = unsigned int;\n"
    "using uint64_t = unsigned long long;\n"
    "using intptr_t = signed long long;\n"
    "using uintptr_t = unsigned long long;\n";

// The headers a preamble may include.
constexpr const char* kFp16Header = "cuda_fp16.h";
constexpr const char* kBf16Header = "cuda_bf16.h";
constexpr const char* kComplexHeader = "cuComplex.h";
constexpr const char* kCooperativeGroupsHeader = "cooperative_groups.h";
constexpr const char* kMathConstantsHeader = "math_constants.h";  // macros only
constexpr const char* kComplexStdHeaders[] = {"cuda/std/complex", "cuda/std/type_traits"};
// CCCL headers present in every CUDA 13 toolkit and nvidia-cuda-cccl wheel
// (<cuda/std/algorithm> is not: CCCL 3.0, shipped with CUDA 13.0, lacks it).
constexpr const char* kCudaStdHeaders[] = {
    "cuda/std/limits", "cuda/std/type_traits", "cuda/std/utility",
    "cuda/std/array",  "cuda/std/tuple",       "cuda/std/cmath",
};

bool is_preamble_header(const std::string& target) {
  if (target == kFp16Header || target == kBf16Header || target == kComplexHeader ||
      target == kCooperativeGroupsHeader || target == kMathConstantsHeader) {
    return true;
  }
  for (const char* h : kCudaStdHeaders) {
    if (target == h) return true;
  }
  for (const char* h : kComplexStdHeaders) {
    if (target == h) return true;
  }
  return false;
}

// Whether `id` may name something NVRTC's -minimal leaves undeclared: the
// __CUDACC_RTC_MINIMAL__ sections of NVRTC's built-in headers (13.5) hold the
// CUDA runtime API's types, constants and functions (cudaStream_t,
// cudaSuccess, cudaMalloc, CUDA_R_32F, CUDART_CB, CUuuid, CUstream_st),
// texture and surface functions and types (tex1Dfetch, surf2Dwrite,
// cudaTextureObject_t) and library_types.h. Errs on the side of a match:
// a false match only costs compile time. (CUDART_INF_F & co. are math
// constants from headers, not from these sections.)
}  // namespace

bool omitted_by_minimal(const std::string& id) {
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  auto digit_or_upper = [&](char c) { return upper(c) || (c >= '0' && c <= '9'); };
  auto after = [&](std::string_view prefix, auto&& pred) {
    return starts_with(id, prefix) && id.size() > prefix.size() && pred(id[prefix.size()]);
  };
  if (after("cuda", upper) || after("CU", lower) || after("tex", digit_or_upper) ||
      after("surf", digit_or_upper)) {
    return true;  // cudaMalloc, CUuuid, tex1Dfetch, texCubemap, surf2Dwrite
  }
  if (starts_with(id, "CUDA") && (!starts_with(id, "CUDART_") || id == "CUDART_CB")) return true;
  for (std::string_view name : {"texture", "surface", "libraryPropertyType", "libraryPropertyType_t",
                                "MAJOR_VERSION", "MINOR_VERSION", "PATCH_LEVEL"}) {
    if (id == name) return true;
  }
  return false;
}

namespace {

// Helpers in namespace jitkernel, made visible with a using-directive so a
// user header may define the same names without a redefinition error.
constexpr const char* kHelpers = R"(#define WARP_SIZE 32
#define MAX_NDIM @MAX_NDIM@

namespace jitkernel {
// Shape (int32) and strides (int64, in elements) of an input, passed by value
// with MAX_NDIM entries; the first ndim are meaningful.
template <typename T>
struct DimArray {
  T values[MAX_NDIM];
  __host__ __device__ constexpr const T* data() const { return values; }
  __host__ __device__ constexpr T* data() { return values; }
  __host__ __device__ constexpr const T& operator[](int i) const { return values[i]; }
  __host__ __device__ constexpr T& operator[](int i) { return values[i]; }
  __host__ __device__ static constexpr int size() { return MAX_NDIM; }
  __host__ __device__ constexpr const T* begin() const { return values; }
  __host__ __device__ constexpr const T* end() const { return values + MAX_NDIM; }
};
using Shape = DimArray<int32_t>;
using Strides = DimArray<int64_t>;

// MLX's `inf`, a constant rather than a macro (a local `inf` may shadow it).
inline constexpr float inf = __builtin_bit_cast(float, 0x7f800000);

// Memory offset (in elements) of the row-major element index `elem`.
template <typename IdxT = int64_t>
__host__ __device__ inline IdxT elem_to_loc(IdxT elem, const int* shape,
                                            const int64_t* strides, int ndim) {
  IdxT offset = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    IdxT extent = static_cast<IdxT>(shape[d]);
    offset += (elem % extent) * static_cast<IdxT>(strides[d]);
    elem /= extent;
  }
  return offset;
}
template <typename IdxT = int64_t>
__host__ __device__ inline IdxT elem_to_loc(IdxT elem, const Shape& shape,
                                            const Strides& strides, int ndim) {
  return elem_to_loc<IdxT>(elem, shape.data(), strides.data(), ndim);
}
}  // namespace jitkernel
using namespace jitkernel;
)";

}  // namespace

Features detect_features(const SourceScan& scan, const std::vector<DType>& dtypes) {
  Features f;
  for (DType d : dtypes) {
    f.fp16 |= d == DType::Float16;
    f.bf16 |= d == DType::BFloat16;
    f.complex |= d == DType::Complex64;
  }
  for (const auto& id : scan.identifiers) {
    f.fp16 = f.fp16 || mentions_fp16(id);
    f.bf16 = f.bf16 || mentions_bf16(id);
    f.complex = f.complex || mentions_complex(id);
    f.math_constants = f.math_constants || mentions_math_constants(id);
  }
  f.macros = nvcc_macros_text(scan);
  f.mlx = detect_mlx_utils(scan);
  if (uses_cooperative_groups(scan)) {
    f.cooperative_groups = cooperative_groups_shim_suffices(scan) ? CooperativeGroups::Shim
                                                                  : CooperativeGroups::Header;
  }
  f.cuda_std = scan.qualifies("cuda");
  f.user_includes = !scan.includes.empty();
  return f;
}

std::string preamble_text(const Features& f) {
  std::string out = kIntegerTypes;
  auto include = [&](const char* header) {
    out += "#include <";
    out += header;
    out += ">\n";
  };
  if (f.fp16) include(kFp16Header);
  if (f.bf16) include(kBf16Header);
  if (f.complex) include(kComplexHeader);
  if (f.cuda_std) {
    for (const char* h : kCudaStdHeaders) include(h);
  }
  if (f.mlx.complex) {
    for (const char* h : kComplexStdHeaders) include(h);
  }
  if (f.cooperative_groups == CooperativeGroups::Header) include(kCooperativeGroupsHeader);
  if (f.math_constants) include(kMathConstantsHeader);
  out += f.macros;
  // Our own definitions: no "declared but never referenced" warnings for
  // what a kernel does not use (user code after the pop is checked as usual).
  // (NVRTC defines __NVCC_DIAG_PRAGMA_SUPPORT__ when it knows these pragmas.)
  out += "#ifdef __NVCC_DIAG_PRAGMA_SUPPORT__\n#pragma nv_diagnostic push\n"
         "#pragma nv_diag_suppress 177\n#endif\n";
  if (f.cooperative_groups == CooperativeGroups::Shim) out += cooperative_groups_shim();
  if (f.cooperative_groups != CooperativeGroups::None) {
    out += "namespace cg = cooperative_groups;\n";
  }
  std::string helpers = kHelpers;
  const std::string marker = "@MAX_NDIM@";
  helpers.replace(helpers.find(marker), marker.size(), std::to_string(kMaxNdim));
  const std::string close = "}  // namespace jitkernel\n";
  helpers.insert(helpers.find(close), mlx_utils_text(f.mlx, f.fp16, f.bf16, f.cuda_std));
  out += helpers;
  if (f.checked) out += checked_accessors_text();
  out += "#ifdef __NVCC_DIAG_PRAGMA_SUPPORT__\n#pragma nv_diagnostic pop\n#endif\n";
  return out;
}

bool scan_fits_minimal(const SourceScan& scan) {
  for (const auto& target : scan.includes) {
    if (!is_preamble_header(target)) return false;  // its header may need more
  }
  for (const auto& id : scan.identifiers) {
    if (omitted_by_minimal(id)) return false;
  }
  return true;
}


bool fits_minimal_builtins(const std::string& source) {
  codegen::SourceScan scan;
  codegen::scan_into(source, scan, true);
  return codegen::scan_fits_minimal(scan);
}

}  // namespace jk::codegen
