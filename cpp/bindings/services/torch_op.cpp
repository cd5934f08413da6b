// What python/jitkernel/_frameworks/torch_ops.py needs to put the torch ops'
// C++ implementation under torch's CUDA dispatch key (torch_op/op_kernels.hpp).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "jitkernel/torch_op/op_kernels.hpp"
#include "jitkernel/torch_op/torch_library.hpp"

namespace jk::py {
namespace {

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def("_register_torch_op_kernels", &torch_op::register_op_kernels, "libraries"_a,
        "Registers the C++ implementation of jitkernel::launch, launch_vjp and launch_into for torch's CUDA "
        "dispatch key, resolving libtorch's stable C ABI in `libraries` (the loaded libtorch_cpu and "
        "libtorch_cuda). Once per process; raises when libtorch lacks the ABI (torch < 2.10 or no CUDA).");
  m.def("_torch_op_schemas", [] {
        nb::list out;
        for (const torch_op::OpSchema& op : torch_op::op_schemas()) out.append(nb::make_tuple(op.name, op.signature));
        return out;
      }, "The torch ops' (name, schema) pairs: the one definition torch_ops.register and C++ programs use.");
}

const Registration reg(order::toolkit, "torch_op", bind);

}  // namespace
}  // namespace jk::py
