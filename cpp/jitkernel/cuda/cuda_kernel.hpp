// The C++ API of jitkernel's CUDA factories, usable with plain device
// pointers (ArrayView) from C++; the Python bindings only translate to it.
//
//   jk::cuda::CudaKernel k({.name = "myexp", .input_names = {"inp"},
//                            .output_names = {"out"}, .source = body});
//   auto outs = k(call);   // call: jk::cuda::KernelCall
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jitkernel/codegen/cuda_signature.hpp"
#include "jitkernel/cuda/launch.hpp"
#include "jitkernel/cuda/nvrtc/compile.hpp"

namespace jk::cuda {

struct KernelCall {
  CallArguments args;  // args.ensure_row_contiguous is taken from the spec
  std::vector<TemplateArg> template_args;
  bool shared_memory_given = false;  // false: use the spec's shared_memory
};

// Signature of a call (dtypes/ndims of inputs, output dtypes, template args).
CallSignature describe_call(const std::vector<KernelInput>& inputs,
                            const std::vector<DType>& output_dtypes,
                            const std::vector<TemplateArg>& template_args);

class CudaKernel {
 public:
  // Validates the spec (ArgumentError naming the bad argument).
  explicit CudaKernel(CudaKernelSpec spec);
  ~CudaKernel();
  CudaKernel(CudaKernel&&) noexcept;

  const CudaKernelSpec& spec() const;

  // The exact text that would be compiled for this signature. No GPU needed.
  GeneratedKernel generate(const CallSignature& signature) const;
  // Compiles for `arch` ("sm_90a"...) without a GPU (through the disk cache);
  // returns the cubin/PTX.
  std::string compile(const CallSignature& signature, const std::string& arch,
                      CompileTarget target = CompileTarget::Cubin) const;

  // Generates, compiles (once per signature and device: later calls are one
  // hash lookup), prepares arguments and launches. Returns the outputs it
  // allocated, in output_names order; empty when call.args.provided_outputs
  // gave them (the caller has those arrays).
  std::vector<OwnedArray> operator()(const KernelCall& call);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace jk::cuda
