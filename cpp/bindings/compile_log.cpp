// Compile reports (core/compile_events.hpp) as records of the `jitkernel`
// logger: DEBUG when a compile starts, and when it ends INFO if it took a
// second or more (DEBUG otherwise), so a slow compile is visible with
// logging's usual INFO setup and every compile with DEBUG. The logger object is
// looked up once and dropped at exit (on_clear_caches).
#include <cstdio>
#include <string>

#include "bindings.hpp"
#include "hooks.hpp"
#include "jitkernel/core/compile_events.hpp"

namespace jk::py {
namespace {

constexpr double kSlowCompileSeconds = 1.0;
constexpr int kDebug = 10, kInfo = 20;  // logging.DEBUG, logging.INFO

nb::object& logger() {
  static auto* l = new nb::object();  // never destroyed: cleared at exit instead
  return *l;
}

void drop_logger() { logger() = nb::object(); }

std::string describe(const CompileEvent& e) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", e.seconds);
  std::string what = std::string(e.compiler) + ": ";
  switch (e.stage) {
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
    if (!l.is_valid()) l = nb::module_::import_("logging").attr("getLogger")("jitkernel");
    const int level = e.stage == CompileEvent::Stage::Finished && e.seconds >= kSlowCompileSeconds
                          ? kInfo
                          : kDebug;
    if (nb::cast<bool>(l.attr("isEnabledFor")(level))) l.attr("log")(level, describe(e));
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
