// launch() of runtime.hpp: bind every [[buffer(n)]] in the generated
// kernel's order, dispatch, wait. The engine validated the call
// (engine/validate_call.cpp, metal_backend.cpp); what is left to check here
// (output sizes, the pipeline's threadgroup limit) is checked before any GPU
// work or write to the caller's memory; the command buffer's own status is
// checked after it completes.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "jitkernel/core/blocking.hpp"
#include "jitkernel/core/element_bytes.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/host_layout.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/codegen/metal_signature.hpp"
#include "jitkernel/metal/buffers.hpp"
#include "jitkernel/metal/device.hpp"
#include "jitkernel/metal/pipelines.hpp"
#include "jitkernel/metal/runtime.hpp"

namespace jk::metal {
namespace {

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

// What engine/validate_call.cpp and the backend left to the runtime, before
// any GPU work: output sizes, each call's shapes against the int32 the
// kernel receives, and the generated layout against the call. Returns the
// init_value bit patterns, one per output.
std::vector<std::uint64_t> validate(const KernelSpec& spec, const GeneratedKernel& kernel, const KernelCall& call) {
  const std::size_t n_out = call.output_dtypes.size();
  std::vector<std::uint64_t> patterns(n_out, 0);
  for (std::size_t i = 0; i < n_out; ++i) {
    checked_nbytes(call.output_dtypes[i], call.output_shapes[i], i);
    if (call.init_value) patterns[i] = encode_element(call.output_dtypes[i], *call.init_value, "init_value");
  }
  // The generated layout must fit this call (codegen made it from the same
  // signature); checked here so that encoding below cannot fail half-way.
  for (std::size_t k = 0; k < kernel.params.size(); ++k) {
    const ParamSlot& p = kernel.params[k];
    const std::size_t limit = p.kind == ParamKind::OutputData ? n_out : call.inputs.size();
    if (p.index < 0 || static_cast<std::size_t>(p.index) >= limit || p.kind == ParamKind::InputScalar) {
      internal_error("buffer " + std::to_string(k) + " refers to a missing array");
    }
    if (p.kind == ParamKind::InputShape || p.kind == ParamKind::InputStrides || p.kind == ParamKind::InputNdim) {
      const auto* a = std::get_if<ArrayView>(&call.inputs[p.index]);
      if (a == nullptr || a->ndim() == 0) internal_error("shape, strides or ndim of a 0-d input");
      if (p.kind == ParamKind::InputShape) {
        std::int64_t largest = 0;
        for (auto extent : a->shape) largest = std::max(largest, extent);
        codegen::check_metal_shape_range(spec.input_names[p.index], largest, "_shape");
      }
    }
  }
  return patterns;
}

// The threads per threadgroup Metal gets: min(threadgroup, grid) per
// dimension, checked against the device's and this pipeline's limits.
MTL::Size threadgroup_size(const MetalDevice& device, MTL::ComputePipelineState* pipeline,
                           const GeneratedKernel& kernel, const LaunchConfig& call) {
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
                                           kernel.entry_name + "' can run at most " +
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
BoundInput bind_input(const MetalDevice& device, const KernelInput& input, AddressSpace space,
                      bool ensure_row_contiguous, std::size_t index) {
  BoundInput bound;
  if (const auto* s = std::get_if<Scalar>(&input)) {
    bound.bytes.assign(s->bytes, s->bytes + dtype_size(s->dtype));
    return bound;
  }
  const ArrayView& a = std::get<ArrayView>(input);
  bound.shape = a.shape;
  const std::string what = item_text("inputs", index);
  if (space == AddressSpace::Constant) {
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

// Outputs: new shared buffers, or the caller's arrays (their memory, or a
// copy written back after the kernel), filled with init_value when given.
std::vector<BoundArray> bind_outputs(const MetalDevice& device, const KernelCall& call,
                                     const std::vector<std::uint64_t>& patterns) {
  const std::size_t n_out = call.output_dtypes.size();
  std::vector<BoundArray> outputs(n_out);
  for (std::size_t i = 0; i < n_out; ++i) {
    const std::string what = item_text("outputs", i);
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
  return outputs;
}

// Sets every parameter of `kernel` on the encoder, in buffer order.
void encode_params(MTL::ComputeCommandEncoder* encoder, const GeneratedKernel& kernel,
                   const std::vector<BoundInput>& inputs, const std::vector<BoundArray>& outputs) {
  for (std::size_t k = 0; k < kernel.params.size(); ++k) {
    const ParamSlot& p = kernel.params[k];
    const int n = static_cast<int>(k);
    switch (p.kind) {
      case ParamKind::InputData:
      case ParamKind::InputScalar: {
        const BoundInput& in = inputs[p.index];
        if (!in.bytes.empty()) {
          set_bytes(encoder, in.bytes.data(), in.bytes.size(), n);
        } else {
          encoder->setBuffer(in.array.buffer.get(), in.array.offset, static_cast<NS::UInteger>(n));
        }
        break;
      }
      case ParamKind::InputShape: {
        const BoundInput& in = inputs[p.index];
        std::vector<std::int32_t> shape(in.shape.begin(), in.shape.end());  // range checked by validate()
        set_bytes(encoder, shape.data(), shape.size() * sizeof(std::int32_t), n);
        break;
      }
      case ParamKind::InputStrides: {
        const BoundInput& in = inputs[p.index];
        set_bytes(encoder, in.strides.data(), in.strides.size() * sizeof(std::int64_t), n);
        break;
      }
      case ParamKind::InputNdim: {
        const auto ndim = static_cast<std::int32_t>(inputs[p.index].shape.size());
        set_bytes(encoder, &ndim, sizeof ndim, n);
        break;
      }
      case ParamKind::OutputData:
        encoder->setBuffer(outputs[p.index].buffer.get(), outputs[p.index].offset, static_cast<NS::UInteger>(n));
        break;
    }
  }
}

// Encodes, commits and waits for one dispatch.
void dispatch(const MetalDevice& device, MTL::ComputePipelineState* pipeline, const GeneratedKernel& kernel,
              const KernelCall& call, const std::vector<BoundInput>& inputs,
              const std::vector<BoundArray>& outputs) {
  const MTL::Size threads_per_group = threadgroup_size(device, pipeline, kernel, call.launch);
  MTL::CommandBuffer* commands = device.queue->commandBuffer();  // autoreleased
  if (commands == nullptr) throw Error("Metal: could not create a command buffer on " + device.name);
  MTL::ComputeCommandEncoder* encoder = commands->computeCommandEncoder();  // autoreleased
  if (encoder == nullptr) throw Error("Metal: could not create a compute encoder on " + device.name);
  encoder->setComputePipelineState(pipeline);
  encode_params(encoder, kernel, inputs, outputs);
  const Dim3& g = call.launch.grid;
  const MTL::Size grid(static_cast<NS::UInteger>(g.x), static_cast<NS::UInteger>(g.y),
                       static_cast<NS::UInteger>(g.z));
  encoder->dispatchThreads(grid, threads_per_group);
  encoder->endEncoding();
  commands->commit();
  {
    BlockingSection waiting;
    commands->waitUntilCompleted();
  }
  if (commands->status() != MTL::CommandBufferStatusCompleted) {
    throw Error("Metal: kernel '" + kernel.entry_name + "' failed on " + device.name + ": " +
                error_text(commands->error(), "the command buffer did not complete"));
  }
}

// The call's results: new arrays over the output buffers, or (outputs=)
// copies written back into the caller's arrays where they were bound as copies.
std::vector<OwnedArray> collect_outputs(const KernelCall& call, const std::vector<BoundArray>& outputs) {
  std::vector<OwnedArray> results;
  if (!call.provided_outputs.empty()) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].copied) continue;
      const ArrayView& view = call.provided_outputs[i];
      const auto* from = static_cast<const unsigned char*>(outputs[i].buffer->contents()) + outputs[i].offset;
      std::memcpy(view.data, from, view.nbytes());
    }
    return results;
  }
  results.resize(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    OwnedArray& r = results[i];
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

}  // namespace

void* compile_pipeline(const KernelSpec& spec, const GeneratedKernel& kernel) {
  const MetalDevice& device = metal_device();
  AutoreleaseScope pool;
  return kernel_pipeline(device, kernel, spec.math_mode);
}

std::vector<OwnedArray> launch(const KernelSpec& spec, const GeneratedKernel& kernel, void* pipeline,
                               const KernelCall& call) {
  const std::vector<std::uint64_t> patterns = validate(spec, kernel, call);
  const MetalDevice& device = metal_device();
  AutoreleaseScope pool;
  // Inputs, in the address space the signature declares them in.
  std::vector<AddressSpace> spaces(call.inputs.size(), AddressSpace::Device);
  for (const ParamSlot& p : kernel.params) {
    if (p.kind == ParamKind::InputData) spaces[p.index] = p.space;
  }
  std::vector<BoundInput> inputs;
  inputs.reserve(call.inputs.size());
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    inputs.push_back(bind_input(device, call.inputs[i], spaces[i], spec.ensure_row_contiguous, i));
  }
  std::vector<BoundArray> outputs = bind_outputs(device, call, patterns);
  dispatch(device, static_cast<MTL::ComputePipelineState*>(pipeline), kernel, call, inputs, outputs);
  return collect_outputs(call, outputs);
}

OwnedArray allocate_shared(DType dtype, const std::vector<std::int64_t>& shape) {
  const MetalDevice& device = metal_device();
  AutoreleaseScope pool;
  const std::size_t nbytes = checked_nbytes(dtype, shape, 0);
  NS::SharedPtr<MTL::Buffer> buffer = new_shared_buffer(device, nbytes, "output_shapes", "output");
  OwnedArray out;
  out.buffer = std::make_shared<SharedBuffer>(buffer.get(), buffer->contents(), static_cast<std::size_t>(buffer->length()));
  buffer->retain();  // the reference the SharedBuffer releases
  out.view.data = buffer->contents();
  out.view.dtype = dtype;
  out.view.device = kHostDevice;
  out.view.shape = shape;
  out.view.strides = row_major_strides(shape);
  return out;
}

}  // namespace jk::metal
