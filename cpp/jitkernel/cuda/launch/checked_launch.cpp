// Checked mode's host side (see checked_launch.hpp): the report slot's
// address per function, its reset and read-back, the poison fill and scan,
// the kernels captured into CUDA graphs, whose slots are read later, and the
// lock per kernel that keeps two launches from sharing a slot.
#include "jitkernel/cuda/launch/checked_launch.hpp"

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "jitkernel/core/blocking.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/memory/memory.hpp"

namespace jk::cuda {
namespace {

// jitkernel::CheckedReport of the generated preamble, byte for byte.
struct Report {
  std::uint32_t flag;
  std::int32_t array;
  std::int32_t line;
  std::uint32_t unused;
  std::int64_t index;
  std::int64_t lo;
  std::int64_t hi;
  std::uint32_t block[3];
  std::uint32_t thread[3];
};
static_assert(sizeof(Report) == 64, "Report must match jitkernel::CheckedReport");

constexpr const char* kSlotName = "jitkernel_checked_report";

// What reading a kernel's slot later needs: a kernel once captured into a CUDA
// graph stays registered, since every replay of the graph may write its slot.
struct Pending {
  CUdeviceptr slot = 0;
  int device = 0;
  std::string kernel;
  std::vector<std::string> names;  // inputs, then outputs: the array ids
  std::size_t inputs = 0;
};

std::mutex& registry_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_map<CUfunction, CUdeviceptr>& slots() {
  static auto* m = new std::unordered_map<CUfunction, CUdeviceptr>;
  return *m;
}
std::unordered_map<CUfunction, Pending>& captured() {
  static auto* m = new std::unordered_map<CUfunction, Pending>;
  return *m;
}
// One per checked kernel loaded, for the process (like the slots: modules stay loaded).
std::mutex& launch_mutex(CUfunction function) {
  static auto* m = new std::unordered_map<CUfunction, std::unique_ptr<std::mutex>>;
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::unique_ptr<std::mutex>& found = (*m)[function];
  if (!found) found = std::make_unique<std::mutex>();
  return *found;
}

CUdeviceptr slot_of(CUfunction function) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = slots().find(function);
  if (it != slots().end()) return it->second;
  const DriverApi& api = driver();
  if (api.cuFuncGetModule == nullptr || api.cuModuleGetGlobal == nullptr)
    throw CudaNotAvailable("checked mode needs cuFuncGetModule and cuModuleGetGlobal, which this CUDA driver lacks");
  CUmodule module = nullptr;
  check(api.cuFuncGetModule(&module, function), "checked mode: finding the kernel's module");
  CUdeviceptr slot = 0;
  std::size_t bytes = 0;
  check(api.cuModuleGetGlobal(&slot, &bytes, module, kSlotName), "checked mode: finding the report slot");
  if (bytes != sizeof(Report)) throw Error("internal error: checked mode's report slot has an unexpected size");
  slots().emplace(function, slot);
  return slot;
}

bool capturing(CUstream stream) {
  CUstreamCaptureStatus status{};
  // An error here (e.g. the legacy stream while another stream captures) also means: do not wait now.
  return driver().cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS || status != 0;
}

void reset_slot(CUdeviceptr slot, CUstream stream) {
  check(driver().cuMemsetD32Async(slot, 0, sizeof(Report) / 4, stream), "checked mode: resetting the report slot");
}

std::string dims(const unsigned v[3]) {
  return "(" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + ")";
}

[[noreturn]] void raise_report(const Report& r, const Pending& p) {
  BoundsReport b;
  b.kernel = p.kernel;
  const auto id = static_cast<std::size_t>(r.array);
  b.array = id < p.names.size() ? p.names[id] : "array " + std::to_string(r.array);
  b.write = id >= p.inputs;
  b.index = r.index;
  b.lo = r.lo;
  b.hi = r.hi;
  b.line = r.line;
  for (int i = 0; i < 3; ++i) {
    b.block[i] = r.block[i];
    b.thread[i] = r.thread[i];
  }
  std::string msg = b.array + "[" + std::to_string(b.index) + "] out of bounds (";
  msg += b.lo == 0 ? "extent " + std::to_string(b.hi)
                   : "valid offsets " + std::to_string(b.lo) + " to " + std::to_string(b.hi - 1);
  msg += b.line > 0 ? ") at body line " + std::to_string(b.line) : ") at an unknown body line (a * or -> access)";
  msg += ", block " + dims(b.block) + " thread " + dims(b.thread) + " in kernel '" + b.kernel + "' (" +
         (b.write ? "an output" : "an input") + ")";
  throw KernelBoundsError(msg, std::move(b));
}

// Reads the slot after the work that wrote it has finished; a report clears
// the slot (so that a later pending check does not see it again) and raises.
void read_slot(const Pending& p, CUstream stream) {
  const DriverApi& api = driver();
  Report r{};
  check(api.cuMemcpyDtoHAsync(&r, p.slot, sizeof r, stream), "checked mode: reading the report slot");
  check(api.cuStreamSynchronize(stream), "checked mode: reading the report slot");
  if (r.flag == 0) return;
  reset_slot(p.slot, stream);
  check(api.cuStreamSynchronize(stream), "checked mode: resetting the report slot");
  raise_report(r, p);
}

Pending describe(CUdeviceptr slot, const KernelSpec& spec, int device) {
  Pending p;
  p.slot = slot;
  p.device = device;
  p.kernel = spec.name;
  p.names = spec.input_names;
  p.names.insert(p.names.end(), spec.output_names.begin(), spec.output_names.end());
  p.inputs = spec.input_names.size();
  return p;
}

// The pattern unit of `dtype`: 2 or 4 bytes of a float's NaN, 1 byte otherwise.
std::size_t poison_unit(DType dtype) {
  switch (dtype) {
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Float32:
    case DType::Float64:
    case DType::Complex64: return 4;
    default: return 1;
  }
}

void fill_poison(const ArrayView& a, CUstream stream) {
  const DriverApi& api = driver();
  const auto dst = reinterpret_cast<CUdeviceptr>(a.data);
  const std::size_t bytes = a.nbytes(), unit = poison_unit(a.dtype);
  if (bytes == 0) return;
  CUresult r = unit == 2   ? api.cuMemsetD16Async(dst, kPoison16, bytes / 2, stream)
               : unit == 4 ? api.cuMemsetD32Async(dst, kPoison32, bytes / 4, stream)
                           : api.cuMemsetD8Async(dst, kPoison8, bytes, stream);
  check(r, "checked mode: filling an output with the poison pattern");
}

// The first element of `a` whose every byte still holds the poison, or -1.
long long first_unwritten(const ArrayView& a, CUstream stream) {
  const std::size_t elem = dtype_size(a.dtype), unit = poison_unit(a.dtype);
  std::vector<unsigned char> host(a.nbytes()), poison(elem);
  for (std::size_t i = 0; i < elem; i += unit) {
    if (unit == 2) std::memcpy(&poison[i], &kPoison16, 2);
    if (unit == 4) std::memcpy(&poison[i], &kPoison32, 4);
  }
  download(a, host.data(), stream);  // waits for the copy
  for (std::size_t i = 0; i + elem <= host.size(); i += elem) {
    if (std::memcmp(&host[i], poison.data(), elem) == 0) return static_cast<long long>(i / elem);
  }
  return -1;
}

void check_unwritten(const KernelSpec& spec, const PreparedCall& prepared,
                     const std::vector<const ArrayView*>& poisoned) {
  for (std::size_t j = 0; j < poisoned.size(); ++j) {
    if (poisoned[j] == nullptr || !poison_is_checked(poisoned[j]->dtype)) continue;
    const long long i = first_unwritten(*poisoned[j], prepared.stream);
    if (i < 0) continue;
    const std::string& name = spec.output_names[j];
    throw UnwrittenOutput(name + "[" + std::to_string(i) + "] was never written by kernel '" + spec.name +
                              "' (it still holds the NaN checked mode fills new outputs with)",
                          spec.name, name, i);
  }
}

}  // namespace

bool poison_is_checked(DType dtype) { return poison_unit(dtype) != 1; }

// Waiting happens inside a BlockingSection holding nothing (the rule of core/blocking.hpp); the lock is then
// taken again with the runtime back, which no thread holding the runtime can be waiting for.
CheckedLaunchLock::CheckedLaunchLock(CUfunction function) : lock_(launch_mutex(function), std::try_to_lock) {
  while (!lock_.owns_lock()) {
    {
      BlockingSection waiting;
      std::lock_guard<std::mutex> until_free(*lock_.mutex());
    }
    lock_.try_lock();
  }
}

void checked_before_launch(CUfunction function, const PreparedCall& prepared,
                           const std::vector<const ArrayView*>& poisoned) {
  const CUdeviceptr slot = slot_of(function);
  if (!capturing(prepared.stream)) {
    std::optional<Pending> graph;
    {
      std::lock_guard<std::mutex> lock(registry_mutex());
      auto it = captured().find(function);
      if (it != captured().end()) graph = it->second;
    }
    if (graph) {  // a replay of a captured launch may have run on any stream: wait for the device
      check(driver().cuCtxSynchronize(), "checked mode: waiting for captured launches");
      read_slot(*graph, prepared.stream);
    }
  }
  reset_slot(slot, prepared.stream);
  for (const ArrayView* a : poisoned)
    if (a != nullptr) fill_poison(*a, prepared.stream);
}

void checked_after_launch(CUfunction function, const KernelSpec& spec, const PreparedCall& prepared,
                          const std::vector<const ArrayView*>& poisoned) {
  Pending p = describe(slot_of(function), spec, prepared.device);
  if (capturing(prepared.stream)) {
    std::lock_guard<std::mutex> lock(registry_mutex());
    captured()[function] = std::move(p);
    return;
  }
  check(driver().cuStreamSynchronize(prepared.stream),
        ("checked mode: waiting for kernel '" + spec.name + "'").c_str());
  read_slot(p, prepared.stream);
  check_unwritten(spec, prepared, poisoned);
}

void raise_pending_checks(int device) {
  std::vector<std::pair<CUfunction, Pending>> due;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (const auto& [function, p] : captured())
      if (p.device == device) due.emplace_back(function, p);
  }
  if (due.empty()) return;
  DeviceGuard guard(device);
  for (const auto& [function, p] : due) {  // the first report raises; the device is idle
    CheckedLaunchLock serial(function);  // not while a launch of it is between its reset and its read-back
    read_slot(p, nullptr);
  }
}

}  // namespace jk::cuda
