// `_core.precompiled_cuda_kernel` (the engine behind
// jitkernel.precompiled_cuda_kernel) and `_core.inspect_binary` /
// `_core.check_binary_arch`, which expose the binary parsing and the
// architecture check without a GPU (and `_core._precompiled_cache_info`, the
// parsed-binary cache's size, for tests). Inputs, outputs, streams and scalars go
// through convert.hpp, the launch through the core; nothing is converted here
// that another binding converts too.
#include <string>
#include <string_view>

#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "call/convert.hpp"
#include "services/hooks.hpp"
#include "call/launch_options.hpp"
#include "call/traced_call.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/binary/binary_image.hpp"
#include "jitkernel/cuda/launch/precompiled_kernel.hpp"

namespace jk::py {
namespace {

std::string_view bytes_view(const nb::bytes& data) { return {data.c_str(), data.size()}; }

// scalars=: a list of Python / NumPy scalars, each passed by value in its C type.
std::vector<Scalar> scalars_arg(nb::handle scalars) {
  std::vector<Scalar> out;
  if (!scalars.is_valid() || scalars.is_none()) return out;
  out.reserve(sequence_arg(scalars, "scalars", "a list of scalars"));
  for_each_item(scalars, "scalars", [&](std::size_t i, nb::handle item) {
    Scalar s;
    if (!scalar_value(item, /*widen_int=*/false, "scalars", ItemRef{"scalar", i}, &s)) {
      throw ArgumentTypeError(
          "scalars", "scalar " + std::to_string(i) + ": expected a bool, int, float or NumPy " +
                         "scalar (numpy.int64, numpy.float64, numpy.float16, ...), got " +
                         type_text(item));
    }
    out.push_back(s);
  });
  return out;
}

// The SHA-256 the core keys binaries by, remembered for the last bytes object
// passed: a loop that launches the same `bytes` hashes it once. Python bytes
// are immutable, and the reference kept here keeps the object (so its
// identity) alive. Runs with the GIL held.
struct LastBinary {
  nb::object bytes;
  cache::Digest digest{};
};

LastBinary& last_binary() {
  static auto* last = new LastBinary;  // its reference is dropped at exit (on_clear_caches)
  return *last;
}

cache::Digest binary_digest(const nb::bytes& data) {
  LastBinary& last = last_binary();
  if (last.bytes.is(data)) return last.digest;
  last.digest = cache::sha256(bytes_view(data));
  last.bytes = nb::borrow(data);
  return last.digest;
}

void drop_last_binary() { last_binary().bytes = nb::object(); }

nb::list call(const std::string& name, const nb::bytes& compiled_source, nb::handle inputs,
              nb::handle output_shapes, nb::handle output_dtypes, nb::handle scalars,
              nb::handle grid, nb::handle threadgroup, int shared_memory, nb::handle init_value,
              bool ensure_row_contiguous, nb::handle stream, nb::handle outputs, nb::handle cooperative,
              nb::handle cluster) {
  // A traced input sends the call to its framework's op (precompiled.py) before any size is read: a symbolic
  // one read as an int here would be pinned to its current value.
  reject_traced_inputs(inputs);
  cuda::PrecompiledCall pc;
  pc.name = name;
  pc.compiled_source.assign(compiled_source.c_str(), compiled_source.size());
  pc.content_digest = binary_digest(compiled_source);
  pc.scalars = scalars_arg(scalars);

  const CallArgs given{inputs, output_shapes, output_dtypes, grid, threadgroup, nb::none(), init_value, stream,
                       outputs, Py_False, cooperative, cluster};
  CallInputs in{given};
  in.widen_int_scalars = false;  // fixed C parameter types: a Python int is an int32
  ConvertedCall conv;
  convert_call(in, pc.args, conv);
  pc.args.ensure_row_contiguous = ensure_row_contiguous;
  if (shared_memory < 0) {
    throw ArgumentError("shared_memory",
                        "must be >= 0 bytes, got " + std::to_string(shared_memory));
  }
  pc.args.launch.shared_memory = shared_memory;
  launch_options_into(cooperative, cluster, pc.args.launch);

  std::vector<OwnedArray> results = cuda::precompiled_cuda_kernel(pc);
  return wrap_outputs(std::move(results), conv);
  // `conv` goes here: consumed DLPack tensors are released after the launch.
}

nb::dict inspect(const nb::bytes& data) {
  const cuda::BinaryImage image = cuda::parse_binary(bytes_view(data));
  nb::dict out;
  out["format"] = cuda::binary_format_name(image.format);
  out["arch"] = image.arch ? nb::cast(image.arch->name()) : nb::none();
  out["ptx_version"] = nb::none();
  if (image.format == cuda::BinaryFormat::Ptx) {
    out["ptx_version"] = nb::make_tuple(image.ptx_version_major, image.ptx_version_minor);
  }
  out["elf_abi_version"] =
      image.format == cuda::BinaryFormat::Cubin ? nb::cast(image.elf_abi_version) : nb::none();
  nb::object entries = nb::none();
  if (image.entries_known) {
    nb::dict d;  // insertion-ordered: the binary's order
    for (const auto& e : image.entries) {
      if (e.params) {
        nb::list sizes;
        for (const auto& p : *e.params) sizes.append(p.size);
        d[e.name.c_str()] = sizes;
      } else {
        d[e.name.c_str()] = nb::none();
      }
    }
    entries = d;
  }
  out["entries"] = entries;
  nb::list images;
  for (const auto& im : image.images) {
    nb::dict d;
    d["kind"] = im.is_ptx ? "ptx" : "cubin";
    d["arch"] = im.arch.name();
    d["compressed"] = im.compressed;
    images.append(d);
  }
  out["images"] = images;
  return out;
}

void bind(nb::module_& m) {
  using namespace nb::literals;
  on_clear_caches(&drop_last_binary);
  m.def("precompiled_cuda_kernel", &call, "name"_a, "compiled_source"_a, "inputs"_a.none(),
        "output_shapes"_a.none(), "output_dtypes"_a.none(), "scalars"_a.none(), "grid"_a.none(),
        "threadgroup"_a.none(), "shared_memory"_a, "init_value"_a.none(),
        "ensure_row_contiguous"_a, "stream"_a.none(), "outputs"_a.none(), "cooperative"_a.none() = nb::none(),
        "cluster"_a.none() = nb::none(),
        "Launches an entry point of PTX / cubin / fatbin bytes (internal: use "
        "jitkernel.precompiled_cuda_kernel).");
  m.def("inspect_binary", &inspect, "data"_a,
        "Format, architecture, entry points and parameter sizes of PTX / cubin / fatbin bytes "
        "(no GPU needed). Raises ArgumentError('compiled_source') for anything else.");
  m.def(
      "_precompiled_cache_info",
      [] {
        const cuda::ParsedCacheInfo info = cuda::parsed_cache_info();
        nb::dict out;
        out["entries"] = info.entries;
        out["bytes"] = info.bytes;
        out["max_entries"] = info.max_entries;
        out["max_bytes"] = info.max_bytes;
        return out;
      },
      "Entries and bytes held by the parsed-binary cache of precompiled_cuda_kernel, and its "
      "limits (for tests).");
  m.def(
      "check_binary_arch",
      [](const nb::bytes& data, int cc_major, int cc_minor, const std::string& device_label,
         const std::string& device_name) {
        cuda::check_arch(cuda::parse_binary(bytes_view(data)), cc_major, cc_minor, device_label,
                         device_name);
      },
      "data"_a, "cc_major"_a, "cc_minor"_a, "device_label"_a = "device 0",
      "device_name"_a = "GPU",
      "Raises ArgumentError('compiled_source') when the binary cannot run on a device of this "
      "compute capability (the check precompiled_cuda_kernel makes before loading).");
}

const Registration reg(order::precompiled, "precompiled", bind);

}  // namespace
}  // namespace jk::py
