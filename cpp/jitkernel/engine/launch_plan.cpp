// LaunchPlan and PlanCache (launch_plan.hpp).
#include "jitkernel/engine/launch_plan.hpp"

#include <utility>

namespace jk {

LaunchPlan::LaunchPlan(std::string k, GeneratedKernel generated)
    : key(std::move(k)), kernel(std::move(generated)) {
  for (auto& c : compiled_) c.store(nullptr, std::memory_order_relaxed);
}

void* LaunchPlan::compiled_on(int device) const {
  if (device < 0 || device >= kPlanDevices) return nullptr;
  return compiled_[device].load(std::memory_order_acquire);
}

void LaunchPlan::remember(int device, CompiledKernel compiled) {
  if (device >= 0 && device < kPlanDevices) compiled_[device].store(compiled.handle, std::memory_order_release);
}

LaunchPlan* PlanCache::find(const std::string& key) {
  LaunchPlan* last = last_used_.load(std::memory_order_acquire);
  if (last != nullptr && last->key == key) return last;
  LaunchPlan* found = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) found = it->second.get();
  }
  if (found != nullptr) last_used_.store(found, std::memory_order_release);
  return found;
}

LaunchPlan* PlanCache::add(const std::string& key, GeneratedKernel kernel) {
  auto plan = std::make_unique<LaunchPlan>(key, std::move(kernel));
  LaunchPlan* added = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    added = plans_.try_emplace(key, std::move(plan)).first->second.get();  // first insert wins
  }
  last_used_.store(added, std::memory_order_release);
  return added;
}

}  // namespace jk
