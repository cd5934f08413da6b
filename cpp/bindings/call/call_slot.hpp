// CPython's two ways of calling a kernel object -- tp_call with a dict of
// keywords (kernel(**kw), calls from C) and vectorcall with a tuple of
// keyword names (kernel(inputs=..., grid=...) written out, which builds no
// dict) -- reduced to one CallArgs (call_args.hpp), handed to the kernel
// type's direct call, or to its Python paths (`_call_general`
// for kernels made without names, `_call_traced` for traced arrays and
// autograd). A C++ exception is translated by nanobind's handlers.
#pragma once

#include <cstddef>

#include "bindings.hpp"
#include "call/call_args.hpp"

namespace jk::py {

// Runs a call whose keywords are `args` (defaults filled in); returns an
// invalid object when the call must take the Python path `_call_general`;
// may throw TracedArgument (then `_call_traced`).
using DirectCall = nb::object (*)(PyObject* self, const CallArgs& args);
void set_direct_call(DirectCall call);

// The kernel type's tp_call.
PyObject* call_slot(PyObject* self, PyObject* args, PyObject* kwargs);

// Lets CPython call `obj` through vectorcall: stores the function in `slot`
// (a field of the instance) and, the first time for `obj`'s type, tells the
// type where instances keep it (api::enable_instance_vectorcall; not under the
// limited API). Instances live inline in nanobind's objects, so the offset is
// the same for every instance of a type; a type whose call slot is not
// call_slot (a subclass defining its own __call__) is left alone.
void enable_vectorcall(PyObject* obj, vectorcallfunc* slot);

// Inside a catch block of a C slot: sets the Python error for the exception
// being handled (nanobind's translation: jk.ArgumentError etc.) and returns
// nullptr for the slot to return.
PyObject* translate_current_exception();

}  // namespace jk::py
