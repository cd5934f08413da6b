// The decision lookup of an autotuned call (python/jitkernel/_fleet/
// tune_call.py) in C++: describing the inputs, writing the key bucket as
// JSON, hashing the decision key and reading the decision's head line. A
// second process's first call of a tuned kernel must cost about what an
// untuned kernel's does (issue 30: within 0.1 ms), and each of these steps
// cost tens of microseconds the first time it ran in a process as Python.
// The tuned call's warm path (tune_table.cpp) runs them in one call; the
// module functions here serve the slow path, listings and tests.
//
// A decision's payload (tune_decisions.py writes it) starts with kMagic and a
// head line "<chosen index> <SHA-256 hex of the configuration space>\n"; the
// rest (JSON) is read only by listings. What is read is untrusted: bounded
// (kMaxPayload; the head within kMaxHead bytes), parsed once, and checked
// against the caller's space digest and size.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "services/cache_keys.hpp"
#include "services/device_arg.hpp"
#include "services/tune_lookup.hpp"
#include "call/convert_detail.hpp"
#include "call/dlpack.hpp"
#include "objects/array.hpp"
#include "jitkernel/core/dtype.hpp"
#include "objects/dtypes.hpp"
#include "jitkernel/cache/disk_cache.hpp"
#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/json.hpp"

namespace jk::py::tune {
namespace {

constexpr std::string_view kMagic = "jitkernel-tune 2\n";
constexpr std::size_t kMaxPayload = std::size_t{1} << 20;  // a decision of 256 candidates fits with room
constexpr std::size_t kMaxHead = 80;                        // "<index> <64 hex digits>" and then some
constexpr int kMaxBucketDepth = 16;

}  // namespace

// A dtype-like is memoised by identity in dtype_arg; one that is no dtype
// keys the in-process memory as it is, and its bucket is written in Python.
nb::object jk_dtype_or_same(nb::handle d) {
  if (is_jk_dtype(d)) return nb::borrow(d);
  try {
    return nb::borrow(dtype_object(dtype_arg(d, "dtype")));
  } catch (const std::exception&) {
    PyErr_Clear();
    return nb::borrow(d);
  }
}

std::optional<DeviceFacts> device_facts(nb::handle x) {
  if (is_jk_array(x)) {
    const ArrayView& v = jk_array_ptr(x)->array.view;
    return DeviceFacts{v.shape.data(), static_cast<int>(v.shape.size()), v.dtype, v.device};
  }
  const TypeInfo* info = nullptr;
  try {
    info = &classify(x, "inputs", ItemRef{});
  } catch (const std::exception&) {  // described through its attributes (or as a scalar) instead
    PyErr_Clear();
    return std::nullopt;
  }
  if (info->exchange == nullptr) return std::nullopt;
  dlpack::Tensor t{};
  if (info->exchange->dltensor_from_py_object_no_sync(x.ptr(), &t) != 0) {
    PyErr_Clear();
    return std::nullopt;
  }
  if (t.device.device_type != dlpack::kCUDA || t.ndim < 0 || (t.ndim > 0 && t.shape == nullptr))
    return std::nullopt;
  const std::optional<DType> dtype = dtype_from_dlpack(t.dtype.code, t.dtype.bits, t.dtype.lanes);
  if (!dtype) return std::nullopt;
  return DeviceFacts{t.shape, t.ndim, *dtype, t.device.device_id};
}

// An array is anything with .shape and .dtype. The in-process decision
// memory is keyed by what this returns.
nb::tuple describe(nb::handle inputs) {
  const std::size_t n = nb::len(inputs);
  nb::list shapes, dtypes;
  for (std::size_t i = 0; i < n; ++i) {
    nb::handle x = inputs[i];
    if (const std::optional<DeviceFacts> f = device_facts(x)) {
      nb::list shape;
      for (int d = 0; d < f->ndim; ++d) shape.append(nb::int_(f->shape[d]));
      shapes.append(nb::tuple(shape));
      dtypes.append(nb::borrow(dtype_object(f->dtype)));
    } else if (nb::hasattr(x, "shape") && nb::hasattr(x, "dtype")) {
      PyObject* shape = PySequence_Tuple(x.attr("shape").ptr());  // tuple(x.shape)
      if (shape == nullptr) nb::raise_python_error();
      shapes.append(nb::steal(shape));
      dtypes.append(jk_dtype_or_same(x.attr("dtype")));
    } else {
      shapes.append(nb::none());
      dtypes.append(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(x.ptr()))).attr("__name__"));
    }
  }
  return nb::make_tuple(nb::tuple(shapes), nb::tuple(dtypes));
}

namespace {

// Appends `value` as compact JSON (bucket_json's subset); false for anything
// else (floats, other strings, other types).
bool append_plain(std::string& out, nb::handle value, int depth) {
  PyObject* v = value.ptr();
  if (v == Py_None) {
    out += "null";
  } else if (PyBool_Check(v)) {
    out += v == Py_True ? "true" : "false";
  } else if (is_jk_dtype(value)) {
    json::append_string(out, dtype_name(reinterpret_cast<DTypeObject*>(v)->value));
  } else if (PyLong_CheckExact(v)) {
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow != 0 || (n == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    out += std::to_string(n);
  } else if (PyUnicode_CheckExact(v)) {
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(v, &size);
    if (text == nullptr) {
      PyErr_Clear();
      return false;
    }
    const std::string_view s(text, static_cast<std::size_t>(size));
    for (const char c : s)
      if (c < 0x20 || c > 0x7e) return false;  // json.dumps escapes these its own way
    json::append_string(out, s);
  } else if (PyList_CheckExact(v) || PyTuple_CheckExact(v)) {
    if (depth >= kMaxBucketDepth) return false;
    out += '[';
    bool first = true;
    for (nb::handle item : value) {
      if (!first) out += ',';
      first = false;
      if (!append_plain(out, item, depth + 1)) return false;
    }
    out += ']';
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> bucket_json(nb::handle value) {
  std::string out;
  if (!append_plain(out, value, 0)) return std::nullopt;
  return out;
}

std::string identity_text(const std::string& name, const std::string& arch) {
  return std::to_string(name.size()) + ":" + name + std::to_string(arch.size()) + ":" + arch;
}

namespace {

cache::Digest decision_key(std::string_view static_key, std::string_view identity, std::string_view bucket) {
  std::string text;
  text.reserve(static_key.size() + identity.size() + bucket.size() + 2);
  text.append(static_key).append("\n").append(identity).append("\n").append(bucket);
  return cache::sha256(text);
}

// The chosen index of a decision payload for the space with digest `digest`
// and `count` configurations, or nullopt when the payload is not one.
std::optional<int> chosen_of(std::string_view payload, std::string_view digest, std::int64_t count) {
  if (payload.size() > kMaxPayload || payload.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  const std::string_view rest = payload.substr(kMagic.size(), kMaxHead);
  const std::size_t end = rest.find('\n');
  if (end == std::string_view::npos) return std::nullopt;
  const std::string_view head = rest.substr(0, end);
  const std::size_t space = head.find(' ');
  if (space == 0 || space == std::string_view::npos || space > 4) return std::nullopt;
  int index = 0;
  for (const char c : head.substr(0, space)) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + (c - '0');
  }
  if (head.substr(space + 1) != digest || index >= count) return std::nullopt;
  return index;
}

std::string_view view(const nb::bytes& b) { return {b.c_str(), b.size()}; }

}  // namespace

Found find(std::string_view static_key, std::string_view identity, std::string_view bucket, std::string_view digest,
           std::int64_t count) {
  const cache::Digest key = decision_key(static_key, identity, bucket);
  Found found;
  found.key_hex = cache::to_hex(key);
  std::optional<std::string> payload;
  {
    nb::gil_scoped_release unlocked;
    payload = cache::load(key, cache::EntryKind::Decision);
  }
  found.entry = payload.has_value();
  if (payload) found.chosen = chosen_of(*payload, digest, count);
  if (found.chosen) found.payload = std::move(payload);
  return found;
}

namespace {

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.attr("_tune_decision_magic") = nb::bytes(kMagic.data(), kMagic.size());
  m.attr("_tune_decision_max_bytes") = kMaxPayload;
  m.def("_tune_describe", &describe, "inputs"_a,
        "(shapes, dtypes) of a tuned call's inputs (an array: tuple(shape), its jitkernel dtype where it has "
        "one; a scalar: None, its type's name).");
  m.def("_tune_dtype", &jk_dtype_or_same, "dtype"_a,
        "The jitkernel dtype of a dtype-like, or the object itself when it has none.");
  m.def("_tune_bucket_json", &bucket_json, "value"_a.none(),
        "Compact JSON of a key bucket made of None, bools, int64s, printable-ASCII strings, jitkernel dtypes "
        "(as names), lists and tuples (what json.dumps writes); None for anything else.");
  m.def("_tune_identity_text", &identity_text, "name"_a, "arch"_a,
        "The GPU's part of a tuning decision's key (name and architecture, length-prefixed).");
  m.def(
      "_tune_identity",
      [](nb::handle device) {
        const cuda::DeviceInfo& info = cuda::device_info(device_arg(device));
        return nb::make_tuple(info.name, info.arch, identity_text(info.name, info.arch));
      },
      "device"_a, "(name, architecture, identity text) of a CUDA device, for tuning decisions.");
  m.def(
      "_tune_decision_key",
      [](const std::string& static_key, const std::string& identity, const std::string& bucket) {
        return cache::to_hex(decision_key(static_key, identity, bucket));
      },
      "static"_a, "identity"_a, "bucket"_a, "The cache key (hex) of a tuning decision.");
  m.def(
      "_tune_chosen", [](nb::bytes payload, const std::string& digest, std::int64_t count) {
        return chosen_of(view(payload), digest, count);
      },
      "payload"_a, "digest"_a, "count"_a,
      "The chosen index in a decision's head line when it is one for this space, else None.");
  m.def(
      "_tune_find",
      [](const std::string& static_key, const std::string& identity, const std::string& bucket,
         const std::string& digest, std::int64_t count) {
        const Found found = find(static_key, identity, bucket, digest, count);
        nb::object payload = found.payload ? nb::object(nb::bytes(found.payload->data(), found.payload->size()))
                                           : nb::none();
        return nb::make_tuple(found.key_hex, payload, found.chosen ? nb::cast(*found.chosen) : nb::none(),
                              found.entry);
      },
      "static"_a, "identity"_a, "bucket"_a, "digest"_a, "count"_a,
      "(key hex, payload or None, chosen index or None, whether an entry was found): the stored decision of a "
      "bucket, read and checked in one call.");
}

const Registration reg(order::toolkit, "tune_lookup", bind);

}  // namespace
}  // namespace jk::py::tune
