// Stage 2: the call signature, everything about a call that changes the
// generated source (input kinds, dtypes, ndims, output dtypes, template
// arguments). Its compact byte form is the key of a kernel's launch plans.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jitkernel/core/dtype.hpp"
#include "jitkernel/engine/kernel_call.hpp"
#include "jitkernel/engine/template_arg.hpp"

namespace jk {

// Inputs with fewer elements than this are "small": Metal declares them in
// its `constant` address space (MLX's rule), which changes the source.
inline constexpr std::int64_t kSmallInputElements = 8;

struct InputSignature {
  bool is_scalar = false;  // a Python scalar passed by value
  DType dtype = DType::Float32;
  int ndim = 0;
  // Elements, and the largest dimension, of the call that made the
  // signature: only small (size < kSmallInputElements) is part of the plan
  // key, and only for backends whose code depends on it; max_extent serves
  // codegen's range checks of the first call (later calls are checked by
  // the backend's launch).
  std::int64_t size = 1;
  std::int64_t max_extent = 0;

  bool small() const { return size < kSmallInputElements; }
};

struct CallSignature {
  std::vector<InputSignature> inputs;
  std::vector<DType> output_dtypes;
  std::vector<TemplateArg> template_args;
};

// The signature of `call` (of its inputs, output dtypes and template args).
CallSignature signature_of(const std::vector<KernelInput>& inputs, const std::vector<DType>& output_dtypes,
                           const std::vector<TemplateArg>& template_args);

// The plan key of `call` in `key` (cleared first; its capacity reused): the
// signature as bytes, with each input's small() bit only when
// `size_changes_code`.
void plan_key(std::string& key, const KernelCall& call, bool size_changes_code);

}  // namespace jk
