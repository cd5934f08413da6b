// signature_of() and plan_key(): the call signature from a call, and its
// compact byte form, built in a reused buffer on every call (so the common
// case of a repeated call allocates nothing).
#include "jitkernel/engine/call_signature.hpp"

#include <algorithm>

namespace jk {
namespace {

template <typename T>
void append_raw(std::string& key, T value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof value);
}

}  // namespace

CallSignature signature_of(const std::vector<KernelInput>& inputs, const std::vector<DType>& output_dtypes,
                           const std::vector<TemplateArg>& template_args) {
  CallSignature signature;
  signature.inputs.reserve(inputs.size());
  for (const KernelInput& input : inputs) {
    InputSignature s;
    if (const auto* array = std::get_if<ArrayView>(&input)) {
      s.dtype = array->dtype;
      s.ndim = array->ndim();
      s.size = array->size();
      for (auto extent : array->shape) s.max_extent = std::max(s.max_extent, extent);
    } else {
      s.is_scalar = true;
      s.dtype = std::get<Scalar>(input).dtype;
    }
    signature.inputs.push_back(s);
  }
  signature.output_dtypes = output_dtypes;
  signature.template_args = template_args;
  return signature;
}

void plan_key(std::string& key, const KernelCall& call, bool size_changes_code) {
  key.clear();
  append_raw<std::uint32_t>(key, static_cast<std::uint32_t>(call.inputs.size()));
  for (const KernelInput& input : call.inputs) {
    if (const auto* array = std::get_if<ArrayView>(&input)) {
      const bool small = size_changes_code && array->size() < kSmallInputElements;
      key.push_back(small ? 'c' : 'a');
      key.push_back(static_cast<char>(array->dtype));
      append_raw<std::int32_t>(key, array->ndim());
    } else {
      key.push_back('s');
      key.push_back(static_cast<char>(std::get<Scalar>(input).dtype));
    }
  }
  append_raw<std::uint32_t>(key, static_cast<std::uint32_t>(call.output_dtypes.size()));
  for (DType dtype : call.output_dtypes) key.push_back(static_cast<char>(dtype));
  append_raw<std::uint32_t>(key, static_cast<std::uint32_t>(call.template_args.size()));
  for (const TemplateArg& t : call.template_args) {
    key.push_back(static_cast<char>(t.kind));
    append_raw<std::uint32_t>(key, static_cast<std::uint32_t>(t.name.size()));
    key += t.name;
    if (t.kind == TemplateArg::Kind::DType) {
      key.push_back(static_cast<char>(t.dtype));
    } else {
      append_raw<std::int64_t>(key, t.int_value);
    }
  }
}

}  // namespace jk
