// What every binding file shares: the nanobind alias, and self-registration so
// each file adds its own functions/classes to `jitkernel._core` without
// module.cpp having to know about it (precompiled_kernel.cpp registers the same way).
//
//   static void bind(nb::module_& m) { m.def(...); }
//   static const jk::py::Registration reg(jk::py::order::kernel, "kernel", bind);
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "python_api.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace jk::py {

using BindFunction = void (*)(nb::module_&);

// Order in which module.cpp runs the registered functions (classes used in
// other files' signatures first, so docstrings name them properly).
namespace order {
inline constexpr int errors = 0;
inline constexpr int dtypes = 10;
inline constexpr int hooks = 20;
inline constexpr int array = 30;
inline constexpr int toolkit = 40;
inline constexpr int kernel = 50;
inline constexpr int precompiled = 60;
inline constexpr int metal = 70;
}  // namespace order

struct Registration {
  Registration(int order, const char* name, BindFunction bind);
};

// Which item of a sequence argument a message is about ("input 2 ('x')"),
// spelled out only when an error needs it (the hot path never builds strings).
struct ItemRef {
  const char* what = nullptr;  // "input", "output", "entry"; null: the argument as a whole
  std::size_t index = 0;
  const std::vector<std::string>* names = nullptr;

  std::string str() const {
    if (!what) return {};
    std::string s = std::string(what) + " " + std::to_string(index);
    if (names && index < names->size()) s += " ('" + (*names)[index] + "')";
    return s;
  }
  // "input 2 ('x'): " or "" — the prefix of a message about this item.
  std::string prefix() const { return what ? str() + ": " : std::string(); }
};

}  // namespace jk::py
