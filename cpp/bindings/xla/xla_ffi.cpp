// What jitkernel/_frameworks/jax_call.py needs from the core to put a kernel call into
// an XLA program, besides the serialised call it carries (call_record.cpp):
// the FFI handler's stages as PyCapsules (for jax.ffi.register_ffi_target),
// the attribute key of a call's text, and the lowering-time preparation that
// generates, compiles and loads the kernel before XLA ever runs it. Also
// test hooks that drive the handler's C ABI without XLA.
#include <nanobind/stl/string.h>
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

// Runs one stage ("instantiate", "initialize" or "execute") on a frame with
// these attributes and no operands; returns the FFI error's message, or
// None. `api_major`/`frame_size` stand in for another XLA's version and
// layout. Past resolving the call, initialize and execute end in the
// stand-in's "no device" error.
nb::object run_stage(nb::bytes text, std::uint64_t key, const std::string& stage, int api_major,
                     std::size_t frame_size) {
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
  api.XLA_FFI_DeviceOrdinal_Get = &no_device<abi::DeviceOrdinalGetArgs>;
  api.XLA_FFI_Stream_Get = &no_device<abi::StreamGetArgs>;
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
  frame.args.struct_size = abi::kArgsSize;
  frame.rets.struct_size = abi::kRetsSize;
  frame.attrs = abi::Attrs{abi::kAttrsSize, nullptr, 2, types, names, values};
  abi::Error* error = handler(&frame);
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
        "Test hook: one handler stage on a stand-in XLA frame (no device); the error message or None.");
}

const Registration reg(order::kernel + 5, "xla_ffi", bind);

}  // namespace
}  // namespace jk::py
