// Resolving libtorch's stable C ABI (torch_abi.hpp) in the libraries the
// process already loaded: dlopen with RTLD_NOLOAD never loads a second torch.
#include "jitkernel/torch_op/torch_abi.hpp"

#include <dlfcn.h>

#include <atomic>
#include <mutex>

#include "jitkernel/core/errors.hpp"

namespace jk::torch_op {
namespace {

std::atomic<TorchAbi*> g_abi{nullptr};  // resolved once, never freed (kernels may run during exit)
std::mutex g_mutex;

class Symbols {
 public:
  explicit Symbols(const std::vector<std::string>& libraries) {
    if (libraries.empty()) handles_.push_back(RTLD_DEFAULT);  // a program linked with libtorch
    for (const std::string& path : libraries) {
      void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
      if (handle == nullptr) {
        throw Error("jitkernel: the torch op's C++ implementation needs " + path +
                    " loaded by the process (import torch first)");
      }
      handles_.push_back(handle);  // kept open: the process keeps torch loaded
    }
  }

  template <typename Fn>
  void get(Fn*& out, const char* name) const {
    for (void* handle : handles_) {
      if (void* sym = dlsym(handle, name)) {
        out = reinterpret_cast<Fn*>(sym);
        return;
      }
    }
    throw Error(std::string("jitkernel: libtorch has no ") + name +
                " (the torch op's C++ implementation needs torch >= 2.10 built with CUDA)");
  }

 private:
  std::vector<void*> handles_;
};

// dtype code functions of the AOTInductor shim, in DType order.
constexpr const char* kDTypeFunctions[kNumDTypes] = {
    "aoti_torch_dtype_bool",    "aoti_torch_dtype_int8",     "aoti_torch_dtype_int16",
    "aoti_torch_dtype_int32",   "aoti_torch_dtype_int64",    "aoti_torch_dtype_uint8",
    "aoti_torch_dtype_uint16",  "aoti_torch_dtype_uint32",   "aoti_torch_dtype_uint64",
    "aoti_torch_dtype_float16", "aoti_torch_dtype_bfloat16", "aoti_torch_dtype_float32",
    "aoti_torch_dtype_float64", "aoti_torch_dtype_complex64"};

TorchAbi resolve(const Symbols& s) {
  TorchAbi a{};
  s.get(a.library_init_fragment, "aoti_torch_library_init_fragment");
  s.get(a.library_def, "aoti_torch_library_def");
  s.get(a.library_init_impl, "aoti_torch_library_init_impl");
  s.get(a.library_impl, "torch_library_impl");
  s.get(a.delete_library, "aoti_torch_delete_library_object");
  s.get(a.list_size, "torch_list_size");
  s.get(a.list_get_item, "torch_list_get_item");
  s.get(a.new_list, "torch_new_list_reserve_size");
  s.get(a.list_push_back, "torch_list_push_back");
  s.get(a.delete_list, "torch_delete_list");
  s.get(a.string_length, "torch_string_length");
  s.get(a.string_data, "torch_string_c_str");
  s.get(a.delete_string, "torch_delete_string");
  s.get(a.data_ptr, "aoti_torch_get_data_ptr");
  s.get(a.dim, "aoti_torch_get_dim");
  s.get(a.sizes, "aoti_torch_get_sizes");
  s.get(a.strides, "aoti_torch_get_strides");
  s.get(a.dtype, "aoti_torch_get_dtype");
  s.get(a.device_type, "aoti_torch_get_device_type");
  s.get(a.device_index, "aoti_torch_get_device_index");
  s.get(a.empty_strided, "aoti_torch_empty_strided");
  s.get(a.delete_tensor, "aoti_torch_delete_tensor_object");
  s.get(a.current_cuda_stream, "aoti_torch_get_current_cuda_stream");
  std::int32_t (*code)() = nullptr;
  s.get(code, "aoti_torch_device_type_cuda");
  a.device_type_cuda = code();
  a.dtype_codes.resize(kNumDTypes);
  for (int i = 0; i < kNumDTypes; ++i) {
    s.get(code, kDTypeFunctions[i]);
    a.dtype_codes[static_cast<std::size_t>(i)] = code();
  }
  return a;
}

}  // namespace

std::optional<DType> TorchAbi::dtype_of(std::int32_t code) const {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (dtype_codes[static_cast<std::size_t>(i)] == code) return static_cast<DType>(i);
  }
  return std::nullopt;
}

std::int32_t TorchAbi::code_of(DType dtype) const { return dtype_codes[static_cast<std::size_t>(dtype)]; }

const TorchAbi& load_abi(const std::vector<std::string>& libraries) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_abi.load() == nullptr) g_abi.store(new TorchAbi(resolve(Symbols(libraries))));
  return *g_abi.load();
}

const TorchAbi& abi() {
  TorchAbi* a = g_abi.load(std::memory_order_acquire);
  if (a == nullptr) throw Error("jitkernel: the torch op's C++ implementation was not registered");
  return *a;
}

void check(AbiError code, const char* what) {
  if (code != 0) throw Error(std::string("jitkernel: ") + what + ": libtorch returned error " + std::to_string(code));
}

}  // namespace jk::torch_op
