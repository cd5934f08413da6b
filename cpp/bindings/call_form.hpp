// The first checks of a kernel engine's list-form call, shared by
// `_core.CudaKernelBase` (kernel.cpp) and `_core.MetalKernel` (metal.cpp):
// whether the call is in the dict form, which the Python front resolves to
// lists (python/jitkernel/_kernel_front.py), and the verbose= flag. Inline:
// they run on the CUDA launch path.
#pragma once

#include <string>

#include "bindings.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

// True when inputs, output_shapes, output_dtypes or outputs is a dict (the
// dict form): an engine's _call then returns NotImplemented, and the Python
// front resolves the names and calls again with lists.
inline bool is_dict_form(nb::handle inputs, nb::handle output_shapes, nb::handle output_dtypes,
                         nb::handle outputs) {
  return PyDict_Check(inputs.ptr()) || PyDict_Check(output_shapes.ptr()) ||
         PyDict_Check(output_dtypes.ptr()) || PyDict_Check(outputs.ptr());
}

// verbose=: True or False; ArgumentTypeError otherwise.
inline bool verbose_arg(nb::handle verbose) {
  if (!PyBool_Check(verbose.ptr()))
    throw ArgumentTypeError("verbose", "expected True or False, got " +
                                           nb::cast<std::string>(nb::repr(verbose)));
  return verbose.ptr() == Py_True;
}

}  // namespace jk::py
