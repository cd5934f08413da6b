// The launch a compiled torch graph's Python wrapper calls in place of the
// jitkernel::launch / launch_into op (python/jitkernel/_frameworks/
// torch_inductor.py has Inductor write it): the op's arguments, the same call
// site (torch_op/op_call.hpp) and checks, without the dispatcher's argument
// boxing on the way. Tensors are read through torch's DLPack exchange API,
// outputs come from torch's allocator, the launch goes on torch's current
// stream; errors are jitkernel's own exceptions.
#include <Python.h>

#include "bindings.hpp"
#include "call/convert_detail.hpp"
#include "call/dlpack.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/engine/call_signature.hpp"
#include "jitkernel/torch_op/op_call.hpp"

namespace jk::py {
namespace {

std::string_view text_arg(nb::handle s, const char* argument) {
  Py_ssize_t n = 0;
  const char* data = PyUnicode_Check(s.ptr()) ? PyUnicode_AsUTF8AndSize(s.ptr(), &n) : nullptr;
  if (data == nullptr) {
    if (PyErr_Occurred()) PyErr_Clear();
    throw ArgumentTypeError(argument, "expected the serialised " + std::string(argument) + " (str)");
  }
  return {data, static_cast<std::size_t>(n)};
}

const dlpack::ExchangeAPI& torch_exchange_api() {
  static const dlpack::ExchangeAPI* api = nullptr;
  if (api == nullptr) {
    nb::object torch = loaded_module("torch");
    if (torch.is_valid()) api = exchange_api_of(torch.attr("Tensor"));
    if (api == nullptr || api->managed_tensor_allocator == nullptr)
      throw Error("jitkernel: a compiled graph's launch needs torch >= 2.10 (its DLPack exchange API)");
  }
  return *api;
}

// A CUDA tensor of the op's lists as an array view.
ArrayView tensor_view(const dlpack::ExchangeAPI& api, nb::handle t, const char* argument, std::size_t index) {
  dlpack::Tensor dl{};
  ArrayView view;
  if (api.dltensor_from_py_object_no_sync(t.ptr(), &dl) != 0) {
    PyErr_Clear();
    throw ArgumentTypeError(argument, item_text(argument, index) + ": expected a torch tensor, got " + type_text(t));
  }
  if (dl.device.device_type != dlpack::kCUDA || !view_from_dltensor(dl, view))
    throw ArgumentTypeError(argument, item_text(argument, index) + ": a traced jitkernel call runs on CUDA tensors");
  if (torch_is_neg(t))
    throw ArgumentError(argument, item_text(argument, index) + ": the tensor has its negative bit set; call "
                                                               ".resolve_neg() first");
  return view;
}

template <typename T, typename Read>
void read_list(nb::handle list, const char* argument, std::vector<T>& out, Read read) {
  if (!PyList_Check(list.ptr())) throw ArgumentTypeError(argument, "expected a list");
  const Py_ssize_t n = api::list_size(list.ptr());
  out.clear();
  for (Py_ssize_t i = 0; i < n; ++i) out.push_back(read(api::list_item(list.ptr(), i), static_cast<std::size_t>(i)));
}

nb::object graph_launch(nb::handle kernel_text, nb::handle call_text, nb::handle arrays, nb::handle ints,
                        nb::handle floats, nb::handle outputs) {
  torch_op::OpCall& op = torch_op::op_call(text_arg(kernel_text, "kernel"), text_arg(call_text, "call"));
  const dlpack::ExchangeAPI& api = torch_exchange_api();
  torch_op::OpArguments args;  // per call: reading a tensor may run Python, which may launch again
  read_list(arrays, "arrays", args.arrays,
            [&](PyObject* t, std::size_t i) { return tensor_view(api, t, "inputs", i); });
  read_list(ints, "ints", args.ints, [](PyObject* v, std::size_t i) {
    std::int64_t x = 0;
    if (int_value(v, &x) != IntResult::Ok) throw ArgumentTypeError("ints", item_text("ints", i) + ": expected an int64");
    return x;
  });
  read_list(floats, "floats", args.floats, [](PyObject* v, std::size_t i) {
    const double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      throw ArgumentTypeError("floats", item_text("floats", i) + ": expected a float");
    }
    return d;
  });
  KernelCall& call = op.prepare(args);
  const bool into = !outputs.is_none();
  int device = args.arrays.empty() ? -1 : args.arrays[0].device;
  if (into) {
    if (!PyList_Check(outputs.ptr())) throw ArgumentTypeError("outputs", "expected a list");
    for (Py_ssize_t j = 0; j < api::list_size(outputs.ptr()); ++j)
      call.provided_outputs.push_back(
          tensor_view(api, api::list_item(outputs.ptr(), j), "outputs", static_cast<std::size_t>(j)));
    if (device < 0 && !call.provided_outputs.empty()) device = call.provided_outputs[0].device;
  }
  if (device < 0) throw ArgumentError("inputs", "a compiled graph's jitkernel call has a CUDA tensor to run on");
  void* stream = nullptr;
  if (api.current_work_stream(dlpack::kCUDA, device, &stream) != 0) throw nb::python_error();
  call.launch.stream = reinterpret_cast<std::uintptr_t>(stream);
  ConvertedCall conv;
  conv.stream = call.launch.stream;
  conv.stream_is_framework_current = true;
  if (!into) allocate_torch_outputs(nb::none(), device, call, conv);
  if (op.verbose()) {
    GeneratedKernel generated = op.kernel().generate(signature_of(call.inputs, call.output_dtypes, call.template_args));
    nb::print(nb::str(generated.source.c_str()));
  }
  op.launch(call);
  if (into) return nb::none();
  nb::list result;
  for (nb::object& t : conv.allocated) result.append(std::move(t));
  return std::move(result);
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def("_torch_graph_launch", &graph_launch, "kernel"_a, "call"_a, "arrays"_a, "ints"_a, "floats"_a,
        "outputs"_a = nb::none(),
        "What a compiled torch graph runs for jitkernel::launch (outputs=None: returns the outputs, allocated by "
        "torch) and jitkernel::launch_into (writes `outputs`): the op's arguments, checked as the op checks them.");
}

const Registration reg(order::kernel, "graph_launch", bind);

}  // namespace
}  // namespace jk::py
