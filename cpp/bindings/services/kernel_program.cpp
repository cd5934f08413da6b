// KernelProgram (engine/kernel_program.hpp) as the Python side sees it: what
// a C++ program would find in a records file, for tests and for checking a
// file before it ships.
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "jitkernel/engine/kernel_program.hpp"

namespace jk::py {
namespace {

void bind(nb::module_& m) {
  m.def(
      "_kernel_program",
      [](const std::string& path) {
        KernelProgram program(path);
        nb::list kernels;
        for (const std::string& name : program.names()) {
          const Kernel& k = program.kernel(name);
          kernels.append(nb::make_tuple(name, program.calls(name).size(), k.spec().input_names.size()));
        }
        return nb::make_tuple(kernels, program.precompiled_lines());
      },
      nb::arg("path"),
      "What jk::KernelProgram reads from a records file: ([(name, calls, inputs)], precompiled lines) (internal).");
}

const Registration reg(order::toolkit, "kernel_program", bind);

}  // namespace
}  // namespace jk::py
