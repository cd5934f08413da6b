// Argument parsing: the small values a call is made of (sequences, ints,
// shapes, grid/threadgroup, init_value, output dtypes, scalars by value) read
// from Python objects, and the messages that name what was wrong with them.
#include <cstring>
#include <limits>

#include "objects/array.hpp"
#include "call/convert_detail.hpp"
#include "objects/dtypes.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

// ---------------------------------------------------------------------------
// Messages.

std::string python_error_text(nb::python_error& e) {
  std::string name = api::type_name(reinterpret_cast<PyTypeObject*>(e.type().ptr()));
  std::string text;
  if (PyObject* str = PyObject_Str(e.value().ptr())) {
    if (const char* c = api::utf8(str)) text = c;
    Py_DECREF(str);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text.empty() ? name : name + ": " + text;
}

// obj.<name>, or ArgumentTypeError naming `argument` when reading it raises.
// (nanobind's attr() keeps the name's Python string: no string per call.)
nb::object attr_of(nb::handle obj, const char* name, const char* argument, const ItemRef& where) {
  try {
    return obj.attr(name);
  } catch (nb::python_error& e) {
    throw ArgumentTypeError(argument, where.prefix() + "reading its ." + name + " failed (" +
                                          python_error_text(e) + ")");
  }
}

std::string count_noun(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// ---------------------------------------------------------------------------
// Small parsers.

std::size_t sequence_arg(nb::handle value, const char* argument, const char* expected) {
  if (!value.is_valid() || !(PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())))
    throw ArgumentTypeError(argument, std::string("expected ") + expected + ", got " +
                                          (value.is_valid() ? type_text(value) : "nothing"));
  return static_cast<std::size_t>(api::seq_size(value.ptr()));
}

IntResult int_value(nb::handle value, std::int64_t* out) {
  PyObject* o = value.ptr();
  if (PyLong_CheckExact(o)) {  // the usual case, without the checks below
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) return IntResult::Overflow;
    *out = x;
    return IntResult::Ok;
  }
  if (PyBool_Check(o)) return IntResult::NotInt;
  nb::object index;
  if (!PyLong_Check(o)) {
    // NumPy integers (NumPy bools refuse __index__).
    if (!PyIndex_Check(o)) return IntResult::NotInt;
    PyObject* i = PyNumber_Index(o);
    if (!i) {
      PyErr_Clear();
      return IntResult::NotInt;
    }
    index = nb::steal(i);
    o = i;
  }
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow) return IntResult::Overflow;
  if (x == -1 && PyErr_Occurred()) throw nb::python_error();
  *out = x;
  return IntResult::Ok;
}

Dim3 dim3_arg(nb::handle value, const char* argument) {
  static const char* const expected = "a tuple of 3 positive ints (x, y, z)";
  PyObject* o = value.ptr();
  if (PyTuple_CheckExact(o) && api::tuple_size(o) == 3) {  // the usual case: (x, y, z) of positive ints
    std::int64_t v[3];
    bool ok = true;
    for (Py_ssize_t i = 0; i < 3 && ok; ++i) {
      PyObject* item = api::tuple_item(o, i);
      int overflow = 0;
      ok = PyLong_CheckExact(item) && (v[i] = PyLong_AsLongLongAndOverflow(item, &overflow)) > 0 && !overflow;
    }
    if (ok) return Dim3{v[0], v[1], v[2]};  // else the general path below says what is wrong
  }
  std::size_t n = sequence_arg(value, argument, expected);
  if (n != 3)
    throw ArgumentError(argument, std::string("expected ") + expected + ", got " +
                                      count_noun(n, "value"));
  std::int64_t v[3];
  for_each_item(value, argument, [&](std::size_t i, nb::handle item) {
    IntResult r = int_value(item, &v[i]);
    if (r == IntResult::NotInt)
      throw ArgumentTypeError(argument, std::string("expected ") + expected + "; entry " +
                                            std::to_string(i) + " is " + type_text(item));
    if (r == IntResult::Overflow || v[i] <= 0)
      throw ArgumentError(argument, std::string("expected ") + expected + "; entry " +
                                        std::to_string(i) + " is " +
                                        repr_text(item));
  });
  return Dim3{v[0], v[1], v[2]};
}

std::vector<std::int64_t> shape_arg(nb::handle value, const char* argument, const ItemRef& where,
                                    const char* attr) {
  std::vector<std::int64_t> shape;
  shape_into(value, argument, where, shape, attr);
  return shape;
}

void shape_into(nb::handle value, const char* argument, const ItemRef& where,
                std::vector<std::int64_t>& shape, const char* attr) {
  if (!(PyList_Check(value.ptr()) || PyTuple_Check(value.ptr())))
    throw ArgumentTypeError(argument, where.prefix() + (attr ? std::string(attr) + " must" : "a shape must") +
                                          " be a tuple or list of non-negative ints, got " +
                                          (attr ? repr_text(value) : type_text(value)));
  auto dim = [&](std::size_t i) {
    return attr ? std::string(attr) + "[" + std::to_string(i) + "]" : "dimension " + std::to_string(i);
  };
  shape.clear();
  std::int64_t total = 1;
  for_each_item(value, argument, [&](std::size_t i, nb::handle item) {
    std::int64_t d = 0;
    IntResult r = int_value(item, &d);
    if (r == IntResult::NotInt)
      throw ArgumentTypeError(argument, where.prefix() + dim(i) + " must be an int, got " +
                                            type_text(item));
    if (r == IntResult::Overflow || d < 0)
      throw ArgumentError(argument, where.prefix() + dim(i) + " is " + repr_text(item) +
                                        "; dimensions must be non-negative ints");
    if (d != 0 && total > std::numeric_limits<std::int64_t>::max() / 16 / d)
      throw ArgumentError(argument, where.prefix() + "the shape has too many elements");
    total *= d;
    shape.push_back(d);
  });
}

std::optional<double> init_value_arg(nb::handle value) {
  if (!value.is_valid() || value.is_none()) return std::nullopt;
  PyObject* o = value.ptr();
  bool real = PyFloat_Check(o) || PyLong_Check(o);  // bool included
  if (!real && !is_jk_array(value) &&
      classify(value, "init_value", ItemRef{}).kind == Kind::NumpyScalar) {
    // NumPy bool/int/float scalars and ml_dtypes floats (kind 'V'), not complex.
    nb::object kind = attr_of(attr_of(value, "dtype", "init_value", ItemRef{}), "kind", "init_value",
                              ItemRef{});
    const char* k = PyUnicode_Check(kind.ptr()) ? api::utf8(kind.ptr()) : nullptr;
    if (!k) PyErr_Clear();
    real = k && k[0] != 0 && k[1] == 0 && std::strchr("biufV", k[0]) != nullptr;
  }
  if (!real)
    throw ArgumentTypeError("init_value", "expected a number (the value every output is filled "
                                          "with) or None, got " +
                                              type_text(value));
  double d = PyFloat_AsDouble(o);
  if (d == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw ArgumentError("init_value", repr_text(value) +
                                          " cannot be converted to a float");
  }
  return d;
}

bool scalar_value(nb::handle value, bool widen_int, const char* argument, const ItemRef& where,
                  Scalar* out) {
  PyObject* o = value.ptr();
  PyTypeObject* tp = Py_TYPE(o);
  Kind kind;
  if (tp == &PyBool_Type) kind = Kind::Bool;
  else if (tp == &PyLong_Type) kind = Kind::Int;
  else if (tp == &PyFloat_Type) kind = Kind::Float;
  else if (tp == &PyComplex_Type) kind = Kind::Complex;
  else if (is_jk_array(value)) return false;
  else kind = classify(value, argument, where).kind;

  switch (kind) {
    case Kind::Bool:
      *out = Scalar::of<bool>(DType::Bool, PyObject_IsTrue(o) == 1);
      return true;
    case Kind::Int: {
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (x == -1 && PyErr_Occurred()) throw nb::python_error();
      if (overflow)
        throw ArgumentError(argument, where.prefix() + "the integer " +
                                          repr_text(value) +
                                          " does not fit in int64");
      if (x >= std::numeric_limits<std::int32_t>::min() &&
          x <= std::numeric_limits<std::int32_t>::max()) {
        *out = Scalar::of<std::int32_t>(DType::Int32, static_cast<std::int32_t>(x));
      } else if (widen_int) {
        *out = Scalar::of<std::int64_t>(DType::Int64, x);
      } else {
        throw ArgumentError(argument, where.prefix() + "the integer " + std::to_string(x) +
                                          " does not fit in int32 (Python ints pass as int32); "
                                          "pass numpy.int64(" + std::to_string(x) +
                                          ") for a 64-bit parameter");
      }
      return true;
    }
    case Kind::Float: {
      double d = PyFloat_AsDouble(o);
      if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
      *out = Scalar::of<float>(DType::Float32, static_cast<float>(d));
      return true;
    }
    case Kind::Complex: {
      double real = 0, imag = 0;
      if (!api::complex_parts(o, &real, &imag)) throw nb::python_error();
      float parts[2] = {static_cast<float>(real), static_cast<float>(imag)};
      Scalar s;
      s.dtype = DType::Complex64;
      std::memcpy(s.bytes, parts, sizeof(parts));
      *out = s;
      return true;
    }
    case Kind::NumpyScalar: {
      DType d = dtype_arg(attr_of(value, "dtype", argument, where), argument, where);
      nb::object bytes;
      try {
        bytes = attr_of(value, "tobytes", argument, where)();
      } catch (nb::python_error& e) {
        throw ArgumentTypeError(argument, where.prefix() + "reading the scalar's bytes failed (" +
                                              python_error_text(e) + ")");
      }
      char* data = nullptr;
      Py_ssize_t n = 0;
      if (!PyBytes_Check(bytes.ptr()) || PyBytes_AsStringAndSize(bytes.ptr(), &data, &n) != 0)
        throw ArgumentTypeError(argument, where.prefix() + type_text(value) +
                                              ".tobytes() did not return bytes");
      if (static_cast<std::size_t>(n) != dtype_size(d) || n > 8)
        throw ArgumentTypeError(argument, where.prefix() + "a " + type_text(value) + " scalar of " +
                                              std::to_string(n) + " bytes cannot pass as " +
                                              dtype_name(d));
      Scalar s;
      s.dtype = d;
      std::memcpy(s.bytes, data, static_cast<std::size_t>(n));
      *out = s;
      return true;
    }
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------
// Outputs' dtypes.

std::vector<DType> output_dtypes_arg(nb::handle output_dtypes,
                                     const std::vector<std::string>* names) {
  std::vector<DType> dtypes;
  output_dtypes_into(output_dtypes, names, dtypes);
  return dtypes;
}

void output_dtypes_into(nb::handle output_dtypes, const std::vector<std::string>* names,
                        std::vector<DType>& dtypes) {
  std::size_t n = sequence_arg(output_dtypes, "output_dtypes", "a list of dtypes, one per output");
  if (names && n != names->size())
    throw ArgumentError("output_dtypes", "expected " + count_noun(names->size(), "dtype") +
                                             " (output_names: " + joined(*names) + "), got " +
                                             std::to_string(n));
  dtypes.clear();
  for_each_item(output_dtypes, "output_dtypes", [&](std::size_t i, nb::handle item) {
    dtypes.push_back(dtype_arg(item, "output_dtypes", ItemRef{"output", i, names}));
  });
}

// ---------------------------------------------------------------------------
// Messages about user objects (declared in convert.hpp).

void raise_sequence_changed(const char* argument) {
  throw ArgumentError(argument, "the list changed while jitkernel was reading it (a method of one "
                                "of its items changed it); pass a list that stays as it is "
                                "during the call");
}

std::string type_text(nb::handle obj) {
  PyTypeObject* tp = Py_TYPE(obj.ptr());
  auto text_attr = [&](const char* name) {
    std::string out;
    if (PyObject* v = PyObject_GetAttrString(reinterpret_cast<PyObject*>(tp), name)) {
      if (PyUnicode_Check(v))
        if (const char* c = api::utf8(v)) out = c;
      Py_DECREF(v);
    }
    if (PyErr_Occurred()) PyErr_Clear();
    return out;
  };
  std::string qual = text_attr("__qualname__");
  if (qual.empty()) qual = api::type_name(tp);
  std::string mod = text_attr("__module__");
  return mod.empty() || mod == "builtins" ? qual : mod + "." + qual;
}

std::string repr_text(nb::handle obj) {
  std::string out;
  if (PyObject* r = PyObject_Repr(obj.ptr())) {
    if (const char* c = api::utf8(r)) out = c;
    Py_DECREF(r);
  }
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return "<" + type_text(obj) + " object>";
  }
  return out.size() > 200 ? out.substr(0, 200) + "..." : out;
}

}  // namespace jk::py
