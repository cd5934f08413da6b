// jitkernel dtypes in Python: `_core.DType` (one singleton per element type:
// jk.float32, jk.bfloat16, ...) and the conversion of any dtype-like object
// (jitkernel/NumPy/ml_dtypes/PyTorch/JAX dtype, name string) to jk::DType.
#pragma once

#include <string>

#include "bindings.hpp"
#include "jitkernel/core/dtype.hpp"

namespace jk::py {

// The Python object of a jitkernel dtype (a plain CPython type, not a
// nanobind class: see dtypes.cpp).
struct DTypeObject {
  PyObject_HEAD
  DType value;
};

// Fast exact-type check for the hot path (jk.DType cannot be subclassed).
extern PyTypeObject* g_dtype_type;
inline bool is_jk_dtype(nb::handle h) { return Py_TYPE(h.ptr()) == g_dtype_type; }

// The singleton Python object for `dtype` (borrowed: it lives as long as the process).
nb::handle dtype_object(DType dtype);

// Converts a dtype-like object. Jitkernel dtypes, names, NumPy and torch
// dtypes are read here; rarer dtype-likes (scalar types, MLX/JAX objects) and
// every error go through `_dtypes._normalize`. Each answer is remembered by identity
// (torch.float16, np.dtype('float32') and interned strings are the same
// object call after call). Raises jk.ArgumentError / ArgumentTypeError naming
// `argument` and `where` on unknown dtypes.
DType dtype_arg(nb::handle obj, const char* argument, const ItemRef& where = {});

}  // namespace jk::py
