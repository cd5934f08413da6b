// A template argument of a call (`template=[("N", 3), ("T", float32)]`):
// both backends turn it into code (CUDA: constexpr / using lines; Metal: a
// template parameter of the kernel), so it is part of the call signature.
#pragma once

#include <cstdint>
#include <string>

#include "jitkernel/core/dtype.hpp"

namespace jk {

struct TemplateArg {
  enum class Kind : std::uint8_t { Int, Bool, DType };
  std::string name;
  Kind kind = Kind::Int;
  std::int64_t int_value = 0;    // Kind::Int (the value as 0/1 for Kind::Bool)
  DType dtype = DType::Float32;  // Kind::DType
};

}  // namespace jk
