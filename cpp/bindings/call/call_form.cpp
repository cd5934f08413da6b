// The dict form of a kernel call resolved to the list form (see
// call_form.hpp), for the engines' calls and, as `_core._resolve_call`, for
// the Python fronts of kernels made without names and of source()-like queries.
#include "call/call_form.hpp"

#include <algorithm>
#include <optional>
#include <utility>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

namespace jk::py {
namespace {

// A dict's keys in its order (read from the dict itself: a subclass cannot
// make keys and values disagree); each must be a string.
std::vector<std::string> dict_keys(nb::handle dict, const char* argument) {
  std::vector<std::string> keys;
  Py_ssize_t pos = 0;
  PyObject *key = nullptr, *value = nullptr;
  while (PyDict_Next(dict.ptr(), &pos, &key, &value)) {
    const char* text = PyUnicode_Check(key) ? api::utf8(key) : nullptr;
    if (text == nullptr) {
      PyErr_Clear();
      throw ArgumentTypeError(argument, "dict keys must be names (strings), got " +
                                            nb::cast<std::string>(nb::repr(nb::handle(key))));
    }
    keys.emplace_back(text);
  }
  return keys;
}

std::string names_repr(const std::vector<std::string>& names) {
  return nb::cast<std::string>(nb::repr(nb::cast(names)));
}

void match_names(const std::vector<std::string>& keys, const std::vector<std::string>& names,
                 const char* argument, const char* names_argument) {
  bool same = keys.size() == names.size();
  for (const auto& k : keys) same = same && std::find(names.begin(), names.end(), k) != names.end();
  if (!same)
    throw ArgumentError(argument, "the keys " + names_repr(keys) + " do not match the kernel's " +
                                      names_argument + " " + names_repr(names));
}

// A dict's values in `names` order (the keys checked already); anything else
// as given (None for an argument the query does not take).
nb::object ordered(nb::handle value, const std::vector<std::string>& names) {
  if (!value.is_valid()) return nb::none();
  if (!PyDict_Check(value.ptr())) return nb::borrow(value);
  nb::list out;
  for (const auto& name : names) {
    PyObject* item = PyDict_GetItemWithError(value.ptr(), nb::str(name.data(), name.size()).ptr());
    if (item == nullptr) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, name.c_str());
      throw nb::python_error();
    }
    out.append(nb::handle(item));
  }
  return out;
}

}  // namespace

ListForm resolve_call_form(const CallForm& call, const std::vector<std::string>* input_names,
                           const std::vector<std::string>* output_names, const char* factory) {
  ListForm form;
  if (PyDict_Check(call.inputs.ptr())) {
    form.dict_result = true;
    form.input_names = dict_keys(call.inputs, "inputs");
    if (input_names != nullptr) {
      match_names(form.input_names, *input_names, "inputs", "input_names");
      form.input_names = *input_names;
    }
  } else if (input_names != nullptr) {
    form.input_names = *input_names;
  } else {
    throw ArgumentError("inputs", std::string("this kernel was made without input_names: pass "
                                              "inputs as a dict {name: array}, or give "
                                              "input_names to ") + factory + "()");
  }
  std::optional<std::vector<std::string>> out_names;
  if (output_names != nullptr) out_names = *output_names;
  const std::pair<const char*, nb::handle> per_output[] = {
      {"output_shapes", call.output_shapes}, {"output_dtypes", call.output_dtypes},
      {"outputs", call.outputs}};
  for (const auto& [argument, value] : per_output) {
    if (!value.is_valid() || !PyDict_Check(value.ptr())) continue;
    form.dict_result = form.dict_result || std::string(argument) != "outputs";
    std::vector<std::string> keys = dict_keys(value, argument);
    if (out_names)
      match_names(keys, *out_names, argument, "output names");
    else
      out_names = std::move(keys);
  }
  if (!out_names)
    throw ArgumentError(call.output_shapes.is_valid() ? "output_shapes" : "output_dtypes",
                        std::string("this kernel was made without output_names: pass "
                                    "output_shapes / output_dtypes as dicts {name: value}, or "
                                    "give output_names to ") + factory + "()");
  form.output_names = std::move(*out_names);
  form.inputs = ordered(call.inputs, form.input_names);
  form.output_shapes = ordered(call.output_shapes, form.output_names);
  form.output_dtypes = ordered(call.output_dtypes, form.output_names);
  form.outputs = ordered(call.outputs, form.output_names);
  return form;
}

nb::object call_result(const ListForm& form, nb::object results) {
  if (!form.dict_result) return results;
  nb::dict out;
  std::size_t i = 0;
  for (nb::handle r : results) {
    if (i >= form.output_names.size()) break;
    const std::string& name = form.output_names[i++];
    out[nb::str(name.data(), name.size())] = r;
  }
  return out;
}

namespace {

nb::object names_tuple(const std::vector<std::string>& names) {
  PyObject* t = PySequence_Tuple(nb::cast(names).ptr());
  if (t == nullptr) throw nb::python_error();
  return nb::steal(t);
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def(
      "_resolve_call",
      [](nb::handle inputs, nb::handle output_shapes, nb::handle output_dtypes, nb::handle outputs,
         std::optional<std::vector<std::string>> input_names,
         std::optional<std::vector<std::string>> output_names, const char* factory, bool query) {
        CallForm call{inputs, query ? nb::handle() : output_shapes, output_dtypes,
                      query ? nb::handle() : outputs};
        ListForm f = resolve_call_form(call, input_names ? &*input_names : nullptr,
                                       output_names ? &*output_names : nullptr, factory);
        return nb::make_tuple(names_tuple(f.input_names), f.inputs, f.output_shapes,
                              f.output_dtypes, f.outputs, names_tuple(f.output_names),
                              f.dict_result);
      },
      "inputs"_a.none(), "output_shapes"_a.none(), "output_dtypes"_a.none(), "outputs"_a.none(),
      "input_names"_a.none(), "output_names"_a.none(), "factory"_a, "query"_a,
      "A call (or, with query=True, a source()-like query) in the list or dict form as "
      "(input names, inputs, output_shapes, output_dtypes, outputs, output names, dict form) "
      "in the list form (internal).");
}

const Registration reg(order::kernel, "call_form", bind);

}  // namespace
}  // namespace jk::py
