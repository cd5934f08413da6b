// Stage 5: the launch plan, what a repeated call reuses: the generated
// kernel for one call signature and its compiled kernel per device. A
// kernel's PlanCache maps plan keys (call_signature.hpp) to plans; a repeated
// call is one compare with the plan used last, else one locked hash lookup.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "jitkernel/core/hash.hpp"
#include "jitkernel/engine/compiled_kernel.hpp"
#include "jitkernel/engine/generated_kernel.hpp"

namespace jk {

// Devices whose compiled kernel a plan keeps inline; calls on higher
// ordinals still work, through the backend's (locked) caches.
inline constexpr int kPlanDevices = 32;

struct LaunchPlan {
  LaunchPlan(std::string k, GeneratedKernel generated);
  const std::string key;  // plan_key() of the calls it serves
  const GeneratedKernel kernel;
  // The compiled kernel on `device`, or null when not yet known here.
  void* compiled_on(int device) const;
  void remember(int device, CompiledKernel compiled);

 private:
  std::atomic<void*> compiled_[kPlanDevices];
};

class PlanCache {
 public:
  // The plan for `key`: the one used last when the key matches (a compare,
  // no lock: plans live as long as the cache), else a locked hash lookup.
  LaunchPlan* find(const std::string& key);
  // Adds a plan (the first insert of a key wins; returns the one kept).
  LaunchPlan* add(const std::string& key, GeneratedKernel kernel);

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<LaunchPlan>, StringHash> plans_;
  std::atomic<LaunchPlan*> last_used_{nullptr};
};

}  // namespace jk
