// Message spellings of dimensions and shapes (text.hpp).
#include "jitkernel/core/text.hpp"

namespace jk {

std::string dims_text(const Dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

std::string item_text(const char* name, std::size_t index) {
  return std::string(name) + "[" + std::to_string(index) + "]";
}

}  // namespace jk
