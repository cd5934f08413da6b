// The Python hooks of hooks.hpp, their installation and the exit-time cache
// clearing; and the core's blocking-section hooks (core/blocking.hpp), which
// release the GIL while the core compiles or loads code on a slow path.
#include "services/hooks.hpp"

#include <string>
#include <vector>

#include "jitkernel/core/blocking.hpp"

namespace jk::py {
namespace {

std::vector<void (*)()>& clear_functions() {
  static auto* fns = new std::vector<void (*)()>();
  return *fns;
}

void install_hooks(nb::kwargs kwargs) {
  Hooks& h = hooks();
  for (auto [key, value] : kwargs) {
    std::string name = nb::str(key).c_str();
    nb::object v = nb::borrow(value);
    if (name == "normalize_dtype") h.normalize_dtype = v;
    else throw nb::value_error(("unknown hook '" + name + "'").c_str());
  }
}

void clear_caches() {
  for (auto fn : clear_functions()) fn();
  hooks() = Hooks();
}

// Releases the GIL when the calling thread holds it (a section opened on a
// thread without it, or nested in one, does nothing).
void* release_gil() { return api::gil_held() ? PyEval_SaveThread() : nullptr; }
void reacquire_gil(void* state) {
  if (state != nullptr) PyEval_RestoreThread(static_cast<PyThreadState*>(state));
}

void bind(nb::module_& m) {
  set_blocking_hooks(BlockingHooks{&release_gil, &reacquire_gil});
  m.def("_install_hooks", &install_hooks, "Installs the package's Python helpers (internal).");
  m.def("_clear_caches", &clear_caches,
        "Drops every Python object the extension caches (run at interpreter exit).");
}

const Registration reg(order::hooks, "hooks", bind);

}  // namespace

Hooks& hooks() {
  static auto* h = new Hooks();  // never destroyed: cleared at exit instead
  return *h;
}

nb::handle hook(const nb::object& h, const char* name) {
  if (!h.is_valid())
    throw std::runtime_error(std::string("jitkernel._core: the Python helper '") + name +
                             "' is not installed; import the `jitkernel` package instead of `_core`");
  return h;
}

void on_clear_caches(void (*clear)()) { clear_functions().push_back(clear); }

}  // namespace jk::py
