// The observer of compile_events.hpp, the report of one compile and of one
// answered request.
#include "jitkernel/core/compile_events.hpp"

#include <atomic>

namespace jk {
namespace {

std::atomic<CompileObserver> g_observer{nullptr};

void notify(const CompileEvent& event) {
  if (CompileObserver observer = g_observer.load(std::memory_order_acquire)) {
    try {
      observer(event);
    } catch (...) {  // reporting must never change what the compile does
    }
  }
}

}  // namespace

void set_compile_observer(CompileObserver observer) {
  g_observer.store(observer, std::memory_order_release);
}

void report_answered(const char* compiler, const std::string& name, const std::string& arch,
                     std::size_t source_bytes, BinarySource from, double seconds) {
  notify({CompileEvent::Stage::Answered, compiler, name, arch, source_bytes, seconds, from});
}

CompileReport::CompileReport(const char* compiler, const std::string& name, const std::string& arch,
                             std::size_t source_bytes)
    : compiler_(compiler), name_(name), arch_(arch), source_bytes_(source_bytes),
      start_(std::chrono::steady_clock::now()) {
  notify({CompileEvent::Stage::Started, compiler_, name_, arch_, source_bytes_, 0.0});
}

CompileReport::~CompileReport() {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  notify({ok_ ? CompileEvent::Stage::Finished : CompileEvent::Stage::Failed, compiler_, name_,
          arch_, source_bytes_, seconds});
}

}  // namespace jk
