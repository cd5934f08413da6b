// The `template=` argument of kernel calls (see template_args.hpp).
#include "call/template_args.hpp"

#include <string>

#include "call/convert.hpp"
#include "objects/dtypes.hpp"
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
                                           type_text(value));
  }
  std::vector<std::string> names;
  out.reserve(static_cast<std::size_t>(api::seq_size(pairs.ptr())));
  // Items as stored, each held while it is read (a value's __index__ may change the lists).
  for_each_item(pairs, "template", [&](std::size_t i, nb::handle pair) {
    if (!(PyTuple_Check(pair.ptr()) || PyList_Check(pair.ptr())) ||
        api::seq_size(pair.ptr()) != 2)
      throw ArgumentTypeError("template", "entry " + std::to_string(i) +
                                              " must be a (name, value) pair, got " +
                                              repr_text(pair));
    nb::object name = nb::borrow(api::seq_item(pair.ptr(), 0));
    nb::object v = nb::borrow(api::seq_item(pair.ptr(), 1));
    if (!PyUnicode_Check(name.ptr()))
      throw ArgumentTypeError("template", "entry " + std::to_string(i) +
                                              ": names must be strings, got " + repr_text(name));
    TemplateArg arg;
    const char* utf8 = api::utf8(name.ptr());
    if (!utf8) {
      PyErr_Clear();
      throw ArgumentError("template", "entry " + std::to_string(i) +
                                          ": the name is not valid UTF-8 text");
    }
    arg.name = utf8;
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
        throw ArgumentError("template", where.prefix() + repr_text(v) +
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
                                                repr_text(v));
      }
    } else {
      arg.kind = TemplateArg::Kind::DType;
      arg.dtype = dtype_arg(v, "template", where);
    }
    out.push_back(std::move(arg));
  });
  return out;
}

}  // namespace jk::py
