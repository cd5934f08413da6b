// cooperative= / cluster= call options and the attributes() dict (launch_options.hpp).
#include "call/launch_options.hpp"

#include <string>

#include "call/convert.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::py {

void launch_options_into(nb::handle cooperative, nb::handle cluster, LaunchConfig& launch) {
  if (cooperative.is_none() || cooperative.ptr() == Py_False) {
    launch.cooperative = false;
  } else if (cooperative.ptr() == Py_True) {
    launch.cooperative = true;
  } else {
    throw ArgumentTypeError("cooperative", "expected True, False or None, got " + repr_text(cooperative));
  }
  launch.cluster = cluster.is_none() ? Dim3{0, 0, 0} : dim3_arg(cluster, "cluster");
}

nb::dict attributes_dict(const cuda::FunctionAttributes& a, int threads) {
  nb::dict d;
  d["registers_per_thread"] = a.registers_per_thread;
  d["static_shared_memory"] = a.static_shared_memory;
  d["dynamic_shared_memory"] = a.dynamic_shared_memory;
  d["max_dynamic_shared_memory"] = a.max_dynamic_shared_memory;
  d["max_threads_per_block"] = a.max_threads_per_block;
  d["local_memory_per_thread"] = a.local_memory_per_thread;
  d["const_memory"] = a.const_memory;
  d["ptx_version"] = a.ptx_version;
  d["binary_version"] = a.binary_version;
  d["threads_per_threadgroup"] = threads;
  d["active_blocks_per_sm"] = a.active_blocks_per_sm;
  d["occupancy"] = a.max_threads_per_sm > 0
                       ? static_cast<double>(a.active_blocks_per_sm) * threads / a.max_threads_per_sm
                       : 0.0;
  d["multiprocessor_count"] = a.multiprocessor_count;
  return d;
}

}  // namespace jk::py
