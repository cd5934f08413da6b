// The frameworks a call's arrays can come from, one row each (as nanobind's
// nb_ndarray.cpp keys its importers by framework): how its types are
// recognised, which stream a launch on its arrays runs on, who allocates its
// outputs and how results go back to it. The stages of the conversion
// (type_table, array_import, streams, output_allocation, array_export,
// convert) read the row of the inputs' framework instead of naming
// frameworks; adding one is adding a row. Internal to the conversion.
#pragma once

#include <cstdint>

#include "convert.hpp"

namespace jk::py {

struct FrameworkRow {
  const char* name = "";  // for messages ("torch")
  // The top-level packages whose types are the framework's, null-ended (a
  // type's __module__ is only a claim: it counts while that package is loaded).
  const char* modules[4] = {};
  // Types looked up in modules[0] (dotted paths; null: none): its scalar type
  // (numpy.generic), its host array type (numpy.ndarray), its tensor type
  // read directly (torch.Tensor, with torch.nn.Parameter; subclasses are
  // traced) and the type of its tracers (jax.core.Tracer).
  const char* scalar_type = nullptr;
  const char* host_array_type = nullptr;
  const char* tensor_types[2] = {};
  const char* tracer_type = nullptr;
  // A traced array of this framework in messages.
  const char* traced_text = "";
  // Its stream objects' packages (null-ended) and the attribute holding their
  // handle (torch.cuda.Stream.cuda_stream), for stream= (streams.cpp).
  const char* stream_modules[3] = {};
  const char* stream_handle_attr = nullptr;
  const char* stream_text = nullptr;  // "torch stream", for messages
  // The framework's current stream on `device`, the launch stream of a call on
  // its arrays without stream=; `*owner` keeps a stream object alive. Null:
  // the legacy default stream (0).
  std::uintptr_t (*current_stream)(int device, nb::object* owner) = nullptr;
  // Its arrays are read without __dlpack__ and results handed back without
  // jk.Array (exchange API, capsules) when the launch runs on its current stream.
  bool direct_on_current_stream = false;
  // Allocates a call's outputs with the framework's allocator
  // (output_allocation.cpp); null: jitkernel's pool serves.
  void (*allocate_outputs)(nb::handle stream, int device, KernelCall& args, ConvertedCall& out) = nullptr;
  // Finds the function that turns a jk.Array into the framework's array
  // (array_export.cpp); null: calls return jk.Array.
  nb::object (*find_converter)(const FrameworkRow& row) = nullptr;
  // Finds its importer of a bare DLPack capsule, used on its current stream
  // (direct_on_current_stream); null: the converter takes jk.Array.
  nb::object (*find_capsule_converter)(const FrameworkRow& row) = nullptr;
  // Why outputs= refuses its arrays (null: it takes them).
  const char* outputs_refused = nullptr;
};

// The row of `fw` (an index into the table: no lookup by name on a call).
const FrameworkRow& framework_row(Framework fw);

// The rows' hooks, each defined in its stage's file.
std::uintptr_t torch_current_stream(int device, nb::object* owner);  // streams.cpp
std::uintptr_t cupy_current_stream(int device, nb::object* owner);
void allocate_torch_outputs(nb::handle stream, int device, KernelCall& args, ConvertedCall& out);  // output_allocation.cpp
void allocate_cupy_outputs(nb::handle stream, int device, KernelCall& args, ConvertedCall& out);
nb::object module_from_dlpack(const FrameworkRow& row);  // array_export.cpp
nb::object jax_from_dlpack(const FrameworkRow& row);
nb::object torch_capsule_converter(const FrameworkRow& row);

}  // namespace jk::py
