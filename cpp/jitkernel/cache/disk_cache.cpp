// The persistent compile cache (disk_cache.hpp): configuration from the
// environment (resolved once per process), the warnings, the counters and the
// public calls, over stores (store.hpp): the writable folder
// (writable_folder.hpp; records, small payloads that are not code, share the
// entry format in a folder of their own) and the read-only tiers (tiers.hpp),
// asked in the one lookup order of lookup_order(); claims (claims.hpp) keep
// processes starting together from compiling the same kernel each.
//
// Concurrency without locks between processes: a writer renames a complete
// temp file over the entry, so a reader opens either the old or the new file,
// both whole (not fsync'ed: a file a crash tore fails its checksum, a miss);
// eviction and clear unlink, which a reader that has the file open does not
// notice and a reader that comes later sees as a miss. The
// hit path is one open, fstat, two preads, a checksum and a futimens (the
// mtime is the LRU clock); directory listings happen only in stores (two, to
// make room within the cap: make_room), info and clear.
#include "jitkernel/core/stage_clock.hpp"
#include "jitkernel/cache/disk_cache.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "jitkernel/cache/cache_files.hpp"
#include "jitkernel/cache/directory.hpp"
#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/settings.hpp"
#include "jitkernel/cache/store.hpp"
#include "jitkernel/cache/tiers.hpp"
#include "jitkernel/cache/writable_folder.hpp"

namespace jk::cache {
namespace {

// Records are a few hundred bytes each: a count cap bounds their number.
constexpr std::size_t kMaxRecords = 64;

struct Config {
  std::string directory;        // configured folder ("" without a home folder)
  // The writable folder, opened once it passed the checks (directory.hpp)
  // and used through its descriptors from then on; null when there is none.
  std::unique_ptr<WritableFolder> folder;
  bool readable = false;        // the folder passed the checks: loads may hit
  std::atomic<bool> writable{false};  // stores allowed (off after a failed write)
  std::string disabled_reason;  // when not readable
  std::string write_problem;    // why writable turned off (under State::mutex)
  std::uint64_t max_bytes = kDefaultMaxBytes;
  // Read-only stores, looked in after the folder: the tiers, in the order
  // configured (usable or not: info() reports each).
  std::vector<std::unique_ptr<Store>> readonly;
  std::vector<const Store*> lookup;  // lookup_order()
  bool claims = true;           // JITKERNEL_CACHE_CLAIM
  std::int64_t claim_wait_ns = kDefaultClaimWaitNs;
};

// The one order a load asks the stores in: the writable folder (when it
// passed its checks), then each usable read-only store in order.
std::vector<const Store*> lookup_order(const Config& c) {
  std::vector<const Store*> order;
  if (c.readable) order.push_back(c.folder.get());
  for (const std::unique_ptr<Store>& s : c.readonly)
    if (s->usable()) order.push_back(s.get());
  return order;
}

struct Counters {
  std::atomic<std::uint64_t> hits{0}, misses{0}, corrupt{0}, stores{0};
  std::atomic<std::uint64_t> readonly_hits{0}, claim_waits{0}, claim_timeouts{0};
};

struct State {
  std::mutex mutex;
  std::shared_ptr<Config> config;   // null until resolved
  std::set<std::string> warned;     // causes already reported
  WarningHandler handler = nullptr;
  Counters counters;
};

State& state() {
  static auto* s = new State;  // never destroyed: usable from exit-time code
  return *s;
}

struct Warning {
  std::string cause;
  std::string message;
};

// Reports each cause once (until reset), outside the lock.
void emit(const std::vector<Warning>& warnings) {
  State& s = state();
  for (const Warning& w : warnings) {
    WarningHandler handler = nullptr;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      if (!s.warned.insert(w.cause).second) continue;
      handler = s.handler;
    }
    if (handler != nullptr) {
      handler(w.message);
    } else {
      std::fprintf(stderr, "jitkernel: warning: %s\n", w.message.c_str());
    }
  }
}

constexpr const char* kMemoryOnly = "compiled kernels are kept in memory only";

void read_claim_settings(Config& c, std::vector<Warning>& warnings) {
  const char* claim = std::getenv("JITKERNEL_CACHE_CLAIM");
  if (std::optional<bool> on = parse_enabled(claim)) {
    c.claims = *on;
  } else {
    warnings.push_back({"JITKERNEL_CACHE_CLAIM", std::string("JITKERNEL_CACHE_CLAIM='") + claim +
                                                     "' is not 0 or 1; compile claims stay on"});
  }
  if (const char* wait = std::getenv("JITKERNEL_CACHE_CLAIM_WAIT"); wait != nullptr && *wait) {
    if (std::optional<std::int64_t> ns = parse_seconds(wait)) {
      c.claim_wait_ns = *ns;
    } else {
      warnings.push_back({"JITKERNEL_CACHE_CLAIM_WAIT",
                          std::string("JITKERNEL_CACHE_CLAIM_WAIT='") + wait +
                              "' is not a number of seconds (e.g. 30, 0.5; at most a day); "
                              "waiting at most 30 s for another process's compile"});
    }
  }
}

std::shared_ptr<Config> resolve(std::vector<Warning>& warnings) {
  auto c = std::make_shared<Config>();
  c->directory = directory_from_environment();
  const char* enabled_text = std::getenv("JITKERNEL_CACHE");
  std::optional<bool> enabled = parse_enabled(enabled_text);
  if (!enabled) {
    warnings.push_back({"JITKERNEL_CACHE", std::string("JITKERNEL_CACHE='") + enabled_text +
                                               "' is not 0 or 1; the compile cache stays on "
                                               "(set JITKERNEL_CACHE=0 to turn it off)"});
  }
  if (const char* max = std::getenv("JITKERNEL_CACHE_MAX_BYTES"); max != nullptr && *max) {
    if (auto parsed = parse_max_bytes(max)) {
      c->max_bytes = *parsed;
    } else {
      warnings.push_back({"JITKERNEL_CACHE_MAX_BYTES",
                          std::string("JITKERNEL_CACHE_MAX_BYTES='") + max +
                              "' is not a size in bytes (e.g. 1073741824, 512M, 2G); using the "
                              "default of 1 GiB"});
    }
  }
  read_claim_settings(*c, warnings);
  if (enabled == false) {
    c->disabled_reason = "turned off by JITKERNEL_CACHE=0";
    return c;
  }
  if (const char* dirs = std::getenv("JITKERNEL_CACHE_READONLY_DIRS"); dirs != nullptr) {
    for (std::unique_ptr<Store>& t : readonly_tiers(dirs, c->directory)) {
      if (!t->usable())
        warnings.push_back({"tier " + t->where(), "the read-only compile cache tier " + t->where() +
                                                      " (JITKERNEL_CACHE_READONLY_DIRS) is not used: " +
                                                      t->problem()});
      c->readonly.push_back(std::move(t));
    }
  }
  c->lookup = lookup_order(*c);
  if (c->directory.empty()) {
    c->disabled_reason = "no home folder to put it in (set JITKERNEL_CACHE_DIR)";
    warnings.push_back({"folder", "the compile cache is off: " + c->disabled_reason + "; " +
                                      kMemoryOnly});
    return c;
  }
  c->folder = std::make_unique<WritableFolder>(c->directory, c->max_bytes);
  if (!c->folder->usable()) {
    const std::string& where = c->folder->problem_at();
    c->disabled_reason = where + ": " + c->folder->problem();
    warnings.push_back({"folder", "the compile cache folder " + where + " is not used: " +
                                      c->folder->problem() + "; " + kMemoryOnly +
                                      " (set JITKERNEL_CACHE_DIR to another folder, or "
                                      "JITKERNEL_CACHE=0)"});
    return c;
  }
  c->readable = true;
  c->writable = true;
  c->lookup = lookup_order(*c);
  return c;
}

std::shared_ptr<Config> config() {
  State& s = state();
  std::vector<Warning> warnings;
  std::shared_ptr<Config> c;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.config) s.config = resolve(warnings);
    c = s.config;
  }
  emit(warnings);
  return c;
}

// After a failed write the folder is only read from; one warning.
void write_failed(Config& c, const std::string& what, int error) {
  const std::string problem = "cannot write to the compile cache folder " + c.folder->where() + " (" +
                              what + ": " + errno_text(error) + ")";
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (c.writable) c.write_problem = problem;
    c.writable = false;
  }
  emit({{"write", problem + "; " + kMemoryOnly + " from now on"}});
}

// One entry that cannot be stored (something we cannot replace is in its
// place): the others still are; one warning.
// What an entry of `kind` holds, and what happens without it, for the warning below.
void entry_not_stored(const std::string& path, EntryKind kind, const std::string& what, int error) {
  const EntryKindFacts& facts = entry_kind_facts(kind);
  emit({{"entry", std::string("cannot store ") + facts.thing + " " + path + " (" + what + ": " +
                      errno_text(error) + "); " + facts.without_it + ", other entries are still stored"}});
}

enum class Where { None, Folder, Tier };

// Looks `key` up in the stores in lookup order; `bad` tells whether a bad
// entry was found on the way.
Where lookup(const Config& c, const Key& key, EntryKind kind, std::string& payload, bool& bad) {
  const Store* found = find(c.lookup, key, kind, c.max_bytes, payload, bad);
  if (found == nullptr) return Where::None;
  return found == c.folder.get() ? Where::Folder : Where::Tier;
}

// Counts one load's answer: a hit (from a tier or not), else a miss (a
// corrupt one when a bad entry was found); only binaries are counted.
std::optional<std::string> answer(EntryKind kind, Where where, bool bad, std::string& payload) {
  if (kind != EntryKind::Binary) {
    if (where == Where::None) return std::nullopt;
    return std::move(payload);
  }
  Counters& counters = state().counters;
  if (where == Where::None) {
    if (bad) counters.corrupt++;
    counters.misses++;
    return std::nullopt;
  }
  counters.hits++;
  if (where == Where::Tier) counters.readonly_hits++;
  return std::move(payload);
}

}  // namespace

std::optional<std::string> active_directory() {
  std::shared_ptr<Config> c = config();
  if (!c->readable || !c->writable) return std::nullopt;
  return c->directory;
}

std::string configured_directory() { return config()->directory; }

namespace {

// load() (claim == nullptr) and load_or_claim().
std::optional<std::string> load_from_disk(const Key& key, EntryKind kind, Claim* claim) {
  StageTimer timer(Stage::DiskLookup);
  std::shared_ptr<Config> c = config();
  if (c->lookup.empty()) return std::nullopt;
  std::string payload;
  bool bad = false;
  Where where = lookup(*c, key, kind, payload, bad);
  if (claim != nullptr && where == Where::None && c->readable && c->writable && c->claims) {
    const Claimed claimed = claim_or_wait(
        c->directory + "/" + kClaimFolder, key, kind == EntryKind::Binary ? "" : entry_suffix(kind),
        c->claim_wait_ns, [&] { return c->folder->load(key, kind, c->max_bytes, payload) == Read::Hit; }, *claim);
    Counters& counters = state().counters;
    if (claimed.waited) counters.claim_waits++;
    if (claimed.timed_out) counters.claim_timeouts++;
    if (claimed.outcome == Claimed::Found) where = Where::Folder;
  }
  return answer(kind, where, bad, payload);
}

}  // namespace

std::optional<std::string> load(const Key& key, EntryKind kind) { return load_from_disk(key, kind, nullptr); }

std::optional<std::string> load_or_claim(const Key& key, Claim& claim, EntryKind kind) {
  return load_from_disk(key, kind, &claim);
}

std::optional<std::string> load_alias(const Key& key) {
  std::shared_ptr<Config> c = config();
  std::string payload;
  bool bad = false;
  if (c->lookup.empty() || lookup(*c, key, EntryKind::Alias, payload, bad) == Where::None) return std::nullopt;
  return payload;
}

void store(const Key& key, std::string_view payload, EntryKind kind) {
  StageTimer timer(Stage::DiskStore);
  std::shared_ptr<Config> c = config();
  if (!c->readable || !c->writable) return;
  const char* what = "";
  int error = 0;
  switch (c->folder->store(key, kind, payload, &what, &error)) {
    case Write::Stored:
      if (kind == EntryKind::Binary) state().counters.stores++;
      break;
    case Write::NoRoom:
      break;
    case Write::EntryInTheWay:
      entry_not_stored(c->folder->where() + "/" + entry_name(key, kind), kind, what, error);
      break;
    case Write::Failed:
      write_failed(*c, what, error);
      break;
  }
}

std::optional<std::string> load_record(const Key& key) {
  std::shared_ptr<Config> c = config();
  std::string payload;
  if (!c->readable || !c->folder->load_record(key, payload)) return std::nullopt;
  return payload;
}

void store_record(const Key& key, std::string_view payload) {
  std::shared_ptr<Config> c = config();
  if (!c->readable || !c->writable) return;
  // A failure is ignored: the caller finds no record next time and searches.
  c->folder->store_record(key, payload, kMaxRecords);
}

Info info() {
  std::shared_ptr<Config> c = config();
  Info out;
  out.directory = c->directory;
  out.enabled = c->readable && c->writable;
  out.disabled_reason = c->disabled_reason;
  if (c->readable && !c->writable) {
    std::lock_guard<std::mutex> lock(state().mutex);
    out.disabled_reason = c->write_problem;
  }
  out.max_bytes = c->max_bytes;
  if (c->readable) {
    c->folder->usage(out.entries, out.records, out.bytes);
    out.evictions = c->folder->evictions();
  }
  for (const std::unique_ptr<Store>& s : c->readonly) {
    TierInfo tier{s->where(), s->problem()};
    std::vector<StoredFile> files;
    s->list(files);
    for (const StoredFile& f : files) {
      if (!f.temp && f.kind == EntryKind::Binary) tier.entries++;
      tier.bytes = saturating_add(tier.bytes, f.size);
    }
    out.readonly.push_back(std::move(tier));
  }
  out.claims = c->claims && out.enabled;
  out.claim_wait_seconds = double(c->claim_wait_ns) / 1e9;
  const Counters& counters = state().counters;
  out.readonly_hits = counters.readonly_hits;
  out.claim_waits = counters.claim_waits;
  out.claim_timeouts = counters.claim_timeouts;
  out.hits = counters.hits;
  out.misses = counters.misses;
  out.corrupt = counters.corrupt;
  out.stores = counters.stores;
  return out;
}

Cleared clear() {
  std::shared_ptr<Config> c = config();
  Cleared out;
  if (!c->readable) return out;
  c->folder->clear(out.entries, out.records);
  remove_dead_claims(c->directory + "/" + kClaimFolder, c->claim_wait_ns);  // live ones stay (claims.hpp)
  return out;
}

void reset() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.config.reset();
  s.warned.clear();
  s.counters.hits = 0;
  s.counters.misses = 0;
  s.counters.corrupt = 0;
  s.counters.stores = 0;
  s.counters.readonly_hits = 0;
  s.counters.claim_waits = 0;
  s.counters.claim_timeouts = 0;
}

void set_warning_handler(WarningHandler handler) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.handler = handler;
}

void warn(const std::string& cause, const std::string& message) { emit({{cause, message}}); }

}  // namespace jk::cache
