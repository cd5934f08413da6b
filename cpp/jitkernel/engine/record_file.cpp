// The record file (record_file.hpp): the line of a (spec, signature) in the
// serialised-call format, and the append to JITKERNEL_RECORD's file, once
// per line and process.
#include "jitkernel/engine/record_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/engine/call_record.hpp"

namespace jk {
namespace {

// The record of a signature: what changes the generated source, no geometry, no scalar values.
RecordedCall signature_record(const KernelSpec& spec, const CallSignature& signature) {
  RecordedCall call;
  call.input_names = spec.input_names;
  call.output_names = spec.output_names;
  for (const InputSignature& in : signature.inputs) {
    RecordedInput r;
    r.is_scalar = in.is_scalar;
    r.dtype = in.dtype;
    if (!in.is_scalar) r.shape = std::vector<std::int64_t>(static_cast<std::size_t>(in.ndim), kUnfixed);
    call.inputs.push_back(std::move(r));
  }
  for (DType dtype : signature.output_dtypes) call.outputs.push_back(RecordedOutput{dtype, std::nullopt});
  call.template_args = signature.template_args;
  return call;
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
  return encode_record(encode_kernel(RecordedKernel{spec, true, ""}), encode_call(signature_record(spec, signature)));
}

namespace {

// The record file's path ("" : not recording), read from JITKERNEL_RECORD on first use.
std::string record_path() {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.configured) {
    const char* env = std::getenv("JITKERNEL_RECORD");
    r.path = env != nullptr ? env : "";
    r.configured = true;
  }
  return r.path;
}

// Appends `line` to the file at `path` unless this process wrote it already.
void append_once(const std::string& path, const std::string& line) {
  Recorder& r = recorder();
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

}  // namespace

void record_call(const KernelSpec& spec, const Backend& backend, const CallSignature& signature) {
  const std::string path = record_path();
  if (path.empty() || std::strcmp(backend.name(), "cuda") != 0) return;
  append_once(path, call_record_line(spec, signature));
}

bool recording() { return !record_path().empty(); }

void record_line(const std::string& line) {
  const std::string path = record_path();
  if (!path.empty()) append_once(path, line);
}

void set_call_record_path(const std::string& path) {
  Recorder& r = recorder();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.path = path;
  r.configured = true;
}

}  // namespace jk
