// The core's one source of toolkit paths (toolkit_paths.hpp). Whatever needs
// NVRTC or the CUDA headers (the NVRTC loader, compile options, compile keys)
// asks toolkit_paths(), which resolves the toolkit the first time it is
// asked, once per process: from the paths set with configure_toolkit when
// there are any, else from the registered resolver (the Python bindings
// register one at import that runs the package's search, which keeps its
// result as a toolkit record: toolkit_record.hpp), else from the environment
// (toolkit_from_environment). So every entry point, precompiled launches that
// compile the builtin kernels included, compiles with the same toolkit and
// none has to ask for it first. The provider loads nothing itself (the
// NVRTC loader, nvrtc_api.hpp, does on the first compile). All functions are
// thread-safe.
#pragma once

#include "jitkernel/cuda/toolkit/toolkit_paths.hpp"

namespace jk::cuda {

// Finds the toolkit; may throw (the error reaches whoever first needed the
// toolkit, and the next caller asks again). Runs on whichever thread first
// needs the toolkit, one thread at a time; a resolver that needs the
// embedding layer (the Python bindings' search: the GIL) takes it itself.
using ToolkitResolver = ToolkitPaths (*)();

// Registers `resolver` for the resolutions to come (nullptr: the environment).
void set_toolkit_resolver(ToolkitResolver resolver);

// Sets the paths explicitly: they replace any resolved before and are used
// from now on without resolving (NVRTC itself is loaded once per process, so
// a library set after the first compile is used by the next process only).
void configure_toolkit(const ToolkitPaths& paths);

// The paths compiles use, resolved first if nothing set or resolved them yet.
ToolkitPaths toolkit_paths();

// Resolves the toolkit now unless it is already (cheap then: one atomic
// load). For callers about to take a lock under which they compile: a
// resolver that runs the embedding layer's code must not run under a lock
// that a thread holding the GIL may wait for.
void resolve_toolkit();

}  // namespace jk::cuda
