// Argument conversion shared by the kernel factories (see convert.hpp): the
// whole call, stage by stage (type_table, call_arguments, array_import,
// streams; array_export after the launch) for device memory (CUDA) and host
// memory (Metal), and its signature-only twin for source() / compile().
#include "call/convert_detail.hpp"

#include <utility>

#include "objects/array.hpp"
#include "objects/dtypes.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/memory/memory.hpp"

namespace jk::py {
namespace {

// The ArrayView alternative of a reused input slot (keeping its capacity).
ArrayView& array_slot(KernelInput& slot) {
  if (!std::holds_alternative<ArrayView>(slot)) slot.emplace<ArrayView>();
  return std::get<ArrayView>(slot);
}

}  // namespace

static std::size_t checked_input_count(nb::handle inputs, const std::vector<std::string>* names) {
  std::size_t n = sequence_arg(inputs, "inputs", "a list of arrays and scalars, one per input");
  if (names && n != names->size())
    throw ArgumentError("inputs", "expected " + count_noun(names->size(), "input") +
                                      " (input_names: " + joined(*names) + "), got " +
                                      std::to_string(n));
  return n;
}

std::vector<KernelInput> describe_inputs(nb::handle inputs,
                                               const std::vector<std::string>* names,
                                               bool widen_int_scalars) {
  checked_input_count(inputs, names);
  std::vector<KernelInput> out;
  Borrowed borrowed;
  for_each_item(inputs, "inputs", [&](std::size_t i, nb::handle item) {
    ItemRef where{"input", i, names};
    Scalar s;
    if (scalar_value(item, widen_int_scalars, "inputs", where, &s)) {
      out.emplace_back(s);
      return;
    }
    std::vector<PendingArray> pending;
    ArrayView view;
    bool is_host = false;
    classify_array(item, i, "inputs", where, borrowed, pending, &view, &is_host);
    if (!is_host) {
      // Device array: its dtype and shape are all a signature needs.
      const PendingArray& p = pending.back();
      if (!p.info) {
        view = jk_array_ptr(p.obj)->array.view;
      } else if (nb::hasattr(p.obj, "dtype") && nb::hasattr(p.obj, "shape")) {
        view.dtype = dtype_arg(attr_of(p.obj, "dtype", "inputs", where), "inputs", where);
        shape_into(attr_of(p.obj, "shape", "inputs", where), "inputs", where, view.shape, ".shape");
        view.strides = row_major_strides(view.shape);
        view.device = p.device;
      } else if (p.info->kind == Kind::CudaArrayInterface) {
        view = cai_read(p.obj, "inputs", where).view;
        view.device = p.device;
      } else {
        view = dlpack_import(p.obj, *p.info, std::nullopt, borrowed, "inputs", where).view;
      }
      view.data = nullptr;
    }
    out.emplace_back(std::move(view));
  });
  return out;
}

// ---------------------------------------------------------------------------
// The whole call, stage by stage.

namespace {

// Output shapes and dtypes (either may be omitted when outputs= gives them);
// returns how many outputs the call has.
std::size_t convert_output_layout(const CallInputs& in, bool have_provided, std::size_t n_provided,
                                  KernelCall& args) {
  const auto* out_names = in.output_names;
  const bool have_shapes = in.call.output_shapes.is_valid() && !in.call.output_shapes.is_none();
  const bool have_dtypes = in.call.output_dtypes.is_valid() && !in.call.output_dtypes.is_none();
  if (!have_shapes && !have_provided)
    throw ArgumentTypeError("output_shapes", "required: a list with one shape per output");
  if (!have_dtypes && !have_provided)
    throw ArgumentTypeError("output_dtypes", "required: a list with one dtype per output");
  if (have_shapes) {
    std::size_t n = sequence_arg(in.call.output_shapes, "output_shapes",
                                 "a list of shapes (tuples of ints), one per output");
    if (out_names && n != out_names->size())
      throw ArgumentError("output_shapes", "expected " + count_noun(out_names->size(), "shape") +
                                               " (output_names: " + joined(*out_names) +
                                               "), got " + std::to_string(n));
    args.output_shapes.resize(n);
    for_each_item(in.call.output_shapes, "output_shapes", [&](std::size_t i, nb::handle item) {
      shape_into(item, "output_shapes", ItemRef{"output", i, out_names}, args.output_shapes[i]);
    });
  } else {
    args.output_shapes.clear();
  }
  if (have_dtypes) {
    output_dtypes_into(in.call.output_dtypes, out_names, args.output_dtypes);
  } else {
    args.output_dtypes.clear();
  }
  if (have_shapes && have_dtypes && args.output_shapes.size() != args.output_dtypes.size())
    throw ArgumentError("output_dtypes", "has " + std::to_string(args.output_dtypes.size()) +
                                             " entries but output_shapes has " +
                                             std::to_string(args.output_shapes.size()) +
                                             "; give one shape and one dtype per output");
  return have_shapes ? args.output_shapes.size()
         : have_dtypes ? args.output_dtypes.size()
         : out_names   ? out_names->size()
                       : n_provided;
}

// Inputs: scalars and host arrays now, device arrays into `out.pending`
// (Memory::Host: refused); returns the framework of the first device array
// and sets its device.
template <Memory M>
Framework convert_inputs(const CallInputs& in, KernelCall& args, ConvertedCall& out,
                         int* framework_device) {
  const std::size_t n_inputs = checked_input_count(in.call.inputs, in.input_names);
  args.inputs.resize(n_inputs);
  Framework framework = Framework::None;
  for_each_item(in.call.inputs, "inputs", [&](std::size_t i, nb::handle item) {
    ItemRef where{"input", i, in.input_names};
    Scalar s;
    if (scalar_value(item, in.widen_int_scalars, "inputs", where, &s)) {
      args.inputs[i] = s;
      return;
    }
    ArrayView host;
    bool is_host = false;
    Framework fw = classify_array(item, i, "inputs", where, out.borrowed, out.pending, &host, &is_host);
    if (is_host) {
      args.inputs[i] = std::move(host);
      return;
    }
    if constexpr (M == Memory::Host) refuse_device_array(item, "inputs", where);
    if (framework == Framework::None) {
      framework = fw;
      *framework_device = out.pending.back().device;
    }
    array_slot(args.inputs[i]);  // filled once the stream is known
  });
  return framework;
}

// Legacy default stream handles: 0 (the null stream) and 1 (CU_STREAM_LEGACY) name one stream.
bool same_stream(std::uintptr_t a, std::uintptr_t b) { return a == b || (a <= 1 && b <= 1); }

// stream= with arrays of a framework read directly on its current stream
// (torch): where stream= is that stream, the call is as if stream= were left
// out; else the launch stream waits for the framework's current stream once
// (what each array's __dlpack__(stream=) would do, at ~1 us for the whole
// call rather than ~25 us per tensor through Python) and arrays are still
// read directly.
void order_after_framework_stream(Framework framework, int framework_device, std::uintptr_t stream,
                                  ConvertedCall& out) {
  if (!framework_row(framework).direct_on_current_stream) return;
  const dlpack::ExchangeAPI* api = first_exchange_api(out.pending, framework);
  void* current = nullptr;
  if (api == nullptr || api->current_work_stream(dlpack::kCUDA, framework_device, &current) != 0) {
    if (api != nullptr) PyErr_Clear();
    return;  // each array then goes through __dlpack__(stream=)
  }
  const auto current_handle = reinterpret_cast<std::uintptr_t>(current);
  if (same_stream(current_handle, stream)) {
    out.stream_is_framework_current = true;
    out.exchange = api;
  } else {
    cuda::stream_wait(framework_device, reinterpret_cast<cuda::CUstream>(stream),
                      reinterpret_cast<cuda::CUstream>(current_handle));
  }
  out.framework_stream_ordered = true;
}

// The launch stream: stream=, else the current stream of the inputs'
// framework (torch through its exchange API when it offers one), else 0.
void choose_stream(const CallInputs& in, std::optional<std::uintptr_t> explicit_stream,
                   int framework_device, KernelCall& args, ConvertedCall& out) {
  const Framework framework = out.framework;
  nb::object stream_owner;  // a stream object that outputs allocated on it must keep alive
  if (explicit_stream) {
    args.launch.stream = *explicit_stream;
    if (!PyLong_Check(in.call.stream.ptr())) stream_owner = nb::borrow(in.call.stream);
    order_after_framework_stream(framework, framework_device, args.launch.stream, out);
  } else if (const FrameworkRow& row = framework_row(framework); row.current_stream != nullptr) {
    const dlpack::ExchangeAPI* api =
        row.direct_on_current_stream ? first_exchange_api(out.pending, framework) : nullptr;
    void* current = nullptr;
    if (api != nullptr && api->current_work_stream(dlpack::kCUDA, framework_device, &current) == 0) {
      args.launch.stream = reinterpret_cast<std::uintptr_t>(current);
      out.exchange = api;
    } else {
      if (api != nullptr) PyErr_Clear();
      args.launch.stream = row.current_stream(framework_device, &stream_owner);
    }
    out.stream_is_framework_current = true;
  } else {
    args.launch.stream = 0;
  }
  // Handles 0, 1 and 2 are default streams, which are never destroyed.
  args.launch.stream_keepalive =
      stream_owner.is_valid() && args.launch.stream > 2 ? python_owner(stream_owner) : nullptr;
  out.stream = args.launch.stream;
}

// Output shapes and dtypes the call left out, from its outputs= arrays.
void layout_from_provided(std::size_t n_provided, KernelCall& args) {
  if (args.output_shapes.empty() && n_provided > 0) {
    args.output_shapes.resize(n_provided);
    for (std::size_t j = 0; j < n_provided; ++j) args.output_shapes[j] = args.provided_outputs[j].shape;
  }
  if (args.output_dtypes.empty())
    for (const auto& v : args.provided_outputs) args.output_dtypes.push_back(v.dtype);
}

// The type of an outputs= entry (null for jk.Array); ArgumentError where its
// framework's arrays cannot be written (JAX's are immutable).
const TypeInfo* writable_output_type(nb::handle item, const ItemRef& where) {
  if (is_jk_array(item)) return nullptr;
  TypeInfo& info = classify(item, "outputs", where);
  if (const char* refused = framework_row(info.framework).outputs_refused)
    throw ArgumentError("outputs", where.prefix() + refused);
  return &info;
}

// Caller-provided outputs: device arrays only, writable.
void convert_provided_outputs(const CallInputs& in, std::size_t n_provided, bool direct_read,
                              KernelCall& args, ConvertedCall& out) {
  const auto* out_names = in.output_names;
  args.provided_outputs.resize(n_provided);
  args.outputs_allocated = false;
  for_each_item(in.call.outputs, "outputs", [&](std::size_t j, nb::handle item) {
    ItemRef where{"output", j, out_names};
    ArrayView host;
    bool is_host = false;
    const TypeInfo* info = writable_output_type(item, where);
    if (info && (info->kind == Kind::NumpyArray || info->kind == Kind::HostArray))
      throw ArgumentTypeError("outputs", where.prefix() + "outputs= takes CUDA device "
                                                          "arrays, got host memory (" +
                                             type_text(item) + ")");
    classify_array(item, j, "outputs", where, out.borrowed, out.pending, &host, &is_host);
    if (is_host)
      throw ArgumentTypeError("outputs", where.prefix() + "outputs= takes CUDA device arrays, "
                                                          "got host memory (" +
                                             type_text(item) + ")");
    // The entry stays in `pending` (holding the array) until the launch is enqueued.
    const bool read_only = import_pending(out.pending.back(), out.stream, direct_read, out.borrowed,
                                          "outputs", where, args.provided_outputs[j]);
    if (read_only) throw ArgumentError("outputs", where.prefix() + "the array is read-only");
  });
  layout_from_provided(n_provided, args);
}

// Memory::Host: caller-provided outputs are writable arrays in CPU memory.
void convert_host_outputs(const CallInputs& in, std::size_t n_provided, KernelCall& args,
                          ConvertedCall& out) {
  args.provided_outputs.resize(n_provided);
  args.outputs_allocated = false;
  for_each_item(in.call.outputs, "outputs", [&](std::size_t j, nb::handle item) {
    ItemRef where{"output", j, in.output_names};
    writable_output_type(item, where);
    bool is_host = false;
    classify_array(item, j, "outputs", where, out.borrowed, out.pending, &args.provided_outputs[j], &is_host);
    if (!is_host) refuse_device_array(item, "outputs", where);
    if (host_read_only(item)) throw ArgumentError("outputs", where.prefix() + "the array is read-only");
  });
  layout_from_provided(n_provided, args);
}

// Memory::Host after the shared arguments: no launch stream (stream= must be
// None), host views only, outputs from the backend (NumPy arrays over its
// buffers: ml_dtypes must be there for bfloat16 before the kernel runs).
void convert_host_arrays(const CallInputs& in, bool have_provided, std::size_t n_provided, KernelCall& args,
                         ConvertedCall& out) {
  if (!in.call.stream.is_none())
    throw ArgumentError("stream", "Metal kernels run on jitkernel's own Metal command queue; expected None, got " +
                                      type_text(in.call.stream));
  args.launch.stream = 0;
  args.launch.stream_keepalive.reset();
  int no_device = 0;
  convert_inputs<Memory::Host>(in, args, out, &no_device);
  if (have_provided) {
    convert_host_outputs(in, n_provided, args, out);
    return;
  }
  args.provided_outputs.clear();
  for (DType d : args.output_dtypes)
    if (d == DType::BFloat16) {
      bfloat16_numpy_dtype();
      break;
    }
}

}  // namespace

namespace {

// Inputs, launch stream, outputs= or the framework's outputs (Memory::Device),
// once the small values are in `args`.
void convert_device_arrays(const CallInputs& in, bool have_provided, std::size_t n_provided, KernelCall& args,
                           ConvertedCall& out) {
  const std::optional<std::uintptr_t> explicit_stream = stream_arg(in.call.stream);
  int framework_device = 0;
  out.framework = convert_inputs<Memory::Device>(in, args, out, &framework_device);
  choose_stream(in, explicit_stream, framework_device, args, out);
  const bool direct_read =
      (out.stream_is_framework_current || out.framework_stream_ordered) &&
      framework_row(out.framework).direct_on_current_stream;
  for (const PendingArray& p : out.pending) {
    ItemRef where{"input", p.index, in.input_names};
    import_pending(p, out.stream, direct_read, out.borrowed, "inputs", where,
                   std::get<ArrayView>(args.inputs[p.index]));
  }
  if (have_provided)
    convert_provided_outputs(in, n_provided, direct_read, args, out);
  else
    allocate_framework_outputs(in.call.stream, framework_device, args, out);
}

// outputs=: whether given, and how many (`out` keeps the sequence).
std::size_t provided_count(const CallInputs& in, ConvertedCall& out, bool* have_provided) {
  *have_provided = in.call.outputs.is_valid() && !in.call.outputs.is_none();
  if (!*have_provided) return 0;
  out.provided_outputs = in.call.outputs;
  return sequence_arg(in.call.outputs, "outputs", "a list of arrays, one per output");
}

}  // namespace

void convert_call(const CallInputs& in, KernelCall& args, ConvertedCall& out) {
  out.release();
  // outputs= (imported once the stream is known).
  bool have_provided = false;
  const std::size_t n_provided = provided_count(in, out, &have_provided);
  const std::size_t n_outputs = convert_output_layout(in, have_provided, n_provided, args);
  if (have_provided && n_provided != n_outputs)
    throw ArgumentError("outputs", "expected " + count_noun(n_outputs, "array") +
                                       " (one per output), got " + std::to_string(n_provided));

  args.launch.grid = dim3_arg(in.call.grid, "grid");
  args.launch.threadgroup = dim3_arg(in.call.threadgroup, "threadgroup");
  args.init_value = init_value_arg(in.call.init_value);
  if (in.memory == Memory::Host) {
    convert_host_arrays(in, have_provided, n_provided, args, out);
    return;
  }
  convert_device_arrays(in, have_provided, n_provided, args, out);
}

void convert_call_arrays(const CallInputs& in, KernelCall& args, ConvertedCall& out) {
  out.release();
  bool have_provided = false;
  const std::size_t n_provided = provided_count(in, out, &have_provided);
  if (have_provided && n_provided != args.output_dtypes.size())
    throw ArgumentError("outputs", "expected " + count_noun(args.output_dtypes.size(), "array") +
                                       " (one per output), got " + std::to_string(n_provided));
  convert_device_arrays(in, have_provided, n_provided, args, out);
}

}  // namespace jk::py
