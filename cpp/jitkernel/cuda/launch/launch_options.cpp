// Cooperative and cluster launches (launch_options.hpp): what the device and
// the function's occupancy allow, checked before cuLaunchKernelEx so that a
// grid that cannot be co-resident is an ArgumentError naming the largest one
// instead of a launch error (or, without the cooperative attribute, a hang).
#include "jitkernel/cuda/launch/launch_options.hpp"

#include <cstring>
#include <string>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/cuda/driver/device.hpp"
#include "jitkernel/cuda/launch/launch.hpp"

namespace jk::cuda {
namespace {

std::string device_text(const DeviceInfo& info) {
  return "cuda:" + std::to_string(info.ordinal) + " (" + info.name + ", compute capability " +
         std::to_string(info.cc_major) + "." + std::to_string(info.cc_minor) + ")";
}

long long threads_of(const LaunchGeometry& g) { return 1LL * g.block[0] * g.block[1] * g.block[2]; }
long long blocks_of(const LaunchGeometry& g) { return 1LL * g.grid[0] * g.grid[1] * g.grid[2]; }

int occupancy(CUfunction function, const char* kernel_name, int threads, int shared_memory) {
  int blocks = 0;
  check(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, function, threads,
                                                             static_cast<std::size_t>(shared_memory)),
        ("reading the occupancy of kernel '" + std::string(kernel_name) + "'").c_str());
  return blocks;
}

void check_cooperative(CUfunction function, const char* kernel_name, const DeviceInfo& info,
                       const LaunchGeometry& g, int shared_memory) {
  if (!info.cooperative_launch) {
    throw ArgumentError("cooperative", "kernel '" + std::string(kernel_name) + "' syncs the whole grid (a "
                                       "cooperative launch), which " + device_text(info) + " does not support");
  }
  const long long threads = threads_of(g);
  const int per_sm = occupancy(function, kernel_name, static_cast<int>(threads), shared_memory);
  const long long largest = 1LL * per_sm * info.multiprocessor_count;
  if (blocks_of(g) <= largest) return;
  const std::string setup = std::to_string(threads) + " threads per threadgroup and " +
                            std::to_string(shared_memory) + " bytes of dynamic shared memory";
  std::string message = "kernel '" + std::string(kernel_name) + "' syncs the whole grid (a cooperative launch), "
                        "so every threadgroup must be resident at once; the grid has " +
                        std::to_string(blocks_of(g)) + " threadgroups (" + std::to_string(g.grid[0]) + " x " +
                        std::to_string(g.grid[1]) + " x " + std::to_string(g.grid[2]) + ") but ";
  if (largest == 0) {
    message += "with " + setup + " not one fits on an SM of " + device_text(info) +
               ": use a smaller threadgroup or less shared memory";
  } else {
    message += "the largest grid this kernel can have on " + device_text(info) + " with " + setup + " is " +
               std::to_string(largest) + " threadgroups (" + std::to_string(per_sm) + " per SM x " +
               std::to_string(info.multiprocessor_count) + " SMs), e.g. grid=(" +
               std::to_string(largest * g.block[0]) + ", " + std::to_string(g.block[1]) + ", " +
               std::to_string(g.block[2]) + ") threads";
  }
  throw ArgumentError("grid", message);
}

CUlaunchAttribute cluster_attribute(const Dim3& cluster) {
  CUlaunchAttribute a{};
  a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  const unsigned dims[3] = {static_cast<unsigned>(cluster.x), static_cast<unsigned>(cluster.y),
                            static_cast<unsigned>(cluster.z)};
  std::memcpy(a.value.bytes, dims, sizeof(dims));
  return a;
}

void check_cluster(CUfunction function, const char* kernel_name, const DeviceInfo& info, const LaunchGeometry& g,
                   int shared_memory, const Dim3& cluster) {
  const std::string dims = dims_text(cluster);
  if (!info.cluster_launch) {
    throw ArgumentError("cluster", "cluster=" + dims + ": thread-block clusters need compute capability 9.0 "
                                   "or newer (Hopper); " + device_text(info) + " has none");
  }
  const DriverApi& api = driver();
  const long long size = cluster.x * cluster.y * cluster.z;
  if (size > 8) {  // non-portable sizes (up to 16 on Hopper) need the function's opt-in
    CUresult r = api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    if (r != CUDA_SUCCESS) {
      throw ArgumentError("cluster", "cluster=" + dims + " has " + std::to_string(size) + " threadgroups, more "
                                     "than the portable 8, and kernel '" + kernel_name + "' cannot allow a "
                                     "non-portable cluster size on " + device_text(info) + ": " +
                                     describe_result(r));
    }
  }
  CUlaunchAttribute attr = cluster_attribute(cluster);
  CUlaunchConfig config = launch_config(g, shared_memory, nullptr);
  config.attrs = &attr;
  config.numAttrs = 1;
  int clusters = 0;
  CUresult r = api.cuOccupancyMaxActiveClusters(&clusters, function, &config);
  if (r != CUDA_SUCCESS || clusters <= 0) {
    throw ArgumentError("cluster", "cluster=" + dims + " (" + std::to_string(size) + " threadgroups of " +
                                   std::to_string(threads_of(g)) + " threads and " + std::to_string(shared_memory) +
                                   " bytes of dynamic shared memory each) cannot be scheduled on " +
                                   device_text(info) + (r != CUDA_SUCCESS ? ": " + describe_result(r) : "") +
                                   "; use a smaller cluster, threadgroup or shared memory");
  }
}

}  // namespace

void launch_attributes(CUfunction function, const char* kernel_name, int device, const LaunchGeometry& g,
                       int shared_memory, bool cooperative, const Dim3& cluster, LaunchAttributes& out) {
  out.count = 0;
  if (!cooperative && cluster.x == 0) return;
  const DeviceInfo& info = device_info(device);
  if (cluster.x != 0) {
    check_cluster(function, kernel_name, info, g, shared_memory, cluster);
    out.items[out.count++] = cluster_attribute(cluster);
  }
  if (cooperative) {
    check_cooperative(function, kernel_name, info, g, shared_memory);
    CUlaunchAttribute& a = out.items[out.count++];
    a = CUlaunchAttribute{};
    a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    const int on = 1;
    std::memcpy(a.value.bytes, &on, sizeof(on));
  }
}

FunctionAttributes function_attributes(CUfunction function, int device, int threads, int shared_memory) {
  const DriverApi& api = driver();
  const DeviceInfo& info = device_info(device);
  FunctionAttributes a;
  auto get = [&](int& field, CUfunction_attribute attribute, const char* what) {
    check(api.cuFuncGetAttribute(&field, attribute, function), what);
  };
  get(a.registers_per_thread, CU_FUNC_ATTRIBUTE_NUM_REGS, "reading the kernel's registers");
  get(a.static_shared_memory, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "reading the kernel's shared memory");
  get(a.max_dynamic_shared_memory, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
      "reading the kernel's dynamic shared memory limit");
  get(a.max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "reading the kernel's threads per block");
  get(a.local_memory_per_thread, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "reading the kernel's local memory");
  get(a.const_memory, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, "reading the kernel's constant memory");
  get(a.ptx_version, CU_FUNC_ATTRIBUTE_PTX_VERSION, "reading the kernel's PTX version");
  get(a.binary_version, CU_FUNC_ATTRIBUTE_BINARY_VERSION, "reading the kernel's binary version");
  a.dynamic_shared_memory = shared_memory;
  if (threads <= 0) threads = a.max_threads_per_block;
  a.active_blocks_per_sm = occupancy(function, "attributes", threads, shared_memory);
  a.max_threads_per_sm = info.max_threads_per_multiprocessor;
  a.multiprocessor_count = info.multiprocessor_count;
  return a;
}

}  // namespace jk::cuda
