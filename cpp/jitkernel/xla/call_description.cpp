// The `jk_call` attribute text: writer and linear-time, bounds-checked reader.
// A token is `<decimal length>:<bytes>`; the fields follow in a fixed order
// (kMagic first, so text from another version is refused by name). Numbers
// are decimal, scalar values and init_value their exact bits in hex, dtypes
// their public names.
#include "jitkernel/xla/call_description.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "jitkernel/cache/sha256.hpp"
#include "jitkernel/core/errors.hpp"

namespace jk::xla {
namespace {

constexpr std::string_view kMagic = "jitkernel.xla.1";
constexpr std::int64_t kMaxCount = 1 << 16;    // names, inputs, outputs, template arguments
constexpr std::int64_t kMaxNdim = 64;
constexpr std::int64_t kMaxExtent = std::int64_t{1} << 62;

// ---- writing ----------------------------------------------------------------

void put(std::string& out, std::string_view token) {
  out += std::to_string(token.size());
  out += ':';
  out.append(token.data(), token.size());
}
void put(std::string& out, std::int64_t value) { put(out, std::to_string(value)); }

void put_bits(std::string& out, std::uint64_t bits) {
  static const char digits[] = "0123456789abcdef";
  char text[16];
  for (int i = 15; i >= 0; --i, bits >>= 4) text[i] = digits[bits & 0xF];
  put(out, std::string_view(text, 16));
}

void put_shape(std::string& out, DType dtype, const std::vector<std::int64_t>& shape) {
  put(out, dtype_name(dtype));
  put(out, static_cast<std::int64_t>(shape.size()));
  for (std::int64_t d : shape) put(out, d);
}

void put_names(std::string& out, const std::vector<std::string>& names) {
  put(out, static_cast<std::int64_t>(names.size()));
  for (const std::string& n : names) put(out, n);
}

void put_dims(std::string& out, const Dim3& d) {
  put(out, d.x);
  put(out, d.y);
  put(out, d.z);
}

// ---- reading ----------------------------------------------------------------

// A token as it may appear in a message: bytes outside printable ASCII as \xNN, at most 40 shown.
std::string shown(std::string_view t) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < t.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(t[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 0xF];
    }
  }
  if (t.size() > 40) out += "...";
  return out;
}

[[noreturn]] void malformed(const std::string& what, const std::string& why) {
  throw ArgumentError("jk_call", "malformed jitkernel call attribute at " + what + ": " + why);
}

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  std::string_view token(const std::string& what) {
    std::size_t len = 0;
    int digits = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (++digits > 9) malformed(what, "token length has more than 9 digits");
      len = len * 10 + static_cast<std::size_t>(text_[pos_++] - '0');
    }
    if (pos_ >= text_.size()) malformed(what, "the text ends early");
    if (digits == 0 || text_[pos_] != ':') malformed(what, "expected '<length>:' at byte " + std::to_string(pos_));
    ++pos_;
    if (len > text_.size() - pos_) {
      malformed(what, "token of " + std::to_string(len) + " bytes runs past the end of the text");
    }
    std::string_view t = text_.substr(pos_, len);
    pos_ += len;
    return t;
  }

  std::int64_t integer(const std::string& what, std::int64_t lo, std::int64_t hi) {
    std::string_view t = token(what);
    bool negative = !t.empty() && t[0] == '-';
    std::size_t i = negative ? 1 : 0;
    if (i == t.size() || t.size() - i > 19) malformed(what, "expected an integer, got '" + shown(t) + "'");
    std::uint64_t v = 0;
    for (; i < t.size(); ++i) {
      if (t[i] < '0' || t[i] > '9') malformed(what, "expected an integer, got '" + shown(t) + "'");
      v = v * 10 + static_cast<std::uint64_t>(t[i] - '0');
    }
    if (v > static_cast<std::uint64_t>(INT64_MAX)) malformed(what, "integer out of range");
    const std::int64_t value = negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
    if (value < lo || value > hi) {
      malformed(what, std::to_string(value) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return value;
  }

  std::size_t count(const std::string& what) { return static_cast<std::size_t>(integer(what, 0, kMaxCount)); }

  DType dtype(const std::string& what) {
    std::string_view t = token(what);
    std::optional<DType> d = dtype_from_name(t);
    if (!d) malformed(what, "unknown dtype '" + shown(t) + "'");
    return *d;
  }

  std::uint64_t bits(const std::string& what) {
    std::string_view t = token(what);
    if (t.size() != 16) malformed(what, "expected 16 hex digits");
    std::uint64_t v = 0;
    for (char c : t) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) malformed(what, "expected 16 hex digits");
      v = (v << 4) | static_cast<std::uint64_t>(d);
    }
    return v;
  }

  std::vector<std::int64_t> shape(const std::string& what) {
    std::vector<std::int64_t> shape(static_cast<std::size_t>(integer(what + ".ndim", 0, kMaxNdim)));
    for (std::size_t d = 0; d < shape.size(); ++d) {
      shape[d] = integer(what + "[" + std::to_string(d) + "]", 0, kMaxExtent);
    }
    return shape;
  }

  std::vector<std::string> names(const std::string& what) {
    std::vector<std::string> names(count(what + " count"));
    for (std::size_t i = 0; i < names.size(); ++i) names[i] = token(what + "[" + std::to_string(i) + "]");
    return names;
  }

  Dim3 dims(const std::string& what) {
    Dim3 d;
    d.x = integer(what + ".x", 0, kMaxExtent);
    d.y = integer(what + ".y", 0, kMaxExtent);
    d.z = integer(what + ".z", 0, kMaxExtent);
    return d;
  }

  bool at_end() const { return pos_ == text_.size(); }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

InputDescription read_input(Reader& r, const std::string& what) {
  InputDescription in;
  std::string_view kind = r.token(what + ".kind");
  if (kind != "a" && kind != "s") malformed(what + ".kind", "expected 'a' (array) or 's' (scalar)");
  in.is_scalar = kind == "s";
  in.dtype = r.dtype(what + ".dtype");
  if (in.is_scalar) {
    if (dtype_size(in.dtype) > sizeof(in.scalar.bytes)) malformed(what + ".dtype", "too wide for a scalar");
    in.scalar.dtype = in.dtype;
    const std::uint64_t bits = r.bits(what + ".value");
    std::memcpy(in.scalar.bytes, &bits, sizeof(bits));
  } else {
    in.shape = r.shape(what + ".shape");
  }
  return in;
}

TemplateArg read_template_arg(Reader& r, const std::string& what) {
  TemplateArg arg;
  arg.name = std::string(r.token(what + ".name"));
  std::string_view kind = r.token(what + ".kind");
  if (kind == "i") {
    arg.kind = TemplateArg::Kind::Int;
    arg.int_value = r.integer(what + ".value", INT64_MIN + 1, INT64_MAX);
  } else if (kind == "b") {
    arg.kind = TemplateArg::Kind::Bool;
    arg.int_value = r.integer(what + ".value", 0, 1);
  } else if (kind == "d") {
    arg.kind = TemplateArg::Kind::DType;
    arg.dtype = r.dtype(what + ".value");
  } else {
    malformed(what + ".kind", "expected 'i', 'b' or 'd'");
  }
  return arg;
}

}  // namespace

std::size_t CallDescription::array_input_count() const {
  std::size_t n = 0;
  for (const InputDescription& in : inputs) n += in.is_scalar ? 0 : 1;
  return n;
}

std::string encode(const CallDescription& call) {
  std::string out;
  out.reserve(256 + call.spec.source.size() + call.spec.header.size());
  put(out, kMagic);
  put(out, call.spec.name);
  put(out, call.spec.source);
  put(out, call.spec.header);
  put(out, call.spec.ensure_row_contiguous ? 1 : 0);
  put(out, call.spec.shared_memory);
  put_names(out, call.spec.input_names);
  put_names(out, call.spec.output_names);
  put(out, static_cast<std::int64_t>(call.inputs.size()));
  for (const InputDescription& in : call.inputs) {
    put(out, in.is_scalar ? "s" : "a");
    if (in.is_scalar) {
      put(out, dtype_name(in.dtype));
      std::uint64_t bits = 0;
      std::memcpy(&bits, in.scalar.bytes, sizeof(bits));
      put_bits(out, bits);
    } else {
      put_shape(out, in.dtype, in.shape);
    }
  }
  put(out, static_cast<std::int64_t>(call.output_dtypes.size()));
  for (std::size_t i = 0; i < call.output_dtypes.size(); ++i) {
    put_shape(out, call.output_dtypes[i], call.output_shapes.at(i));
  }
  put(out, static_cast<std::int64_t>(call.template_args.size()));
  for (const TemplateArg& t : call.template_args) {
    put(out, t.name);
    const bool is_dtype = t.kind == TemplateArg::Kind::DType;
    put(out, is_dtype ? "d" : t.kind == TemplateArg::Kind::Bool ? "b" : "i");
    if (is_dtype) {
      put(out, dtype_name(t.dtype));
    } else {
      put(out, t.int_value);
    }
  }
  put_dims(out, call.grid);
  put_dims(out, call.threadgroup);
  if (call.init_value) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &*call.init_value, sizeof(bits));
    put_bits(out, bits);
  } else {
    put(out, "");
  }
  put(out, call.extra_operands);
  return out;
}

CallDescription parse(std::string_view text) {
  Reader r(text);
  if (r.token("version") != kMagic) {
    malformed("version", "not a jitkernel call attribute of this version (expected '" + std::string(kMagic) + "')");
  }
  CallDescription call;
  call.spec.name = std::string(r.token("name"));
  call.spec.source = std::string(r.token("source"));
  call.spec.header = std::string(r.token("header"));
  call.spec.ensure_row_contiguous = r.integer("ensure_row_contiguous", 0, 1) != 0;
  call.spec.shared_memory = static_cast<int>(r.integer("shared_memory", 0, INT32_MAX));
  call.spec.input_names = r.names("input_names");
  call.spec.output_names = r.names("output_names");
  call.inputs.resize(r.count("inputs count"));
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    call.inputs[i] = read_input(r, "inputs[" + std::to_string(i) + "]");
  }
  const std::size_t n_out = r.count("outputs count");
  call.output_dtypes.resize(n_out);
  call.output_shapes.resize(n_out);
  for (std::size_t i = 0; i < n_out; ++i) {
    const std::string what = "outputs[" + std::to_string(i) + "]";
    call.output_dtypes[i] = r.dtype(what + ".dtype");
    call.output_shapes[i] = r.shape(what + ".shape");
  }
  call.template_args.resize(r.count("template count"));
  for (std::size_t i = 0; i < call.template_args.size(); ++i) {
    call.template_args[i] = read_template_arg(r, "template[" + std::to_string(i) + "]");
  }
  call.grid = r.dims("grid");
  call.threadgroup = r.dims("threadgroup");
  // init_value: empty, or the double's bits.
  Reader probe = r;
  if (probe.token("init_value").empty()) {
    r = probe;
  } else {
    const std::uint64_t bits = r.bits("init_value");
    double value = 0;
    std::memcpy(&value, &bits, sizeof(value));
    call.init_value = value;
  }
  call.extra_operands = static_cast<int>(r.integer("extra_operands", 0, kMaxCount));
  if (!r.at_end()) malformed("end", "unexpected bytes after the last field");
  return call;
}

std::uint64_t call_key(std::string_view text) {
  const cache::Digest d = cache::sha256(text);
  std::uint64_t key = 0;
  for (int i = 0; i < 8; ++i) key = (key << 8) | d[static_cast<std::size_t>(i)];
  return key;
}

}  // namespace jk::xla
