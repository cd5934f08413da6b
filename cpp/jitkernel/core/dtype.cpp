// The dtype table and its lookups (see dtype.hpp).
#include "jitkernel/core/dtype.hpp"

#include <string>

namespace jk {
namespace {

constexpr DTypeInfo kTable[kNumDTypes] = {
    {DType::Bool, "bool", "bool", "bool", 1, 6, 8},
    {DType::Int8, "int8", "int8_t", "int8_t", 1, 0, 8},
    {DType::Int16, "int16", "int16_t", "int16_t", 2, 0, 16},
    {DType::Int32, "int32", "int32_t", "int32_t", 4, 0, 32},
    {DType::Int64, "int64", "int64_t", "int64_t", 8, 0, 64},
    {DType::UInt8, "uint8", "uint8_t", "uint8_t", 1, 1, 8},
    {DType::UInt16, "uint16", "uint16_t", "uint16_t", 2, 1, 16},
    {DType::UInt32, "uint32", "uint32_t", "uint32_t", 4, 1, 32},
    {DType::UInt64, "uint64", "uint64_t", "uint64_t", 8, 1, 64},
    {DType::Float16, "float16", "__half", "float16_t", 2, 2, 16},
    {DType::BFloat16, "bfloat16", "__nv_bfloat16", "bfloat16_t", 2, 4, 16},
    {DType::Float32, "float32", "float", "float", 4, 2, 32},
    {DType::Float64, "float64", "double", "double", 8, 2, 64},
    {DType::Complex64, "complex64", "cuComplex", "complex64_t", 8, 5, 64},
};

}  // namespace

const DTypeInfo& dtype_info(DType dtype) {
  return kTable[static_cast<int>(dtype)];
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& info : kTable) {
    if (name == info.name) return info.dtype;
  }
  struct Alias {
    const char* alias;
    DType dtype;
  };
  static constexpr Alias kAliases[] = {
      {"bool_", DType::Bool},     {"half", DType::Float16},
      {"float", DType::Float32},  {"double", DType::Float64},
      {"int", DType::Int32},      {"long", DType::Int64},
      {"short", DType::Int16},    {"bf16", DType::BFloat16},
      {"cfloat", DType::Complex64},
  };
  for (const auto& a : kAliases) {
    if (name == a.alias) return a.dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_dlpack(std::uint8_t code, std::uint8_t bits,
                                       std::uint16_t lanes) {
  if (lanes != 1) return std::nullopt;
  for (const auto& info : kTable) {
    if (info.dlpack_code == code && info.dlpack_bits == bits) return info.dtype;
  }
  // Some producers export bool as uint8-coded 8-bit values with code 6 only in
  // newer DLPack; older ones never export bool at all, so nothing more here.
  return std::nullopt;
}

}  // namespace jk
