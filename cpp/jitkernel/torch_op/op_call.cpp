// Torch op call sites (op_call.hpp): decoding once, checking and filling per
// launch. A launch copies only what changes: each thread keeps its own
// KernelCall per call site and rewrites the views, sizes and scalars in it.
#include "jitkernel/torch_op/op_call.hpp"

#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "jitkernel/core/element_bytes.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/engine/backend.hpp"
#include "jitkernel/engine/call_signature.hpp"

namespace jk::torch_op {
namespace {

bool is_float(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32 || d == DType::Float64;
}

// An int of the op's `ints` as a scalar of the recorded integer (or bool) dtype, checked to fit.
Scalar int_scalar(DType dtype, std::int64_t v, std::size_t input) {
  auto fits = [&](auto lo, auto hi) { return v >= static_cast<std::int64_t>(lo) && v <= static_cast<std::int64_t>(hi); };
  bool ok = true;
  switch (dtype) {
    case DType::Bool: return Scalar::of<bool>(dtype, v != 0);
    case DType::Int8: ok = fits(INT8_MIN, INT8_MAX); break;
    case DType::Int16: ok = fits(INT16_MIN, INT16_MAX); break;
    case DType::Int32: ok = fits(INT32_MIN, INT32_MAX); break;
    case DType::UInt8: ok = fits(0, UINT8_MAX); break;
    case DType::UInt16: ok = fits(0, UINT16_MAX); break;
    case DType::UInt32: ok = fits(0, UINT32_MAX); break;
    case DType::UInt64: ok = v >= 0; break;
    default: break;
  }
  if (!ok) {
    throw ArgumentError("inputs", item_text("inputs", input) + ": the integer " + std::to_string(v) +
                                      " does not fit in " + dtype_name(dtype) + ", the dtype the call was traced with");
  }
  Scalar s;
  s.dtype = dtype;
  std::memcpy(s.bytes, &v, dtype_size(dtype));  // little-endian: the low bytes are the value
  return s;
}

Scalar float_scalar(DType dtype, double v) {
  Scalar s;
  s.dtype = dtype;
  const std::uint64_t bits = encode_element(dtype, v, "inputs");
  std::memcpy(s.bytes, &bits, sizeof(bits));
  return s;
}

void set_dim(Dim3& d, const std::int64_t* v) { d = Dim3{v[0], v[1], v[2]}; }

}  // namespace

OpCall::OpCall(std::string_view kernel_text, std::string_view call_text)
    : kernel_text_(kernel_text), call_text_(call_text) {
  RecordedKernel recorded = decode_kernel(kernel_text, "kernel");
  call_ = decode_call(call_text, "call");
  check_kernel_call(recorded, call_, "call");
  const RecordedCall& c = call_;
  if (!c.grid || !c.threadgroup) throw ArgumentError("call", "a call the torch op runs has a grid and a threadgroup");
  for (const Dim3* d : {&*c.grid, &*c.threadgroup}) sizes_.insert(sizes_.end(), {d->x, d->y, d->z});
  for (std::size_t j = 0; j < c.outputs.size(); ++j) {
    if (!c.outputs[j].shape) throw ArgumentError("call", item_text("outputs", j) + " has no rank");
    sizes_.insert(sizes_.end(), c.outputs[j].shape->begin(), c.outputs[j].shape->end());
    template_.output_shapes.push_back(*c.outputs[j].shape);
    template_.output_dtypes.push_back(c.outputs[j].dtype);
  }
  for (std::int64_t s : sizes_) n_size_slots_ += s == kUnfixed;
  n_ints_ = n_size_slots_;
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const RecordedInput& in = c.inputs[i];
    if (!in.is_scalar) {
      if (!in.dtype || !in.shape) throw ArgumentError("call", item_text("inputs", i) + " has no dtype and rank");
      ArrayView v;
      v.dtype = *in.dtype;
      template_.inputs.emplace_back(v);
      ++n_arrays_;
    } else if (in.value) {
      template_.inputs.emplace_back(*in.value);
    } else {
      template_.inputs.emplace_back(Scalar{*in.dtype, {}});
      ++(is_float(*in.dtype) ? n_floats_ : n_ints_);
    }
  }
  template_.init_value = c.init_value;
  template_.template_args = c.template_args;
  template_.launch.shared_memory = recorded.spec.shared_memory;
  template_.ensure_row_contiguous = recorded.spec.ensure_row_contiguous;
  target_ = std::make_unique<cuda::RecordedTarget>(recorded, c, template_, "kernel");
}

OpCall::ThreadCall& OpCall::thread_call() {
  thread_local std::unordered_map<const OpCall*, ThreadCall> calls;
  auto found = calls.find(this);
  if (found == calls.end()) found = calls.emplace(this, ThreadCall{template_, target_->scalars()}).first;
  return found->second;
}

KernelCall& OpCall::prepare(const OpArguments& args) {
  const RecordedCall& c = call_;
  if (args.arrays.size() != n_arrays_ || args.ints.size() != n_ints_ || args.floats.size() != n_floats_) {
    throw ArgumentError("call", "the call record describes " + std::to_string(n_arrays_) + " arrays, " +
                                    std::to_string(n_ints_) + " ints and " + std::to_string(n_floats_) +
                                    " floats; the op was given " + std::to_string(args.arrays.size()) + ", " +
                                    std::to_string(args.ints.size()) + " and " + std::to_string(args.floats.size()));
  }
  ThreadCall& thread = thread_call();
  KernelCall& call = thread.call;
  std::int64_t sizes[64];
  std::vector<std::int64_t> many;
  std::int64_t* s = sizes;
  if (sizes_.size() > 64) {
    many.resize(sizes_.size());
    s = many.data();
  }
  std::size_t next_int = 0, next_float = 0, next_array = 0;
  for (std::size_t k = 0; k < sizes_.size(); ++k) {
    s[k] = sizes_[k] == kUnfixed ? args.ints[next_int++] : sizes_[k];
    if (s[k] < 0) throw ArgumentError("ints", "size " + std::to_string(k) + " of the call is negative");
  }
  set_dim(call.launch.grid, s);
  set_dim(call.launch.threadgroup, s + 3);
  std::size_t at = 6;
  for (auto& shape : call.output_shapes) {
    for (auto& d : shape) d = s[at++];
  }
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const RecordedInput& in = c.inputs[i];
    if (!in.is_scalar) {
      const ArrayView& a = args.arrays[next_array++];
      if (a.dtype != *in.dtype || a.shape.size() != in.shape->size()) {
        throw ArgumentError("inputs", item_text("inputs", i) + " (" + c.input_names[i] + ") is " +
                                          dtype_name(a.dtype) + " with " + std::to_string(a.shape.size()) +
                                          " dims; the call was traced with " + dtype_name(*in.dtype) + " and " +
                                          std::to_string(in.shape->size()));
      }
      call.inputs[i] = a;
    } else if (!in.value) {
      Scalar v = is_float(*in.dtype) ? float_scalar(*in.dtype, args.floats[next_float++])
                                     : int_scalar(*in.dtype, args.ints[next_int++], i);
      if (target_->precompiled()) thread.scalars[i - n_arrays_] = v;
      else call.inputs[i] = v;
    }
  }
  call.provided_outputs.clear();
  call.outputs_allocated = false;  // whoever allocates the outputs says so
  return call;
}

void OpCall::launch(const KernelCall& call) { target_->launch(call, thread_call().scalars); }

namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_multimap<std::size_t, std::unique_ptr<OpCall>> calls;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: kernels may run during exit
  return *r;
}

std::size_t key_of(std::string_view kernel_text, std::string_view call_text) {
  const std::hash<std::string_view> h;
  return h(kernel_text) * 31 + h(call_text);
}

}  // namespace

OpCall& op_call(std::string_view kernel_text, std::string_view call_text) {
  thread_local OpCall* last = nullptr;
  if (last != nullptr && last->has_texts(kernel_text, call_text)) return *last;
  const std::size_t key = key_of(kernel_text, call_text);
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto [lo, hi] = r.calls.equal_range(key);
    for (auto it = lo; it != hi; ++it) {
      if (it->second->has_texts(kernel_text, call_text)) return *(last = it->second.get());
    }
  }
  auto made = std::make_unique<OpCall>(kernel_text, call_text);  // decoding and codegen run unlocked
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [lo, hi] = r.calls.equal_range(key);
  for (auto it = lo; it != hi; ++it) {
    if (it->second->has_texts(kernel_text, call_text)) return *(last = it->second.get());
  }
  return *(last = r.calls.emplace(key, std::move(made))->second.get());
}

}  // namespace jk::torch_op
