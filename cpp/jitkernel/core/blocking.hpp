// Slow, blocking work of the core (NVRTC compiles, module loads and PTX JIT on
// first use) runs inside a BlockingSection, which lets the embedding layer
// step aside meanwhile: the Python bindings release the GIL there, so other
// Python threads keep running during a seconds-long first compile. Only slow
// paths open sections; the hooks are no-ops until set.
//
// Rules for code inside a section: it touches no object of the embedding
// layer (all inputs are already plain C++ values), and sections are opened and
// closed while holding no lock, since closing one may wait for the GIL (a
// thread holding the GIL could be waiting for that lock: deadlock).
#pragma once

namespace jk {

struct BlockingHooks {
  void* (*enter)() = nullptr;      // returns state for `leave` (may be null)
  void (*leave)(void*) = nullptr;  // called once per `enter`, with its state
};

// Installs the hooks (once, before any call; not thread-safe against open sections).
void set_blocking_hooks(const BlockingHooks& hooks);

class BlockingSection {
 public:
  BlockingSection();
  ~BlockingSection();
  BlockingSection(const BlockingSection&) = delete;
  BlockingSection& operator=(const BlockingSection&) = delete;

 private:
  void (*leave_)(void*) = nullptr;
  void* state_ = nullptr;
};

}  // namespace jk
