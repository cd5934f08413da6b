// The hooks of blocking.hpp.
#include "jitkernel/core/blocking.hpp"

#include <atomic>

namespace jk {
namespace {

std::atomic<void* (*)()> g_enter{nullptr};
std::atomic<void (*)(void*)> g_leave{nullptr};

}  // namespace

void set_blocking_hooks(const BlockingHooks& hooks) {
  g_leave.store(hooks.leave, std::memory_order_relaxed);
  g_enter.store(hooks.enter, std::memory_order_release);
}

BlockingSection::BlockingSection() {
  if (auto enter = g_enter.load(std::memory_order_acquire)) {
    leave_ = g_leave.load(std::memory_order_relaxed);
    state_ = enter();
  }
}

BlockingSection::~BlockingSection() {
  if (leave_) leave_(state_);
}

}  // namespace jk
