// CUDA's half of `_core.KernelBase` (the type is kernel_object.cpp's):
// compile() and attributes() without and with a GPU, and the module's CUDA
// functions (compile_cuda, call records for JITKERNEL_RECORD).
#include <cstdint>
#include <string>

#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "call/compile_options.hpp"
#include "call/convert.hpp"
#include "call/launch_options.hpp"
#include "call/template_args.hpp"
#include "objects/kernel_object.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/cuda/binary/module_loader.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/launch/launch.hpp"
#include "jitkernel/cuda/nvrtc/compile.hpp"
#include "jitkernel/cuda/nvrtc/compile_cache.hpp"
#include "jitkernel/engine/record_file.hpp"
#include "jitkernel/engine/kernel.hpp"

namespace jk::py {
namespace {

cuda::CompileTarget target_arg(const std::string& target) {
  if (target == "cubin") return cuda::CompileTarget::Cubin;
  if (target == "ptx") return cuda::CompileTarget::Ptx;
  throw ArgumentError("target", "expected 'cubin' or 'ptx', got '" + target + "'");
}

// "sm_90a", "sm_80", "compute_90a" (PTX only), ...
void arch_arg(const std::string& arch, cuda::CompileTarget target) {
  auto digits_then_suffix = [](const std::string& s, std::size_t from) {
    std::size_t i = from;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    std::size_t n = i - from;
    if (n < 2 || n > 3) return false;
    return i == s.size() || (i + 1 == s.size() && (s[i] == 'a' || s[i] == 'f'));
  };
  bool ok = (arch.rfind("sm_", 0) == 0 && digits_then_suffix(arch, 3)) ||
            (target == cuda::CompileTarget::Ptx && arch.rfind("compute_", 0) == 0 &&
             digits_then_suffix(arch, 8));
  if (!ok)
    throw ArgumentError("arch", "expected a GPU architecture such as 'sm_90a' (H100/H200), "
                                "'sm_80' or 'sm_100a'" +
                                    std::string(target == cuda::CompileTarget::Ptx
                                                    ? " (or 'compute_90a' for PTX)"
                                                    : "") +
                                    ", got '" + arch + "'");
}

// kernel.compile(...): cubin or PTX for `arch` without a GPU (through the disk cache).
nb::bytes compile_kernel(const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl,
                         const std::string& arch, const std::string& target) {
  cuda::CompileTarget t = target_arg(target);
  arch_arg(arch, t);
  cuda_kernel_of(self, "compile");
  GeneratedKernel kernel = generate(self, inputs, output_dtypes, tmpl);
  std::string binary;
  {
    nb::gil_scoped_release unlocked;  // other Python threads run during NVRTC
    binary = cuda::compile_kernel_persistent(kernel, arch, t);
  }
  return nb::bytes(binary.data(), binary.size());
}

// kernel.attributes(...): compiles and loads the kernel for this signature on
// `device` and reads what the driver says of it (launch_options.hpp).
nb::dict attributes(PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl,
                    nb::handle threadgroup, nb::handle shared_memory, int device) {
  Kernel& kernel = cuda_kernel_of(self, "attributes");
  KernelCall kc;
  kc.inputs = describe_inputs(inputs, &self.input_names, true);
  kc.output_dtypes = output_dtypes_arg(output_dtypes, &self.output_names);
  kc.output_shapes.resize(kc.output_dtypes.size());
  kc.template_args = template_args(tmpl);
  int shared = kernel.spec().shared_memory;
  if (!shared_memory.is_none()) {
    std::int64_t bytes = 0;
    if (int_value(shared_memory, &bytes) != IntResult::Ok || bytes < 0 || bytes > INT32_MAX)
      throw ArgumentError("shared_memory", "expected a number of bytes >= 0, got " + repr_text(shared_memory));
    shared = static_cast<int>(bytes);
  }
  const cuda::DeviceInfo& info = cuda::device_info(device);
  int threads = 0;  // 0: the most the kernel allows
  if (!threadgroup.is_none()) {
    const Dim3 t = dim3_arg(threadgroup, "threadgroup");
    if (t.x * t.y * t.z > info.max_threads_per_block)
      throw ArgumentError("threadgroup", dims_text(t) + " has more threads than the device's " +
                                             std::to_string(info.max_threads_per_block) + " per block");
    threads = static_cast<int>(t.x * t.y * t.z);
  }
  const CompiledKernel compiled = kernel.load(kc, device);  // releases the GIL while compiling
  cuda::DeviceGuard guard(device);
  auto function = static_cast<cuda::CUfunction>(compiled.handle);
  cuda::ensure_dynamic_shared_memory(function, kernel.spec().name.c_str(), shared, device);
  const cuda::FunctionAttributes a = cuda::function_attributes(function, device, threads, shared);
  return attributes_dict(a, threads > 0 ? threads : a.max_threads_per_block);
}

nb::bytes compile_cuda(const std::string& source, const std::string& arch, const std::string& target,
                       const std::string& name, nb::handle compile_options) {
  cuda::CompileTarget t = target_arg(target);
  arch_arg(arch, t);
  const CudaCompileOptions options = compile_options_arg(compile_options);
  if (options.checked)
    throw ArgumentError("compile_options", "checked: checked mode applies to cuda_kernel bodies, whose arrays "
                                           "jitkernel declares; compile_cuda compiles a whole file as written");
  std::string binary;
  {
    nb::gil_scoped_release unlocked;
    binary = cuda::compile_source_persistent(source, name, arch, t, options);
  }
  return nb::bytes(binary.data(), binary.size());
}

}  // namespace

void bind_cuda_methods(nb::class_<PyKernel>& cls) {
  using namespace nb::literals;
  cls.def("_attributes", &attributes, "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(),
          "threadgroup"_a.none(), "shared_memory"_a.none(), "device"_a)
      .def("_compile", &compile_kernel, "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(),
           "arch"_a, "target"_a);
}

namespace {

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def(
      "_set_call_record", [](const std::string& path) { set_call_record_path(path); }, "path"_a,
      "Appends a JSON line per new (kernel, signature) to `path` ('' stops), as JITKERNEL_RECORD does.");
  m.def(
      "_call_record_line",
      [](const PyKernel& self, nb::handle inputs, nb::handle output_dtypes, nb::handle tmpl) {
        return call_record_line(named_kernel(self).spec(), signature(self, inputs, output_dtypes, tmpl));
      },
      "kernel"_a, "inputs"_a.none(), "output_dtypes"_a.none(), "template"_a.none(),
      "The JITKERNEL_RECORD line of a call with these arguments (internal, precompile's dedupe and tests).");
  m.def("compile_cuda", &compile_cuda, "source"_a, "arch"_a, "target"_a, "name"_a, "compile_options"_a.none(),
        "Compiles standalone CUDA source with NVRTC (no GPU needed); returns cubin or PTX bytes.");
}

const Registration reg(order::kernel, "cuda_kernel", bind);

}  // namespace
}  // namespace jk::py
