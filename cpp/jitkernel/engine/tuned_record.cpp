// The tuned call record (tuned_record.hpp): its canonical writer, and the
// reader that checks every field and the nested call record.
#include "jitkernel/engine/tuned_record.hpp"

#include <string>

#include "jitkernel/core/json.hpp"
#include "jitkernel/engine/record_reader.hpp"

namespace jk {
namespace {

using json::Value;
using Kind = json::Value::Kind;
using record_reader::kMaxExtent;
using record_reader::Reader;

constexpr std::size_t kMaxBucketBytes = std::size_t{1} << 20;
constexpr std::int64_t kMaxRuns = std::int64_t{1} << 20;  // warmup and reps

void put_dims(std::string& out, const Dim3& d) {
  out += '[' + std::to_string(d.x) + ',' + std::to_string(d.y) + ',' + std::to_string(d.z) + ']';
}

void put_optional_dims(std::string& out, const std::optional<Dim3>& d) {
  if (d) put_dims(out, *d);
  else out += "null";
}

void put_config(std::string& out, const TunedConfig& c) {
  out += "{\"grid\":";
  put_optional_dims(out, c.grid);
  out += ",\"template\":[";
  for (std::size_t i = 0; i < c.template_args.size(); ++i) {
    const TemplateArg& t = c.template_args[i];
    out += i ? ",[" : "[";
    json::append_string(out, t.name);
    out += ',';
    if (t.kind == TemplateArg::Kind::Int) out += std::to_string(t.int_value);
    else if (t.kind == TemplateArg::Kind::Bool) out += t.int_value ? "true" : "false";
    else {
      out += "{\"dtype\":";
      json::append_string(out, dtype_name(t.dtype));
      out += '}';
    }
    out += ']';
  }
  out += "],\"threadgroup\":";
  put_optional_dims(out, c.threadgroup);
  out += '}';
}

// [x, y, z] of ints from 1 to kMaxExtent: a launch as the live call resolved it.
Dim3 positive_dims(const Reader& r, const Value& v, const std::string& field) {
  if (r.list(v, field).items.size() != 3) r.bad(field, "expected [x, y, z]");
  return Dim3{r.integer(v.items[0], field + ".x", 1, kMaxExtent), r.integer(v.items[1], field + ".y", 1, kMaxExtent),
              r.integer(v.items[2], field + ".z", 1, kMaxExtent)};
}

std::optional<Dim3> optional_dims(const Reader& r, const Value& v, const std::string& field) {
  if (v.kind == Kind::Null) return std::nullopt;
  return positive_dims(r, v, field);
}

TemplateArg config_template_of(const Reader& r, const Value& v, const std::string& field) {
  if (r.list(v, field).items.size() != 2) r.bad(field, "expected [name, int | bool | {\"dtype\": name}]");
  TemplateArg t;
  t.name = r.text(v.items[0], field + ".name");
  if (t.name.empty() || t.name.size() > 256) r.bad(field + ".name", "expected 1 to 256 bytes");
  const Value& value = v.items[1];
  if (value.kind == Kind::Int) {
    t.kind = TemplateArg::Kind::Int;
    t.int_value = value.integer;
  } else if (value.kind == Kind::Bool) {
    t.kind = TemplateArg::Kind::Bool;
    t.int_value = value.boolean ? 1 : 0;
  } else {
    r.object(value, field + ".value", {"dtype"});
    t.kind = TemplateArg::Kind::DType;
    t.dtype = r.dtype(*value.find("dtype"), field + ".value.dtype");
  }
  return t;
}

// A space entry; its template names must be new to it and to the call's own template arguments.
TunedConfig config_of(const Reader& r, const Value& v, const std::string& field, const RecordedCall& call) {
  r.object(v, field, {"grid", "template", "threadgroup"});
  TunedConfig c;
  c.grid = optional_dims(r, *v.find("grid"), field + ".grid");
  c.threadgroup = optional_dims(r, *v.find("threadgroup"), field + ".threadgroup");
  const Value& templ = r.list(*v.find("template"), field + ".template");
  if (templ.items.size() > kMaxTunedTemplate) {
    r.bad(field + ".template", "more than " + std::to_string(kMaxTunedTemplate) + " template arguments");
  }
  for (std::size_t i = 0; i < templ.items.size(); ++i) {
    const std::string where = field + ".template[" + std::to_string(i) + "]";
    TemplateArg t = config_template_of(r, templ.items[i], where);
    for (const TemplateArg& seen : c.template_args) {
      if (seen.name == t.name) r.bad(where, "\"" + t.name.substr(0, 40) + "\" is set twice");
    }
    for (const TemplateArg& own : call.template_args) {
      if (own.name == t.name) r.bad(where, "\"" + t.name.substr(0, 40) + "\" is also the call's template argument");
    }
    c.template_args.push_back(std::move(t));
  }
  return c;
}

bool fixed(const std::optional<std::vector<std::int64_t>>& shape) {
  if (!shape) return false;
  for (std::int64_t d : *shape) {
    if (d == kUnfixed) return false;
  }
  return true;
}

// The nested call record: a CUDA kernel with names, every shape and scalar fixed (replay times zero arrays of
// those shapes with those scalars), no geometry of its own (the launches give it).
RecordedCall nested_call(const Reader& r, const std::string& text, const char* argument) {
  auto [kernel, call] = decode_record(text, argument);
  if (kernel.binary || !kernel.names_given) r.bad("record", "expected a CUDA kernel made with input and output names");
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const RecordedInput& in = call.inputs[i];
    if (in.is_scalar ? !in.value : (!in.dtype || !fixed(in.shape))) {
      r.bad("record.inputs[" + std::to_string(i) + "]", in.is_scalar ? "the scalar's value must be fixed"
                                                                     : "the dtype and every extent must be fixed");
    }
  }
  for (std::size_t i = 0; i < call.outputs.size(); ++i) {
    if (!fixed(call.outputs[i].shape)) r.bad("record.outputs[" + std::to_string(i) + "]", "every extent must be fixed");
  }
  if (call.grid || call.threadgroup) r.bad("record", "the grid and threadgroup are the launches'");
  return call;
}

void static_key_of(const Reader& r, const std::string& key) {
  if (key.size() != 64) r.bad("static", "expected 64 hex digits");
  for (char c : key) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) r.bad("static", "expected 64 lowercase hex digits");
  }
}

void bucket_of(const Reader& r, const std::string& bucket) {
  if (bucket.size() > kMaxBucketBytes) r.bad("bucket", "longer than " + std::to_string(kMaxBucketBytes) + " bytes");
  try {
    json::parse(bucket);
  } catch (const json::ParseError& e) {
    r.bad("bucket", std::string("not JSON text: ") + e.what());
  }
}

}  // namespace

std::string encode_tuned(const TunedRecord& t) {
  std::string out = "{\"jitkernel_tuned\":" + std::to_string(kCallFormat) + ",\"record\":";
  json::append_string(out, t.record);
  out += ",\"static\":";
  json::append_string(out, t.static_key);
  out += ",\"bucket\":";
  json::append_string(out, t.bucket);
  out += ",\"space\":[";
  for (std::size_t i = 0; i < t.space.size(); ++i) {
    if (i) out += ',';
    put_config(out, t.space[i]);
  }
  out += "],\"launches\":[";
  for (std::size_t i = 0; i < t.launches.size(); ++i) {
    out += i ? ",[" : "[";
    put_dims(out, t.launches[i].grid);
    out += ',';
    put_dims(out, t.launches[i].threadgroup);
    out += ']';
  }
  out += "],\"warmup\":" + std::to_string(t.warmup) + ",\"reps\":";
  out += t.reps ? std::to_string(*t.reps) : std::string("null");
  out += '}';
  return out;
}

TunedRecord decode_tuned(std::string_view text, const char* argument, bool canonical) {
  const Reader r(argument, "tuned call record");
  const Value v = r.parse(text);
  r.version(v, "jitkernel_tuned");
  r.object(v, "tuned", {"jitkernel_tuned", "record", "static", "bucket", "space", "launches", "warmup", "reps"});
  TunedRecord t;
  t.record = r.text(*v.find("record"), "record");
  const RecordedCall call = nested_call(r, t.record, argument);
  t.static_key = r.text(*v.find("static"), "static");
  static_key_of(r, t.static_key);
  t.bucket = r.text(*v.find("bucket"), "bucket");
  bucket_of(r, t.bucket);
  const Value& space = r.list(*v.find("space"), "space");
  if (space.items.empty() || space.items.size() > kMaxTunedConfigs) {
    r.bad("space", "expected 1 to " + std::to_string(kMaxTunedConfigs) + " configurations, got " +
                       std::to_string(space.items.size()));
  }
  for (std::size_t i = 0; i < space.items.size(); ++i) {
    t.space.push_back(config_of(r, space.items[i], "space[" + std::to_string(i) + "]", call));
  }
  const Value& launches = r.list(*v.find("launches"), "launches");
  if (launches.items.size() != space.items.size()) {
    r.bad("launches", std::to_string(launches.items.size()) + " launches for " +
                          std::to_string(space.items.size()) + " configurations");
  }
  for (std::size_t i = 0; i < launches.items.size(); ++i) {
    const std::string field = "launches[" + std::to_string(i) + "]";
    if (r.list(launches.items[i], field).items.size() != 2) r.bad(field, "expected [grid, threadgroup]");
    t.launches.push_back(TunedLaunch{positive_dims(r, launches.items[i].items[0], field + ".grid"),
                                     positive_dims(r, launches.items[i].items[1], field + ".threadgroup")});
  }
  t.warmup = static_cast<int>(r.integer(*v.find("warmup"), "warmup", 0, kMaxRuns));
  const Value& reps = *v.find("reps");
  if (reps.kind != Kind::Null) t.reps = static_cast<int>(r.integer(reps, "reps", 1, kMaxRuns));
  if (canonical && text != encode_tuned(t)) {
    r.bad("the text", "not in the form jitkernel writes (keys in another order, or spacing)");
  }
  return t;
}

}  // namespace jk
