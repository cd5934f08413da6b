// How messages spell launch dimensions and shapes, in one place so every
// error about a grid or a shape reads the same whichever backend raised it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jitkernel/core/array_view.hpp"

namespace jk {

// "(x, y, z)"
std::string dims_text(const Dim3& d);
// Python's tuple spelling: "(2, 3)", "(4,)", "()".
std::string shape_text(const std::vector<std::int64_t>& shape);
// "name[i]"
std::string item_text(const char* name, std::size_t index);

}  // namespace jk
