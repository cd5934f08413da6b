// The framework table (framework_table.hpp): one row per framework a call's
// arrays can come from, in Framework's order. Rows name the stages' hooks;
// the hooks themselves live with their stage.
#include "framework_table.hpp"

namespace jk::py {
namespace {

// Host arrays and scalars (Framework::None), and any other DLPack or
// __cuda_array_interface__ producer (Framework::Other): nothing of their own.
constexpr FrameworkRow no_framework() { return FrameworkRow{}; }

// Host memory only (the core uploads it for CUDA).
constexpr FrameworkRow numpy_row() {
  FrameworkRow r = no_framework();
  r.name = "numpy";
  r.modules[0] = "numpy";
  r.modules[1] = "ml_dtypes";
  r.scalar_type = "generic";
  r.host_array_type = "ndarray";
  return r;
}

// Its current stream and caching allocator; tensors read through its DLPack C
// exchange API; subclasses of Tensor (FakeTensor, ...) are traced.
constexpr FrameworkRow torch_row() {
  FrameworkRow r = no_framework();
  r.name = "torch";
  r.modules[0] = "torch";
  r.tensor_types[0] = "Tensor";
  r.tensor_types[1] = "nn.Parameter";
  r.traced_text = "a traced torch tensor (a torch.Tensor subclass) cannot be read eagerly here";
  r.stream_modules[0] = "torch";
  r.stream_handle_attr = "cuda_stream";
  r.stream_text = "torch stream";
  r.current_stream = &torch_current_stream;
  r.direct_on_current_stream = true;
  r.allocate_outputs = &allocate_torch_outputs;
  r.find_converter = &module_from_dlpack;
  r.find_capsule_converter = &torch_capsule_converter;
  return r;
}

// Its current stream and memory pool.
constexpr FrameworkRow cupy_row() {
  FrameworkRow r = no_framework();
  r.name = "cupy";
  r.modules[0] = "cupy";
  r.modules[1] = "cupyx";
  r.stream_modules[0] = "cupy";
  r.stream_modules[1] = "cupy_backends";
  r.stream_handle_attr = "ptr";
  r.stream_text = "CuPy stream";
  r.current_stream = &cupy_current_stream;
  r.allocate_outputs = &allocate_cupy_outputs;
  r.find_converter = &module_from_dlpack;
  return r;
}

// Immutable arrays: outputs come from jitkernel's pool, returned through from_dlpack.
constexpr FrameworkRow jax_row() {
  FrameworkRow r = no_framework();
  r.name = "jax";
  r.modules[0] = "jax";
  r.modules[1] = "jaxlib";
  r.tracer_type = "core.Tracer";
  r.traced_text = "a JAX tracer cannot be read eagerly here";
  r.find_converter = &jax_from_dlpack;
  r.outputs_refused = "JAX arrays are immutable and cannot be written by a kernel; omit outputs= to get new "
                      "JAX arrays";
  return r;
}

// jk.Array: read directly; results stay jk.Array.
constexpr FrameworkRow jitkernel_row() {
  FrameworkRow r = no_framework();
  r.name = "jitkernel";
  r.modules[0] = "jitkernel";
  return r;
}

constexpr FrameworkRow kRows[kNumFrameworks] = {
    no_framework(), numpy_row(), torch_row(), cupy_row(), jax_row(), jitkernel_row(), no_framework(),
};

}  // namespace

const FrameworkRow& framework_row(Framework fw) { return kRows[static_cast<int>(fw)]; }

}  // namespace jk::py
