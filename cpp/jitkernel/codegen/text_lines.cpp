// Line counting shared by the CUDA and Metal signature writers (codegen_detail.hpp).
#include "jitkernel/codegen/codegen_detail.hpp"

namespace jk::codegen {

int count_lines(const std::string& text) {
  if (text.empty()) return 0;
  int n = 0;
  for (char c : text) n += c == '\n';
  return n + (text.back() != '\n');
}

int line_at(const std::string& text, std::size_t offset) {
  int n = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) n += text[i] == '\n';
  return n;
}

}  // namespace jk::codegen
