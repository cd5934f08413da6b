// Argument conversion shared by every kernel factory binding (cuda_kernel and
// metal_kernel in objects/kernel_object.cpp, precompiled_cuda_kernel
// in precompiled_kernel.cpp): Python inputs, outputs=, stream, output
// shapes/dtypes, grid/threadgroup and init_value -> jk::KernelCall, and the
// launch's results back to Python. Factories call convert_call(), launch,
// then wrap_outputs() (device memory) or wrap_host_outputs() (host memory);
// `scalars=`-style arguments use scalar_value(). Do not re-implement any of
// this in another binding file.
//
// Rules (all in C++: no Python helper of jitkernel runs on a call):
// - inputs: device arrays via DLPack (`__dlpack__(stream=<launch stream>)`,
//   capsules consumed and released after the launch is enqueued; exact
//   torch.Tensor / nn.Parameter on torch's current stream is read without
//   __dlpack__: through torch's DLPack C exchange API (torch >= 2.10), else
//   its attributes),
//   jk.Array directly, NumPy / ml_dtypes / host DLPack arrays as host views
//   (the core uploads them), Python and NumPy scalars by value.
// - stream: None -> the current stream of the first device-array input's
//   framework (torch, CuPy), else the legacy default stream (0); an int
//   handle; an object with __cuda_stream__; torch / CuPy stream objects.
// - outputs: the caller's `outputs=` objects themselves; else allocated by
//   the framework of the first device-array input on the launch stream
//   (torch's caching allocator, CuPy's pool: output_allocation.cpp) and
//   handed to the core as provided outputs; else (JAX, jk.Array, NumPy,
//   other inputs) from jitkernel's pool, returned in the inputs' framework
//   (zero-copy through DLPack), jk.Array without one.
// - Host memory (Metal, whose GPU reads CPU memory): inputs and outputs= are
//   arrays in CPU memory viewed in place (device arrays refused), stream=
//   must be None, outputs come back as NumPy arrays over the backend's
//   buffers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "call/call_args.hpp"
#include "call/dlpack.hpp"
#include "jitkernel/core/array_view.hpp"
#include "jitkernel/cuda/launch/launch.hpp"

namespace jk::py {

enum class Framework : std::uint8_t { None, NumPy, Torch, CuPy, Jax, JitKernel, Other };
inline constexpr int kNumFrameworks = 7;

// What a call borrows from Python until its launch has been enqueued:
// consumed DLPack tensors (their deleters run when this is destroyed) and
// temporary host arrays. Destroy it after the launch, with the GIL held.
struct Borrowed {
  std::vector<DLPackImport> imports;
  std::vector<nb::object> objects;
};

// A call's arguments (CallArgs: borrowed handles, null or None where not
// given; template, verbose and the launch options are the caller's) and how
// the factory reads them.
// Where a backend reads its arrays: CUDA device memory (imported on the
// launch stream, outputs from the inputs' framework) or host memory (Metal's
// unified memory: views of CPU arrays, no stream, NumPy outputs).
enum class Memory : std::uint8_t { Device, Host };

struct CallInputs {
  const CallArgs& call;
  Memory memory = Memory::Device;
  // Names for messages and count checks (cuda_kernel); null: any count, and
  // output_shapes / output_dtypes must have equal lengths (precompiled).
  const std::vector<std::string>* input_names = nullptr;
  const std::vector<std::string>* output_names = nullptr;
  // Python ints out of int32 range: true -> int64 (cuda_kernel, as MLX),
  // false -> ArgumentError (fixed C parameter types).
  bool widen_int_scalars = true;
};

struct TypeInfo;  // what a Python type is (type_table.cpp)

// A device array (input or `outputs=` entry) whose import waits until the
// launch stream is known.
struct PendingArray {
  std::size_t index;
  // A reference of its own: a protocol method run later in the conversion may
  // drop the caller's (by changing the list it came from).
  nb::object obj;
  // Valid while `obj` lives: its type holds the cache entry (type_table.cpp).
  TypeInfo* info;  // null for jk.Array
  int device;
  // The producer's DLTensor from its DLPack exchange API (torch), read once at
  // classification; valid while `obj` lives and is not resized.
  bool has_dltensor = false;
  dlpack::Tensor dltensor{};
};

// What convert_call learned that the launch itself does not need. Keep it
// alive until the launch has been enqueued, then pass it to wrap_outputs.
// Both it and the KernelCall may be reused for the next call (release()
// in between): convert_call then writes into the existing vectors, so a
// steady stream of calls allocates nothing for its arguments.
struct ConvertedCall {
  Borrowed borrowed;
  Framework framework = Framework::None;     // of the first device-array input
  std::uintptr_t stream = 0;                 // the launch stream (also in args.launch.stream)
  bool stream_is_framework_current = false;  // `stream` is that framework's current stream
  // stream= was given and ordered after the framework's current stream (or is
  // it): the framework's arrays are read directly, without __dlpack__(stream=).
  bool framework_stream_ordered = false;
  nb::handle provided_outputs;               // the caller's `outputs=` sequence, or null
  std::vector<PendingArray> pending;         // convert_call's working list
  // The DLPack exchange API of the inputs' framework (torch >= 2.10), when it
  // gave the launch stream: outputs go back through it too.
  const dlpack::ExchangeAPI* exchange = nullptr;
  // Outputs the inputs' framework allocated (torch tensors, CuPy arrays), in
  // output order; empty when outputs= gave them or jitkernel's pool does.
  std::vector<nb::object> allocated;

  // Drops every reference to the call's Python objects (consumed DLPack
  // tensors included), keeping the vectors' capacity.
  void release() {
    borrowed.imports.clear();
    borrowed.objects.clear();
    pending.clear();
    allocated.clear();
    provided_outputs = nb::handle();
    framework = Framework::None;
    stream = 0;
    stream_is_framework_current = false;
    framework_stream_ordered = false;
    exchange = nullptr;
  }
};

// Validates and converts into `args` (inputs, output shapes/dtypes, provided
// outputs, init_value, launch grid/threadgroup/stream; ensure_row_contiguous
// and shared_memory are left to the caller). Every argument error is raised
// (jk::ArgumentError / ArgumentTypeError naming the argument) before any CUDA
// work; the CUDA work it does do is the framework's stream lookup, producers'
// DLPack exports and ordering jk.Array inputs after their producing stream.
void convert_call(const CallInputs& in, KernelCall& args, ConvertedCall& out);
// convert_call's second half (Memory::Device), for a call whose small values
// (output shapes and dtypes, grid, threadgroup, init_value, template) are
// already in `args` (a bound call: objects/bound_call.cpp): the inputs, the
// launch stream, outputs= (as many as args.output_dtypes) or the framework's
// outputs. in.call's output_shapes / output_dtypes / grid / threadgroup /
// init_value are not read.
void convert_call_arrays(const CallInputs& in, KernelCall& args, ConvertedCall& out);

// The results of a launch as the call's return value (a list): Memory::Device
// calls in the inputs' framework, Memory::Host calls as NumPy arrays over the
// backend's buffers (each array owns its buffer), or the caller's outputs=.
nb::list wrap_outputs(std::vector<OwnedArray>&& results, const ConvertedCall& call);
nb::list wrap_host_outputs(std::vector<OwnedArray>&& results, const ConvertedCall& call);

// Signature-only conversion (dtypes, ndims, scalar or not) for source() /
// compile(): no CUDA, no data access, no DLPack export of device arrays.
std::vector<KernelInput> describe_inputs(nb::handle inputs,
                                               const std::vector<std::string>* names,
                                               bool widen_int_scalars);
std::vector<DType> output_dtypes_arg(nb::handle output_dtypes, const std::vector<std::string>* names);
void output_dtypes_into(nb::handle output_dtypes, const std::vector<std::string>* names,
                        std::vector<DType>& dtypes);

// A Python or NumPy scalar by value: bool -> bool, int -> int32 (int64 when
// `widen_int` and out of int32 range, else ArgumentError), float -> float32,
// complex -> complex64, NumPy scalars keep their exact dtype. Returns false
// (and leaves `out` alone) when `value` is not a scalar.
bool scalar_value(nb::handle value, bool widen_int, const char* argument, const ItemRef& where,
                  Scalar* out);

// Small argument parsers (typed errors naming `argument`).
Dim3 dim3_arg(nb::handle value, const char* argument);
// A tuple or list of non-negative ints. `attr` names where an array's shape
// came from (".shape") in messages; null for a shape the caller gave.
std::vector<std::int64_t> shape_arg(nb::handle value, const char* argument, const ItemRef& where,
                                    const char* attr = nullptr);
// shape_arg into an existing vector (its capacity reused).
void shape_into(nb::handle value, const char* argument, const ItemRef& where,
                std::vector<std::int64_t>& shape, const char* attr = nullptr);
std::optional<double> init_value_arg(nb::handle value);
// None -> nullopt (convert_call then takes the inputs' framework's stream).
// Handles are ints in [0, 2**64), given or from a stream object's protocol.
std::optional<std::uintptr_t> stream_arg(nb::handle value);
// A list or tuple (incl. subclasses such as torch.Size); else ArgumentTypeError
// "<argument>: expected <expected>, got <type>". Returns its length.
std::size_t sequence_arg(nb::handle value, const char* argument, const char* expected);

// Calls fn(i, item) for each item of a list or tuple (checked by
// sequence_arg), reading the items as stored (never through an overridden
// __getitem__) and holding a reference to each while fn runs. A list whose
// length changes meanwhile (a protocol method of an item can change it) is
// ArgumentError naming `argument`, never a read past its end.
[[noreturn]] void raise_sequence_changed(const char* argument);
template <typename Fn>
void for_each_item(nb::handle seq, const char* argument, Fn&& fn) {
  PyObject* s = seq.ptr();
  const Py_ssize_t n = api::seq_size(s);
  if (PyTuple_Check(s)) {  // immutable: its items live as long as it does
    for (Py_ssize_t i = 0; i < n; ++i) fn(static_cast<std::size_t>(i), nb::handle(api::tuple_item(s, i)));
    return;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (api::seq_size(s) != n) raise_sequence_changed(argument);
    nb::object item = nb::borrow(api::seq_item(s, i));
    fn(static_cast<std::size_t>(i), nb::handle(item));
  }
  if (api::seq_size(s) != n) raise_sequence_changed(argument);
}

// For messages about user objects; never raise, whatever the object does.
std::string type_text(nb::handle obj);  // "module.QualName" of obj's type
std::string repr_text(nb::handle obj);  // repr(obj), shortened; the type's name if repr fails

// Python ints and NumPy integers (never bools).
enum class IntResult { NotInt, Ok, Overflow };
IntResult int_value(nb::handle value, std::int64_t* out);

}  // namespace jk::py
