// The compile cache from Python: info / clear / path for jitkernel.cache_info()
// and `python -m jitkernel cache`, the warning hook that turns the core's
// cache warnings into Python warnings (python/jitkernel/_fleet/cache.py installs
// it), and internal helpers the tests use (SHA-256, compile keys, reset, a
// read failing like on a network file system).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "services/hooks.hpp"
#include "jitkernel/cache/compile_key.hpp"
#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/nvrtc/compile.hpp"
#include "jitkernel/cuda/nvrtc/compiler_identity.hpp"
#include "jitkernel/cuda/toolkit/toolkit_provider.hpp"

namespace jk::py {
namespace {

nb::object& warning_hook() {
  static auto* hook = new nb::object();  // dropped at exit (on_clear_caches)
  return *hook;
}

// Called by the core with no cache lock held, with or without the GIL (a
// compile may run with it released); a failing hook is reported as
// unraisable rather than lost or thrown into the core.
void warn_through_python(const std::string& message) {
  nb::gil_scoped_acquire gil;
  const nb::object& hook = warning_hook();
  if (!hook.is_valid()) {
    PySys_WriteStderr("jitkernel: warning: %s\n", message.c_str());
    return;
  }
  try {
    hook(message);
  } catch (nb::python_error& e) {
    e.discard_as_unraisable("jitkernel compile cache warning");
  }
}

void set_warning_hook(nb::object hook) {
  warning_hook() = std::move(hook);
  cache::set_warning_handler(warning_hook().is_valid() ? &warn_through_python : nullptr);
}

void drop_warning_hook() {
  cache::set_warning_handler(nullptr);
  warning_hook() = nb::object();
}

nb::dict info_dict() {
  cache::Info info;
  {
    nb::gil_scoped_release unlocked;  // scans the folder
    info = cache::info();
  }
  nb::dict d;
  d["path"] = info.directory;
  d["enabled"] = info.enabled;
  d["disabled_reason"] = info.disabled_reason;
  d["entries"] = info.entries;
  d["records"] = info.records;
  d["bytes"] = info.bytes;
  d["max_bytes"] = info.max_bytes;
  d["hits"] = info.hits;
  d["misses"] = info.misses;
  d["corrupt"] = info.corrupt;
  d["stores"] = info.stores;
  d["evictions"] = info.evictions;
  nb::list tiers;
  for (const cache::TierInfo& t : info.readonly) {
    nb::dict tier;
    tier["path"] = t.directory;
    tier["used"] = t.problem.empty();
    tier["reason"] = t.problem;
    tier["entries"] = t.entries;
    tier["bytes"] = t.bytes;
    tiers.append(tier);
  }
  d["readonly"] = tiers;
  d["readonly_hits"] = info.readonly_hits;
  d["claims"] = info.claims;
  d["claim_wait_seconds"] = info.claim_wait_seconds;
  d["claim_waits"] = info.claim_waits;
  d["claim_timeouts"] = info.claim_timeouts;
  return d;
}

cuda::CompileTarget target_of(const std::string& target) {
  if (target == "cubin") return cuda::CompileTarget::Cubin;
  if (target == "ptx") return cuda::CompileTarget::Ptx;
  throw ArgumentError("target", "expected 'cubin' or 'ptx', got '" + target + "'");
}

// The key compiling `source` would use now; each optional argument replaces
// that part of the key (to show that every part changes it).
std::string compile_key_hex(const std::string& source, const std::string& program_name,
                            const std::string& arch, const std::string& target,
                            std::optional<std::string> compiler,
                            std::optional<std::vector<std::string>> options,
                            std::optional<std::vector<std::string>> include_dirs) {
  cuda::CompileTarget t = target_of(target);
  cache::CompileKeyFields in;
  in.source = source;
  in.program_name = program_name;
  in.arch = arch;
  in.target = target;
  in.options = options ? *options : cuda::compile_options(arch, t, source);
  in.compiler = compiler ? *compiler : cuda::compiler_identity();
  in.include_dirs = include_dirs ? *include_dirs : cuda::toolkit_paths().include_dirs;
  return cache::to_hex(cache::compile_key(in).digest);
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  on_clear_caches(&drop_warning_hook);
  m.def("_cache_info", &info_dict,
        "The compile cache's folder, state, size and this process's hit/miss counts.");
  m.def(
      "_cache_clear",
      [] {
        cache::Cleared cleared;
        {
          nb::gil_scoped_release unlocked;
          cleared = cache::clear();
        }
        return std::make_pair(cleared.entries, cleared.records);
      },
      "Removes jitkernel's entries and records from the compile cache folder; returns how many "
      "(entries, records) were removed.");
  m.def("_cache_path", &cache::configured_directory,
        "The compile cache folder the configuration names (used or not).");
  m.def("_cache_active_directory", &cache::active_directory,
        "The compile cache folder when it is in use, else None.");
  m.def("_cache_reset", &cache::reset,
        "Reads JITKERNEL_CACHE* again on next use and forgets counters and warnings (internal).");
  m.def("_cache_fail_next_read", &cache::fail_next_read, "errno"_a,
        "The compile cache's next file read fails with this errno, as on a network file system "
        "(internal, tests).");
  m.def("_cache_set_warning_hook", &set_warning_hook, "hook"_a.none(),
        "Installs hook(message) for the compile cache's warnings (internal).");
  m.def(
      "_sha256",
      [](nb::bytes data, bool portable) {
        return cache::to_hex(cache::sha256(std::string_view(data.c_str(), data.size()), portable));
      },
      "data"_a, "portable"_a = false,
      "SHA-256 of bytes as hex; portable=True avoids the CPU's SHA extensions (internal, tests).");
  m.def("_cache_compile_key", &compile_key_hex, "source"_a, "program_name"_a, "arch"_a,
        "target"_a, "compiler"_a.none() = nb::none(), "options"_a.none() = nb::none(),
        "include_dirs"_a.none() = nb::none(),
        "The compile cache key (hex) of compiling source now, with parts replaced (internal).");
  m.def(
      "_cache_include_targets",
      [](const std::string& source) { return cache::include_targets(source); }, "source"_a,
        "The #include / __has_include names the compile key follows in `source` (internal, for tests).");
}

const Registration reg(order::toolkit, "cache", bind);

}  // namespace
}  // namespace jk::py
