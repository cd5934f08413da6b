// The serialised call (call_record.hpp): the canonical writer, and the
// reader that checks every field and then that the text is the one the
// writer makes of what it read.
#include "jitkernel/engine/call_record.hpp"

#include <cstring>

#include "jitkernel/core/base64.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/json.hpp"

namespace jk {
namespace {

using json::Value;
using Kind = json::Value::Kind;


// ---- writing -------------------------------------------------------------------------------------------------

void key(std::string& out, const char* name, bool first = false) {
  if (!first) out += ',';
  out += '"';
  out += name;
  out += "\":";
}

void put_strings(std::string& out, const std::vector<std::string>& items) {
  out += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    json::append_string(out, items[i]);
  }
  out += ']';
}

void put_bool(std::string& out, bool b) { out += b ? "true" : "false"; }

// Exact values (scalars, init_value) travel as the 16 hex digits of their 8 little-endian bytes.
void put_bits(std::string& out, const unsigned char (&bytes)[8]) {
  static const char digits[] = "0123456789abcdef";
  out += '"';
  for (unsigned char b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 0xF];
  }
  out += '"';
}

void put_extent(std::string& out, std::int64_t v) { out += v == kUnfixed ? "null" : std::to_string(v); }

void put_shape(std::string& out, const std::optional<std::vector<std::int64_t>>& shape) {
  if (!shape) {
    out += "null";
    return;
  }
  out += '[';
  for (std::size_t d = 0; d < shape->size(); ++d) {
    if (d) out += ',';
    put_extent(out, (*shape)[d]);
  }
  out += ']';
}

void put_dims(std::string& out, const std::optional<Dim3>& d) {
  if (!d) {
    out += "null";
    return;
  }
  out += '[';
  put_extent(out, d->x);
  out += ',';
  put_extent(out, d->y);
  out += ',';
  put_extent(out, d->z);
  out += ']';
}

// compile_options as the dict cuda_kernel takes, keys that differ from the defaults only.
void put_options(std::string& out, const CudaCompileOptions& o) {
  struct Json : CudaOptionSink {
    std::string& out;
    bool first = true;
    explicit Json(std::string& o) : out(o) {}
    void field(const char* name) {
      key(out, name, first);
      first = false;
    }
    void text(const char* name, const std::string& value) override {
      field(name);
      json::append_string(out, value);
    }
    void flag(const char* name, bool value) override {
      field(name);
      out += value ? "true" : "false";
    }
    void number(const char* name, int value) override {
      field(name);
      out += std::to_string(value);
    }
    void texts(const char* name, const std::vector<std::string>& values) override {
      field(name);
      put_strings(out, values);
    }
    void defines(const char* name, const std::vector<std::pair<std::string, std::optional<std::string>>>& d) override {
      field(name);
      out += '{';
      for (std::size_t i = 0; i < d.size(); ++i) {
        if (i) out += ',';
        json::append_string(out, d[i].first);
        out += ':';
        if (d[i].second) json::append_string(out, *d[i].second);
        else out += "null";
      }
      out += '}';
    }
  } sink(out);
  out += '{';
  visit_changed_options(o, sink);
  out += '}';
}

void put_input(std::string& out, const RecordedInput& in) {
  out += in.is_scalar ? "[\"scalar\"," : "[\"array\",";
  if (in.dtype) json::append_string(out, dtype_name(*in.dtype));
  else out += "null";
  out += ',';
  if (!in.is_scalar) put_shape(out, in.shape);
  else if (in.value) put_bits(out, in.value->bytes);
  else out += "null";
  out += ']';
}

void put_template(std::string& out, const TemplateArg& t) {
  out += '[';
  json::append_string(out, t.name);
  switch (t.kind) {
    case TemplateArg::Kind::Int: out += ",\"int\"," + std::to_string(t.int_value); break;
    case TemplateArg::Kind::Bool: out += t.int_value ? ",\"bool\",true" : ",\"bool\",false"; break;
    case TemplateArg::Kind::DType:
      out += ",\"dtype\",";
      json::append_string(out, dtype_name(t.dtype));
      break;
  }
  out += ']';
}

// A precompiled kernel (backend "precompiled"): its entry, its binary and how its parameters are passed.
std::string encode_precompiled(const RecordedKernel& k) {
  const RecordedBinary& b = *k.binary;
  std::string out;
  out.reserve(160 + k.spec.name.size() + (b.bytes.size() + 2) / 3 * 4);
  out += '{';
  key(out, "jitkernel_kernel", true);
  out += std::to_string(kCallFormat);
  key(out, "backend");
  out += "\"precompiled\"";
  key(out, "name");
  json::append_string(out, k.spec.name);
  key(out, "format");
  json::append_string(out, b.format);
  key(out, "binary");
  out += '"';
  base64::append(out, b.bytes);
  out += '"';
  key(out, "scalars");
  out += std::to_string(b.scalars);
  key(out, "ensure_row_contiguous");
  put_bool(out, k.spec.ensure_row_contiguous);
  key(out, "shared_memory");
  out += std::to_string(k.spec.shared_memory);
  out += '}';
  return out;
}

}  // namespace

std::size_t RecordedCall::array_input_count() const {
  std::size_t n = 0;
  for (const RecordedInput& in : inputs) n += in.is_scalar ? 0 : 1;
  return n;
}

std::string encode_kernel(const RecordedKernel& k) {
  if (k.binary) return encode_precompiled(k);
  const KernelSpec& s = k.spec;
  std::string out;
  out.reserve(256 + s.source.size() + s.header.size());
  out += '{';
  key(out, "jitkernel_kernel", true);
  out += std::to_string(kCallFormat);
  key(out, "backend");
  out += "\"cuda\"";
  key(out, "name");
  json::append_string(out, s.name);
  key(out, "input_names");
  if (k.names_given) put_strings(out, s.input_names);
  else out += "null";
  key(out, "output_names");
  if (k.names_given) put_strings(out, s.output_names);
  else out += "null";
  key(out, "source");
  json::append_string(out, s.source);
  key(out, "header");
  json::append_string(out, s.header);
  key(out, "ensure_row_contiguous");
  put_bool(out, s.ensure_row_contiguous);
  key(out, "shared_memory");
  out += std::to_string(s.shared_memory);
  key(out, "compile_options");
  put_options(out, s.cuda_options);
  key(out, "backward");
  if (k.backward.empty()) out += "null";
  else json::append_string(out, k.backward);
  out += '}';
  return out;
}

std::string encode_call(const RecordedCall& c) {
  std::string out = "{";
  key(out, "jitkernel_call", true);
  out += std::to_string(kCallFormat);
  key(out, "input_names");
  put_strings(out, c.input_names);
  key(out, "output_names");
  put_strings(out, c.output_names);
  key(out, "inputs");
  out += '[';
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    if (i) out += ',';
    put_input(out, c.inputs[i]);
  }
  out += ']';
  key(out, "outputs");
  out += '[';
  for (std::size_t i = 0; i < c.outputs.size(); ++i) {
    if (i) out += ',';
    out += '[';
    json::append_string(out, dtype_name(c.outputs[i].dtype));
    out += ',';
    put_shape(out, c.outputs[i].shape);
    out += ']';
  }
  out += ']';
  key(out, "template");
  out += '[';
  for (std::size_t i = 0; i < c.template_args.size(); ++i) {
    if (i) out += ',';
    put_template(out, c.template_args[i]);
  }
  out += ']';
  key(out, "grid");
  put_dims(out, c.grid);
  key(out, "threadgroup");
  put_dims(out, c.threadgroup);
  key(out, "init_value");
  if (c.init_value) {
    unsigned char bytes[8];
    std::memcpy(bytes, &*c.init_value, sizeof(bytes));
    put_bits(out, bytes);
  } else {
    out += "null";
  }
  key(out, "verbose");
  put_bool(out, c.verbose);
  key(out, "dict_form");
  put_bool(out, c.dict_form);
  key(out, "extra_operands");
  out += std::to_string(c.extra_operands);
  out += '}';
  return out;
}

std::string encode_record(std::string_view kernel_text, std::string_view call_text) {
  std::string out = "{\"jitkernel_record\":" + std::to_string(kCallFormat) + ",\"kernel\":";
  out.append(kernel_text.data(), kernel_text.size());
  out += ",\"call\":";
  out.append(call_text.data(), call_text.size());
  out += '}';
  return out;
}

}  // namespace jk
