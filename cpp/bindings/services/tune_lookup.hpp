// The pieces of an autotuned call's decision lookup (tune_lookup.cpp), shared
// by the module functions there and the tuned call's warm path
// (tune_table.cpp): describing a call's inputs, writing a key bucket as JSON,
// a GPU's part of a decision key, and reading a stored decision.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bindings.hpp"
#include "jitkernel/core/dtype.hpp"

namespace jk::py::tune {

// The jitkernel dtype of a dtype-like, or the object itself when it has none.
nb::object jk_dtype_or_same(nb::handle d);

// What describing a call reads of a device array, read the way a kernel call
// reads it (a jk.Array's view; torch's DLPack exchange API, one C call)
// rather than through Python attributes, whose first use in a process costs
// tens of microseconds with torch tensors. `shape` lives as long as `x`.
struct DeviceFacts {
  const std::int64_t* shape;
  int ndim;
  DType dtype;
  int device;
};
std::optional<DeviceFacts> device_facts(nb::handle x);

// (shapes, dtypes) of a call's inputs (a list): an array gives tuple(shape)
// and its dtype (a jitkernel dtype where it is one); a scalar gives None and
// its type's name.
nb::tuple describe(nb::handle inputs);

// Compact JSON of a key bucket made of None, bools, int64s, printable-ASCII
// strings, jitkernel dtypes (as names), lists and tuples (what json.dumps
// writes for it); nullopt for anything else (the caller writes it in Python).
std::optional<std::string> bucket_json(nb::handle value);

// The GPU's part of a decision key (name and architecture, length-prefixed).
std::string identity_text(const std::string& name, const std::string& arch);

// A stored decision looked up: its key (hex), and when the entry holds a
// decision for this space, its payload and chosen index.
struct Found {
  std::string key_hex;
  std::optional<std::string> payload;  // set only with `chosen`
  std::optional<int> chosen;
  bool entry = false;  // whether an entry was found at all (usable or not)
};

// Reads the decision of (static part, GPU, bucket) for a space of `count`
// configurations with digest `digest` (the GIL is released for the read).
Found find(std::string_view static_key, std::string_view identity, std::string_view bucket, std::string_view digest,
           std::int64_t count);

}  // namespace jk::py::tune
