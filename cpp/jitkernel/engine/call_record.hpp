// The serialised call: one kernel and one call written as text, the single
// format every front carries a call in: the torch op's string arguments (a
// graph torch.compile or torch.export keeps), XLA's `jk_call` attribute (a
// program in JAX's persistent cache), the lines JITKERNEL_RECORD writes and
// `precompile --record` replays. A record made by one front replays in
// another. The text is canonical JSON (fixed key order, defaults written
// once), so equal calls give equal text: the torch graph, the XLA key and the
// record file's duplicate check all compare text.
//
// Three texts, each carrying its format version, so a program stored today
// either decodes tomorrow or fails naming the version:
//   kernel  {"jitkernel_kernel":2, "backend":"cuda", name, names, source,
//            header, ensure_row_contiguous, shared_memory, compile_options,
//            backward}
//      or   {"jitkernel_kernel":2, "backend":"precompiled", name, format,
//            binary (base64), scalars, ensure_row_contiguous, shared_memory}
//   call    {"jitkernel_call":2, input/output names, inputs, outputs,
//            template, grid, threadgroup, init_value, verbose, dict_form,
//            extra_operands}
//   record  {"jitkernel_record":2, "kernel":<kernel>, "call":<call>}
// A size or scalar the caller fixes only at run time (a traced torch call's
// SymInts) is null; docs/precompile.md gives every field.
//
// Decoding reads each byte once (core/json.hpp), checks every field's type
// and range, and accepts only the canonical text (decode, encode again,
// compare): anything else is an ArgumentError naming the argument the text
// came in and the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jitkernel/core/array_view.hpp"
#include "jitkernel/engine/kernel_spec.hpp"
#include "jitkernel/engine/template_arg.hpp"

namespace jk {

inline constexpr int kCallFormat = 2;
// A size not fixed by the record (null in the text): the caller supplies it.
inline constexpr std::int64_t kUnfixed = -1;

// The binary of a "precompiled" kernel (precompiled_cuda_kernel): an entry
// point of PTX, a cubin or a fatbin built elsewhere. Its parameters are a
// pointer per call input that is not one of the last `scalars` (scalar inputs
// travel as 0-d device arrays), a pointer per output, then the last
// `scalars` inputs by value. The codec checks the fields, not the bytes: the
// CUDA layer parses them (and checks `format`) before anything loads them.
struct RecordedBinary {
  std::string format;  // "ptx", "cubin" or "fatbin"
  std::string bytes;   // at most kMaxRecordedBinaryBytes
  int scalars = 0;
};
// A record line holds at most 64 MiB (python/jitkernel/_fleet/record_replay.py); base64 is 4/3 of this.
inline constexpr std::size_t kMaxRecordedBinaryBytes = std::size_t{32} << 20;

struct RecordedKernel {
  // CUDA fields, compile options included; for a precompiled kernel only the
  // entry name, ensure_row_contiguous and shared_memory.
  KernelSpec spec;
  bool names_given = true;  // false: the factory was given no names (calls pass dicts)
  std::string backward;     // the backward's identity ("" when none): two backwards are two ops
  std::optional<RecordedBinary> binary;  // set: backend "precompiled"
};

struct RecordedInput {
  bool is_scalar = false;
  std::optional<DType> dtype;  // arrays: none when the caller's array decides; scalars: always set
  // Arrays: the shape when the record fixes its rank (extents kUnfixed where
  // not fixed); none when not even the rank is.
  std::optional<std::vector<std::int64_t>> shape;
  std::optional<Scalar> value;  // scalars: none when the caller passes it
};

struct RecordedOutput {
  DType dtype = DType::Float32;
  std::optional<std::vector<std::int64_t>> shape;  // as RecordedInput::shape
};

struct RecordedCall {
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  std::vector<RecordedInput> inputs;
  std::vector<RecordedOutput> outputs;
  std::vector<TemplateArg> template_args;
  // Launch geometry; none in a record of the signature alone; extents may be kUnfixed.
  std::optional<Dim3> grid;
  std::optional<Dim3> threadgroup;
  std::optional<double> init_value;
  bool verbose = false;
  bool dict_form = false;
  // Operands after the array inputs: outputs= arrays that are not inputs
  // (XLA passes them only to alias them with their outputs).
  int extra_operands = 0;

  std::size_t array_input_count() const;
};

std::string encode_kernel(const RecordedKernel& kernel);
std::string encode_call(const RecordedCall& call);
// The record text; `kernel_text` and `call_text` are encode_kernel's and encode_call's.
std::string encode_record(std::string_view kernel_text, std::string_view call_text);

// `argument` names where the text came from in errors ("kernel", "call", "jk_call", ...).
RecordedKernel decode_kernel(std::string_view text, const char* argument);
RecordedCall decode_call(std::string_view text, const char* argument);
std::pair<RecordedKernel, RecordedCall> decode_record(std::string_view text, const char* argument);
// What a kernel needs of a call decoded apart from it (the torch op's two
// texts; decode_record checks it too): a precompiled kernel's by-value
// scalars are the call's last inputs, and it takes no template arguments.
void check_kernel_call(const RecordedKernel& kernel, const RecordedCall& call, const char* argument);

}  // namespace jk
