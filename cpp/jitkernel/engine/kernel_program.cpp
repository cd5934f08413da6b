// Reading a records file into kernels by name (kernel_program.hpp).
#include "jitkernel/engine/kernel_program.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <string_view>
#include <utility>

#include "jitkernel/cache/file_io.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/engine/backend.hpp"

namespace jk {
namespace {

// The whole file, at most kMaxRecordsFileBytes: a regular file, opened
// without blocking (a FIFO in its place is refused, never waited on).
std::string read_records(const std::string& path) {
  cache::Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) throw Error("records file " + path + ": cannot be read (" + cache::errno_text(errno) + ")");
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) throw Error("records file " + path + ": " + cache::errno_text(errno));
  if (!S_ISREG(st.st_mode)) throw Error("records file " + path + ": not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > kMaxRecordsFileBytes)
    throw Error("records file " + path + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                std::to_string(kMaxRecordsFileBytes) + " a records file may hold");
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  if (!cache::read_at(fd.get(), text.data(), text.size(), 0))
    throw Error("records file " + path + ": reading failed (" +
                (errno != 0 ? cache::errno_text(errno) : std::string("it shrank while read")) + ")");
  return text;
}

}  // namespace

KernelProgram::KernelProgram(const std::string& path) : path_(path) {
  const std::string text = read_records(path);
  std::size_t line_number = 0;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::pair<RecordedKernel, RecordedCall> record;
    try {
      record = decode_record(line, "records");  // checks the call against its kernel too
    } catch (const ArgumentError& e) {
      throw ArgumentError("records", path + " line " + std::to_string(line_number) + ": " + e.what());
    }
    auto& [kernel, call] = record;
    if (kernel.binary) {
      ++precompiled_lines_;
      continue;
    }
    const std::string name = kernel.spec.name;
    std::string kernel_text = encode_kernel(kernel);
    auto found = entries_.find(name);
    if (found == entries_.end()) {
      KernelSpec spec = kernel.spec;
      spec.input_names = call.input_names;  // the names the call was made with (the factory may have had none)
      spec.output_names = call.output_names;
      Entry e{std::move(kernel_text), {}, std::make_unique<Kernel>(std::move(spec), cuda_backend())};
      found = entries_.emplace(name, std::move(e)).first;
    } else if (found->second.kernel_text != kernel_text) {
      throw ArgumentError("records", path + " line " + std::to_string(line_number) + ": a second kernel named '" +
                                         name + "' (another source, header or option than the first): give "
                                         "kernels that a C++ program looks up by name names of their own");
    }
    found->second.calls.push_back(std::move(call));
  }
}

std::vector<std::string> KernelProgram::names() const {
  std::vector<std::string> out;
  for (const auto& [name, entry] : entries_) out.push_back(name);
  return out;
}

const KernelProgram::Entry& KernelProgram::entry(const std::string& name) const {
  auto found = entries_.find(name);
  if (found == entries_.end()) {
    std::string known;
    for (const auto& [n, e] : entries_) known += (known.empty() ? "" : ", ") + n;
    throw ArgumentError("name", "no kernel named '" + name + "' in " + path_ + " (it records: " +
                                    (known.empty() ? std::string("none") : known) + ")");
  }
  return found->second;
}

Kernel& KernelProgram::kernel(const std::string& name) { return *entry(name).kernel; }

const std::vector<RecordedCall>& KernelProgram::calls(const std::string& name) const { return entry(name).calls; }

}  // namespace jk
