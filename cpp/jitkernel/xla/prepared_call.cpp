// Prepared XLA call sites (prepared_call.hpp): the registry, the checks of
// XLA's buffers against the call's description, and the launch. A launch
// copies nothing it does not have to: each thread keeps its own KernelCall
// per call site and only writes the buffers' data pointers, the device and
// the stream into it before handing it to the engine.
#include "jitkernel/xla/prepared_call.hpp"

#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/memory/memory.hpp"
#include "jitkernel/engine/backend.hpp"

namespace jk::xla {
namespace {

// XLA's element type -> jitkernel's (nullopt for types jitkernel has no dtype for).
std::optional<DType> dtype_of(int xla_dtype) {
  switch (xla_dtype) {
    case abi::kPred: return DType::Bool;
    case abi::kS8: return DType::Int8;
    case abi::kS16: return DType::Int16;
    case abi::kS32: return DType::Int32;
    case abi::kS64: return DType::Int64;
    case abi::kU8: return DType::UInt8;
    case abi::kU16: return DType::UInt16;
    case abi::kU32: return DType::UInt32;
    case abi::kU64: return DType::UInt64;
    case abi::kF16: return DType::Float16;
    case abi::kBF16: return DType::BFloat16;
    case abi::kF32: return DType::Float32;
    case abi::kF64: return DType::Float64;
    case abi::kC64: return DType::Complex64;
    default: return std::nullopt;
  }
}

ArrayView view_of(DType dtype, const std::vector<std::int64_t>& shape) {
  ArrayView v;
  v.dtype = dtype;
  v.device = 0;
  v.shape = shape;
  v.strides = row_major_strides(shape);
  return v;
}

// One XLA buffer against what the description says it is.
void check_buffer(const void* raw, int type, DType dtype, const std::vector<std::int64_t>& shape,
                  const std::string& what) {
  if (type != abi::kArgBuffer || raw == nullptr) throw ArgumentError("jk_call", what + " is not a buffer");
  const auto* b = static_cast<const abi::Buffer*>(raw);
  if (b->struct_size < abi::kBufferSize) {
    throw ArgumentError("jk_call", what + ": XLA's buffer struct is smaller than the FFI layout jitkernel knows");
  }
  std::optional<DType> got = dtype_of(b->dtype);
  std::vector<std::int64_t> dims;
  if (b->rank >= 0 && b->rank <= 64 && (b->rank == 0 || b->dims != nullptr)) dims.assign(b->dims, b->dims + b->rank);
  if (!got || *got != dtype || b->rank != static_cast<std::int64_t>(shape.size()) || dims != shape) {
    throw ArgumentError("jk_call", what + " is " + (got ? dtype_name(*got) : "an unsupported XLA type") + " " +
                                       shape_text(dims) + " but the kernel call was traced with " +
                                       dtype_name(dtype) + " " + shape_text(shape));
  }
}

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, std::unique_ptr<PreparedCall>> calls;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: XLA may call handlers during exit
  return *r;
}

// What a call site of a compiled program must have: every size, dtype and scalar fixed when it was traced.
void check_fixed(const RecordedCall& c) {
  auto fixed = [](const std::optional<std::vector<std::int64_t>>& shape) {
    if (!shape) return false;
    for (std::int64_t d : *shape) {
      if (d == kUnfixed) return false;
    }
    return true;
  };
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const RecordedInput& in = c.inputs[i];
    if (in.is_scalar ? !in.value : !in.dtype || !fixed(in.shape)) {
      throw ArgumentError("jk_call", item_text("inputs", i) + " has no fixed " +
                                         (in.is_scalar ? "value" : "dtype and shape") +
                                         ": an XLA call site fixes every size when it is traced");
    }
  }
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    if (!fixed(c.outputs[i].shape)) {
      throw ArgumentError("jk_call", item_text("outputs", i) + " has no fixed shape");
    }
  }
  for (const auto* d : {&c.grid, &c.threadgroup}) {
    if (!*d || (*d)->x == kUnfixed || (*d)->y == kUnfixed || (*d)->z == kUnfixed) {
      throw ArgumentError("jk_call", std::string(d == &c.grid ? "grid" : "threadgroup") + " is not fixed");
    }
  }
}

}  // namespace

PreparedCall::PreparedCall(std::string text, RecordedKernel kernel, RecordedCall call)
    : text_(std::move(text)), recorded_kernel_(std::move(kernel)), call_(std::move(call)) {
  const RecordedCall& c = call_;
  check_fixed(c);
  check_kernel_call(recorded_kernel_, c, "jk_call");
  for (const RecordedInput& in : c.inputs) {
    if (in.is_scalar) {
      template_.inputs.emplace_back(*in.value);
    } else {
      template_.inputs.emplace_back(view_of(*in.dtype, *in.shape));
    }
  }
  for (const RecordedOutput& out : c.outputs) {
    template_.output_shapes.push_back(*out.shape);
    template_.output_dtypes.push_back(out.dtype);
    template_.provided_outputs.push_back(view_of(out.dtype, *out.shape));
  }
  template_.init_value = c.init_value;
  template_.template_args = c.template_args;
  template_.launch.grid = *c.grid;
  template_.launch.threadgroup = *c.threadgroup;
  template_.launch.shared_memory = recorded_kernel_.spec.shared_memory;
  template_.ensure_row_contiguous = recorded_kernel_.spec.ensure_row_contiguous;
  target_ = std::make_unique<cuda::RecordedTarget>(recorded_kernel_, c, template_, "jk_call");
}

void PreparedCall::check_frame(const abi::CallFrame& frame) const {
  const RecordedCall& d = call_;
  const std::size_t n_arrays = d.array_input_count();
  const std::size_t n_args = n_arrays + static_cast<std::size_t>(d.extra_operands);
  if (frame.args.struct_size < abi::kArgsSize || frame.rets.struct_size < abi::kRetsSize) {
    throw ArgumentError("jk_call", "XLA's argument structs are smaller than the FFI layout jitkernel knows");
  }
  if (frame.args.size != static_cast<std::int64_t>(n_args) ||
      frame.rets.size != static_cast<std::int64_t>(d.outputs.size())) {
    throw ArgumentError("jk_call", "XLA passed " + std::to_string(frame.args.size) + " operands and " +
                                       std::to_string(frame.rets.size) + " results; the kernel call has " +
                                       std::to_string(n_args) + " and " + std::to_string(d.outputs.size()));
  }
  std::size_t a = 0;
  for (std::size_t i = 0; i < d.inputs.size(); ++i) {
    if (d.inputs[i].is_scalar) continue;
    check_buffer(frame.args.args[a], frame.args.types[a], *d.inputs[i].dtype, *d.inputs[i].shape,
                 item_text("inputs", i));
    ++a;
  }
  for (std::size_t j = 0; j < d.outputs.size(); ++j) {
    check_buffer(frame.rets.rets[j], frame.rets.types[j], d.outputs[j].dtype, *d.outputs[j].shape,
                 item_text("outputs", j));
  }
}

// Whether a non-empty result buffer of the frame is also one of its operands (input_output_aliases): XLA
// allocates results apart from the operands of the same call otherwise.
bool PreparedCall::aliases_an_operand(const abi::CallFrame& frame) const {
  for (std::int64_t j = 0; j < frame.rets.size; ++j) {
    const auto* out = static_cast<const abi::Buffer*>(frame.rets.rets[j]);
    if (template_.provided_outputs[static_cast<std::size_t>(j)].nbytes() == 0) continue;
    for (std::int64_t a = 0; a < frame.args.size; ++a)
      if (static_cast<const abi::Buffer*>(frame.args.args[a])->data == out->data) return true;
  }
  return false;
}

bool PreparedCall::ready(int device) const {
  return device >= 0 && device < kPlanDevices && ready_[device].load(std::memory_order_acquire);
}

void PreparedCall::load(int device, std::uintptr_t stream) {
  target_->load(template_, device);
  if (!call_.init_value) return;
  // An 8-byte init_value is written by a builtin kernel, loaded on first use:
  // fill a one-element scratch array now so that no launch loads it.
  for (DType dtype : template_.output_dtypes) {
    if (dtype_size(dtype) != 8) continue;
    cuda::DeviceGuard guard(device);
    OwnedArray scratch = cuda_backend().allocate(device, dtype, {1}, stream);
    cuda::fill(scratch.view, *call_.init_value, reinterpret_cast<cuda::CUstream>(stream));
    return;  // freed stream-ordered when `scratch` goes
  }
}

void PreparedCall::make_ready(const abi::CallFrame& frame, int device, std::uintptr_t stream) {
  if (ready(device)) return;
  check_frame(frame);
  load(device, stream);
  if (device >= 0 && device < kPlanDevices) ready_[device].store(true, std::memory_order_release);
}

void PreparedCall::launch(const abi::CallFrame& frame, int device, std::uintptr_t stream) {
  const RecordedCall& d = call_;
  // make_ready checked the layout once; these bounds keep a changed frame from being read past its end.
  if (frame.args.size < static_cast<std::int64_t>(d.array_input_count()) ||
      frame.rets.size != static_cast<std::int64_t>(template_.provided_outputs.size())) {
    throw ArgumentError("jk_call", "XLA's operand or result count changed after the call was prepared");
  }
  thread_local std::unordered_map<const PreparedCall*, KernelCall> calls;
  auto found = calls.find(this);
  if (found == calls.end()) found = calls.emplace(this, template_).first;
  KernelCall& call = found->second;
  std::int64_t a = 0;
  for (KernelInput& input : call.inputs) {
    if (auto* view = std::get_if<ArrayView>(&input)) {
      view->data = static_cast<const abi::Buffer*>(frame.args.args[a++])->data;
      view->device = device;
    }
  }
  for (std::size_t j = 0; j < call.provided_outputs.size(); ++j) {
    call.provided_outputs[j].data = static_cast<const abi::Buffer*>(frame.rets.rets[j])->data;
    call.provided_outputs[j].device = device;
  }
  call.launch.stream = stream;
  // A checked kernel's results are poisoned unless one is an operand's buffer (outputs= aliases).
  if (recorded_kernel_.spec.cuda_options.checked) call.outputs_allocated = !aliases_an_operand(frame);
  target_->launch(call, target_->scalars());  // the outputs are XLA's
}

bool PreparedCall::has_text(std::string_view text) const {
  return text.size() == text_.size() &&
         (text.data() == text_.data() || std::memcmp(text.data(), text_.data(), text.size()) == 0);
}

namespace {

// The registered call with that key, or null (a thread-local cache of the last hit spares the lock).
PreparedCall* find_call(std::uint64_t key) {
  thread_local std::uint64_t last_key = 0;
  thread_local PreparedCall* last = nullptr;
  if (last != nullptr && last_key == key) return last;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.calls.find(key);
  if (it == r.calls.end()) return nullptr;
  last_key = key;
  last = it->second.get();
  return last;
}

// Registers the call of a text whose key is not registered with this text: the slow path of
// prepare_call, which also says what is wrong with a key that does not belong to its text.
PreparedCall& register_call(std::string_view text, std::uint64_t key) {
  if (call_key(text) != key) {
    throw ArgumentError("jk_key", "does not match the jk_call attribute (the custom call's attributes were "
                                  "changed after jitkernel wrote them)");
  }
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.calls.find(key);
    if (it != r.calls.end()) {
      if (!it->second->has_text(text)) {
        throw Error("jitkernel: two different kernel calls have the same 64-bit attribute key");
      }
      return *it->second;
    }
  }
  // Parsing and codegen run unlocked; the first insert of a key wins.
  auto [kernel, call] = decode_record(text, "jk_call");
  auto made = std::make_unique<PreparedCall>(std::string(text), std::move(kernel), std::move(call));
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [it, inserted] = r.calls.try_emplace(key, std::move(made));
  if (!inserted && !it->second->has_text(text)) {
    throw Error("jitkernel: two different kernel calls have the same 64-bit attribute key");
  }
  return *it->second;
}

}  // namespace

std::uint64_t call_key(std::string_view text) {
  const cache::Digest d = cache::sha256(text);
  std::uint64_t key = 0;
  for (int i = 0; i < 8; ++i) key = (key << 8) | d[static_cast<std::size_t>(i)];
  return key;
}

PreparedCall& prepare_call(std::string_view text, std::uint64_t key) {
  // Hot path: the key finds the call and the text is the one it was made from. The text is compared on
  // every call, never trusted on the key's word: a key is 64 bits of the text's SHA-256, which a custom
  // call written by hand can pair with any other text.
  PreparedCall* found = find_call(key);
  if (found != nullptr && found->has_text(text)) return *found;
  return register_call(text, key);
}

}  // namespace jk::xla
