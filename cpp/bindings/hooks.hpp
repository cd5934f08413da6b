// Calls from C++ back into jitkernel's Python helpers (dtype normalisation,
// framework detection, stream lookup). The package installs
// them once at import (`_core._install_hooks`); caches that hold Python
// objects register a clear function so `_core._clear_caches` (run at exit)
// drops every reference before the interpreter shuts down.
#pragma once

#include "bindings.hpp"

namespace jk::py {

struct Hooks {
  nb::object normalize_dtype;    // _dtypes._normalize(obj, argument, context) -> DType
  nb::object classify_type;      // _arrays.classify_type(type) -> (kind, framework)
  nb::object output_converter;   // _arrays.output_converter(framework) -> callable | None
  nb::object host_array;         // _arrays.as_host_array(obj) -> numpy.ndarray
  nb::object empty_host;         // _arrays.empty_host(shape, dtype_name) -> numpy.ndarray
  nb::object current_stream;     // _streams.current_stream_getter(framework) -> callable(device) | None
  nb::object stream_handle;      // _streams.stream_handle(obj) -> int
};

Hooks& hooks();

// The hook, or a RuntimeError saying the package did not install it (only
// when `_core` is used without the `jitkernel` package).
nb::handle hook(const nb::object& h, const char* name);

// Registers a function that drops cached Python references.
void on_clear_caches(void (*clear)());

}  // namespace jk::py
