// The arguments of one kernel call as named fields (CallArgs), and the one
// table of the call's keywords (name, field, required, default) that the C
// call slot parses by, `_core._call_keywords` / `_call_required` /
// `_call_defaults` export to Python (TorchDynamo's path reads them), and the
// Python paths' positional order follows. Made once per call by the call
// slot (or by `_call` from Python) and passed down the conversion by
// reference: no list of values is rebuilt on the way.
#pragma once

#include "bindings.hpp"

namespace jk::py {

// Borrowed handles, valid for the call; None where not given (verbose: False).
struct CallArgs {
  nb::handle inputs, output_shapes, output_dtypes, grid, threadgroup, tmpl, init_value, stream, outputs,
      verbose, cooperative, cluster;
};

struct CallKeyword {
  const char* name;
  nb::handle CallArgs::*field;
  bool required;
  bool false_by_default;  // default False instead of None
};

// The keywords of a kernel call, in `_call`'s parameter order.
inline constexpr CallKeyword kCallKeywords[] = {
    {"inputs", &CallArgs::inputs, true, false},
    {"output_shapes", &CallArgs::output_shapes, false, false},
    {"output_dtypes", &CallArgs::output_dtypes, false, false},
    {"grid", &CallArgs::grid, true, false},
    {"threadgroup", &CallArgs::threadgroup, true, false},
    {"template", &CallArgs::tmpl, false, false},
    {"init_value", &CallArgs::init_value, false, false},
    {"stream", &CallArgs::stream, false, false},
    {"outputs", &CallArgs::outputs, false, false},
    {"verbose", &CallArgs::verbose, false, true},
    {"cooperative", &CallArgs::cooperative, false, false},
    {"cluster", &CallArgs::cluster, false, false},
};
inline constexpr int kNumCallKeywords = sizeof(kCallKeywords) / sizeof(kCallKeywords[0]);

// The keyword's default (None, or False for verbose).
inline nb::handle call_keyword_default(const CallKeyword& k) {
  return k.false_by_default ? nb::handle(Py_False) : nb::none();
}

// Binds `_call(inputs, output_shapes, output_dtypes, grid, threadgroup,
// template, init_value, stream, outputs, verbose, cooperative=None,
// cluster=None)` on `cls`: the keywords positionally, for the Python paths
// (`_call_general`, the torch op), into `Call(self, args)`.
template <auto Call, typename Self, typename Class>
void def_positional_call(Class& cls) {
  using namespace nb::literals;
  cls.def(
      "_call",
      [](Self& self, nb::handle inputs, nb::handle output_shapes, nb::handle output_dtypes, nb::handle grid,
         nb::handle threadgroup, nb::handle tmpl, nb::handle init_value, nb::handle stream, nb::handle outputs,
         nb::handle verbose, nb::handle cooperative, nb::handle cluster) {
        return Call(self, CallArgs{inputs, output_shapes, output_dtypes, grid, threadgroup, tmpl, init_value,
                                   stream, outputs, verbose, cooperative, cluster});
      },
      "inputs"_a.none(), "output_shapes"_a.none(), "output_dtypes"_a.none(), "grid"_a.none(),
      "threadgroup"_a.none(), "template"_a.none(), "init_value"_a.none(), "stream"_a.none(), "outputs"_a.none(),
      "verbose"_a.none(), "cooperative"_a.none() = nb::none(), "cluster"_a.none() = nb::none());
}

}  // namespace jk::py
