// The ops' schemas and their definition in a process without Python
// (torch_library.hpp).
#include "jitkernel/torch_op/torch_library.hpp"

#include <mutex>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/torch_op/op_kernels.hpp"
#include "jitkernel/torch_op/torch_abi.hpp"

namespace jk::torch_op {

const std::vector<OpSchema>& op_schemas() {
  static const std::vector<OpSchema> schemas = {
      {"launch", "(str kernel, str call, Tensor[] arrays, SymInt[] ints, float[] floats) -> Tensor[]"},
      // launch with the kernel's backward as its autograd formula (set by the Python front)
      {"launch_vjp", "(str kernel, str call, Tensor[] arrays, SymInt[] ints, float[] floats) -> Tensor[]"},
      {"launch_into",
       "(str kernel, str call, Tensor[] arrays, SymInt[] ints, float[] floats, Tensor(a!)[] outputs) -> ()"},
  };
  return schemas;
}

void register_torch_library(const std::vector<std::string>& libraries) {
  static std::once_flag once;
  static TorchLibraryHandle library = nullptr;  // kept for the process: dropping it undefines the ops
  std::call_once(once, [&] {
    const TorchAbi& a = load_abi(libraries);
    check(a.library_init_fragment("jitkernel", __FILE__, __LINE__, &library), "opening the jitkernel op namespace");
    for (const OpSchema& op : op_schemas()) {
      const std::string schema = std::string(op.name) + op.signature;
      const std::string what = "defining jitkernel::" + std::string(op.name) +
                               " (defined already? In a Python process `import jitkernel` defines the ops)";
      check(a.library_def(library, schema.c_str()), what.c_str());
    }
  });
  register_op_kernels(libraries);
}

}  // namespace jk::torch_op
