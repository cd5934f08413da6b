// The CUDA launch path shared by cuda_kernel and precompiled_cuda_kernel (see
// launch.hpp). Everything that can be checked without a GPU is checked before
// the driver is touched (engine/validate_call.cpp), and everything else before the first allocation, so
// a bad argument never leaves work half-enqueued. Nothing here synchronises.
#include "jitkernel/cuda/launch/launch.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>

#include "jitkernel/core/element_bytes.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/launch/launch_options.hpp"

namespace jk::cuda {
namespace {

constexpr const char* kAxes[3] = {"x", "y", "z"};

std::string device_text(int device) {
  return device == kHostDevice ? "the host" : "cuda:" + std::to_string(device);
}

// The device of the context a (non-special) stream belongs to.
int stream_device(CUstream stream) {
  const DriverApi& api = driver();
  CUcontext ctx = nullptr;
  check(api.cuStreamGetCtx(stream, &ctx), "stream: reading the stream's context");
  CUcontext previous = nullptr;
  check(api.cuCtxGetCurrent(&previous), "reading the current CUDA context");
  if (ctx != previous) check(api.cuCtxSetCurrent(ctx), "stream: entering the stream's context");
  CUdevice dev = 0;
  CUresult r = api.cuCtxGetDevice(&dev);
  if (ctx != previous) api.cuCtxSetCurrent(previous);
  check(r, "stream: reading the stream's device");
  for (int i = 0, n = device_count(); i < n; ++i) {
    CUdevice handle = 0;
    if (api.cuDeviceGet(&handle, i) == CUDA_SUCCESS && handle == dev) return i;
  }
  return static_cast<int>(dev);
}

// A stream of another device's context would fail every enqueue below with
// an opaque driver error: say what is wrong instead. Two cheap driver calls
// when a stream is given; `device`'s context must be current.
void check_stream_device(CUstream stream, int device) {
  if (reinterpret_cast<std::uintptr_t>(stream) <= 2) return;
  const DriverApi& api = driver();
  CUcontext stream_ctx = nullptr, current = nullptr;
  check(api.cuStreamGetCtx(stream, &stream_ctx), "stream: reading the stream's context");
  if (api.cuCtxGetCurrent(&current) != CUDA_SUCCESS || stream_ctx == current) return;
  const int owner = stream_device(stream);
  if (owner != device) {
    throw ArgumentError("stream", "the stream belongs to " + device_text(owner) +
                                      " but the arrays are on " + device_text(device) +
                                      "; pass a stream of the arrays' device");
  }
}

// Inputs decide; then caller-provided outputs; then the stream; else device 0.
int device_of(const KernelCall& args, CUstream stream) {
  int device = kHostDevice;
  std::size_t first = 0;
  for (std::size_t i = 0; i < args.inputs.size(); ++i) {
    const auto* array = std::get_if<ArrayView>(&args.inputs[i]);
    if (array == nullptr || array->device == kHostDevice) continue;
    if (device == kHostDevice) {
      device = array->device;
      first = i;
    } else if (array->device != device) {
      throw ArgumentError("inputs", "inputs[" + std::to_string(i) + "] is on " +
                                        device_text(array->device) + " but inputs[" +
                                        std::to_string(first) + "] is on " + device_text(device) +
                                        "; all inputs must be on one device");
    }
  }
  const bool from_inputs = device != kHostDevice;
  for (std::size_t i = 0; i < args.provided_outputs.size(); ++i) {
    int d = args.provided_outputs[i].device;
    if (device == kHostDevice) {
      device = d;
      first = i;
    } else if (d != device) {
      throw ArgumentError("outputs", "outputs[" + std::to_string(i) + "] is on " + device_text(d) +
                                         " but " +
                                         (from_inputs ? "the inputs are"
                                                      : "outputs[" + std::to_string(first) + "] is") +
                                         " on " + device_text(device));
    }
  }
  if (device != kHostDevice) return device;
  // 0, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) name no device.
  if (reinterpret_cast<std::uintptr_t>(stream) > 2) return stream_device(stream);
  return 0;
}

}  // namespace

// Remembers the largest MAX_DYNAMIC_SHARED_SIZE_BYTES set per function. The
// attribute only ever rises: lowering it could fail a launch another thread
// is about to make with the larger amount.
void ensure_dynamic_shared_memory(CUfunction function, const char* kernel_name, int bytes,
                                  int device) {
  if (bytes <= 0) return;
  static std::mutex mutex;
  static auto* record = new std::unordered_map<CUfunction, int>;
  std::lock_guard<std::mutex> lock(mutex);
  int& current = (*record)[function];
  if (current >= bytes) return;
  const DriverApi& api = driver();
  CUresult r = api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  if (r != CUDA_SUCCESS) {
    int static_bytes = 0;
    const int limit = device_info(device).max_shared_memory_per_block_optin;
    if (api.cuFuncGetAttribute(&static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function) ==
            CUDA_SUCCESS &&
        static_bytes + static_cast<long long>(bytes) > limit) {
      throw ArgumentError("shared_memory", std::to_string(bytes) + " bytes of dynamic shared memory plus the " +
                                               std::to_string(static_bytes) + " bytes of static shared memory "
                                               "kernel '" + kernel_name + "' declares exceed the device "
                                               "maximum of " + std::to_string(limit) + " bytes");
    }
    check(r, ("setting the dynamic shared memory of kernel '" + std::string(kernel_name) + "'").c_str());
  }
  current = bytes;
}

namespace {

// Adds what the function's own limits say to a failed launch.
[[noreturn]] void launch_failed(CUresult r, CUfunction function, const char* kernel_name,
                                const LaunchGeometry& g) {
  std::string what = "launching kernel '" + std::string(kernel_name) + "'";
  if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    const DriverApi& api = driver();
    int max_threads = 0, registers = 0;
    const long long threads = 1LL * g.block[0] * g.block[1] * g.block[2];
    if (api.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function) == 0 &&
        api.cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function) == 0 &&
        max_threads > 0 && threads > max_threads) {
      what += " with " + std::to_string(threads) + " threads per block (the kernel uses " +
              std::to_string(registers) + " registers per thread, so it can run at most " +
              std::to_string(max_threads) + " threads per block: use a smaller threadgroup)";
    }
  }
  check(r, what.c_str());
  throw CudaError(r, what);  // not reached: check() throws for every failure
}

}  // namespace

int resolve_device(const KernelCall& args) {
  return device_of(args, reinterpret_cast<CUstream>(args.launch.stream));
}

PreparedCall prepare_call(const KernelCall& args, const LaunchConfig& launch,
                          bool ensure_row_contiguous, int device) {
  CUstream stream = reinterpret_cast<CUstream>(launch.stream);
  PreparedCall prepared;
  prepared.geometry = launch_geometry(launch, device);  // device limits, before any work is enqueued
  check_stream_device(stream, device);

  prepared.device = device;
  prepared.stream = stream;
  prepared.cooperative = launch.cooperative;
  prepared.cluster = launch.cluster;
  prepared.inputs_ = &args.inputs;
  const std::size_t n_inputs = args.inputs.size();
  for (std::size_t i = 0; i < n_inputs; ++i) {
    const auto* array = std::get_if<ArrayView>(&args.inputs[i]);
    if (array == nullptr) continue;
    const bool host = array->device == kHostDevice;
    if (!host && !(ensure_row_contiguous && !array->row_contiguous())) continue;
    if (prepared.replaced_.empty()) prepared.replaced_.assign(n_inputs, -1);
    prepared.replaced_[i] = static_cast<int>(prepared.temporaries.size());
    prepared.temporaries.push_back(host ? upload(*array, device, stream)
                                        : make_row_contiguous(*array, stream));
  }
  const std::size_t n = args.output_dtypes.size();
  if (!args.provided_outputs.empty()) {
    prepared.provided_ = &args.provided_outputs;
  } else {
    prepared.outputs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      prepared.outputs.push_back(
          allocate_array(device, args.output_dtypes[i], args.output_shapes[i], stream, launch.stream_keepalive));
    }
  }
  if (args.init_value)
    for (std::size_t i = 0; i < n; ++i) fill(prepared.output(i), *args.init_value, stream);
  return prepared;
}

LaunchGeometry launch_geometry(const LaunchConfig& config, int device) {
  const DeviceInfo& info = device_info(device);
  const std::int64_t grid[3] = {config.grid.x, config.grid.y, config.grid.z};
  const std::int64_t group[3] = {config.threadgroup.x, config.threadgroup.y, config.threadgroup.z};
  LaunchGeometry g{};
  std::int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    const std::int64_t block = std::min(group[i], grid[i]);
    if (block > info.max_block_dim[i]) {
      throw ArgumentError("threadgroup", dims_text(config.threadgroup) + " has " + std::to_string(block) +
                                             " threads in " + kAxes[i] + " (after clamping to the grid); "
                                             "the device allows at most " +
                                             std::to_string(info.max_block_dim[i]) + " in " + kAxes[i]);
    }
    const std::int64_t blocks = grid[i] / block + (grid[i] % block != 0);
    if (blocks > info.max_grid_dim[i]) {
      throw ArgumentError("grid", dims_text(config.grid) + " needs " + std::to_string(blocks) +
                                      " blocks of " + std::to_string(block) + " threads in " + kAxes[i] +
                                      "; the device allows at most " +
                                      std::to_string(info.max_grid_dim[i]) + " blocks in " + kAxes[i]);
    }
    threads *= block;
    g.block[i] = static_cast<unsigned>(block);
    g.grid[i] = static_cast<unsigned>(blocks);
  }
  if (threads > info.max_threads_per_block) {
    throw ArgumentError("threadgroup", dims_text(config.threadgroup) + " makes blocks of " +
                                           std::to_string(threads) + " threads (after clamping to the "
                                           "grid); the device allows at most " +
                                           std::to_string(info.max_threads_per_block) + " per block");
  }
  if (config.shared_memory > info.max_shared_memory_per_block_optin) {
    throw ArgumentError("shared_memory", std::to_string(config.shared_memory) +
                                             " bytes requested; the device maximum is " +
                                             std::to_string(info.max_shared_memory_per_block_optin) +
                                             " bytes");
  }
  return g;
}

CUlaunchConfig launch_config(const LaunchGeometry& g, int shared_memory, CUstream stream) {
  CUlaunchConfig config{};
  config.gridDimX = g.grid[0];
  config.gridDimY = g.grid[1];
  config.gridDimZ = g.grid[2];
  config.blockDimX = g.block[0];
  config.blockDimY = g.block[1];
  config.blockDimZ = g.block[2];
  config.sharedMemBytes = static_cast<unsigned>(shared_memory);
  config.hStream = stream;
  return config;
}

void launch_function(CUfunction function, const char* kernel_name, const PreparedCall& prepared,
                     int shared_memory, void** params) {
  const LaunchGeometry& g = prepared.geometry;
  const DriverApi& api = driver();
  ensure_dynamic_shared_memory(function, kernel_name, shared_memory, prepared.device);
  CUlaunchConfig launch = launch_config(g, shared_memory, prepared.stream);
  LaunchAttributes attributes;
  launch_attributes(function, kernel_name, prepared.device, g, shared_memory, prepared.cooperative,
                    prepared.cluster, attributes);
  launch.attrs = attributes.count ? attributes.items : nullptr;
  launch.numAttrs = attributes.count;
  // cuLaunchKernel costs the same as cuLaunchKernelEx (benchmarks/cpp floor cases): one entry point for all.
  CUresult r = api.cuLaunchKernelEx(&launch, function, params, nullptr);
  // A fault reported here comes from an earlier kernel, so the record is
  // updated only after a successful enqueue.
  if (r != CUDA_SUCCESS) launch_failed(r, function, kernel_name, g);
  note_kernel_launch(kernel_name);
}

}  // namespace jk::cuda
