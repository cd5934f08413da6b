// The call record (call_record.hpp): the JSON line of a (spec, signature),
// and the append to JITKERNEL_RECORD's file, once per line and process.
#include "jitkernel/engine/call_record.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/sha256.hpp"

namespace jk {
namespace {

// The version of the line format; precompile refuses lines of another.
constexpr int kRecordFormat = 1;

void append_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      out += escaped;
    } else {
      out += c;  // UTF-8 passes through
    }
  }
  out += '"';
}

void append_strings(std::string& out, const std::vector<std::string>& items) {
  out += '[';
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    append_string(out, items[i]);
  }
  out += ']';
}

// compile_options as the dict cuda_kernel takes, with the keys that differ
// from the defaults only (so a record of a kernel made without options reads
// {}); define values are strings (an int define was written as its text).
void append_options(std::string& out, const CudaCompileOptions& o) {
  out += '{';
  bool first = true;
  auto key = [&](const char* name) {
    out += first ? "\"" : ",\"";
    out += name;
    out += "\":";
    first = false;
  };
  if (o.fast_math) key("math_mode"), out += "\"fast\"";
  if (!o.line_info) key("line_info"), out += "false";
  if (o.debug) key("debug"), out += "true";
  if (!o.defines.empty()) {
    key("defines");
    out += '{';
    for (std::size_t i = 0; i < o.defines.size(); ++i) {
      if (i) out += ',';
      append_string(out, o.defines[i].first);
      out += ':';
      if (o.defines[i].second) append_string(out, *o.defines[i].second);
      else out += "null";
    }
    out += '}';
  }
  if (o.std != "c++17") key("std"), append_string(out, o.std);
  if (o.max_registers > 0) key("max_registers"), out += std::to_string(o.max_registers);
  if (!o.include_dirs.empty()) key("include_dirs"), append_strings(out, o.include_dirs);
  if (!o.extra_flags.empty()) key("extra_flags"), append_strings(out, o.extra_flags);
  out += '}';
}

void append_signature(std::string& out, const CallSignature& signature) {
  out += "\"inputs\":[";
  for (std::size_t i = 0; i < signature.inputs.size(); ++i) {
    const InputSignature& in = signature.inputs[i];
    out += i ? ",[" : "[";
    out += in.is_scalar ? "\"scalar\"," : "\"array\",";
    append_string(out, dtype_name(in.dtype));
    if (!in.is_scalar) out += "," + std::to_string(in.ndim);
    out += ']';
  }
  out += "],\"output_dtypes\":[";
  for (std::size_t i = 0; i < signature.output_dtypes.size(); ++i) {
    if (i) out += ',';
    append_string(out, dtype_name(signature.output_dtypes[i]));
  }
  out += "],\"template\":[";
  for (std::size_t i = 0; i < signature.template_args.size(); ++i) {
    const TemplateArg& t = signature.template_args[i];
    out += i ? ",[" : "[";
    append_string(out, t.name);
    switch (t.kind) {
      case TemplateArg::Kind::Int: out += ",\"int\"," + std::to_string(t.int_value); break;
      case TemplateArg::Kind::Bool: out += t.int_value ? ",\"bool\",true" : ",\"bool\",false"; break;
      case TemplateArg::Kind::DType: out += ",\"dtype\","; append_string(out, dtype_name(t.dtype)); break;
    }
    out += ']';
  }
  out += ']';
}

struct Recorder {
  std::mutex mutex;
  bool configured = false;  // JITKERNEL_RECORD read (or a path set)
  std::string path;         // "" : not recording
  std::set<cache::Digest> written;
};

Recorder& recorder() {
  static auto* r = new Recorder();  // never destroyed: a kernel may compile during exit
  return *r;
}

// Appends `line` + newline with one write on an O_APPEND descriptor: appends
// of several processes land whole, one after another (on a local
// filesystem; see docs/precompile.md for NFS). Returns "" or what went
// wrong. Opened without blocking (a FIFO would otherwise wait for a reader
// for ever) and refused unless it is a regular file.
std::string append_line(const std::string& path, std::string line) {
  line += '\n';
  cache::Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd) return errno == ENXIO ? "not a regular file (a FIFO or device)" : cache::errno_text(errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return cache::errno_text(errno);
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (!cache::write_all(fd.get(), line.data(), line.size())) return cache::errno_text(errno);
  return fd.reset() ? "" : cache::errno_text(errno);
}

}  // namespace

std::string call_record_line(const KernelSpec& spec, const CallSignature& signature) {
  std::string out = "{\"jitkernel_record\":" + std::to_string(kRecordFormat) + ",\"backend\":\"cuda\",";
  out += "\"kernel\":{\"name\":";
  append_string(out, spec.name);
  out += ",\"input_names\":";
  append_strings(out, spec.input_names);
  out += ",\"output_names\":";
  append_strings(out, spec.output_names);
  out += ",\"source\":";
  append_string(out, spec.source);
  out += ",\"header\":";
  append_string(out, spec.header);
  out += spec.ensure_row_contiguous ? ",\"ensure_row_contiguous\":true" : ",\"ensure_row_contiguous\":false";
  out += ",\"shared_memory\":" + std::to_string(spec.shared_memory);
  out += ",\"compile_options\":";
  append_options(out, spec.cuda_options);
  out += "},";
  append_signature(out, signature);
  out += '}';
  return out;
}

void record_call(const KernelSpec& spec, const Backend& backend, const CallSignature& signature) {
  Recorder& r = recorder();
  std::string path;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.configured) {
      const char* env = std::getenv("JITKERNEL_RECORD");
      r.path = env != nullptr ? env : "";
      r.configured = true;
    }
    if (r.path.empty()) return;
    path = r.path;
  }
  if (std::strcmp(backend.name(), "cuda") != 0) return;
  const std::string line = call_record_line(spec, signature);
  const cache::Digest digest = cache::sha256(line);
  std::string error;
  {
    std::lock_guard<std::mutex> lock(r.mutex);  // one writer per process: lines keep their order
    if (r.written.count(digest)) return;
    error = append_line(path, line);
    if (error.empty()) r.written.insert(digest);
  }
  // Outside the lock: the warning handler may wait for Python's GIL. Once per process.
  if (!error.empty())
    cache::warn("JITKERNEL_RECORD", "JITKERNEL_RECORD='" + path + "': cannot append a call record (" + error +
                                        "); calls are not recorded");
}

void set_call_record_path(const std::string& path) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.path = path;
  r.configured = true;
}

}  // namespace jk
