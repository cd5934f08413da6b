// The Metal runtime's side of metal_call.hpp (Apple builds only, where
// CMakeLists.txt defines JITKERNEL_HAVE_METAL): turns a checked MetalCall's
// Python arrays into host views (CPU memory, which Apple GPUs share), runs
// jk::metal::launch, and returns the outputs as NumPy arrays over the
// kernel's shared Metal buffers (no copy; each array owns its buffer, which
// is released when the array goes), or the caller's outputs= arrays.
#ifdef JITKERNEL_HAVE_METAL

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/ndarray.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "metal_call.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/metal/runtime.hpp"

namespace jk::py {
namespace {

using OutputOwner = std::shared_ptr<metal::SharedBuffer>;

// bfloat16 outputs are NumPy arrays of ml_dtypes.bfloat16; find it before
// the kernel runs rather than fail after.
nb::object bfloat16_numpy_dtype() {
  try {
    return nb::module_::import_("ml_dtypes").attr("bfloat16");
  } catch (nb::python_error&) {
    throw ArgumentError("output_dtypes", "bfloat16 outputs come back as NumPy arrays of "
                                         "ml_dtypes.bfloat16, and ml_dtypes is not installed: "
                                         "pip install ml-dtypes");
  }
}

// A NumPy array over an output's shared buffer; the array owns the buffer.
nb::object numpy_output(metal::MetalOutput&& out, const nb::object& bfloat16) {
  const ArrayView& v = out.view;
  std::vector<std::size_t> shape(v.shape.begin(), v.shape.end());
  const DTypeInfo& info = dtype_info(v.dtype);
  const bool is_bf16 = v.dtype == DType::BFloat16;
  // NumPy has no bfloat16: export the bits as uint16 and view them as ml_dtypes.bfloat16.
  const nb::dlpack::dtype dtype{static_cast<std::uint8_t>(is_bf16 ? 1 : info.dlpack_code),
                                info.dlpack_bits, 1};
  auto* owner = new OutputOwner(std::move(out.buffer));
  nb::capsule capsule(owner, [](void* p) noexcept { delete static_cast<OutputOwner*>(p); });
  nb::object array =
      nb::cast(nb::ndarray<nb::numpy>(v.data, shape.size(), shape.data(), capsule, nullptr, dtype));
  return is_bf16 ? nb::object(array.attr("view")(bfloat16)) : array;
}

}  // namespace

bool metal_runtime_available() {
  try {
    return metal::available();
  } catch (...) {
    return false;
  }
}

nb::object launch_metal(const MetalCall& call) {
  std::string reason;
  if (!metal::available(&reason)) {
    nb::object cls = nb::module_::import_("jitkernel._errors").attr("MetalNotAvailableError");
    PyErr_SetObject(cls.ptr(), cls(reason).ptr());
    throw nb::python_error();
  }
  const auto& in_names = call.spec->input_names;
  const auto& out_names = call.spec->output_names;
  Borrowed borrowed;  // keeps imported host arrays alive until the kernel has finished
  metal::MetalCall mc;
  nb::object inputs = nb::borrow(call.inputs);
  const std::size_t n_inputs = nb::len(inputs);
  mc.inputs.reserve(n_inputs);
  for (std::size_t i = 0; i < n_inputs; ++i) {
    nb::object item = inputs[i];
    const ItemRef where{"input", i, &in_names};
    Scalar s;
    if (scalar_value(item, /*widen_int=*/true, "inputs", where, &s)) {
      mc.inputs.emplace_back(s);
      continue;
    }
    bool read_only = false;
    mc.inputs.emplace_back(host_array_view(item, "inputs", where, borrowed, &read_only));
  }
  const bool provided = call.outputs.is_valid() && !call.outputs.is_none();
  if (provided) {
    nb::object outputs = nb::borrow(call.outputs);
    for (std::size_t j = 0; j < nb::len(outputs); ++j) {
      const ItemRef where{"output", j, &out_names};
      bool read_only = false;
      mc.provided_outputs.push_back(host_array_view(outputs[j], "outputs", where, borrowed, &read_only));
      if (read_only) throw ArgumentError("outputs", where.prefix() + "the array is read-only");
    }
  }
  mc.output_shapes = call.output_shapes;
  mc.output_dtypes = call.output_dtypes;
  mc.init_value = call.init_value;
  mc.grid = call.grid;
  mc.threadgroup = call.threadgroup;

  nb::object bfloat16;
  if (!provided) {
    for (DType d : mc.output_dtypes) {
      if (d == DType::BFloat16 && !bfloat16.is_valid()) bfloat16 = bfloat16_numpy_dtype();
    }
  }

  std::vector<metal::MetalOutput> results = metal::launch(*call.spec, call.kernel, mc);
  nb::list out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (provided) {
      out.append(nb::borrow(call.outputs)[i]);
    } else {
      out.append(numpy_output(std::move(results[i]), bfloat16));
    }
  }
  return out;
}

}  // namespace jk::py

#endif  // JITKERNEL_HAVE_METAL
