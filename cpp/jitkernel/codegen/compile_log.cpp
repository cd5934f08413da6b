// map_compile_log: makes an NVRTC log about a generated kernel point at the
// user's own lines. NVRTC reports "file(N): error: ..."; thanks to the #line
// markers the generator writes, errors in user code already arrive as
// "source(N)" / "header(N)" and become "source line N: ..." / "header line
// N: ..."; lines of the generated file itself (or a log from a compiler that
// ignored #line) are mapped through the line fields of GeneratedKernel.
// Everything else NVRTC printed (code excerpts, carets, notes) is kept.
#include <cctype>
#include <string>

#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/codegen/cuda_signature.hpp"

namespace jk::codegen {
namespace {

// Splits "file(N): rest" into its parts; false for any other line.
bool parse_location(const std::string& line, std::string& file, long& number, std::string& rest) {
  std::size_t open = line.find('(');
  while (open != std::string::npos && open > 0) {
    std::size_t i = open + 1;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    if (i > open + 1 && i - open - 1 <= 9 && line.compare(i, 3, "): ") == 0) {
      file = line.substr(0, open);
      number = std::stol(line.substr(open + 1, i - open - 1));
      rest = line.substr(i + 3);
      return true;
    }
    open = line.find('(', open + 1);
  }
  return false;
}

std::string user_location(const GeneratedKernel& k, const std::string& file, long n) {
  if (file == "source") return "source line " + std::to_string(n);
  if (file == "header") return "header line " + std::to_string(n);
  if (file != k.program_name) return {};
  // A line of the generated file: user code when a compiler ignored #line.
  std::string where = codegen::user_line(k, n);
  return where.empty() ? "generated line " + std::to_string(n) : where;
}

}  // namespace

std::string map_compile_log(const GeneratedKernel& kernel, const std::string& log) {
  return codegen::map_log_lines(log, [&](const std::string& line) {
    std::string file, rest, where;
    long number = 0;
    if (parse_location(line, file, number, rest)) where = user_location(kernel, file, number);
    return where.empty() ? line : where + ": " + rest;
  });
}

}  // namespace jk::codegen
