// A tuned call record: the JITKERNEL_RECORD line an autotuned call writes once
// per decided key bucket, so that `precompile --record FILE` can compile every
// candidate and, with --tune on the target GPU, time them and store the
// decision under the key the live program computes. A record is data, never
// code: the grid, threadgroup and key functions that made the launches are
// not in it; their results are (each candidate's launch resolved for the
// recorded shapes, the tuned object's static key, the bucket's text).
//
//   {"jitkernel_tuned":2, "record":<a call record's text (call_record.hpp):
//    the kernel, fixed input and output shapes, scalars, the call's own
//    template arguments>, "static":<64 hex digits>, "bucket":<JSON text>,
//    "space":[{"grid":..,"template":[[name, int | bool | {"dtype":name}]..],
//    "threadgroup":..}..], "launches":[[grid, threadgroup]..],
//    "warmup":int, "reps":int or null}
//
// Decoding reads each byte once, bounds every list (at most
// kMaxTunedConfigs candidates, kMaxTunedTemplate template arguments each),
// checks every field (launch extents positive, one launch per candidate, the
// nested record decoded by decode_record, its shapes fixed, no template name
// set twice) and, for text read from a file, that it is the canonical text.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/engine/call_record.hpp"

namespace jk {

inline constexpr std::size_t kMaxTunedConfigs = 256;  // python/jitkernel/_fleet/tune_config.py's MAX_CONFIGS
inline constexpr std::size_t kMaxTunedTemplate = 64;

struct TunedConfig {  // a jitkernel.Config as Config.to_json writes it
  std::vector<TemplateArg> template_args;
  std::optional<Dim3> threadgroup;
  std::optional<Dim3> grid;
};

struct TunedLaunch {  // a candidate's launch for the recorded shapes
  Dim3 grid;
  Dim3 threadgroup;
};

struct TunedRecord {
  std::string record;      // a call record's text (decode_record)
  std::string static_key;  // 64 lowercase hex digits
  std::string bucket;      // JSON text
  std::vector<TunedConfig> space;
  std::vector<TunedLaunch> launches;  // one per space entry
  int warmup = 0;
  std::optional<int> reps;
};

std::string encode_tuned(const TunedRecord& record);
// `canonical`: refuse text that is not the one encode_tuned writes (text read from a file); off for text
// jitkernel is about to write (any key order), whose canonical form is encode_tuned of the result.
TunedRecord decode_tuned(std::string_view text, const char* argument, bool canonical);

}  // namespace jk
