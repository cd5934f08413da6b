// The `template=` argument of kernel calls (see template_args.hpp).
#include "template_args.hpp"

#include <string>

#include "convert.hpp"
#include "dtypes.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

std::vector<TemplateArg> template_args(nb::handle value) {
  std::vector<TemplateArg> out;
  if (!value.is_valid() || value.is_none()) return out;
  nb::object pairs;
  if (PyDict_Check(value.ptr())) {
    pairs = nb::list(nb::borrow<nb::dict>(value).items());
  } else if (PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())) {
    pairs = nb::borrow(value);
  } else {
    throw ArgumentTypeError("template", "expected a list of (name, value) pairs or a dict, got " +
                                           nb::cast<std::string>(nb::type_name(value.type())));
  }
  std::vector<std::string> names;
  const std::size_t n = nb::len(pairs);
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    nb::handle pair = pairs[i];
    if (!(PyTuple_Check(pair.ptr()) || PyList_Check(pair.ptr())) || nb::len(pair) != 2)
      throw ArgumentTypeError("template", "entry " + std::to_string(i) +
                                              " must be a (name, value) pair, got " +
                                              nb::cast<std::string>(nb::repr(pair)));
    nb::handle name = pair[0], v = pair[1];
    if (!PyUnicode_Check(name.ptr()))
      throw ArgumentTypeError("template", "entry " + std::to_string(i) +
                                              ": names must be strings, got " +
                                              nb::cast<std::string>(nb::repr(name)));
    TemplateArg arg;
    arg.name = nb::cast<std::string>(name);
    names.push_back(arg.name);
    const ItemRef where{"entry", i, &names};
    Scalar s;
    std::int64_t iv = 0;
    IntResult ir;
    if (is_jk_dtype(v)) {
      arg.kind = TemplateArg::Kind::DType;
      arg.dtype = dtype_arg(v, "template", where);
    } else if (PyBool_Check(v.ptr())) {
      arg.kind = TemplateArg::Kind::Bool;
      arg.int_value = v.ptr() == Py_True;
    } else if ((ir = int_value(v, &iv)) != IntResult::NotInt) {
      if (ir == IntResult::Overflow)
        throw ArgumentError("template", where.prefix() + nb::cast<std::string>(nb::repr(v)) +
                                            " does not fit in int64");
      arg.kind = TemplateArg::Kind::Int;
      arg.int_value = iv;
    } else if (PyFloat_Check(v.ptr()) || PyComplex_Check(v.ptr()) ||
               scalar_value(v, true, "template", where, &s)) {
      // NumPy bool scalars are bools; any other number is not a template value.
      if (!PyFloat_Check(v.ptr()) && !PyComplex_Check(v.ptr()) && s.dtype == DType::Bool) {
        arg.kind = TemplateArg::Kind::Bool;
        arg.int_value = s.bytes[0] != 0;
      } else {
        throw ArgumentTypeError("template", where.prefix() +
                                                "values must be ints, bools or dtypes, got " +
                                                nb::cast<std::string>(nb::repr(v)));
      }
    } else {
      arg.kind = TemplateArg::Kind::DType;
      arg.dtype = dtype_arg(v, "template", where);
    }
    out.push_back(std::move(arg));
  }
  return out;
}

}  // namespace jk::py
