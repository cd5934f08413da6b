// Compile reports (core/compile_events.hpp) as records of the `jitkernel`
// logger: one INFO record per answered request for a binary (kernel, seconds,
// and whether it was a memory cache hit, a disk cache hit or an NVRTC
// compile), a WARNING instead when it took more than a second; DEBUG records
// when NVRTC starts and ends. Records carry `jitkernel_kernel`,
// `jitkernel_seconds` and `jitkernel_cache` ("memory", "disk", "compile") for
// filters. Nothing is printed unless logging is configured to show it (the
// logger gets a NullHandler when first used, as libraries' loggers do). This
// runs at compile time only, never on a launch. The logger object is looked up
// once and dropped at exit (on_clear_caches). While nothing imported `logging`,
// nothing can have configured it to show DEBUG or INFO records (only its
// last-resort handler, WARNING and up, is active), so those records are not
// made and `logging` (milliseconds to import) is not imported for them.
#include <cstdio>
#include <string>

#include "bindings.hpp"
#include "services/hooks.hpp"
#include "jitkernel/core/compile_events.hpp"

namespace jk::py {
namespace {

constexpr double kSlowCompileSeconds = 1.0;
constexpr int kDebug = 10, kInfo = 20, kWarning = 30;  // logging.DEBUG, INFO, WARNING

nb::object& logger() {
  static auto* l = new nb::object();  // never destroyed: cleared at exit instead
  return *l;
}

void drop_logger() { logger() = nb::object(); }

// For each BinarySource: the record's `jitkernel_cache` value and the words of its message.
struct SourceWords {
  const char* cache;
  const char* outcome;
};

SourceWords words(BinarySource from) {
  if (from == BinarySource::MemoryCache) return {"memory", "memory cache hit"};
  if (from == BinarySource::DiskCache) return {"disk", "disk cache hit"};
  return {"compile", "NVRTC compile"};
}

std::string describe(const CompileEvent& e) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", e.seconds);
  std::string what = std::string(e.compiler) + ": ";
  switch (e.stage) {
    case CompileEvent::Stage::Answered:
      return e.name + " for " + e.arch + ": " + words(e.from).outcome + ", " + seconds + " s";
    case CompileEvent::Stage::Started:
      return what + "compiling " + e.name + " for " + e.arch + " (" +
             std::to_string(e.source_bytes) + " bytes of source)";
    case CompileEvent::Stage::Finished:
      return what + "compiled " + e.name + " for " + e.arch + " in " + seconds + " s";
    case CompileEvent::Stage::Failed:
      break;
  }
  return what + "compiling " + e.name + " for " + e.arch + " failed after " + seconds + " s";
}

void log_compile(const CompileEvent& e) {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE state = PyGILState_Ensure();
  try {
    nb::object& l = logger();
    const bool answered = e.stage == CompileEvent::Stage::Answered;
    const int level = !answered ? kDebug : e.seconds > kSlowCompileSeconds ? kWarning : kInfo;
    bool shown = true;
    if (!l.is_valid() && level < kWarning) {
      nb::object imported = nb::steal(PyImport_GetModule(nb::str("logging").ptr()));
      if (!imported.is_valid()) PyErr_Clear();
      shown = imported.is_valid();
    }
    if (shown && !l.is_valid()) {
      nb::object logging = nb::module_::import_("logging");
      l = logging.attr("getLogger")("jitkernel");
      // A library's logger: without a handler of its own, Python's last-resort handler would print its warnings
      // (a slow compile) to stderr in a program that never configured logging.
      nb::object handlers = l.attr("handlers");
      if (PyObject_IsTrue(handlers.ptr()) == 0) l.attr("addHandler")(logging.attr("NullHandler")());
    }
    if (shown && nb::cast<bool>(l.attr("isEnabledFor")(level))) {
      nb::dict extra;
      if (answered) {
        extra["jitkernel_kernel"] = e.name;
        extra["jitkernel_seconds"] = e.seconds;
        extra["jitkernel_cache"] = words(e.from).cache;
      }
      l.attr("log")(level, describe(e), nb::arg("extra") = extra);
    }
  } catch (nb::python_error& err) {
    err.discard_as_unraisable("jitkernel compile log");
  } catch (...) {
  }
  PyGILState_Release(state);
}

void bind(nb::module_&) {
  on_clear_caches([] {
    set_compile_observer(nullptr);
    drop_logger();
  });
  set_compile_observer(&log_compile);
}

const Registration reg(order::hooks, "compile_log", bind);

}  // namespace
}  // namespace jk::py
