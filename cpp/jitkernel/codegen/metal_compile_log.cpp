// map_metal_compile_log: makes a Metal compiler log about a generated kernel
// point at the user's own lines. The Metal compiler reports
// "<file>:LINE:COL: error: ..." with LINE counted in the whole compiled text
// (metal_utils preamble + header + signature + body); lines inside the user's
// header or body become "header line N:COL: ..." / "source line N:COL: ...".
// Everything else (code excerpts, carets, notes about the preamble) is kept.
#include <cctype>
#include <string>

#include "jitkernel/codegen/codegen_detail.hpp"
#include "jitkernel/codegen/metal_signature.hpp"

namespace jk::codegen {
namespace {

// Splits "file:LINE:COL: rest" (COL optional) into its parts; false for any
// other line. `file` has no spaces.
bool parse_location(const std::string& line, long& number, std::string& tail) {
  std::size_t colon = line.find(':');
  if (colon == std::string::npos || colon == 0 || line.find(' ') < colon) return false;
  std::size_t i = colon + 1, start = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == start || i - start > 9 || i >= line.size() || line[i] != ':') return false;
  number = std::stol(line.substr(start, i - start));
  tail = line.substr(i);  // ":COL: rest" or ": rest"
  return true;
}

}  // namespace

std::string map_metal_compile_log(const GeneratedKernel& kernel, const std::string& log) {
  return map_log_lines(log, [&](const std::string& line) {
    long number = 0;
    std::string tail, where;
    if (parse_location(line, number, tail)) where = user_line(kernel, number);
    return where.empty() ? line : where + tail;
  });
}

}  // namespace jk::codegen
