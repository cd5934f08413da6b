// Compile claims: N processes of one node starting together on an empty
// cache compile each kernel about once instead of N times. Internal to
// cache/; disk_cache.hpp's load_or_claim is the way in.
//
// On a miss, a process creates "claims/<key hex><tag>.claim" in the writable
// folder (O_CREAT | O_EXCL, holding its host, pid and process start time).
// Whoever creates it compiles, stores the entry, then removes the claim. The
// others poll (with backoff) for the entry to appear and load it. Nothing can
// go stale or hang, and no binary ever differs (entries are content-addressed
// and published by rename):
// - a claim whose owner is dead (same host: its pid is gone, or now belongs to
//   a process started at another time) or that is older than the wait bound
//   (JITKERNEL_CACHE_CLAIM_WAIT, default 30 s; the owner may be on another
//   host) is removed, and the next process claims the key itself;
// - a waiter that sees the claim disappear without an entry (the compile
//   failed, or the store did not happen) compiles itself at once, unclaimed:
//   it gets the real compile error, and failing compiles are not serialised;
// - a waiter gives up after the bound and compiles itself. On a network file
//   system another host's entry may show up late (a rename need not be
//   visible elsewhere at once): the bound is all a waiter relies on;
// - a claim held by this same process (another thread) is not waited for:
//   that thread may need a lock (the GIL) the waiting one holds.
// - an owner that exited but was not reaped yet (a zombie: a launcher that
//   reaps its ranks in order) is dead too, though kill(pid, 0) succeeds.
// clear() removes the claims of dead owners, those older than the bound, and
// the temp files of claim writers killed before they linked theirs
// (remove_dead_claims); live claims stay.
// A claim is never a lock: ignoring one costs a duplicate compile, nothing
// else. The owner removes its claim only while the name still holds the file
// it created (a claim removed as stale and taken by another is left alone).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/sha256.hpp"

namespace jk::cache {

inline constexpr const char* kClaimFolder = "claims";

// A claim this process holds: removed when destroyed (after the store).
class Claim {
 public:
  Claim() = default;
  ~Claim() { release(); }
  Claim(Claim&&) = default;
  Claim& operator=(Claim&&) = delete;
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;
  bool held() const { return static_cast<bool>(folder_); }
  void release();

 private:
  friend struct ClaimMaker;
  Fd folder_;
  std::string name_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

struct Claimed {
  enum Outcome {
    Owner,      // `claim` holds the key: compile, store, then drop it
    Found,      // the entry appeared (`found` loaded it)
    Unclaimed,  // compile without a claim (gave up, vanished, no claims here)
  } outcome = Unclaimed;
  bool waited = false;     // waited for another process's compile
  bool timed_out = false;  // gave up after the bound
};

// On a miss for `key`: claims it in `claims_folder` (created 0700 if
// needed), or waits up to `wait_ns` for the process holding it, calling
// `found` (which loads the entry and returns whether it did) to see whether
// the entry has appeared. `tag` keeps kinds of work apart: a claim is named
// "<key hex><tag>.claim" ("" for compiles, ".jkt" for tuning), so claims on
// one digest for two kinds of entry never meet.
Claimed claim_or_wait(const std::string& claims_folder, const Digest& key, std::string_view tag,
                      std::int64_t wait_ns, const std::function<bool()>& found, Claim& claim);

// Removes from `claims_folder` every claim no process would wait for (its
// owner is dead, or it is older than `wait_ns`: what a waiter takes over)
// and every claim temp file older than a writer needs; keeps live claims
// (this process's too) and files not named like either. Returns how many
// files were removed.
std::uint64_t remove_dead_claims(const std::string& claims_folder, std::int64_t wait_ns);

}  // namespace jk::cache
