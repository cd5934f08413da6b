// launch() of runtime.hpp: check the call, get the pipeline, bind every
// [[buffer(n)]] in the generated kernel's order, dispatch, wait. All
// argument errors are raised before any GPU work or write to the caller's
// memory; the command buffer's own status is checked after it completes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "jitkernel/core/blocking.hpp"
#include "jitkernel/core/convert.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/host_layout.hpp"
#include "jitkernel/metal/buffers.hpp"
#include "jitkernel/metal/device.hpp"
#include "jitkernel/metal/pipelines.hpp"
#include "jitkernel/metal/runtime.hpp"

namespace jk::metal {
namespace {

using codegen::GeneratedMetalKernel;
using codegen::MetalAddressSpace;
using codegen::MetalBufferBinding;
using codegen::MetalBufferKind;
using codegen::MetalKernelSpec;

std::string dims_text(const Dim3& d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

std::string item(const char* what, std::size_t i) { return std::string(what) + "[" + std::to_string(i) + "]"; }

[[noreturn]] void internal_error(const std::string& what) {
  throw Error("internal error: the generated Metal buffer layout does not match the call (" + what + ")");
}

std::size_t checked_nbytes(DType dtype, const std::vector<std::int64_t>& shape, std::size_t index) {
  std::int64_t count = 1;
  for (auto extent : shape) {
    if (extent < 0 || __builtin_mul_overflow(count, extent, &count)) {
      throw ArgumentError("output_shapes", "output " + std::to_string(index) + " has shape " +
                                               shape_text(shape) + "; dimensions must be >= 0");
    }
  }
  std::int64_t nbytes = 0;
  if (__builtin_mul_overflow(count, static_cast<std::int64_t>(dtype_size(dtype)), &nbytes)) {
    throw ArgumentError("output_shapes", "output " + std::to_string(index) + " of shape " +
                                             shape_text(shape) + " is too large");
  }
  return static_cast<std::size_t>(nbytes);
}

// Everything that needs no GPU (dtypes Metal lacks, such as float64, were
// refused by codegen). Returns the init_value bit patterns, one per output.
std::vector<std::uint64_t> validate(const GeneratedMetalKernel& kernel, const MetalCall& call) {
  const Dim3& g = call.grid;
  const Dim3& t = call.threadgroup;
  if (g.x <= 0 || g.y <= 0 || g.z <= 0) {
    throw ArgumentError("grid", "expected 3 positive ints (threads in x, y, z), got " + dims_text(g));
  }
  constexpr std::int64_t kMaxGrid = std::numeric_limits<std::uint32_t>::max();
  if (g.x > kMaxGrid || g.y > kMaxGrid || g.z > kMaxGrid) {
    throw ArgumentError("grid", dims_text(g) + " exceeds Metal's " + std::to_string(kMaxGrid) +
                                    " threads per dimension (thread_position_in_grid is a uint3)");
  }
  if (t.x <= 0 || t.y <= 0 || t.z <= 0) {
    throw ArgumentError("threadgroup",
                        "expected 3 positive ints (threads per threadgroup in x, y, z), got " + dims_text(t));
  }
  const std::size_t n_out = call.output_dtypes.size();
  if (call.output_shapes.size() != n_out) {
    throw ArgumentError("output_shapes", "got " + std::to_string(call.output_shapes.size()) +
                                             " shapes for " + std::to_string(n_out) +
                                             " output_dtypes; give one shape and one dtype per output");
  }
  std::vector<std::uint64_t> patterns(n_out, 0);
  for (std::size_t i = 0; i < n_out; ++i) {
    checked_nbytes(call.output_dtypes[i], call.output_shapes[i], i);
    if (call.init_value) patterns[i] = encode_element(call.output_dtypes[i], *call.init_value, "init_value");
  }
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const auto* a = std::get_if<ArrayView>(&call.inputs[i]);
    if (a != nullptr && a->device != kHostDevice) {
      throw ArgumentError("inputs", item("inputs", i) + " is in CUDA device memory (cuda:" +
                                        std::to_string(a->device) +
                                        "); Metal kernels take arrays in CPU memory (NumPy, "
                                        "PyTorch CPU tensors, ...)");
    }
  }
  if (!call.provided_outputs.empty()) {
    if (call.provided_outputs.size() != n_out) {
      throw ArgumentError("outputs", "expected " + std::to_string(n_out) + " arrays (one per output), got " +
                                         std::to_string(call.provided_outputs.size()));
    }
    for (std::size_t i = 0; i < n_out; ++i) {
      const ArrayView& out = call.provided_outputs[i];
      const std::string which = item("outputs", i);
      if (out.device != kHostDevice) {
        throw ArgumentError("outputs", which + " is in CUDA device memory; Metal kernels write "
                                               "arrays in CPU memory (NumPy, PyTorch CPU tensors, ...)");
      }
      if (out.dtype != call.output_dtypes[i]) {
        throw ArgumentError("outputs", which + " has dtype " + dtype_name(out.dtype) +
                                           " but output_dtypes[" + std::to_string(i) + "] is " +
                                           dtype_name(call.output_dtypes[i]));
      }
      if (out.shape != call.output_shapes[i]) {
        throw ArgumentError("outputs", which + " has shape " + shape_text(out.shape) +
                                           " but output_shapes[" + std::to_string(i) + "] is " +
                                           shape_text(call.output_shapes[i]));
      }
      if (!out.row_contiguous()) {
        throw ArgumentError("outputs", which + " is not row-contiguous (C order); kernels write "
                                               "outputs densely: pass a contiguous array");
      }
    }
  }
  // The generated layout must fit this call (codegen made it from the same
  // arguments); checked here so that encoding below cannot fail half-way.
  for (std::size_t k = 0; k < kernel.bindings.size(); ++k) {
    const MetalBufferBinding& b = kernel.bindings[k];
    if (b.buffer_index != static_cast<int>(k)) internal_error("buffer " + std::to_string(k) + " out of order");
    const std::size_t limit = b.kind == MetalBufferKind::OutputData ? n_out : call.inputs.size();
    if (b.index < 0 || static_cast<std::size_t>(b.index) >= limit) {
      internal_error("buffer " + std::to_string(k) + " refers to a missing array");
    }
    if (b.kind == MetalBufferKind::InputShape || b.kind == MetalBufferKind::InputStrides ||
        b.kind == MetalBufferKind::InputNdim) {
      const auto* a = std::get_if<ArrayView>(&call.inputs[b.index]);
      if (a == nullptr || a->ndim() == 0) internal_error("shape, strides or ndim of a 0-d input");
    }
  }
  return patterns;
}

// The threads per threadgroup Metal gets: min(threadgroup, grid) per
// dimension, checked against the device's and this pipeline's limits.
MTL::Size threadgroup_size(const MetalDevice& device, MTL::ComputePipelineState* pipeline,
                           const GeneratedMetalKernel& kernel, const MetalCall& call) {
  const std::int64_t x = std::min(call.threadgroup.x, call.grid.x);
  const std::int64_t y = std::min(call.threadgroup.y, call.grid.y);
  const std::int64_t z = std::min(call.threadgroup.z, call.grid.z);
  const MTL::Size& limit = device.max_threads_per_threadgroup;
  const std::int64_t dims[3] = {x, y, z};
  const std::int64_t limits[3] = {static_cast<std::int64_t>(limit.width),
                                  static_cast<std::int64_t>(limit.height),
                                  static_cast<std::int64_t>(limit.depth)};
  const char* axes[3] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (dims[i] > limits[i]) {
      throw ArgumentError("threadgroup", dims_text(call.threadgroup) + " has " + std::to_string(dims[i]) +
                                             " threads in " + axes[i] + "; " + device.name +
                                             " allows at most " + std::to_string(limits[i]));
    }
  }
  const std::int64_t total = x * y * z;
  const auto allowed = static_cast<std::int64_t>(pipeline->maxTotalThreadsPerThreadgroup());
  if (total > allowed) {
    throw ArgumentError("threadgroup", dims_text(call.threadgroup) + " makes threadgroups of " +
                                           std::to_string(total) + " threads, but kernel '" +
                                           kernel.kernel_name + "' can run at most " +
                                           std::to_string(allowed) + " per threadgroup on " + device.name +
                                           " (the limit depends on its register and threadgroup memory use)");
  }
  return MTL::Size(static_cast<NS::UInteger>(x), static_cast<NS::UInteger>(y), static_cast<NS::UInteger>(z));
}

// How one input reaches the kernel.
struct BoundInput {
  BoundArray array;                  // device-space arrays
  std::vector<unsigned char> bytes;  // constant-space arrays and scalars (setBytes)
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;  // of what the kernel sees
};

// Constant-space inputs (fewer than 8 elements) and scalars travel as bytes:
// no buffer, and no alignment rule for constant-space buffer offsets.
BoundInput bind_input(const MetalDevice& device, const MetalInput& input, MetalAddressSpace space,
                      bool ensure_row_contiguous, std::size_t index) {
  BoundInput bound;
  if (const auto* s = std::get_if<Scalar>(&input)) {
    bound.bytes.assign(s->bytes, s->bytes + dtype_size(s->dtype));
    return bound;
  }
  const ArrayView& a = std::get<ArrayView>(input);
  bound.shape = a.shape;
  const std::string what = item("inputs", index);
  if (space == MetalAddressSpace::Constant) {
    // setBytes needs at least one byte; a kernel reading an empty input reads nothing.
    bound.bytes.assign(std::max<std::size_t>(a.nbytes(), dtype_size(a.dtype)), 0);
    if (a.size() > 0) pack_on_host(a, bound.bytes.data());
    bound.strides = row_major_strides(a.shape);
    return bound;
  }
  bound.array = ensure_row_contiguous && !a.row_contiguous() ? bind_packed(device, a, "inputs", what)
                                                             : bind_as_is(device, a, "inputs", what);
  bound.strides = bound.array.strides;
  return bound;
}

void set_bytes(MTL::ComputeCommandEncoder* encoder, const void* data, std::size_t size, int index) {
  encoder->setBytes(data, static_cast<NS::UInteger>(size), static_cast<NS::UInteger>(index));
}

}  // namespace

std::vector<MetalOutput> launch(const MetalKernelSpec& spec, const GeneratedMetalKernel& kernel,
                                const MetalCall& call) {
  const std::vector<std::uint64_t> patterns = validate(kernel, call);
  const MetalDevice& device = metal_device();
  AutoreleaseScope pool;
  MTL::ComputePipelineState* pipeline = kernel_pipeline(device, kernel, spec.math_mode);
  const MTL::Size threads_per_group = threadgroup_size(device, pipeline, kernel, call);

  // Inputs, in the address space the signature declares them in.
  std::vector<MetalAddressSpace> spaces(call.inputs.size(), MetalAddressSpace::Device);
  for (const MetalBufferBinding& b : kernel.bindings) {
    if (b.kind == MetalBufferKind::InputData) spaces[b.index] = b.address_space;
  }
  std::vector<BoundInput> inputs;
  inputs.reserve(call.inputs.size());
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    inputs.push_back(bind_input(device, call.inputs[i], spaces[i], spec.ensure_row_contiguous, i));
  }

  // Outputs: new shared buffers, or the caller's arrays (their memory, or a copy written back).
  const std::size_t n_out = call.output_dtypes.size();
  std::vector<BoundArray> outputs(n_out);
  for (std::size_t i = 0; i < n_out; ++i) {
    const std::string what = item("outputs", i);
    if (!call.provided_outputs.empty()) {
      outputs[i] = bind_as_is(device, call.provided_outputs[i], "outputs", what);
    } else {
      const std::size_t nbytes = checked_nbytes(call.output_dtypes[i], call.output_shapes[i], i);
      outputs[i].buffer = new_shared_buffer(device, nbytes, "output_shapes", what);
      outputs[i].strides = row_major_strides(call.output_shapes[i]);
    }
    if (call.init_value) {
      std::int64_t count = 1;
      for (auto extent : call.output_shapes[i]) count *= extent;
      auto* first = static_cast<unsigned char*>(outputs[i].buffer->contents()) + outputs[i].offset;
      fill_elements(first, static_cast<std::size_t>(count), dtype_size(call.output_dtypes[i]), patterns[i]);
    }
  }

  MTL::CommandBuffer* commands = device.queue->commandBuffer();  // autoreleased
  if (commands == nullptr) throw Error("Metal: could not create a command buffer on " + device.name);
  MTL::ComputeCommandEncoder* encoder = commands->computeCommandEncoder();  // autoreleased
  if (encoder == nullptr) throw Error("Metal: could not create a compute encoder on " + device.name);
  encoder->setComputePipelineState(pipeline);
  for (const MetalBufferBinding& b : kernel.bindings) {
    const int n = b.buffer_index;
    switch (b.kind) {
      case MetalBufferKind::InputData: {
        const BoundInput& in = inputs[b.index];
        if (!in.bytes.empty()) {
          set_bytes(encoder, in.bytes.data(), in.bytes.size(), n);
        } else {
          encoder->setBuffer(in.array.buffer.get(), in.array.offset, static_cast<NS::UInteger>(n));
        }
        break;
      }
      case MetalBufferKind::InputShape:
      case MetalBufferKind::InputStrides:
      case MetalBufferKind::InputNdim: {
        const BoundInput& in = inputs[b.index];
        if (b.kind == MetalBufferKind::InputShape) {
          std::vector<std::int32_t> shape(in.shape.begin(), in.shape.end());  // codegen checked the range
          set_bytes(encoder, shape.data(), shape.size() * sizeof(std::int32_t), n);
        } else if (b.kind == MetalBufferKind::InputStrides) {
          set_bytes(encoder, in.strides.data(), in.strides.size() * sizeof(std::int64_t), n);
        } else {
          const auto ndim = static_cast<std::int32_t>(in.shape.size());
          set_bytes(encoder, &ndim, sizeof ndim, n);
        }
        break;
      }
      case MetalBufferKind::OutputData:
        encoder->setBuffer(outputs[b.index].buffer.get(), outputs[b.index].offset,
                           static_cast<NS::UInteger>(n));
        break;
    }
  }
  const MTL::Size grid(static_cast<NS::UInteger>(call.grid.x), static_cast<NS::UInteger>(call.grid.y),
                       static_cast<NS::UInteger>(call.grid.z));
  encoder->dispatchThreads(grid, threads_per_group);
  encoder->endEncoding();
  commands->commit();
  {
    BlockingSection waiting;
    commands->waitUntilCompleted();
  }
  if (commands->status() != MTL::CommandBufferStatusCompleted) {
    throw Error("Metal: kernel '" + kernel.kernel_name + "' failed on " + device.name + ": " +
                error_text(commands->error(), "the command buffer did not complete"));
  }

  std::vector<MetalOutput> results(n_out);
  for (std::size_t i = 0; i < n_out; ++i) {
    MetalOutput& r = results[i];
    if (!call.provided_outputs.empty()) {
      r.view = call.provided_outputs[i];
      if (outputs[i].copied) {
        const auto* from = static_cast<const unsigned char*>(outputs[i].buffer->contents()) + outputs[i].offset;
        std::memcpy(r.view.data, from, r.view.nbytes());
      }
      continue;
    }
    MTL::Buffer* buffer = outputs[i].buffer.get();
    r.buffer = std::make_shared<SharedBuffer>(buffer, buffer->contents(), static_cast<std::size_t>(buffer->length()));
    buffer->retain();  // the reference the SharedBuffer releases
    r.view.data = buffer->contents();
    r.view.dtype = call.output_dtypes[i];
    r.view.device = kHostDevice;
    r.view.shape = call.output_shapes[i];
    r.view.strides = outputs[i].strides;
  }
  return results;
}

}  // namespace jk::metal
