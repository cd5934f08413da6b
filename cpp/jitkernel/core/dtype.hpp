// The element types jitkernel understands: one table that maps each to its
// public name, C/CUDA spelling, size and DLPack code. Everything else looks
// dtypes up here instead of keeping its own switch.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace jk {

enum class DType : std::uint8_t {
  Bool,
  Int8,
  Int16,
  Int32,
  Int64,
  UInt8,
  UInt16,
  UInt32,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  Complex64,
};

inline constexpr int kNumDTypes = 14;

struct DTypeInfo {
  DType dtype;
  const char* name;       // public name: "float32", "bfloat16", ...
  const char* cuda_type;  // spelling in generated CUDA: "float", "__nv_bfloat16"
  const char* metal_type;  // spelling in generated Metal (MLX's): "float", "bfloat16_t"
  std::uint8_t size;      // bytes per element
  std::uint8_t dlpack_code;  // DLDataTypeCode: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool
  std::uint8_t dlpack_bits;
};

const DTypeInfo& dtype_info(DType dtype);
inline const char* dtype_name(DType dtype) { return dtype_info(dtype).name; }
inline std::size_t dtype_size(DType dtype) { return dtype_info(dtype).size; }

// "float32", "f32"-style aliases are not accepted: only the public names
// (plus "float"/"half"/"int"/"bool_" spellings that NumPy and PyTorch print).
std::optional<DType> dtype_from_name(std::string_view name);
std::optional<DType> dtype_from_dlpack(std::uint8_t code, std::uint8_t bits,
                                       std::uint16_t lanes);

}  // namespace jk
