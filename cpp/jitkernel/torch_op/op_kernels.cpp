// The torch ops' boxed kernels (op_kernels.hpp): read the dispatcher's stack
// of StableIValues (every handle on it is owned here and freed on every path),
// find the call site by its two texts, fill its KernelCall from the tensors,
// allocate the outputs with torch's allocator (so CUDA graph pools and
// torch's memory accounting see them) and launch on torch's current stream.
// An error leaves as a C++ exception, which torch raises as RuntimeError
// with the message, prefixed by jitkernel's error type.
#include "jitkernel/torch_op/op_kernels.hpp"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/engine/call_signature.hpp"
#include "jitkernel/torch_op/op_call.hpp"
#include "jitkernel/torch_op/torch_abi.hpp"

namespace jk::torch_op {
namespace {

// Owns the handles of one stack slot type; frees them when the kernel returns or throws.
struct OwnedString {
  const TorchAbi& a;
  StringHandle h;
  ~OwnedString() { a.delete_string(h); }
  std::string_view view() const {
    const char* data = nullptr;
    std::size_t n = 0;
    check(a.string_data(h, &data), "reading a string argument");
    check(a.string_length(h, &n), "reading a string argument");
    return {data, n};
  }
};

struct OwnedTensor {
  const TorchAbi* a;
  AtenTensorHandle h;
  OwnedTensor(const TorchAbi& abi, AtenTensorHandle t) : a(&abi), h(t) {}
  OwnedTensor(OwnedTensor&& o) noexcept : a(o.a), h(o.h) { o.h = nullptr; }
  OwnedTensor(const OwnedTensor&) = delete;
  ~OwnedTensor() {
    if (h != nullptr) a->delete_tensor(h);
  }
  AtenTensorHandle release() {
    AtenTensorHandle t = h;
    h = nullptr;
    return t;
  }
};

// A list argument's elements (the list itself is freed at once).
std::vector<StableIValue> take_list(const TorchAbi& a, StableIValue v) {
  auto list = reinterpret_cast<StableListHandle>(v);
  std::size_t n = 0;
  std::vector<StableIValue> items;
  AbiError err = a.list_size(list, &n);
  if (err == 0) {
    items.resize(n);
    for (std::size_t i = 0; i < n && err == 0; ++i) err = a.list_get_item(list, i, &items[i]);
  }
  a.delete_list(list);
  check(err, "reading a list argument");
  return items;
}

std::vector<OwnedTensor> take_tensors(const TorchAbi& a, StableIValue v) {
  std::vector<OwnedTensor> out;
  for (StableIValue item : take_list(a, v)) out.emplace_back(a, reinterpret_cast<AtenTensorHandle>(item));
  return out;
}

// A CUDA tensor as an array view; `what` names it in errors.
ArrayView view_of(const TorchAbi& a, AtenTensorHandle t, const std::string& argument, std::size_t index) {
  std::int32_t device_type = 0, device = 0, code = 0;
  std::int64_t ndim = 0, *sizes = nullptr, *strides = nullptr;
  void* data = nullptr;
  check(a.device_type(t, &device_type), "reading a tensor's device");
  if (device_type != a.device_type_cuda) {
    throw ArgumentTypeError(argument.c_str(), item_text(argument.c_str(), index) +
                                                  ": a traced jitkernel call runs on CUDA tensors");
  }
  check(a.device_index(t, &device), "reading a tensor's device");
  check(a.dtype(t, &code), "reading a tensor's dtype");
  check(a.dim(t, &ndim), "reading a tensor's rank");
  check(a.sizes(t, &sizes), "reading a tensor's sizes");
  check(a.strides(t, &strides), "reading a tensor's strides");
  check(a.data_ptr(t, &data), "reading a tensor's data pointer");
  std::optional<DType> dtype = a.dtype_of(code);
  if (!dtype) {
    throw ArgumentTypeError(argument.c_str(), item_text(argument.c_str(), index) +
                                                  " has a torch dtype jitkernel has no kernel type for");
  }
  ArrayView v;
  v.data = data;
  v.dtype = *dtype;
  v.device = device;
  v.shape.assign(sizes, sizes + ndim);
  v.strides.assign(strides, strides + ndim);
  return v;
}

// torch turns any C++ exception into RuntimeError(what()): the message starts with jitkernel's error type,
// "jitkernel.<Python class>: <what>", which Python callers turn back into that class (torch_ops.py).
[[noreturn]] void rethrow_named() {
  auto named = [](const char* type, const std::exception& e) {
    return std::runtime_error(std::string("jitkernel.") + type + ": " + e.what());
  };
  try {
    throw;
  } catch (const ArgumentTypeError& e) {
    throw named("ArgumentTypeError", e);
  } catch (const ArgumentError& e) {
    throw named("ArgumentError", e);
  } catch (const CompileError& e) {
    throw named("CompileError", e);
  } catch (const KernelBoundsError& e) {
    throw named("KernelBoundsError", e);
  } catch (const UnwrittenOutput& e) {
    throw named("UnwrittenOutputError", e);
  } catch (const KernelFault& e) {
    throw named("KernelFaultError", e);
  } catch (const CudaError& e) {
    throw named("CudaError", e);
  } catch (const CudaNotAvailable& e) {
    throw named("CudaNotAvailableError", e);
  } catch (const std::exception& e) {
    throw named("JitKernelError", e);
  }
}

// launch(str kernel, str call, Tensor[] arrays, SymInt[] ints, float[] floats) -> Tensor[]
// launch_into(..., Tensor(a!)[] outputs) -> ()
template <bool Into>
void run_op(StableIValue* stack, std::uint64_t num_args) {
  const TorchAbi& a = abi();
  if (num_args != (Into ? 6u : 5u)) throw Error("jitkernel: the torch op was called with an unexpected schema");
  OwnedString kernel_text{a, reinterpret_cast<StringHandle>(stack[0])};
  OwnedString call_text{a, reinterpret_cast<StringHandle>(stack[1])};
  std::vector<OwnedTensor> arrays = take_tensors(a, stack[2]);
  OpArguments args;
  for (StableIValue v : take_list(a, stack[3])) args.ints.push_back(static_cast<std::int64_t>(v));
  for (StableIValue v : take_list(a, stack[4])) {
    double d;
    std::memcpy(&d, &v, sizeof d);
    args.floats.push_back(d);
  }
  std::vector<OwnedTensor> given = Into ? take_tensors(a, stack[5]) : std::vector<OwnedTensor>{};
  try {
    OpCall& op = op_call(kernel_text.view(), call_text.view());
    for (std::size_t i = 0; i < arrays.size(); ++i) args.arrays.push_back(view_of(a, arrays[i].h, "inputs", i));
    KernelCall& call = op.prepare(args);
    int device = -1;
    for (const ArrayView& v : args.arrays) device = device < 0 ? v.device : device;
    std::vector<OwnedTensor> made;
    if (Into) {
      for (std::size_t j = 0; j < given.size(); ++j) call.provided_outputs.push_back(view_of(a, given[j].h, "outputs", j));
      if (device < 0 && !call.provided_outputs.empty()) device = call.provided_outputs[0].device;
    } else {
      if (device < 0) throw ArgumentError("inputs", "a torch op without tensor inputs runs in Python");
      for (std::size_t j = 0; j < call.output_shapes.size(); ++j) {
        const std::vector<std::int64_t>& shape = call.output_shapes[j];
        std::vector<std::int64_t> strides = row_major_strides(shape);
        AtenTensorHandle t = nullptr;
        check(a.empty_strided(static_cast<std::int64_t>(shape.size()), shape.data(), strides.data(),
                              a.code_of(call.output_dtypes[j]), a.device_type_cuda, device, &t),
              "allocating an output");
        made.emplace_back(a, t);
        call.provided_outputs.push_back(view_of(a, t, "outputs", j));
      }
      call.outputs_allocated = true;  // new tensors: checked mode poisons them
    }
    void* stream = nullptr;
    check(a.current_cuda_stream(device < 0 ? 0 : device, &stream), "reading torch's current stream");
    call.launch.stream = reinterpret_cast<std::uintptr_t>(stream);
    if (op.verbose()) {
      GeneratedKernel generated = op.kernel().generate(signature_of(call.inputs, call.output_dtypes, call.template_args));
      std::fwrite(generated.source.data(), 1, generated.source.size(), stdout);
      std::fputc('\n', stdout);
      std::fflush(stdout);
    }
    op.launch(call);
    if (!Into) {
      StableListHandle list = nullptr;
      check(a.new_list(made.size(), &list), "making the output list");
      for (OwnedTensor& t : made) {
        AbiError err = a.list_push_back(list, reinterpret_cast<StableIValue>(t.h));
        if (err != 0) {
          a.delete_list(list);  // the tensors not yet handed over are still ours
          check(err, "filling the output list");
        }
        t.release();
      }
      stack[0] = reinterpret_cast<StableIValue>(list);
    }
  } catch (...) {
    rethrow_named();
  }
}

void launch_kernel(StableIValue* stack, std::uint64_t num_args, std::uint64_t) { run_op<false>(stack, num_args); }
void launch_into_kernel(StableIValue* stack, std::uint64_t num_args, std::uint64_t) { run_op<true>(stack, num_args); }

}  // namespace

void register_op_kernels(const std::vector<std::string>& libraries) {
  static std::once_flag once;
  static TorchLibraryHandle library = nullptr;  // kept for the process: dropping it unregisters the kernels
  std::call_once(once, [&] {
    const TorchAbi& a = load_abi(libraries);
    check(a.library_init_impl("jitkernel", "CUDA", __FILE__, __LINE__, &library), "creating the op library");
    check(a.library_impl(library, "launch", &launch_kernel, kAbiVersion), "registering jitkernel::launch");
    check(a.library_impl(library, "launch_vjp", &launch_kernel, kAbiVersion), "registering jitkernel::launch_vjp");
    check(a.library_impl(library, "launch_into", &launch_into_kernel, kAbiVersion),
          "registering jitkernel::launch_into");
  });
}

}  // namespace jk::torch_op
