// Reading a serialised call (call_record.hpp): strict JSON first, then each
// field's type and range, then the canonical-form check. Every refusal is an
// ArgumentError naming the argument the text came in and the field.
#include <cstring>
#include <initializer_list>

#include "jitkernel/core/base64.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/json.hpp"
#include "jitkernel/engine/call_record.hpp"
#include "jitkernel/engine/record_reader.hpp"

namespace jk {
namespace {

using json::Value;
using Kind = json::Value::Kind;
using record_reader::kMaxItems;
using record_reader::Reader;

CudaCompileOptions options(const Reader& r, const Value& v) {
  const std::string f = "compile_options";
  CudaCompileOptions o;
  r.of(v, f, Kind::Object);
  for (const auto& [name, value] : v.members) {
    const std::string field = f + "." + name;
    if (name == "math_mode") {
      const std::string& mode = r.text(value, field);
      if (mode != "fast" && mode != "safe") r.bad(field, "expected \"fast\" or \"safe\"");
      o.fast_math = mode == "fast";
    } else if (name == "line_info") {
      o.line_info = r.boolean(value, field);
    } else if (name == "debug") {
      o.debug = r.boolean(value, field);
    } else if (name == "checked") {
      o.checked = r.boolean(value, field);
    } else if (name == "defines") {
      r.of(value, field, Kind::Object);
      for (const auto& [define, text] : value.members) {
        if (text.kind == Kind::Null) o.defines.emplace_back(define, std::nullopt);
        else o.defines.emplace_back(define, r.text(text, field + "." + define));
      }
    } else if (name == "std") {
      o.std = r.text(value, field);
    } else if (name == "max_registers") {
      o.max_registers = static_cast<int>(r.integer(value, field, 0, 1 << 16));
    } else if (name == "include_dirs") {
      o.include_dirs = r.strings(value, field);
    } else if (name == "extra_flags") {
      o.extra_flags = r.strings(value, field);
    } else {
      r.bad(f, "unknown option \"" + name.substr(0, 40) + "\"");
    }
  }
  return o;
}

// backend "precompiled": the entry name, the binary (size-capped base64) and how the call's inputs are passed.
RecordedKernel precompiled_of(const Reader& r, const Value& v) {
  r.object(v, "kernel", {"jitkernel_kernel", "backend", "name", "format", "binary", "scalars",
                         "ensure_row_contiguous", "shared_memory"});
  RecordedKernel k;
  k.names_given = false;
  RecordedBinary& b = k.binary.emplace();
  k.spec.name = r.text(*v.find("name"), "name");
  if (k.spec.name.empty()) r.bad("name", "is empty (expected the binary's entry symbol)");
  b.format = r.text(*v.find("format"), "format");
  if (b.format != "ptx" && b.format != "cubin" && b.format != "fatbin") {
    r.bad("format", "expected \"ptx\", \"cubin\" or \"fatbin\"");
  }
  const std::string& text = r.text(*v.find("binary"), "binary");
  if (text.size() / 4 * 3 > kMaxRecordedBinaryBytes) {
    r.bad("binary", "larger than " + std::to_string(kMaxRecordedBinaryBytes >> 20) + " MiB");
  }
  std::string why;
  std::optional<std::string> bytes = base64::decode(text, &why);
  if (!bytes) r.bad("binary", "not base64: " + why);
  if (bytes->empty()) r.bad("binary", "is empty");
  b.bytes = std::move(*bytes);
  b.scalars = static_cast<int>(r.integer(*v.find("scalars"), "scalars", 0, kMaxItems));
  k.spec.ensure_row_contiguous = r.boolean(*v.find("ensure_row_contiguous"), "ensure_row_contiguous");
  k.spec.shared_memory = static_cast<int>(r.integer(*v.find("shared_memory"), "shared_memory", 0, INT32_MAX));
  return k;
}

RecordedKernel kernel_of(const Reader& r, const Value& v) {
  r.version(v, "jitkernel_kernel");
  const Value* backend = v.find("backend");
  if (backend == nullptr) r.bad("kernel", "missing field \"backend\"");
  const std::string& name = r.text(*backend, "backend");
  if (name == "precompiled") return precompiled_of(r, v);
  if (name != "cuda") r.bad("backend", "expected \"cuda\" or \"precompiled\"");
  r.object(v, "kernel", {"jitkernel_kernel", "backend", "name", "input_names", "output_names", "source", "header",
                         "ensure_row_contiguous", "shared_memory", "compile_options", "backward"});
  RecordedKernel k;
  KernelSpec& s = k.spec;
  s.name = r.text(*v.find("name"), "name");
  const Value& in = *v.find("input_names");
  const Value& out = *v.find("output_names");
  k.names_given = in.kind != Kind::Null || out.kind != Kind::Null;
  if (k.names_given) {
    s.input_names = r.strings(in, "input_names");
    s.output_names = r.strings(out, "output_names");
  }
  s.source = r.text(*v.find("source"), "source");
  s.header = r.text(*v.find("header"), "header");
  s.ensure_row_contiguous = r.boolean(*v.find("ensure_row_contiguous"), "ensure_row_contiguous");
  s.shared_memory = static_cast<int>(r.integer(*v.find("shared_memory"), "shared_memory", 0, INT32_MAX));
  s.cuda_options = options(r, *v.find("compile_options"));
  const Value& backward = *v.find("backward");
  if (backward.kind != Kind::Null) k.backward = r.text(backward, "backward");
  return k;
}

RecordedInput input_of(const Reader& r, const Value& v, const std::string& field) {
  r.list(v, field);
  if (v.items.size() != 3 || v.items[0].kind != Kind::String ||
      (v.items[0].text != "array" && v.items[0].text != "scalar")) {
    r.bad(field, "expected [\"array\", dtype or null, shape or null] or [\"scalar\", dtype, bits or null]");
  }
  RecordedInput in;
  in.is_scalar = v.items[0].text == "scalar";
  if (in.is_scalar || v.items[1].kind != Kind::Null) in.dtype = r.dtype(v.items[1], field + ".dtype");
  if (!in.is_scalar) {
    in.shape = r.shape(v.items[2], field + ".shape");
  } else if (v.items[2].kind != Kind::Null) {
    Scalar s;
    s.dtype = *in.dtype;
    r.bits(v.items[2], field + ".value", s.bytes);
    for (std::size_t b = dtype_size(s.dtype); b < sizeof(s.bytes); ++b) {
      if (s.bytes[b] != 0) r.bad(field + ".value", "bytes past the dtype's size are not zero");
    }
    in.value = s;
  }
  return in;
}

TemplateArg template_of(const Reader& r, const Value& v, const std::string& field) {
  r.list(v, field);
  if (v.items.size() != 3) r.bad(field, "expected [name, \"int\" | \"bool\" | \"dtype\", value]");
  TemplateArg t;
  t.name = r.text(v.items[0], field + ".name");
  const std::string& kind = r.text(v.items[1], field + ".kind");
  if (kind == "int") {
    t.kind = TemplateArg::Kind::Int;
    t.int_value = r.integer(v.items[2], field + ".value", INT64_MIN, INT64_MAX);
  } else if (kind == "bool") {
    t.kind = TemplateArg::Kind::Bool;
    t.int_value = r.boolean(v.items[2], field + ".value") ? 1 : 0;
  } else if (kind == "dtype") {
    t.kind = TemplateArg::Kind::DType;
    t.dtype = r.dtype(v.items[2], field + ".value");
  } else {
    r.bad(field + ".kind", "expected \"int\", \"bool\" or \"dtype\"");
  }
  return t;
}

RecordedCall call_of(const Reader& r, const Value& v) {
  r.version(v, "jitkernel_call");
  r.object(v, "call", {"jitkernel_call", "input_names", "output_names", "inputs", "outputs", "template", "grid",
                       "threadgroup", "init_value", "verbose", "dict_form", "extra_operands"});
  RecordedCall c;
  c.input_names = r.strings(*v.find("input_names"), "input_names");
  c.output_names = r.strings(*v.find("output_names"), "output_names");
  const Value& inputs = r.list(*v.find("inputs"), "inputs");
  for (std::size_t i = 0; i < inputs.items.size(); ++i) {
    c.inputs.push_back(input_of(r, inputs.items[i], "inputs[" + std::to_string(i) + "]"));
  }
  const Value& outputs = r.list(*v.find("outputs"), "outputs");
  for (std::size_t i = 0; i < outputs.items.size(); ++i) {
    const std::string field = "outputs[" + std::to_string(i) + "]";
    if (r.list(outputs.items[i], field).items.size() != 2) r.bad(field, "expected [dtype, shape or null]");
    RecordedOutput o;
    o.dtype = r.dtype(outputs.items[i].items[0], field + ".dtype");
    o.shape = r.shape(outputs.items[i].items[1], field + ".shape");
    c.outputs.push_back(std::move(o));
  }
  const Value& templ = r.list(*v.find("template"), "template");
  for (std::size_t i = 0; i < templ.items.size(); ++i) {
    c.template_args.push_back(template_of(r, templ.items[i], "template[" + std::to_string(i) + "]"));
  }
  c.grid = r.dims(*v.find("grid"), "grid");
  c.threadgroup = r.dims(*v.find("threadgroup"), "threadgroup");
  const Value& init = *v.find("init_value");
  if (init.kind != Kind::Null) {
    unsigned char bytes[8];
    r.bits(init, "init_value", bytes);
    double d = 0;
    std::memcpy(&d, bytes, sizeof(d));
    c.init_value = d;
  }
  c.verbose = r.boolean(*v.find("verbose"), "verbose");
  c.dict_form = r.boolean(*v.find("dict_form"), "dict_form");
  c.extra_operands = static_cast<int>(r.integer(*v.find("extra_operands"), "extra_operands", 0, kMaxItems));
  if (c.input_names.size() != c.inputs.size()) {
    r.bad("inputs", std::to_string(c.inputs.size()) + " inputs for " + std::to_string(c.input_names.size()) +
                        " input names");
  }
  if (c.output_names.size() != c.outputs.size()) {
    r.bad("outputs", std::to_string(c.outputs.size()) + " outputs for " + std::to_string(c.output_names.size()) +
                         " output names");
  }
  return c;
}

void canonical(const Reader& r, std::string_view text, const std::string& again) {
  if (text != again) {
    r.bad("the text", "not in the form jitkernel writes (keys in another order, a default written out, or "
                      "spacing): it could name another kernel than it seems to");
  }
}

}  // namespace

void check_kernel_call(const RecordedKernel& kernel, const RecordedCall& call, const char* argument) {
  if (!kernel.binary) return;
  const Reader r(argument, "call record");
  const std::size_t scalars = static_cast<std::size_t>(kernel.binary->scalars);
  if (scalars > call.inputs.size()) {
    r.bad("scalars", "the precompiled kernel passes " + std::to_string(scalars) + " scalars by value but the call "
                     "has " + std::to_string(call.inputs.size()) + " inputs");
  }
  // Arrays, then the by-value scalars: a recorded call uploads nothing (a scalar input is a 0-d array).
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const bool by_value = i >= call.inputs.size() - scalars;
    if (call.inputs[i].is_scalar != by_value) {
      r.bad("inputs[" + std::to_string(i) + "]", by_value ? "an array where the precompiled kernel takes a scalar"
                                                          : "a scalar where the precompiled kernel takes an array");
    }
  }
  if (!call.template_args.empty()) r.bad("template", "a precompiled kernel takes no template arguments");
  if (call.verbose) r.bad("verbose", "a precompiled kernel has no generated source to print");
}

RecordedKernel decode_kernel(std::string_view text, const char* argument) {
  const Reader r(argument, "kernel");
  RecordedKernel k = kernel_of(r, r.parse(text));
  canonical(r, text, encode_kernel(k));
  return k;
}

RecordedCall decode_call(std::string_view text, const char* argument) {
  const Reader r(argument, "call");
  RecordedCall c = call_of(r, r.parse(text));
  canonical(r, text, encode_call(c));
  return c;
}

std::pair<RecordedKernel, RecordedCall> decode_record(std::string_view text, const char* argument) {
  const Reader r(argument, "call record");
  const Value v = r.parse(text);
  r.version(v, "jitkernel_record");
  r.object(v, "record", {"jitkernel_record", "kernel", "call"});
  RecordedKernel k = kernel_of(r, *v.find("kernel"));
  RecordedCall c = call_of(r, *v.find("call"));
  canonical(r, text, encode_record(encode_kernel(k), encode_call(c)));
  check_kernel_call(k, c, argument);
  return {std::move(k), std::move(c)};
}

}  // namespace jk
