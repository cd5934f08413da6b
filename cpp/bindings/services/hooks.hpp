// Calls from C++ back into jitkernel's Python helpers, none of them on a
// launch: the rare dtype-likes and the dtype error messages (dtypes.cpp).
// The package installs
// them once at import (`_core._install_hooks`); caches that hold Python
// objects register a clear function so `_core._clear_caches` (run at exit)
// drops every reference before the interpreter shuts down.
#pragma once

#include "bindings.hpp"

namespace jk::py {

struct Hooks {
  nb::object normalize_dtype;    // _dtypes._normalize(obj, argument, context) -> DType
};

Hooks& hooks();

// The hook, or a RuntimeError saying the package did not install it (only
// when `_core` is used without the `jitkernel` package).
nb::handle hook(const nb::object& h, const char* name);

// Registers a function that drops cached Python references.
void on_clear_caches(void (*clear)());

}  // namespace jk::py
