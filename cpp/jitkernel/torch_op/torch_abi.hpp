// The part of libtorch's stable C ABI (torch/csrc/stable/c/shim.h and the
// AOTInductor shim it builds on) that the torch op's C++ implementation
// uses, looked up at run time in the libtorch a process already loaded:
// jitkernel builds without torch headers or libraries, and one wheel serves
// every torch release from 2.10 on (the first with lists and strings in the
// stable ABI). The declarations are written from the ABI's documented
// signatures; every call's return code is checked by `check`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jitkernel/core/dtype.hpp"

namespace jk::torch_op {

using StableIValue = std::uint64_t;
struct AtenTensorOpaque;
using AtenTensorHandle = AtenTensorOpaque*;
struct TorchLibraryOpaque;
using TorchLibraryHandle = TorchLibraryOpaque*;
struct StableListOpaque;
using StableListHandle = StableListOpaque*;
struct StringOpaque;
using StringHandle = StringOpaque*;
using AbiError = std::int32_t;  // 0: success
using BoxedKernel = void (*)(StableIValue* stack, std::uint64_t num_args, std::uint64_t num_outputs);

// The ABI version jitkernel's kernels are written against (2.10.0): libtorch
// converts the dispatcher's values to the StableIValue layout of that version.
inline constexpr std::uint64_t kAbiVersion = (std::uint64_t{2} << 56) | (std::uint64_t{10} << 48);

struct TorchAbi {
  AbiError (*library_init_fragment)(const char* ns, const char* file, std::uint32_t line, TorchLibraryHandle* out);
  AbiError (*library_def)(TorchLibraryHandle lib, const char* schema);
  AbiError (*library_init_impl)(const char* ns, const char* dispatch_key, const char* file, std::uint32_t line,
                                TorchLibraryHandle* out);
  AbiError (*library_impl)(TorchLibraryHandle lib, const char* name, BoxedKernel fn, std::uint64_t version);
  AbiError (*delete_library)(TorchLibraryHandle lib);
  AbiError (*list_size)(StableListHandle list, std::size_t* size);
  AbiError (*list_get_item)(StableListHandle list, std::size_t index, StableIValue* out);
  AbiError (*new_list)(std::size_t reserve, StableListHandle* out);
  AbiError (*list_push_back)(StableListHandle list, StableIValue value);
  AbiError (*delete_list)(StableListHandle list);
  AbiError (*string_length)(StringHandle s, std::size_t* length);
  AbiError (*string_data)(StringHandle s, const char** data);
  AbiError (*delete_string)(StringHandle s);
  AbiError (*data_ptr)(AtenTensorHandle t, void** out);
  AbiError (*dim)(AtenTensorHandle t, std::int64_t* out);
  AbiError (*sizes)(AtenTensorHandle t, std::int64_t** out);
  AbiError (*strides)(AtenTensorHandle t, std::int64_t** out);
  AbiError (*dtype)(AtenTensorHandle t, std::int32_t* out);
  AbiError (*device_type)(AtenTensorHandle t, std::int32_t* out);
  AbiError (*device_index)(AtenTensorHandle t, std::int32_t* out);
  AbiError (*empty_strided)(std::int64_t ndim, const std::int64_t* sizes, const std::int64_t* strides,
                            std::int32_t dtype, std::int32_t device_type, std::int32_t device_index,
                            AtenTensorHandle* out);
  AbiError (*delete_tensor)(AtenTensorHandle t);
  AbiError (*current_cuda_stream)(std::int32_t device_index, void** stream);
  std::int32_t device_type_cuda = 0;
  // torch's dtype code for each jitkernel DType it has (-1: none).
  std::vector<std::int32_t> dtype_codes;

  std::optional<DType> dtype_of(std::int32_t code) const;
  std::int32_t code_of(DType dtype) const;
};

// Resolves the ABI in the given libraries (already loaded by the process:
// libtorch_cpu and libtorch_cuda; none: the process's global symbols, as in
// a C++ program linked with libtorch), once. Error naming the missing symbol when
// one is absent (a torch older than 2.10, or one without CUDA).
const TorchAbi& load_abi(const std::vector<std::string>& libraries);
// The ABI load_abi resolved; Error when it has not run.
const TorchAbi& abi();

// Throws Error("<what>: libtorch returned error <code>") unless `code` is 0.
void check(AbiError code, const char* what);

}  // namespace jk::torch_op
