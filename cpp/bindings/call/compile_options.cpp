// compile_options dicts -> CudaCompileOptions (compile_options.hpp). Every
// message starts with "compile_options: <key>" so the user sees which entry
// was wrong.
#include "call/compile_options.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "call/convert.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/nvrtc/compile_options.hpp"

namespace jk::py {
namespace {

constexpr const char* kArg = "compile_options";
constexpr const char* kKeys =
    "math_mode, line_info, debug, defines, std, max_registers, include_dirs, extra_flags, checked";

[[noreturn]] void wrong_type(const std::string& key, const std::string& expected, nb::handle value) {
  throw ArgumentTypeError(kArg, key + ": expected " + expected + ", got " + type_text(value));
}

std::string text_value(const std::string& key, nb::handle value, const char* expected) {
  if (!PyUnicode_Check(value.ptr())) wrong_type(key, expected, value);
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    throw ArgumentError(kArg, key + ": not valid text (" + repr_text(value) + ")");
  }
  return std::string(utf8, static_cast<std::size_t>(size));
}

bool bool_value(const std::string& key, nb::handle value) {
  if (!PyBool_Check(value.ptr())) wrong_type(key, "True or False", value);
  return value.ptr() == Py_True;
}

// A list or tuple of strings.
std::vector<std::string> texts_value(const std::string& key, nb::handle value, const char* expected) {
  if (!PyList_Check(value.ptr()) && !PyTuple_Check(value.ptr())) wrong_type(key, expected, value);
  std::vector<std::string> out;
  for (nb::handle item : value) out.push_back(text_value(key + " item", item, "a string"));
  return out;
}

std::optional<std::string> define_value(const std::string& name, nb::handle value) {
  const std::string key = "defines['" + name + "']";
  if (value.is_none()) return std::nullopt;
  if (PyUnicode_Check(value.ptr())) return text_value(key, value, "a string");
  if (PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr())) return nb::cast<std::string>(nb::str(value));
  wrong_type(key, "a string, an int or None", value);
}

void read_defines(nb::handle value, CudaCompileOptions& o) {
  if (!PyDict_Check(value.ptr())) wrong_type("defines", "a dict of name -> value (str, int or None)", value);
  for (auto [name, v] : nb::borrow<nb::dict>(value)) {
    const std::string n = text_value("defines key", name, "a string");
    o.defines.emplace_back(n, define_value(n, v));
  }
  std::sort(o.defines.begin(), o.defines.end());
}

int max_registers_value(nb::handle value) {
  if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr())) wrong_type("max_registers", "an int", value);
  const long long n = PyLong_AsLongLong(value.ptr());
  if (n == -1 && PyErr_Occurred()) PyErr_Clear();
  if (n <= 0 || n > 255)
    throw ArgumentError(kArg, "max_registers: expected a register count from 1 to 255, got " + repr_text(value));
  return static_cast<int>(n);
}

void read_option(const std::string& key, nb::handle value, CudaCompileOptions& o) {
  if (key == "math_mode") {
    const std::string mode = text_value(key, value, "'safe' or 'fast'");
    if (mode != "safe" && mode != "fast")
      throw ArgumentError(kArg, "math_mode: expected 'safe' or 'fast', got '" + mode + "'");
    o.fast_math = mode == "fast";
  } else if (key == "line_info") {
    o.line_info = bool_value(key, value);
  } else if (key == "debug") {
    o.debug = bool_value(key, value);
  } else if (key == "checked") {
    o.checked = bool_value(key, value);
  } else if (key == "defines") {
    read_defines(value, o);
  } else if (key == "std") {
    o.std = text_value(key, value, "'c++17' or 'c++20'");
  } else if (key == "max_registers") {
    o.max_registers = max_registers_value(value);
  } else if (key == "include_dirs") {
    o.include_dirs = texts_value(key, value, "a list of folders");
  } else if (key == "extra_flags") {
    o.extra_flags = texts_value(key, value, "a list of NVRTC flags");
  } else {
    throw ArgumentError(kArg, "unknown option '" + key + "' (the options are " + kKeys + ")");
  }
}

}  // namespace

CudaCompileOptions compile_options_arg(nb::handle options) {
  CudaCompileOptions o;
  if (options.is_none()) return o;
  if (!PyDict_Check(options.ptr()))
    throw ArgumentTypeError(kArg, "expected a dict such as {'math_mode': 'fast'} or None, got " +
                                      type_text(options));
  for (auto [key, value] : nb::borrow<nb::dict>(options)) {
    if (!PyUnicode_Check(key.ptr()))
      throw ArgumentTypeError(kArg, "keys must be strings (" + std::string(kKeys) + "), got " +
                                        type_text(key));
    read_option(text_value("key", key, "a string"), value, o);
  }
  cuda::validate_compile_options(o);
  return o;
}

}  // namespace jk::py
