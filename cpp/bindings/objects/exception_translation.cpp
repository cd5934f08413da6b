// Exception translation: each jk:: error class of core/errors.hpp becomes the
// matching Python class of python/jitkernel/_errors.py, which the package
// registers at import (`_core._register_exceptions`). CompileError keeps
// `.log` / `.source`, CudaError `.code`, argument errors `.argument`.
#include <exception>
#include <string>

#include "bindings.hpp"
#include "services/hooks.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {
namespace {

struct ExceptionClasses {
  nb::object base, argument, argument_type, compile, cuda_not_available, metal_not_available, cuda, kernel_fault,
      kernel_bounds, unwritten_output;
};

ExceptionClasses& classes() {
  static auto* c = new ExceptionClasses();  // cleared at exit (hooks.hpp)
  return *c;
}

// Raises `cls(*args)`; falls back to `fallback` with the plain message when the
// package has not registered its classes (using `_core` on its own).
template <typename... Args>
void raise(const nb::object& cls, PyObject* fallback, const char* message, Args&&... args) {
  if (!cls.is_valid()) {
    PyErr_SetString(fallback, message);
    return;
  }
  try {
    nb::object instance = cls(std::forward<Args>(args)...);
    PyErr_SetObject(cls.ptr(), instance.ptr());
  } catch (nb::python_error& e) {
    e.restore();  // constructing the exception failed: report that instead
  }
}

// "argument: message" -> "message" (the Python classes add the prefix back).
std::string strip_argument(const std::string& what, const std::string& argument) {
  std::string prefix = argument + ": ";
  return what.compare(0, prefix.size(), prefix) == 0 ? what.substr(prefix.size()) : what;
}

void translate(const std::exception_ptr& p, void*) {
  const ExceptionClasses& c = classes();
  try {
    std::rethrow_exception(p);
  } catch (const jk::ArgumentTypeError& e) {
    raise(c.argument_type, PyExc_TypeError, e.what(), e.argument(),
          strip_argument(e.what(), e.argument()));
  } catch (const jk::ArgumentError& e) {
    raise(c.argument, PyExc_ValueError, e.what(), e.argument(),
          strip_argument(e.what(), e.argument()));
  } catch (const jk::CompileError& e) {
    raise(c.compile, PyExc_RuntimeError, e.what(), e.what(), e.log(), e.source());
  } catch (const jk::CudaNotAvailable& e) {
    if (c.cuda_not_available.is_valid()) {
      // `_from_core` adds what the toolkit search found (python/jitkernel/_errors.py).
      try {
        nb::object instance = c.cuda_not_available.attr("_from_core")(e.what());
        PyErr_SetObject(c.cuda_not_available.ptr(), instance.ptr());
      } catch (nb::python_error& err) {
        err.restore();
      }
    } else {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  } catch (const jk::KernelBoundsError& e) {
    const BoundsReport& r = e.report();
    nb::object line = r.line > 0 ? nb::object(nb::int_(r.line)) : nb::object(nb::none());
    raise(c.kernel_bounds, PyExc_IndexError, e.what(), e.what(), r.array, r.index, r.hi, line,
          nb::make_tuple(r.block[0], r.block[1], r.block[2]), nb::make_tuple(r.thread[0], r.thread[1], r.thread[2]),
          r.kernel, r.write);
  } catch (const jk::UnwrittenOutput& e) {
    raise(c.unwritten_output, PyExc_RuntimeError, e.what(), e.what(), e.kernel(), e.output(), e.index());
  } catch (const jk::MetalNotAvailable& e) {
    raise(c.metal_not_available, PyExc_RuntimeError, e.what(), e.what());
  } catch (const jk::KernelFault& e) {
    raise(c.kernel_fault, PyExc_RuntimeError, e.what(), e.what(), e.code());
  } catch (const jk::CudaError& e) {
    raise(c.cuda, PyExc_RuntimeError, e.what(), e.what(), e.code());
  } catch (const jk::Error& e) {
    raise(c.base, PyExc_RuntimeError, e.what(), e.what());
  }
}

void register_exceptions(nb::handle base, nb::handle argument, nb::handle argument_type,
                         nb::handle compile, nb::handle cuda_not_available, nb::handle metal_not_available,
                         nb::handle cuda, nb::handle kernel_fault, nb::handle kernel_bounds,
                         nb::handle unwritten_output) {
  ExceptionClasses& c = classes();
  c.base = nb::borrow(base);
  c.argument = nb::borrow(argument);
  c.argument_type = nb::borrow(argument_type);
  c.compile = nb::borrow(compile);
  c.cuda_not_available = nb::borrow(cuda_not_available);
  c.metal_not_available = nb::borrow(metal_not_available);
  c.cuda = nb::borrow(cuda);
  c.kernel_fault = nb::borrow(kernel_fault);
  c.kernel_bounds = nb::borrow(kernel_bounds);
  c.unwritten_output = nb::borrow(unwritten_output);
}

void bind(nb::module_& m) {
  nb::register_exception_translator(&translate);
  m.def("_register_exceptions", &register_exceptions, nb::arg("base"), nb::arg("argument"),
        nb::arg("argument_type"), nb::arg("compile"), nb::arg("cuda_not_available"),
        nb::arg("metal_not_available"), nb::arg("cuda"), nb::arg("kernel_fault"), nb::arg("kernel_bounds"),
        nb::arg("unwritten_output"),
        "Registers the Python exception classes jk:: errors become (internal).");
  on_clear_caches([] { classes() = ExceptionClasses(); });
}

const Registration reg(order::errors, "errors", bind);

}  // namespace
}  // namespace jk::py
