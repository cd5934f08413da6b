// The record file: when JITKERNEL_RECORD names a file, a process appends one
// line (a serialised call record, call_record.hpp) per distinct (CUDA kernel spec, call signature) it generates a
// launch plan for, so that `python -m jitkernel precompile --record FILE`
// can compile the same kernels ahead of time on another machine (one
// without a GPU). A line is data only: the kernel, the input kinds/dtypes/
// ranks, the output dtypes and the template arguments (all that the
// generated source depends on); docs/precompile.md gives the format.
//
// Written when a kernel is first compiled or loaded for a signature on a
// device (never on a repeated call; a kernel that fails to compile is not
// recorded), once per distinct line and process, with one write() on a
// file opened O_APPEND, so many processes can append to one file. A file
// that cannot be written is reported once (a CacheWarning) and recording
// goes on trying for later lines. Autotuned calls add a line of their own
// kind per decided key bucket (tuned_record.hpp, through record_line).
#pragma once

#include <string>

#include "jitkernel/engine/backend.hpp"
#include "jitkernel/engine/call_signature.hpp"
#include "jitkernel/engine/kernel_spec.hpp"

namespace jk {

// The record line (without its newline) of `spec` called with `signature`.
std::string call_record_line(const KernelSpec& spec, const CallSignature& signature);

// Appends the line of (spec, signature) to the record file, if recording and
// the backend is CUDA and this process has not written the line yet.
void record_call(const KernelSpec& spec, const Backend& backend, const CallSignature& signature);

// Whether a record file is set (JITKERNEL_RECORD or set_call_record_path).
bool recording();

// Appends `line` (another record kind's text, without its newline: tuned_record.hpp) to the record file, if
// recording and this process has not written the line yet.
void record_line(const std::string& line);

// Sets the record file ("" stops recording), replacing what JITKERNEL_RECORD
// said; lines already written are not written again.
void set_call_record_path(const std::string& path);

}  // namespace jk
