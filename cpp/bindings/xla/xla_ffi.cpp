// What jitkernel/_frameworks/jax_call.py needs from the core to put a kernel call into
// an XLA program, besides the serialised call it carries (call_record.cpp):
// the FFI handler's stages as PyCapsules (for jax.ffi.register_ffi_target),
// the attribute key of a call's text, and the lowering-time preparation that
// generates, compiles and loads the kernel before XLA ever runs it. Also
// test hooks that drive the handler's C ABI without XLA.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <string>

#include "bindings.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/xla/ffi_handler.hpp"
#include "jitkernel/xla/prepared_call.hpp"

namespace jk::py {
namespace {

nb::capsule stage_capsule(xla::abi::Handler* fn) { return nb::capsule(reinterpret_cast<void*>(fn)); }

nb::dict handlers() {
  nb::dict d;
  d["instantiate"] = stage_capsule(&xla::instantiate_stage);
  d["initialize"] = stage_capsule(&xla::initialize_stage);
  d["execute"] = stage_capsule(&xla::execute_stage);
  return d;
}

// Lowering time: parse, rebuild, generate (typed errors while tracing), then
// compile and load on each given device so that XLA's stages find it ready.
void prepare(const std::string& text, std::uint64_t key, const std::vector<int>& devices) {
  xla::PreparedCall& call = xla::prepare_call(text, key);
  for (int device : devices) call.load(device, 0);
}

// ---- test hooks: the handler's C ABI driven by a stand-in for XLA's API ----

xla::abi::Error* record_error(xla::abi::ErrorCreateArgs* args) {
  return reinterpret_cast<xla::abi::Error*>(new std::string(args->message ? args->message : ""));
}

// (major, minor, traits) as the handler answers XLA's metadata query.
nb::tuple metadata() {
  xla::abi::Metadata md{};
  md.struct_size = sizeof(md);
  md.api_version.struct_size = xla::abi::kApiVersionSize;
  xla::abi::MetadataExtension ext{{xla::abi::kMetadataExtensionSize, xla::abi::kExtensionMetadata, nullptr}, &md};
  xla::abi::CallFrame frame{};
  frame.struct_size = xla::abi::kCallFrameSize;
  frame.extension_start = &ext.extension_base;
  frame.stage = xla::abi::kExecute;
  xla::execute_stage(&frame);
  return nb::make_tuple(md.api_version.major_version, md.api_version.minor_version, md.traits);
}

// The stand-in XLA's device and stream queries (whichever a stage asks
// first): no device here, said as the FFI error XLA would return (the
// stages hand it back unchanged), so a stage that resolved its call ends
// there, before anything touches a GPU.
template <typename Args>
xla::abi::Error* no_device(Args*) {
  return reinterpret_cast<xla::abi::Error*>(new std::string("stand-in XLA: no device"));
}

// With a device (a test under the mock CUDA driver): the stand-in's ordinal
// and stream, read from the frame's context, which points at this.
struct StandInDevice {
  int ordinal;
  std::uintptr_t stream;
};
xla::abi::Error* stand_in_ordinal(xla::abi::DeviceOrdinalGetArgs* args) {
  args->device_ordinal = reinterpret_cast<const StandInDevice*>(args->ctx)->ordinal;
  return nullptr;
}
xla::abi::Error* stand_in_stream(xla::abi::StreamGetArgs* args) {
  args->stream = reinterpret_cast<void*>(reinterpret_cast<const StandInDevice*>(args->ctx)->stream);
  return nullptr;
}

// (address, XLA dtype code, shape) per buffer, as the frame's buffer structs.
using BufferArg = std::tuple<std::uintptr_t, int, std::vector<std::int64_t>>;
struct StandInBuffers {
  std::vector<std::vector<std::int64_t>> dims;
  std::vector<xla::abi::Buffer> buffers;
  std::vector<void*> pointers;
  std::vector<XLA_FFI_ArgType> arg_types;
  std::vector<XLA_FFI_RetType> ret_types;
  explicit StandInBuffers(const std::vector<BufferArg>& given) : dims(given.size()), buffers(given.size()) {
    for (std::size_t i = 0; i < given.size(); ++i) {
      dims[i] = std::get<2>(given[i]);
      buffers[i] = xla::abi::Buffer{xla::abi::kBufferSize, nullptr, static_cast<XLA_FFI_DataType>(std::get<1>(given[i])),
                                    reinterpret_cast<void*>(std::get<0>(given[i])),
                                    static_cast<std::int64_t>(dims[i].size()), dims[i].data()};
      pointers.push_back(&buffers[i]);
      arg_types.push_back(XLA_FFI_ArgType_BUFFER);
      ret_types.push_back(XLA_FFI_RetType_BUFFER);
    }
  }
};

// Runs one stage ("instantiate", "initialize" or "execute") on a frame with
// these attributes; returns the FFI error's message, or None. `api_major`/
// `frame_size` stand in for another XLA's version and layout. Without a
// `device`, initialize and execute end, past resolving the call, in the
// stand-in's "no device" error; with one (the mock driver's), they run on
// `operands` and `results` and `stream` with the GIL released, as XLA runs
// them.
nb::object run_stage(nb::bytes text, std::uint64_t key, const std::string& stage, int api_major,
                     std::size_t frame_size, std::optional<int> device, const std::vector<BufferArg>& operands,
                     const std::vector<BufferArg>& results, std::uintptr_t stream) {
  namespace abi = xla::abi;
  abi::Handler* handler = stage == "instantiate"  ? &xla::instantiate_stage
                          : stage == "initialize" ? &xla::initialize_stage
                          : stage == "execute"    ? &xla::execute_stage
                                                  : nullptr;
  if (handler == nullptr) throw ArgumentError("stage", "expected 'instantiate', 'initialize' or 'execute'");
  abi::Api api{};
  api.struct_size = abi::kApiSize;
  api.api_version = abi::ApiVersion{abi::kApiVersionSize, nullptr, api_major, abi::kApiMinor};
  api.XLA_FFI_Error_Create = &record_error;
  api.XLA_FFI_DeviceOrdinal_Get = device ? &stand_in_ordinal : &no_device<abi::DeviceOrdinalGetArgs>;
  api.XLA_FFI_Stream_Get = device ? &stand_in_stream : &no_device<abi::StreamGetArgs>;
  StandInDevice context{device.value_or(-1), stream};
  StandInBuffers args(operands), rets(results);
  abi::ByteSpan call_name{"jk_call", 7}, key_name{"jk_key", 6};
  abi::ByteSpan call_value{static_cast<const char*>(text.data()), text.size()};
  abi::ScalarAttr key_value{abi::kU64, &key};
  abi::ByteSpan* names[2] = {&call_name, &key_name};
  XLA_FFI_AttrType types[2] = {abi::kAttrString, abi::kAttrScalar};
  void* values[2] = {&call_value, &key_value};
  abi::CallFrame frame{};
  frame.struct_size = frame_size;
  frame.api = &api;
  frame.stage = stage == "instantiate" ? abi::kInstantiate : stage == "initialize" ? abi::kInitialize : abi::kExecute;
  frame.ctx = reinterpret_cast<XLA_FFI_ExecutionContext*>(&context);
  frame.args = XLA_FFI_Args{abi::kArgsSize, nullptr, static_cast<std::int64_t>(operands.size()),
                            args.arg_types.data(), args.pointers.data()};
  frame.rets = XLA_FFI_Rets{abi::kRetsSize, nullptr, static_cast<std::int64_t>(results.size()),
                            rets.ret_types.data(), rets.pointers.data()};
  frame.attrs = abi::Attrs{abi::kAttrsSize, nullptr, 2, types, names, values};
  abi::Error* error = nullptr;
  if (device) {
    nb::gil_scoped_release unlocked;
    error = handler(&frame);
  } else {
    error = handler(&frame);
  }
  if (error == nullptr) return nb::none();
  std::unique_ptr<std::string> message(reinterpret_cast<std::string*>(error));
  return nb::str(message->c_str());
}

void bind(nb::module_& m) {
  m.def("xla_handlers", &handlers,
        "The XLA FFI handler's stages as PyCapsules, for jax.ffi.register_ffi_target (internal).");
  m.def("xla_call_key", [](const std::string& text) { return xla::call_key(text); }, nb::arg("text"),
        "The jk_key attribute of a jk_call text (a serialised call record) (internal).");
  m.def("xla_prepare", &prepare, nb::arg("text"), nb::arg("key"), nb::arg("devices"),
        "Prepares a custom call at lowering time: generate, compile and load on `devices` (internal).");
  m.def("_xla_execute_count", &xla::execute_count, "Test hook: how often XLA ran the execute stage.");
  m.def("_xla_time_executes", &xla::time_executes, nb::arg("on"),
        "Profiling hook: accumulate the execute stage's wall time and its launch's (see _xla_execute_times).");
  m.def("_xla_execute_times", [] {
        const xla::ExecuteTimes t = xla::execute_times();
        return nb::make_tuple(t.calls, t.handler_ns, t.launch_ns);
      }, "Profiling hook: (timed calls, handler ns, launch ns) summed since _xla_time_executes(True).");
  m.def("_xla_metadata", &metadata, "Test hook: (api major, api minor, traits) the handler reports to XLA.");
  m.def("_xla_run_stage", &run_stage, nb::arg("text"), nb::arg("key"), nb::arg("stage") = "instantiate",
        nb::arg("api_major") = xla::abi::kApiMajor, nb::arg("frame_size") = xla::abi::kCallFrameSize,
        nb::arg("device") = nb::none(), nb::arg("operands") = std::vector<BufferArg>{},
        nb::arg("results") = std::vector<BufferArg>{}, nb::arg("stream") = 0,
        "Test hook: one handler stage on a stand-in XLA frame (no device, or the mock driver's with buffers given "
        "as (address, XLA dtype code, shape)); the error message or None.");
}

const Registration reg(order::kernel + 5, "xla_ffi", bind);

}  // namespace
}  // namespace jk::py
