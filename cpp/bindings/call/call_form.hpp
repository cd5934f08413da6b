// The two forms of a kernel call, shared by every kernel of `_core.KernelBase`
// (kernel_object.cpp): the list form, where
// inputs and the per-output arguments are lists in input_names /
// output_names order, and the dict form, where they are dicts keyed by name
// (the factory's names may then be omitted: the dicts' keys give them) and
// the call returns a dict. resolve_call_form turns either into the list form;
// call_by_name runs a list-form call on a dict-form one. Plus the verbose= flag.
#pragma once

#include <string>
#include <vector>

#include "bindings.hpp"
#include "call/call_args.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

// A call's per-name arguments as given. Null handles are arguments a query
// does not take (source() and the like take inputs and output_dtypes only).
struct CallForm {
  nb::handle inputs, output_shapes, output_dtypes, outputs;
};

// The same arguments in the list form, with the names they were resolved by.
struct ListForm {
  nb::object inputs, output_shapes, output_dtypes, outputs;
  std::vector<std::string> input_names, output_names;
  bool dict_result = false;  // inputs, output_shapes or output_dtypes was a dict
};

// True when inputs, output_shapes, output_dtypes or outputs is a dict.
inline bool is_dict_form(const CallArgs& args) {
  return PyDict_Check(args.inputs.ptr()) || PyDict_Check(args.output_shapes.ptr()) ||
         PyDict_Check(args.output_dtypes.ptr()) || PyDict_Check(args.outputs.ptr());
}

// Resolves `call` against the kernel's names (null: the kernel was made
// without them, and the dicts' keys give them). Dict keys must be strings
// (ArgumentTypeError) and exactly the kernel's names, in any order
// (ArgumentError naming the argument); a list needs the kernel's names
// (ArgumentError saying to pass dicts or give the names to `factory`()).
ListForm resolve_call_form(const CallForm& call, const std::vector<std::string>* input_names,
                           const std::vector<std::string>* output_names, const char* factory);

// A list-form call's results (a sequence in output order) as the call's
// return value: a dict keyed by output name when the call was in the dict form.
nb::object call_result(const ListForm& form, nb::object results);

// Runs a dict-form call as a list-form call of the engine (`call(self,
// args)`) on the kernel's names, and returns its results in the call's form.
template <typename Call, typename Self>
nb::object call_by_name(Call&& call, Self& self, const std::vector<std::string>& input_names,
                        const std::vector<std::string>& output_names, const char* factory,
                        const CallArgs& args) {
  ListForm l = resolve_call_form({args.inputs, args.output_shapes, args.output_dtypes, args.outputs},
                                 &input_names, &output_names, factory);
  CallArgs listed = args;
  listed.inputs = l.inputs;
  listed.output_shapes = l.output_shapes;
  listed.output_dtypes = l.output_dtypes;
  listed.outputs = l.outputs;
  return call_result(l, call(self, listed));
}

// verbose=: True or False; ArgumentTypeError otherwise.
inline bool verbose_arg(nb::handle verbose) {
  if (!PyBool_Check(verbose.ptr()))
    throw ArgumentTypeError("verbose", "expected True or False, got " +
                                           nb::cast<std::string>(nb::repr(verbose)));
  return verbose.ptr() == Py_True;
}

}  // namespace jk::py
