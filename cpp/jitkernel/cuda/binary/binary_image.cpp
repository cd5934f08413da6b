// What is inside a compiled CUDA binary (binary_image.hpp): the format
// detection that hands the bytes to one of the readers (readers.hpp), and the
// checks made from what they read (entry point, architecture, parameters).
#include "jitkernel/cuda/binary/binary_image.hpp"

#include <algorithm>
#include <cstring>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/binary/readers.hpp"
#include "jitkernel/cuda/driver/device.hpp"

namespace jk::cuda {

using namespace binary_detail;

const char* binary_format_name(BinaryFormat format) {
  switch (format) {
    case BinaryFormat::Ptx: return "ptx";
    case BinaryFormat::Cubin: return "cubin";
    case BinaryFormat::Fatbin: return "fatbin";
  }
  return "?";
}

std::string SmArch::name() const {
  std::string out = "sm_" + std::to_string(number());
  if (variant) out += variant;
  return out;
}

SmArch SmArch::from_number(int sm, char variant) {
  return SmArch{sm / 10, sm % 10, variant};
}

bool cubin_runs_on(const SmArch& code, int cc_major, int cc_minor) {
  if (code.major != cc_major) return false;
  return code.variant == 'a' ? code.minor == cc_minor : code.minor <= cc_minor;
}

bool ptx_runs_on(const SmArch& code, int cc_major, int cc_minor) {
  if (code.variant == 'a') return code.major == cc_major && code.minor == cc_minor;
  if (code.variant == 'f') return code.major == cc_major && code.minor <= cc_minor;
  return code.number() <= cc_major * 10 + cc_minor;
}

BinaryImage parse_binary(std::string_view bytes) {
  if (bytes.empty()) {
    throw ArgumentError(kArg, "is empty; expected PTX text, an ELF cubin or a fatbin");
  }
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "\x7f" "ELF", 4) == 0) {
    return parse_cubin(bytes);
  }
  if (bytes.size() >= 4) {
    std::uint32_t magic;
    std::memcpy(&magic, bytes.data(), 4);
    if (magic == kFatbinMagic) return parse_fatbin(bytes);
  }
  if (looks_like_ptx(bytes)) return parse_ptx(bytes);
  std::string message = "expected PTX text, an ELF cubin or a fatbin; got " +
                        std::to_string(bytes.size()) + " bytes starting " + hex_prefix(bytes);
  if (bytes.find("__global__") != std::string_view::npos) {
    message += " (this looks like CUDA C++ source: compile it first, e.g. with "
               "jitkernel.compile_cuda(source), or use jitkernel.cuda_kernel)";
  }
  throw ArgumentError(kArg, message);
}

const EntryPoint* find_entry(const BinaryImage& image, const std::string& name) {
  if (!image.entries_known) return nullptr;
  for (const EntryPoint& e : image.entries) {
    if (e.name == name) return &e;
  }
  std::vector<std::string> names;
  for (const EntryPoint& e : image.entries) names.push_back(e.name);
  throw_missing_entry(name, image.format, names);
}

void throw_missing_entry(const std::string& name, BinaryFormat format,
                         const std::optional<std::vector<std::string>>& entry_names) {
  std::string listed;
  if (!entry_names) {
    listed = " (its entry points could not be listed)";
  } else if (entry_names->empty()) {
    listed = "; it has no entry points";
  } else {
    listed = "; entry points in this binary: " + join(*entry_names);
  }
  throw ArgumentError("name", "no entry point '" + name + "' in this " +
                                  binary_format_name(format) + listed +
                                  " (C++ kernels need their mangled name, or extern \"C\")");
}

void check_arch(const BinaryImage& image, int cc_major, int cc_minor,
                const std::string& device_label, const std::string& device_name) {
  const std::string device = device_label + " is sm_" + std::to_string(cc_major * 10 + cc_minor) +
                             " (" + device_name + ")";
  const std::string suggestion = arch_for(cc_major, cc_minor);  // what NVRTC compiles for it
  switch (image.format) {
    case BinaryFormat::Cubin:
      if (!cubin_runs_on(*image.arch, cc_major, cc_minor)) {
        throw ArgumentError(kArg, "cubin built for " + image.arch->name() + " but " + device +
                                      "; compile it for " + suggestion +
                                      " (e.g. nvcc -cubin -arch=" + suggestion + ") or pass PTX");
      }
      return;
    case BinaryFormat::Ptx:
      if (!ptx_runs_on(*image.arch, cc_major, cc_minor)) {
        throw ArgumentError(kArg, "PTX targets " + image.arch->name() + " but " + device +
                                      ", which cannot run it; compile for " + suggestion +
                                      " or an older architecture");
      }
      return;
    case BinaryFormat::Fatbin:
      if (!fatbin_image_for(image, cc_major, cc_minor)) {
        std::vector<std::string> held;
        for (const FatbinImage& im : image.images) {
          held.push_back((im.is_ptx ? "PTX for " : "cubin for ") + im.arch.name());
        }
        throw ArgumentError(kArg, "fatbin holds " + join(held) + " but " + device +
                                      " and can run none of them; add -gencode for " + suggestion);
      }
      return;
  }
}

void check_params(const std::vector<KernelParam>& params, const ParamCheck& call) {
  auto bytes_text = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); };
  const std::size_t pointers = std::size_t(call.num_inputs) + call.num_outputs;
  const std::size_t given = pointers + call.scalar_dtypes.size();
  const std::string kernel = "kernel '" + call.kernel_name + "'";
  const char* order = "; parameters are passed as: input pointers, output pointers, then scalars";
  if (params.size() != given) {
    std::string message = kernel + " takes " + std::to_string(params.size()) +
                          " parameters but the call passes " + std::to_string(given) + " (" +
                          std::to_string(call.num_inputs) + " inputs, " +
                          std::to_string(call.num_outputs) + " outputs, " +
                          std::to_string(call.scalar_dtypes.size()) + " scalars)" + order;
    throw ArgumentError(params.size() < pointers ? "inputs" : "scalars", message);
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::size_t expected;
    std::string what;
    const char* argument;
    if (i < pointers) {
      const bool is_input = i < std::size_t(call.num_inputs);
      expected = 8;
      argument = is_input ? "inputs" : "output_shapes";
      what = (is_input ? "inputs[" + std::to_string(i) + "]"
                       : "output " + std::to_string(i - call.num_inputs)) +
             " is passed as a pointer (8 bytes)";
    } else {
      const std::size_t s = i - pointers;
      const DType dtype = call.scalar_dtypes[s];
      expected = dtype_size(dtype);
      argument = "scalars";
      what = "scalars[" + std::to_string(s) + "] is " + dtype_name(dtype) + " (" +
             bytes_text(expected) + ")";
    }
    if (params[i].size == expected) continue;
    std::string hint;
    if (i >= pointers) {
      hint = "; pass a NumPy scalar of the parameter's C type (numpy.int64 / numpy.float64 for 8 "
             "bytes, numpy.int16 / numpy.float16 for 2, numpy.bool_ / numpy.int8 for 1)";
    }
    throw ArgumentError(argument, "parameter " + std::to_string(i) + " of " + kernel + " is " +
                                      bytes_text(params[i].size) + " but " + what + hint + order);
  }
}

std::optional<std::pair<int, int>> max_ptx_version_for_driver(int driver_version) {
  const int major = driver_version / 1000, minor = (driver_version % 1000) / 10;
  if (major == 13) return std::make_pair(9, minor);
  if (major == 12) {
    static const int kMinor[10] = {0, 1, 2, 3, 4, 5, 5, 6, 7, 8};  // 12.6 kept 8.5
    return std::make_pair(8, kMinor[std::min(minor, 9)]);
  }
  if (major == 11) return std::make_pair(7, std::min(minor, 8));
  return std::nullopt;
}


}  // namespace jk::cuda
