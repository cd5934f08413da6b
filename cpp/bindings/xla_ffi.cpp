// What jitkernel/_jax_call.py needs from the core to put a kernel call into
// an XLA program: the FFI handler's stages as PyCapsules (for
// jax.ffi.register_ffi_target), the encoding of a traced call into the
// custom call's attributes (the same argument conversions as an eager call:
// scalars, dtypes, template arguments), and the lowering-time preparation
// that generates, compiles and loads the kernel before XLA ever runs it.
// Also test hooks that drive the parser and the handler's C ABI without XLA.
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <string>

#include "bindings.hpp"
#include "convert.hpp"
#include "dtypes.hpp"
#include "template_args.hpp"
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

std::vector<std::string> names_arg(nb::handle value, const char* argument) {
  std::vector<std::string> names;
  sequence_arg(value, argument, "a list of str");
  for_each_item(value, argument, [&](std::size_t i, nb::handle item) {
    if (!nb::isinstance<nb::str>(item)) throw ArgumentTypeError(argument, item_text(argument, i) + " is not a str");
    names.push_back(nb::cast<std::string>(item));
  });
  return names;
}

// inputs: ("a", dtype, shape) for an array operand, ("s", value) for a scalar.
xla::InputDescription input_arg(nb::handle item, std::size_t i, const std::vector<std::string>& names) {
  const ItemRef where{"input", i, &names};
  xla::InputDescription in;
  nb::tuple t = nb::cast<nb::tuple>(item);
  const std::string kind = nb::cast<std::string>(t[0]);
  if (kind == "a") {
    in.dtype = dtype_arg(t[1], "inputs", where);
    in.shape = shape_arg(t[2], "inputs", where, ".shape");
  } else if (!scalar_value(t[1], /*widen_int=*/true, "inputs", where, &in.scalar)) {
    throw ArgumentTypeError("inputs", where.prefix() + "expected an array or a Python/NumPy scalar, got " +
                                          type_text(t[1]));
  } else {
    in.is_scalar = true;
    in.dtype = in.scalar.dtype;
  }
  return in;
}

nb::tuple encode(nb::str name, nb::handle input_names, nb::handle output_names, nb::str source, nb::str header,
                 bool ensure_row_contiguous, int shared_memory, nb::handle inputs, nb::handle output_shapes,
                 nb::handle output_dtypes, nb::handle templ, nb::handle grid, nb::handle threadgroup,
                 nb::handle init_value, int extra_operands) {
  xla::CallDescription d;
  d.spec.name = nb::cast<std::string>(name);
  d.spec.input_names = names_arg(input_names, "input_names");
  d.spec.output_names = names_arg(output_names, "output_names");
  d.spec.source = nb::cast<std::string>(source);
  d.spec.header = nb::cast<std::string>(header);
  d.spec.ensure_row_contiguous = ensure_row_contiguous;
  d.spec.shared_memory = shared_memory;
  sequence_arg(inputs, "inputs", "a list of arrays and scalars");
  for_each_item(inputs, "inputs", [&](std::size_t i, nb::handle item) {
    d.inputs.push_back(input_arg(item, i, d.spec.input_names));
  });
  d.output_dtypes = output_dtypes_arg(output_dtypes, &d.spec.output_names);
  sequence_arg(output_shapes, "output_shapes", "a list of shapes");
  for_each_item(output_shapes, "output_shapes", [&](std::size_t i, nb::handle item) {
    d.output_shapes.push_back(shape_arg(item, "output_shapes", ItemRef{"output", i, &d.spec.output_names}));
  });
  if (d.output_shapes.size() != d.output_dtypes.size()) {
    throw ArgumentError("output_shapes", "has " + std::to_string(d.output_shapes.size()) +
                                             " entries but output_dtypes has " +
                                             std::to_string(d.output_dtypes.size()));
  }
  d.template_args = template_args(templ);
  d.grid = dim3_arg(grid, "grid");
  d.threadgroup = dim3_arg(threadgroup, "threadgroup");
  d.init_value = init_value_arg(init_value);
  d.extra_operands = extra_operands;
  const std::string text = xla::encode(d);
  return nb::make_tuple(nb::bytes(text.data(), text.size()), xla::call_key(text));
}

// Lowering time: parse, rebuild, generate (typed errors while tracing), then
// compile and load on each given device so that XLA's stages find it ready.
void prepare(nb::bytes text, std::uint64_t key, const std::vector<int>& devices) {
  const std::string_view t(static_cast<const char*>(text.data()), text.size());
  xla::PreparedCall& call = xla::prepare_call(t, key);
  for (int device : devices) call.load(device, 0);
}

nb::list shape_list(const std::vector<std::int64_t>& shape) {
  nb::list l;
  for (std::int64_t d : shape) l.append(d);
  return l;
}

// Text the parser accepted may be any bytes: undecodable ones come back as surrogates.
nb::str text_of(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (o == nullptr) throw nb::python_error();
  return nb::steal<nb::str>(o);
}

nb::list texts_of(const std::vector<std::string>& v) {
  nb::list l;
  for (const std::string& s : v) l.append(text_of(s));
  return l;
}

// Test hook: the parsed attribute text as a dict.
nb::dict parse(nb::bytes text) {
  const xla::CallDescription d = xla::parse(std::string_view(static_cast<const char*>(text.data()), text.size()));
  nb::dict out;
  out["name"] = text_of(d.spec.name);
  out["source"] = text_of(d.spec.source);
  out["header"] = text_of(d.spec.header);
  out["ensure_row_contiguous"] = d.spec.ensure_row_contiguous;
  out["shared_memory"] = d.spec.shared_memory;
  out["input_names"] = texts_of(d.spec.input_names);
  out["output_names"] = texts_of(d.spec.output_names);
  nb::list inputs;
  for (const xla::InputDescription& in : d.inputs) {
    if (in.is_scalar) {
      inputs.append(nb::make_tuple("s", dtype_name(in.dtype), nb::bytes(in.scalar.bytes, dtype_size(in.dtype))));
    } else {
      inputs.append(nb::make_tuple("a", dtype_name(in.dtype), shape_list(in.shape)));
    }
  }
  out["inputs"] = inputs;
  nb::list outputs;
  for (std::size_t i = 0; i < d.output_dtypes.size(); ++i) {
    outputs.append(nb::make_tuple(dtype_name(d.output_dtypes[i]), shape_list(d.output_shapes[i])));
  }
  out["outputs"] = outputs;
  nb::list templ;
  for (const TemplateArg& a : d.template_args) {
    if (a.kind == TemplateArg::Kind::DType) {
      templ.append(nb::make_tuple(text_of(a.name), dtype_name(a.dtype)));
    } else if (a.kind == TemplateArg::Kind::Bool) {
      templ.append(nb::make_tuple(text_of(a.name), a.int_value != 0));
    } else {
      templ.append(nb::make_tuple(text_of(a.name), a.int_value));
    }
  }
  out["template"] = templ;
  out["grid"] = nb::make_tuple(d.grid.x, d.grid.y, d.grid.z);
  out["threadgroup"] = nb::make_tuple(d.threadgroup.x, d.threadgroup.y, d.threadgroup.z);
  out["init_value"] = d.init_value ? nb::cast(*d.init_value) : nb::none();
  out["extra_operands"] = d.extra_operands;
  return out;
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
  m.def("xla_encode", &encode, nb::arg("name"), nb::arg("input_names"), nb::arg("output_names"), nb::arg("source"),
        nb::arg("header"), nb::arg("ensure_row_contiguous"), nb::arg("shared_memory"), nb::arg("inputs"),
        nb::arg("output_shapes"), nb::arg("output_dtypes"), nb::arg("template").none(), nb::arg("grid"),
        nb::arg("threadgroup"), nb::arg("init_value").none(), nb::arg("extra_operands"),
        "A traced kernel call as its custom call's attributes: (jk_call text, jk_key) (internal).");
  m.def("xla_prepare", &prepare, nb::arg("text"), nb::arg("key"), nb::arg("devices"),
        "Prepares a custom call at lowering time: generate, compile and load on `devices` (internal).");
  m.def("_xla_parse", &parse, "Test hook: the jk_call attribute text parsed into a dict.");
  m.def("_xla_execute_count", &xla::execute_count, "Test hook: how often XLA ran the execute stage.");
  m.def("_xla_metadata", &metadata, "Test hook: (api major, api minor, traits) the handler reports to XLA.");
  m.def("_xla_run_stage", &run_stage, nb::arg("text"), nb::arg("key"), nb::arg("stage") = "instantiate",
        nb::arg("api_major") = xla::abi::kApiMajor, nb::arg("frame_size") = xla::abi::kCallFrameSize,
        "Test hook: one handler stage on a stand-in XLA frame (no device); the error message or None.");
}

const Registration reg(order::kernel + 5, "xla_ffi", bind);

}  // namespace
}  // namespace jk::py
