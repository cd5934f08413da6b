// precompiled_cuda_kernel (see precompiled_kernel.hpp): validate what can be
// validated without a GPU, prepare the call on the shared launch path, load
// the binary through the module cache (once per content and device), look the
// entry up once, check its parameters, pack pointers and scalars, launch.
// Binaries are told apart by the SHA-256 of their bytes: with a 64-bit
// non-cryptographic hash, two different binaries of equal size can be made
// to collide, and the second would be checked against (and run) the first.
#include "jitkernel/cuda/launch/precompiled_kernel.hpp"

#include <list>
#include <map>
#include <mutex>
#include <tuple>

#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/blocking.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/binary/binary_image.hpp"
#include "jitkernel/cuda/binary/module_loader.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/launch/param_pack.hpp"
#include "jitkernel/engine/validate_call.hpp"

namespace jk::cuda {
namespace {

constexpr CUresult kCudaErrorInvalidValue = 1;
constexpr std::size_t kMaxParams = 32768;  // kernel parameters take at most 32764 bytes

using ContentKey = cache::Digest;  // SHA-256 of compiled_source

ContentKey content_key(const std::string& bytes) { return cache::sha256(bytes); }

// Memory a parsed binary holds (its entry names and parameter lists).
std::size_t footprint(const BinaryImage& image) {
  std::size_t bytes = sizeof(BinaryImage) + image.images.capacity() * sizeof(FatbinImage);
  for (const EntryPoint& e : image.entries) {
    bytes += sizeof(EntryPoint) + e.name.capacity();
    if (e.params) bytes += e.params->capacity() * sizeof(KernelParam);
  }
  return bytes;
}

// Parsed binaries, per content, least recently used first out: a process
// that passes ever new binaries keeps at most the limits' worth.
class ParsedCache {
 public:
  std::shared_ptr<const BinaryImage> find(const ContentKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);  // most recently used
    return it->second->image;
  }
  std::shared_ptr<const BinaryImage> insert(const ContentKey& key,
                                            std::shared_ptr<const BinaryImage> image) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) return it->second->image;  // a racing parse
    const std::size_t size = footprint(*image);
    order_.push_front({key, image, size});
    index_.emplace(key, order_.begin());
    bytes_ += size;
    while (!order_.empty() &&
           (order_.size() > kMaxParsedBinaries || bytes_ > kMaxParsedBinaryBytes)) {
      bytes_ -= order_.back().bytes;
      index_.erase(order_.back().key);
      order_.pop_back();
    }
    return image;
  }
  ParsedCacheInfo info() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {order_.size(), bytes_, kMaxParsedBinaries, kMaxParsedBinaryBytes};
  }

 private:
  struct Entry {
    ContentKey key;
    std::shared_ptr<const BinaryImage> image;
    std::size_t bytes;
  };
  std::mutex mutex_;
  std::list<Entry> order_;  // most recently used first
  std::map<ContentKey, std::list<Entry>::iterator> index_;
  std::size_t bytes_ = 0;
};

ParsedCache& parsed_cache() {
  static auto* cache = new ParsedCache;  // never destroyed: used until exit
  return *cache;
}

std::shared_ptr<const BinaryImage> parsed(const std::string& bytes, const ContentKey& key) {
  if (auto image = parsed_cache().find(key)) return image;
  auto image = std::make_shared<const BinaryImage>(parse_binary(bytes));  // throws on bad bytes
  return parsed_cache().insert(key, std::move(image));
}

// An entry point resolved on one device. `driver_params` holds the
// parameter list the driver reports when the binary itself records none
// (fatbins whose images are all compressed).
struct Function {
  CUfunction function = nullptr;
  std::optional<std::vector<KernelParam>> driver_params;
};

std::string device_label(int device) { return "device " + std::to_string(device); }

// The entry points of a loaded module, as the driver lists them (nullopt when
// the driver cannot enumerate them: before CUDA 12.4).
std::optional<std::vector<std::string>> driver_entry_names(CUmodule module) {
  const DriverApi& api = driver();
  unsigned count = 0;
  if (!api.cuModuleGetFunctionCount || !api.cuModuleEnumerateFunctions || !api.cuFuncGetName ||
      api.cuModuleGetFunctionCount(&count, module) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  std::vector<CUfunction> functions(count);
  if (count && api.cuModuleEnumerateFunctions(functions.data(), count, module) != CUDA_SUCCESS) {
    return std::nullopt;
  }
  std::vector<std::string> names;
  for (CUfunction f : functions) {
    const char* name = nullptr;
    if (api.cuFuncGetName(&name, f) != CUDA_SUCCESS || !name) return std::nullopt;
    names.emplace_back(name);
  }
  return names;
}

// Parameter offsets/sizes as the driver reports them (CUDA 12.4+), or nullopt.
std::optional<std::vector<KernelParam>> driver_params(CUfunction function) {
  const DriverApi& api = driver();
  if (!api.cuFuncGetParamInfo) return std::nullopt;
  std::vector<KernelParam> params;
  for (std::size_t i = 0; i < kMaxParams; ++i) {
    std::size_t offset = 0, size = 0;
    CUresult r = api.cuFuncGetParamInfo(function, i, &offset, &size);
    if (r == kCudaErrorInvalidValue) break;  // past the last parameter
    if (r != CUDA_SUCCESS) return std::nullopt;
    params.push_back({offset, size});
  }
  if (params.size() == kMaxParams) return std::nullopt;  // no end found: do not trust it
  return params;
}

struct DriverVersion {
  int value = 0;  // cuDriverGetVersion: 13000 for CUDA 13.0
  std::string text() const {
    return "CUDA " + std::to_string(value / 1000) + "." + std::to_string((value % 1000) / 10);
  }
};

DriverVersion driver_version() {
  DriverVersion v;
  check(driver().cuDriverGetVersion(&v.value), "reading the CUDA driver version");
  return v;
}

// PTX newer than the driver can JIT-compile: say so and what to do instead.
[[noreturn]] void throw_ptx_too_new(const BinaryImage& image, const DriverVersion& driver_version,
                                    const DeviceInfo& info) {
  std::string message = "PTX ISA version " + std::to_string(image.ptx_version_major) + "." +
                        std::to_string(image.ptx_version_minor) +
                        " is newer than the installed driver (" + driver_version.text();
  if (auto max = max_ptx_version_for_driver(driver_version.value)) {
    message += ", PTX up to " + std::to_string(max->first) + "." + std::to_string(max->second);
  }
  message += ") can compile; PTX from a newer toolkit (NVRTC, nvcc) needs a newer driver. "
             "Pass a cubin instead (e.g. jitkernel.compile_cuda(source, arch=\"" + info.arch +
             "\") or nvcc -cubin -arch=" + info.arch + "), or update the NVIDIA driver";
  throw ArgumentError("compiled_source", message);
}

bool ptx_newer_than(const BinaryImage& image, const DriverVersion& driver_version) {
  auto max = max_ptx_version_for_driver(driver_version.value);
  return image.format == BinaryFormat::Ptx && max &&
         std::make_pair(image.ptx_version_major, image.ptx_version_minor) > *max;
}

// The driver's reason for refusing `image` on `device`, as an error about the
// argument that carried it (other driver errors are rethrown as they are).
[[noreturn]] void rethrow_load_error(const CudaError& e, const BinaryImage& image, int device) {
  const DeviceInfo& info = device_info(device);
  const DriverVersion version = driver_version();
  const bool ptx = image.format == BinaryFormat::Ptx;
  if (ptx && (e.code() == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
              (e.code() == CUDA_ERROR_INVALID_PTX && ptx_newer_than(image, version)))) {
    throw_ptx_too_new(image, version, info);
  }
  if (e.code() == CUDA_ERROR_NO_BINARY_FOR_GPU || e.code() == CUDA_ERROR_INVALID_IMAGE ||
      e.code() == CUDA_ERROR_INVALID_PTX) {
    throw ArgumentError("compiled_source", "the driver (" + version.text() +
                                               ") cannot load this " +
                                               binary_format_name(image.format) + " on " +
                                               device_label(device) + " (" + info.name + ", " +
                                               info.arch + "): " + e.what());
  }
  throw;
}

const Function& resolve(const PrecompiledEntry& call, const BinaryImage& image,
                        const ContentKey& key, int device) {
  using FunctionKey = std::tuple<ContentKey, int, std::string>;
  static std::mutex mutex;
  static auto* cache = new std::map<FunctionKey, Function>;
  FunctionKey fkey{key, device, call.name};
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache->find(fkey);
    if (it != cache->end()) return it->second;
  }

  const DeviceInfo& info = device_info(device);
  check_arch(image, info.cc_major, info.cc_minor, device_label(device), info.name);
  if (image.format == BinaryFormat::Ptx) {
    const DriverVersion version = driver_version();
    if (ptx_newer_than(image, version)) throw_ptx_too_new(image, version, info);
  }
  CUmodule module;
  try {
    BlockingSection unlocked;  // loading (PTX: JIT-compiling) can take long; no lock is held here
    module = load_module(device, call.compiled_source);
  } catch (const KernelFault&) {
    throw;
  } catch (const CudaError& e) {
    rethrow_load_error(e, image, device);
  }
  Function f;
  try {
    f.function = get_function(module, call.name);
  } catch (const CudaError& e) {
    if (e.code() != CUDA_ERROR_NOT_FOUND) throw;
    throw_missing_entry(call.name, image.format, driver_entry_names(module));
  }
  const EntryPoint* entry = find_entry(image, call.name);
  if (!entry || !entry->params) f.driver_params = driver_params(f.function);
  std::lock_guard<std::mutex> lock(mutex);
  return cache->emplace(std::move(fkey), std::move(f)).first->second;
}

ParamCheck param_check(const PrecompiledEntry& call, const KernelCall& args, const std::vector<Scalar>& scalars) {
  ParamCheck check;
  check.kernel_name = call.name;
  check.num_inputs = static_cast<int>(args.inputs.size());
  check.num_outputs = static_cast<int>(args.output_shapes.size());
  for (const Scalar& s : scalars) check.scalar_dtypes.push_back(s.dtype);
  return check;
}

// The checks the binary allows without a GPU: its format, `name` among its
// entry points, and the entry's parameters against the call.
std::shared_ptr<const BinaryImage> validate_binary(const PrecompiledEntry& call, const KernelCall& args,
                                                   const std::vector<Scalar>& scalars, const ContentKey& key) {
  if (call.name.empty()) throw ArgumentError("name", "is empty; give the kernel's entry symbol");
  auto image = parsed(call.compiled_source, key);
  const EntryPoint* entry = find_entry(*image, call.name);
  if (entry && entry->params) check_params(*entry->params, param_check(call, args, scalars));
  return image;
}

ContentKey key_of(const PrecompiledEntry& call) {
  return call.content_digest ? *call.content_digest : content_key(call.compiled_source);
}

}  // namespace

ParsedCacheInfo parsed_cache_info() { return parsed_cache().info(); }

void check_precompiled(const PrecompiledEntry& entry, const KernelCall& args, const std::vector<Scalar>& scalars) {
  validate_binary(entry, args, scalars, key_of(entry));
}

PrecompiledEntry recorded_entry(const RecordedKernel& kernel, const char* argument) {
  PrecompiledEntry entry;
  entry.name = kernel.spec.name;
  entry.compiled_source = kernel.binary->bytes;
  entry.content_digest = content_key(entry.compiled_source);
  auto image = parsed(entry.compiled_source, *entry.content_digest);
  const char* format = binary_format_name(image->format);
  if (kernel.binary->format != format) {
    throw ArgumentError(argument, std::string("format: the binary is ") + format + ", not " +
                                      kernel.binary->format + " as the kernel text says");
  }
  return entry;
}

void load_precompiled(const PrecompiledEntry& entry, int device) {
  const ContentKey key = key_of(entry);
  resolve(entry, *parsed(entry.compiled_source, key), key, device);
}

std::vector<OwnedArray> precompiled_cuda_kernel(const PrecompiledCall& call) {
  return precompiled_cuda_kernel(call, call.args, call.scalars);
}

std::vector<OwnedArray> precompiled_cuda_kernel(const PrecompiledEntry& call, const KernelCall& given,
                                               const std::vector<Scalar>& scalars) {
  // Scalar inputs travel as pointers to 0-d device arrays, like MLX's arrays:
  // hand them to prepare_call as host arrays (uploaded on the stream).
  const KernelCall* args = &given;
  KernelCall with_uploads;
  std::vector<Scalar> scalar_inputs;
  for (std::size_t i = 0; i < given.inputs.size(); ++i) {
    const Scalar* s = std::get_if<Scalar>(&given.inputs[i]);
    if (!s) continue;
    if (args != &with_uploads) {
      with_uploads = given;
      scalar_inputs.reserve(given.inputs.size());
      args = &with_uploads;
    }
    scalar_inputs.push_back(*s);
    ArrayView host;
    host.data = scalar_inputs.back().bytes;
    host.dtype = s->dtype;
    host.device = kHostDevice;
    with_uploads.inputs[i] = host;
  }

  // Argument checks (launch.hpp's, then the binary's), then module and entry
  // point, all before prepare_call has side effects (uploads, init_value
  // fills of outputs=): a call that cannot run changes nothing.
  const int device = validate_call(cuda_backend(), *args, args->launch, args->ensure_row_contiguous);
  const ContentKey key = key_of(call);
  std::shared_ptr<const BinaryImage> image = validate_binary(call, *args, scalars, key);
  const Function& f = resolve(call, *image, key, device);
  if (f.driver_params) check_params(*f.driver_params, param_check(call, *args, scalars));
  DeviceGuard guard(device);
  PreparedCall prepared = prepare_call(*args, args->launch, args->ensure_row_contiguous, device);

  // Pack: input pointers, output pointers, then each scalar's bytes.
  ParamPack pack;
  for (std::size_t i = 0; i < prepared.input_count(); ++i) pack.add(prepared.input_array(i)->data);
  for (std::size_t i = 0; i < prepared.output_count(); ++i) pack.add(prepared.output(i).data);
  for (const Scalar& s : scalars) {
    const std::size_t size = dtype_size(s.dtype);
    pack.add_bytes(s.bytes, size, size);
  }
  launch_function(f.function, call.name.c_str(), prepared, args->launch.shared_memory, pack.pointers());
  return std::move(prepared.outputs);
}

}  // namespace jk::cuda
