// The stage clock of stage_clock.hpp: relaxed atomic totals per stage and a
// per-thread pointer to the innermost open timer, which nested timers report
// their time to.
#include "jitkernel/core/stage_clock.hpp"

#include <atomic>

namespace jk {
namespace {

constexpr int kStages = static_cast<int>(Stage::Count);
std::atomic<std::int64_t> g_ns[kStages] = {};
std::atomic<std::int64_t> g_count[kStages] = {};
thread_local StageTimer* t_innermost = nullptr;

constexpr const char* kNames[kStages] = {
    "driver_load",  "device_attributes", "context_retain", "toolkit_search",
    "nvrtc_load",   "compiler_identity", "compile_key",    "disk_lookup",
    "disk_store",   "nvrtc_create",      "nvrtc_compile",  "nvrtc_get_binary",
    "module_load",  "function_lookup",   "pool_setup",     "first_alloc"};

}  // namespace

const char* stage_name(Stage stage) {
  const int i = static_cast<int>(stage);
  return i >= 0 && i < kStages ? kNames[i] : "unknown";
}

std::vector<StageTotal> stage_snapshot(bool reset) {
  std::vector<StageTotal> out;
  out.reserve(kStages);
  for (int i = 0; i < kStages; ++i) {
    const std::int64_t ns = reset ? g_ns[i].exchange(0, std::memory_order_relaxed)
                                  : g_ns[i].load(std::memory_order_relaxed);
    const std::int64_t count = reset ? g_count[i].exchange(0, std::memory_order_relaxed)
                                     : g_count[i].load(std::memory_order_relaxed);
    out.push_back({kNames[i], ns, count});
  }
  return out;
}

StageTimer::StageTimer(Stage stage)
    : stage_(stage), parent_(t_innermost), start_(std::chrono::steady_clock::now()) {
  t_innermost = this;
}

StageTimer::~StageTimer() {
  const std::int64_t elapsed =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_)
          .count();
  t_innermost = parent_;
  if (parent_ != nullptr) parent_->nested_ns_ += elapsed;
  const int i = static_cast<int>(stage_);
  g_ns[i].fetch_add(elapsed - nested_ns_, std::memory_order_relaxed);
  g_count[i].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace jk
