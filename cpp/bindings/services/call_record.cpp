// The serialised call (engine/call_record.hpp) for Python: the two halves a
// traced front writes (the kernel, the call; the torch op carries them as
// its string arguments, XLA as one record), and their decoding back into
// what Python rebuilds a kernel and a call from. One codec, in C++; Python
// never parses these texts itself. A precompiled kernel's text carries its
// binary: its format is read from the bytes here, never taken on trust. Tuned
// call records (engine/tuned_record.hpp) too: an autotuned call's
// JITKERNEL_RECORD line, and its decoding for replay.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>

#include <string>

#include "bindings.hpp"
#include "call/compile_options.hpp"
#include "call/convert.hpp"
#include "objects/dtypes.hpp"
#include "call/template_args.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/core/text.hpp"
#include "jitkernel/cuda/binary/binary_image.hpp"
#include "jitkernel/cuda/launch/precompiled_kernel.hpp"
#include "jitkernel/engine/call_record.hpp"
#include "jitkernel/engine/record_file.hpp"
#include "jitkernel/engine/tuned_record.hpp"

namespace jk::py {
namespace {

std::vector<std::string> names_arg(nb::handle value, const char* argument) {
  std::vector<std::string> names;
  sequence_arg(value, argument, "a list of str");
  for_each_item(value, argument, [&](std::size_t i, nb::handle item) {
    if (!nb::isinstance<nb::str>(item)) throw ArgumentTypeError(argument, item_text(argument, i) + " is not a str");
    names.push_back(nb::cast<std::string>(item));
  });
  return names;
}

// None, or a list of extents each an int >= 0 or None (fixed only at run time).
std::optional<std::vector<std::int64_t>> extents_arg(nb::handle value, const std::string& what) {
  if (value.is_none()) return std::nullopt;
  sequence_arg(value, what.c_str(), "a list of extents (int or None)");
  std::vector<std::int64_t> out;
  for_each_item(value, what.c_str(), [&](std::size_t, nb::handle item) {
    std::int64_t v = kUnfixed;
    if (!item.is_none() && (int_value(item, &v) != IntResult::Ok || v < 0)) {
      throw ArgumentTypeError(what.c_str(), "expected extents that are ints >= 0 or None, got " + repr_text(item));
    }
    out.push_back(v);
  });
  return out;
}

std::optional<Dim3> dims_arg(nb::handle value, const char* argument) {
  std::optional<std::vector<std::int64_t>> d = extents_arg(value, argument);
  if (!d) return std::nullopt;
  if (d->size() != 3) throw ArgumentError(argument, "expected 3 extents (x, y, z)");
  return Dim3{(*d)[0], (*d)[1], (*d)[2]};
}

// ("array", dtype or None, extents or None) | ("scalar", value) | ("scalar", dtype, None)
RecordedInput input_arg(nb::handle item, std::size_t i, const std::vector<std::string>& names, bool widen_int) {
  const ItemRef where{"input", i, &names};
  const std::string what = item_text("inputs", i);
  if (!nb::isinstance<nb::tuple>(item) || nb::len(item) < 2 || nb::len(item) > 3) {
    throw ArgumentTypeError("inputs", what + ": expected ('array', dtype, shape), ('scalar', value) or "
                                             "('scalar', dtype, None)");
  }
  nb::tuple t = nb::borrow<nb::tuple>(item);
  const bool array = nb::isinstance<nb::str>(t[0]) && nb::cast<std::string>(t[0]) == "array";
  RecordedInput in;
  in.is_scalar = !array;
  if (array || nb::len(t) == 3) {
    if (array && nb::len(t) != 3) throw ArgumentTypeError("inputs", what + ": expected ('array', dtype, shape)");
    if (!t[1].is_none()) in.dtype = dtype_arg(t[1], "inputs", where);
    if (array) in.shape = extents_arg(t[2], what + ".shape");
    if (!array && (!in.dtype || !t[2].is_none())) {
      throw ArgumentTypeError("inputs", what + ": a scalar fixed at run time is ('scalar', dtype, None)");
    }
    return in;
  }
  Scalar s;
  if (!scalar_value(t[1], widen_int, "inputs", where, &s)) {
    throw ArgumentTypeError("inputs", where.prefix() + "expected a Python/NumPy scalar, got " + type_text(t[1]));
  }
  in.dtype = s.dtype;
  in.value = s;
  return in;
}

std::string encode_kernel_py(const std::string& name, nb::handle input_names, nb::handle output_names,
                             const std::string& source, const std::string& header, bool ensure_row_contiguous,
                             int shared_memory, nb::handle compile_options, nb::handle backward) {
  RecordedKernel k;
  k.spec.name = name;
  k.names_given = !input_names.is_none() || !output_names.is_none();
  if (k.names_given) {
    k.spec.input_names = names_arg(input_names.is_none() ? nb::handle(nb::list()) : input_names, "input_names");
    k.spec.output_names = names_arg(output_names.is_none() ? nb::handle(nb::list()) : output_names, "output_names");
  }
  k.spec.source = source;
  k.spec.header = header;
  k.spec.ensure_row_contiguous = ensure_row_contiguous;
  k.spec.shared_memory = shared_memory;
  k.spec.cuda_options = compile_options_arg(compile_options);  // cuda_kernel applied JITKERNEL_CHECKED to them
  if (!backward.is_none()) k.backward = nb::cast<std::string>(backward);
  return encode_kernel(k);
}

// precompiled_cuda_kernel's entry as kernel text: `scalars` of the call's inputs, its last, pass by value.
std::string encode_precompiled_py(const std::string& name, const nb::bytes& binary, int scalars,
                                  bool ensure_row_contiguous, int shared_memory) {
  if (binary.size() > kMaxRecordedBinaryBytes) {
    throw ArgumentError("compiled_source", "a traced call carries its binary in the graph, up to " +
                                               std::to_string(kMaxRecordedBinaryBytes >> 20) + " MiB; this one is " +
                                               std::to_string(binary.size()) + " bytes");
  }
  if (scalars < 0 || shared_memory < 0) throw ArgumentError("scalars", "counts and sizes must be >= 0");
  RecordedKernel k;
  k.names_given = false;
  k.spec.name = name;
  k.spec.ensure_row_contiguous = ensure_row_contiguous;
  k.spec.shared_memory = shared_memory;
  RecordedBinary& b = k.binary.emplace();
  b.bytes.assign(binary.c_str(), binary.size());
  b.format = cuda::binary_format_name(cuda::parse_binary(b.bytes).format);  // ArgumentError("compiled_source")
  b.scalars = scalars;
  return encode_kernel(k);
}

// A recorded precompiled call's checks that need no GPU: the kernel and call fit (check_kernel_call), the
// binary is its recorded format and names the entry, whose parameter sizes match the call.
void check_recorded_py(std::string_view kernel_text, std::string_view call_text) {
  const RecordedKernel k = decode_kernel(kernel_text, "kernel");
  const RecordedCall c = decode_call(call_text, "call");
  check_kernel_call(k, c, "call");
  if (!k.binary) return;
  KernelCall args;
  std::vector<Scalar> scalars;
  for (const RecordedInput& in : c.inputs) {
    if (in.is_scalar) scalars.push_back(Scalar{*in.dtype, {}});
    else args.inputs.emplace_back(ArrayView{});
  }
  args.output_shapes.resize(c.outputs.size());
  cuda::check_precompiled(cuda::recorded_entry(k, "kernel"), args, scalars);
}

std::string encode_call_py(nb::handle input_names, nb::handle output_names, nb::handle inputs, nb::handle outputs,
                           nb::handle templ, nb::handle grid, nb::handle threadgroup, nb::handle init_value,
                           bool verbose, bool dict_form, int extra_operands, bool widen_int) {
  RecordedCall c;
  c.input_names = names_arg(input_names, "input_names");
  c.output_names = names_arg(output_names, "output_names");
  sequence_arg(inputs, "inputs", "a list of input entries");
  for_each_item(inputs, "inputs", [&](std::size_t i, nb::handle item) {
    c.inputs.push_back(input_arg(item, i, c.input_names, widen_int));
  });
  sequence_arg(outputs, "outputs", "a list of (dtype, shape) pairs");
  for_each_item(outputs, "outputs", [&](std::size_t i, nb::handle item) {
    const std::string what = item_text("outputs", i);
    if (!nb::isinstance<nb::tuple>(item) || nb::len(item) != 2) {
      throw ArgumentTypeError("outputs", what + ": expected (dtype, shape)");
    }
    nb::tuple t = nb::borrow<nb::tuple>(item);
    c.outputs.push_back(RecordedOutput{dtype_arg(t[0], "output_dtypes", ItemRef{"output", i, &c.output_names}),
                                       extents_arg(t[1], what + ".shape")});
  });
  if (c.inputs.size() != c.input_names.size() || c.outputs.size() != c.output_names.size()) {
    throw ArgumentError("inputs", "the call has " + std::to_string(c.inputs.size()) + " inputs and " +
                                      std::to_string(c.outputs.size()) + " outputs for " +
                                      std::to_string(c.input_names.size()) + " and " +
                                      std::to_string(c.output_names.size()) + " names");
  }
  c.template_args = template_args(templ);
  c.grid = dims_arg(grid, "grid");
  c.threadgroup = dims_arg(threadgroup, "threadgroup");
  c.init_value = init_value_arg(init_value);
  c.verbose = verbose;
  c.dict_form = dict_form;
  c.extra_operands = extra_operands;
  return encode_call(c);
}

// ---- decoding into Python values ----

// The text of a str (UTF-8) or bytes argument; anything else, or a str that is not UTF-8, is refused naming it.
std::string text_arg(nb::handle text, const char* argument) {
  if (nb::isinstance<nb::bytes>(text)) {
    return std::string(api::bytes_data(text.ptr()), static_cast<std::size_t>(api::bytes_size(text.ptr())));
  }
  if (!nb::isinstance<nb::str>(text)) {
    throw ArgumentTypeError(argument, "expected a serialised jitkernel call (str), got " + type_text(text));
  }
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(text.ptr(), &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    throw ArgumentError(argument, "not a jitkernel call: the text is not valid Unicode (a lone surrogate)");
  }
  return std::string(utf8, static_cast<std::size_t>(size));
}

nb::object extents_object(const std::optional<std::vector<std::int64_t>>& shape) {
  if (!shape) return nb::none();
  nb::list l;
  for (std::int64_t d : *shape) l.append(d == kUnfixed ? nb::none() : nb::cast(d));
  return nb::tuple(l);
}

nb::list strings_object(const std::vector<std::string>& items) {
  nb::list l;
  for (const std::string& s : items) l.append(nb::str(s.data(), s.size()));
  return l;
}

nb::dict options_object(const CudaCompileOptions& o) {
  struct Dict : CudaOptionSink {
    nb::dict d;
    void text(const char* name, const std::string& value) override { d[name] = value; }
    void flag(const char* name, bool value) override { d[name] = value; }
    void number(const char* name, int value) override { d[name] = value; }
    void texts(const char* name, const std::vector<std::string>& values) override { d[name] = strings_object(values); }
    void defines(const char* name, const std::vector<std::pair<std::string, std::optional<std::string>>>& defs) override {
      nb::dict out;
      for (const auto& [key, value] : defs)
        out[nb::str(key.data(), key.size())] = value ? nb::object(nb::str(value->data(), value->size())) : nb::none();
      d[name] = out;
    }
  } sink;
  visit_changed_options(o, sink);
  return sink.d;
}

// precompiled_cuda_kernel's fixed arguments, "format", "scalars" and "backend": "precompiled".
nb::dict precompiled_object(const RecordedKernel& k) {
  nb::dict d;
  d["backend"] = "precompiled";
  d["name"] = nb::str(k.spec.name.data(), k.spec.name.size());
  d["compiled_source"] = nb::bytes(k.binary->bytes.data(), k.binary->bytes.size());
  d["format"] = k.binary->format;
  d["scalars"] = k.binary->scalars;
  d["ensure_row_contiguous"] = k.spec.ensure_row_contiguous;
  d["shared_memory"] = k.spec.shared_memory;
  return d;
}

// cuda_kernel's keyword arguments, and "backward" (a precompiled kernel: precompiled_object).
nb::dict kernel_object(const RecordedKernel& k) {
  if (k.binary) return precompiled_object(k);
  nb::dict d;
  d["name"] = nb::str(k.spec.name.data(), k.spec.name.size());
  d["input_names"] = k.names_given ? nb::object(strings_object(k.spec.input_names)) : nb::none();
  d["output_names"] = k.names_given ? nb::object(strings_object(k.spec.output_names)) : nb::none();
  d["source"] = nb::str(k.spec.source.data(), k.spec.source.size());
  d["header"] = nb::str(k.spec.header.data(), k.spec.header.size());
  d["ensure_row_contiguous"] = k.spec.ensure_row_contiguous;
  d["shared_memory"] = k.spec.shared_memory;
  d["compile_options"] = options_object(k.spec.cuda_options);
  d["backward"] = k.backward.empty() ? nb::none() : nb::object(nb::str(k.backward.data(), k.backward.size()));
  return d;
}

nb::object dims_object(const std::optional<Dim3>& d) {
  if (!d) return nb::none();
  return extents_object(std::vector<std::int64_t>{d->x, d->y, d->z});
}

nb::dict call_object(const RecordedCall& c) {
  nb::dict d;
  d["input_names"] = nb::tuple(strings_object(c.input_names));
  d["output_names"] = nb::tuple(strings_object(c.output_names));
  nb::list inputs;
  for (const RecordedInput& in : c.inputs) {
    nb::object dtype = in.dtype ? nb::borrow(dtype_object(*in.dtype)) : nb::none();
    if (!in.is_scalar) {
      inputs.append(nb::make_tuple("array", dtype, extents_object(in.shape)));
    } else {
      nb::object value = in.value ? nb::object(nb::bytes(in.value->bytes, dtype_size(*in.dtype))) : nb::none();
      inputs.append(nb::make_tuple("scalar", dtype, value));
    }
  }
  d["inputs"] = nb::tuple(inputs);
  nb::list outputs;
  for (const RecordedOutput& o : c.outputs) {
    outputs.append(nb::make_tuple(nb::borrow(dtype_object(o.dtype)), extents_object(o.shape)));
  }
  d["outputs"] = nb::tuple(outputs);
  nb::list templ;
  for (const TemplateArg& a : c.template_args) {
    nb::str name(a.name.data(), a.name.size());
    if (a.kind == TemplateArg::Kind::DType) templ.append(nb::make_tuple(name, nb::borrow(dtype_object(a.dtype))));
    else if (a.kind == TemplateArg::Kind::Bool) templ.append(nb::make_tuple(name, a.int_value != 0));
    else templ.append(nb::make_tuple(name, a.int_value));
  }
  d["template"] = nb::tuple(templ);
  d["grid"] = dims_object(c.grid);
  d["threadgroup"] = dims_object(c.threadgroup);
  d["init_value"] = c.init_value ? nb::cast(*c.init_value) : nb::none();
  d["verbose"] = c.verbose;
  d["dict_form"] = c.dict_form;
  d["extra_operands"] = c.extra_operands;
  return d;
}

// A space entry as Config.to_json writes it (lists, {"dtype": name}).
nb::dict config_object(const TunedConfig& c) {
  nb::list templ;
  for (const TemplateArg& t : c.template_args) {
    nb::object value;
    if (t.kind == TemplateArg::Kind::Int) value = nb::cast(t.int_value);
    else if (t.kind == TemplateArg::Kind::Bool) value = nb::bool_(t.int_value != 0);
    else {
      nb::dict d;
      d["dtype"] = dtype_name(t.dtype);
      value = d;
    }
    nb::list pair;
    pair.append(nb::str(t.name.data(), t.name.size()));
    pair.append(value);
    templ.append(pair);
  }
  nb::dict d;
  d["template"] = templ;
  d["threadgroup"] = c.threadgroup ? nb::object(nb::list(dims_object(c.threadgroup))) : nb::none();
  d["grid"] = c.grid ? nb::object(nb::list(dims_object(c.grid))) : nb::none();
  return d;
}

nb::dict tuned_object(const TunedRecord& t) {
  nb::dict d;
  d["record"] = nb::str(t.record.data(), t.record.size());
  d["static"] = t.static_key;
  d["bucket"] = nb::str(t.bucket.data(), t.bucket.size());
  nb::list space, launches;
  for (const TunedConfig& c : t.space) space.append(config_object(c));
  for (const TunedLaunch& l : t.launches) launches.append(nb::make_tuple(dims_object(l.grid), dims_object(l.threadgroup)));  // Dim3 -> optional
  d["space"] = space;
  d["launches"] = launches;
  d["warmup"] = t.warmup;
  d["reps"] = t.reps ? nb::cast(*t.reps) : nb::none();
  return d;
}

void bind(nb::module_& m) {
  m.def("encode_kernel", &encode_kernel_py, nb::arg("name"), nb::arg("input_names").none(),
        nb::arg("output_names").none(), nb::arg("source"), nb::arg("header"), nb::arg("ensure_row_contiguous"),
        nb::arg("shared_memory"), nb::arg("compile_options").none(), nb::arg("backward").none(),
        "The serialised kernel (engine/call_record.hpp) of cuda_kernel's arguments (internal).");
  m.def("encode_precompiled", &encode_precompiled_py, nb::arg("name"), nb::arg("compiled_source"),
        nb::arg("scalars"), nb::arg("ensure_row_contiguous"), nb::arg("shared_memory"),
        "The serialised kernel of a precompiled_cuda_kernel entry point (internal).");
  m.def("check_recorded", &check_recorded_py, nb::arg("kernel"), nb::arg("call"),
        "Checks a serialised kernel and call together; for a precompiled kernel also its binary, entry and "
        "parameter sizes (no GPU; internal).");
  m.def("encode_call", &encode_call_py, nb::arg("input_names"), nb::arg("output_names"), nb::arg("inputs"),
        nb::arg("outputs"), nb::arg("template").none(), nb::arg("grid").none(), nb::arg("threadgroup").none(),
        nb::arg("init_value").none(), nb::arg("verbose"), nb::arg("dict_form"), nb::arg("extra_operands"),
        nb::arg("widen_int"),
        "The serialised call of a kernel call; None sizes are fixed by the caller at run time (internal).");
  m.def("encode_record", [](std::string_view k, std::string_view c) { return encode_record(k, c); },
        nb::arg("kernel"), nb::arg("call"), "The record text of a serialised kernel and call (internal).");
  m.def("decode_kernel", [](nb::handle text, const char* argument) {
          return kernel_object(decode_kernel(text_arg(text, argument), argument));
        }, nb::arg("text"), nb::arg("argument"),
        "cuda_kernel's arguments (and 'backward') from a serialised kernel; ArgumentError naming `argument`.");
  m.def("decode_call", [](nb::handle text, const char* argument) {
          return call_object(decode_call(text_arg(text, argument), argument));
        }, nb::arg("text"), nb::arg("argument"), "A serialised call as a dict (internal).");
  m.def("decode_record", [](nb::handle text, const char* argument) {
          auto [k, c] = decode_record(text_arg(text, argument), argument);
          return nb::make_tuple(kernel_object(k), call_object(c));
        }, nb::arg("text"), nb::arg("argument"), "A record as (kernel arguments, call) dicts (internal).");
  m.def("_recording", &recording, "Whether calls are recorded (JITKERNEL_RECORD; internal).");
  m.def(
      "_record_tuned",
      [](nb::handle text) {
        const std::string line = encode_tuned(decode_tuned(text_arg(text, "record"), "record", false));
        nb::gil_scoped_release unlocked;
        record_line(line);
        return line;
      },
      nb::arg("text"),
      "Checks a tuned call record (any key order), appends its canonical line to the record file once per process "
      "when recording, and returns the line (internal: autotuning).");
  m.def(
      "decode_tuned_record",
      [](nb::handle text, const char* argument) {
        return tuned_object(decode_tuned(text_arg(text, argument), argument, true));
      },
      nb::arg("text"), nb::arg("argument"),
      "A tuned call record line as a dict; ArgumentError naming `argument` (internal).");
}

const Registration reg(order::kernel + 6, "call_record", bind);

}  // namespace
}  // namespace jk::py
