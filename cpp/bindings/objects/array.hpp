// jitkernel.Array: a device array jitkernel allocated (a kernel output when no
// input came from a framework). It owns its buffer through a shared_ptr, so
// DLPack consumers keep the memory alive after the Python object is gone.
#pragma once

#include <cstdint>

#include "bindings.hpp"
#include "jitkernel/cuda/memory/memory.hpp"

namespace jk::py {

struct PyArray {
  OwnedArray array;
  std::uintptr_t stream = 0;  // CUstream whose work produced the contents (0: legacy default)
};

// Fast exact-type checks for the hot path (jk.Array cannot be subclassed).
extern PyTypeObject* g_array_type;
inline bool is_jk_array(nb::handle h) { return Py_TYPE(h.ptr()) == g_array_type; }
inline PyArray* jk_array_ptr(nb::handle h) { return nb::inst_ptr<PyArray>(h); }

}  // namespace jk::py
