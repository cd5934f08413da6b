// The toolkit provider of toolkit_provider.hpp: the resolved paths behind a
// mutex, a flag read without it on the fast path, and a second mutex that lets
// one thread resolve while the others wait outside the GIL.
#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"

#include <atomic>
#include <mutex>
#include <utility>

#include "jitkernel/core/blocking.hpp"
#include "jitkernel/core/stage_clock.hpp"

namespace jk::cuda {
namespace {

std::mutex g_mutex;  // guards g_paths and g_resolver
ToolkitPaths g_paths;
ToolkitResolver g_resolver = nullptr;
std::atomic<bool> g_resolved{false};

// Held by the thread that resolves. A resolver may need the GIL, so a thread
// that finds it taken waits inside a BlockingSection (which releases the GIL
// when the thread holds it) and never holds it while closing the section.
std::mutex g_resolving;

// Stores `paths` unless `only_if_unresolved` and paths were set meanwhile
// (configure_toolkit during a resolution wins over its result).
void store(ToolkitPaths paths, bool only_if_unresolved) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (only_if_unresolved && g_resolved.load(std::memory_order_relaxed)) return;
  g_paths = std::move(paths);
  g_resolved.store(true, std::memory_order_release);
}

// Resolves on this thread, holding g_resolving.
void resolve_locked() {
  if (g_resolved.load(std::memory_order_acquire)) return;  // another thread did meanwhile
  StageTimer timer(Stage::ToolkitSearch);
  ToolkitResolver resolver = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    resolver = g_resolver;
  }
  store(resolver != nullptr ? resolver() : toolkit_from_environment(), true);
}

}  // namespace

void set_toolkit_resolver(ToolkitResolver resolver) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_resolver = resolver;
}

void configure_toolkit(const ToolkitPaths& paths) { store(paths, false); }

void resolve_toolkit() {
  while (!g_resolved.load(std::memory_order_acquire)) {
    std::unique_lock<std::mutex> resolving(g_resolving, std::try_to_lock);
    if (resolving.owns_lock()) {
      resolve_locked();
      return;
    }
    BlockingSection waiting;  // until the resolving thread is done (it may need the GIL)
    std::lock_guard<std::mutex> done(g_resolving);
  }
}

ToolkitPaths toolkit_paths() {
  resolve_toolkit();
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_paths;
}

}  // namespace jk::cuda
