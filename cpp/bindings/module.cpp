// The nanobind module `jitkernel._core`: runs the bind functions every binding
// file registered (bindings.hpp) in their declared order. Nothing here touches
// CUDA: importing the module works on machines without a driver or NVRTC.
#include <algorithm>
#include <vector>

#include "bindings.hpp"

namespace jk::py {
namespace {

struct Entry {
  int order;
  const char* name;
  BindFunction bind;
};

std::vector<Entry>& registry() {
  static std::vector<Entry> entries;  // function-local: safe from static-init order
  return entries;
}

}  // namespace

Registration::Registration(int order, const char* name, BindFunction bind) {
  registry().push_back({order, name, bind});
}

}  // namespace jk::py

NB_MODULE(_core, m) {
  m.doc() = "jitkernel's C++ core (internal: use the `jitkernel` package)";
#ifdef JITKERNEL_VERSION
  m.attr("__version__") = JITKERNEL_VERSION;
#endif
  auto entries = jk::py::registry();
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return a.order < b.order; });
  for (const auto& e : entries) e.bind(m);
}
