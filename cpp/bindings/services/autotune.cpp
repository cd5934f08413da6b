// What autotuning (python/jitkernel/_fleet/autotune.py) needs of the core:
// CUDA event timing on a stream and the graph-capture query
// (cuda/driver/event_timer.hpp), and its decisions kept in the compile cache
// as entries of their own kind ("<key>.jkt", store.hpp's EntryKind::Decision:
// not counted as compiled kernels, carried by bundles and tiers): loaded from
// the folder or a read-only tier with the cache's checks, stored with its
// atomic store, and claimed across processes like a compile (with claims of
// their own, cache/claims.hpp), so that one process tunes a key while the
// others wait and then read its decision.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "services/cache_keys.hpp"
#include "jitkernel/cache/claims.hpp"
#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cuda/driver/event_timer.hpp"

namespace jk::py {
namespace {

cuda::CUstream stream_arg(std::uintptr_t handle) { return reinterpret_cast<cuda::CUstream>(handle); }

std::optional<nb::bytes> as_bytes(const std::optional<std::string>& payload) {
  if (!payload) return std::nullopt;
  return nb::bytes(payload->data(), payload->size());
}

// A claim on a decision's key, held until release() (or until collected).
struct DecisionClaim {
  std::unique_ptr<cache::Claim> claim = std::make_unique<cache::Claim>();
  bool held() const { return claim->held(); }
  void release() { claim->release(); }
};

void bind_timer(nb::module_& m) {
  using namespace nb::literals;
  nb::class_<cuda::EventTimer>(m, "_EventTimer",
                               "Two CUDA timing events on a device (internal: autotuning times candidates).")
      .def(nb::init<int>(), "device"_a)
      .def(
          "start", [](cuda::EventTimer& t, std::uintptr_t stream) { t.start(stream_arg(stream)); }, "stream"_a,
          "Records the first event on the stream (an int handle).")
      .def(
          "stop", [](cuda::EventTimer& t, std::uintptr_t stream) { t.stop(stream_arg(stream)); }, "stream"_a,
          "Records the second event on the stream.")
      .def(
          "elapsed_ms",
          [](cuda::EventTimer& t) {
            nb::gil_scoped_release unlocked;  // waits for the GPU
            return t.elapsed_ms();
          },
          "Milliseconds between the two events (waits for the second).");
  m.def(
      "_stream_capturing",
      [](std::uintptr_t stream, int device) { return cuda::stream_capturing(stream_arg(stream), device); },
      "stream"_a, "device"_a, "Whether the stream (an int handle) is being captured into a CUDA graph now.");
}

void bind_decisions(nb::module_& m) {
  using namespace nb::literals;
  nb::class_<DecisionClaim>(m, "_DecisionClaim", "A claim on a tuning decision's key (internal: autotuning).")
      .def_prop_ro("held", &DecisionClaim::held, "Whether this process holds the claim (it tunes the key).")
      .def("release", &DecisionClaim::release, "Drops the claim (after storing the decision, or failing).");
  m.def(
      "_decision_load",
      [](const std::string& key_hex) {
        const cache::Digest key = key_arg(key_hex);
        std::optional<std::string> payload;
        {
          nb::gil_scoped_release unlocked;
          payload = cache::load(key, cache::EntryKind::Decision);
        }
        return as_bytes(payload);
      },
      "key"_a, "The decision stored under the key (folder, then read-only tiers), checked; None when none.");
  m.def(
      "_decision_load_or_claim",
      [](const std::string& key_hex) {
        const cache::Digest key = key_arg(key_hex);
        DecisionClaim claim;
        std::optional<std::string> payload;
        {
          nb::gil_scoped_release unlocked;  // may wait for another process's tuning
          payload = cache::load_or_claim(key, *claim.claim, cache::EntryKind::Decision);
        }
        nb::object found = payload ? nb::object(nb::bytes(payload->data(), payload->size())) : nb::none();
        return nb::make_tuple(found, nb::cast(std::move(claim), nb::rv_policy::move));
      },
      "key"_a,
      "(decision or None, claim): on a miss, waits for another process tuning the key or claims it (claim.held).");
  m.def(
      "_decision_store",
      [](const std::string& key_hex, nb::bytes payload) {
        const cache::Digest key = key_arg(key_hex);
        const std::string_view data(payload.c_str(), payload.size());
        nb::gil_scoped_release unlocked;  // `payload` stays referenced by the caller meanwhile
        cache::store(key, data, cache::EntryKind::Decision);
      },
      "key"_a, "payload"_a, "Stores a decision under the key through the cache's atomic store.");
}

void bind(nb::module_& m) {
  bind_timer(m);
  bind_decisions(m);
}

const Registration reg(order::toolkit, "autotune", bind);

}  // namespace
}  // namespace jk::py
