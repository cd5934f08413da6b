// What is inside a compiled CUDA binary handed to precompiled_cuda_kernel:
// its format (PTX text, ELF cubin, fatbin), the architecture it targets, its
// entry points and, where the binary records them, each entry's parameter
// sizes. Pure byte parsing (no driver, no GPU), so every check made from it
// (entry name present, parameter sizes, architecture vs device) runs and is
// tested on any machine. Facts about the encodings are in the readers
// (ptx_reader.cpp, cubin_reader.cpp, fatbin_reader.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jitkernel/core/array_view.hpp"

namespace jk::cuda {

enum class BinaryFormat { Ptx, Cubin, Fatbin };
const char* binary_format_name(BinaryFormat format);  // "ptx", "cubin", "fatbin"

// A GPU architecture as code targets it: sm_<major><minor><variant>, where
// variant 'a' (arch-specific: runs only on exactly that compute capability),
// 'f' (family-specific) or '\0'.
struct SmArch {
  int major = 0;
  int minor = 0;
  char variant = '\0';

  int number() const { return major * 10 + minor; }
  std::string name() const;  // "sm_90a"
  static SmArch from_number(int sm, char variant = '\0');
};

// Whether SASS built for `code` runs on a device of compute capability
// (cc_major, cc_minor): same major and code minor <= device minor; an 'a'
// cubin needs the exact compute capability.
bool cubin_runs_on(const SmArch& code, int cc_major, int cc_minor);
// Whether PTX for `.target code` can be JIT-compiled for the device: the
// device is at least the target; 'a' targets need the exact compute
// capability, 'f' targets the same major.
bool ptx_runs_on(const SmArch& code, int cc_major, int cc_minor);

struct KernelParam {
  std::size_t offset = 0;
  std::size_t size = 0;
};

struct EntryPoint {
  std::string name;                               // exact symbol (mangled if C++)
  std::optional<std::vector<KernelParam>> params;  // in order; nullopt: not recorded
};

// One image inside a fatbin.
struct FatbinImage {
  bool is_ptx = false;
  SmArch arch;
  bool compressed = false;
  std::size_t offset = 0;  // payload offset in the fatbin
  std::size_t size = 0;    // payload size
};

struct BinaryImage {
  BinaryFormat format = BinaryFormat::Ptx;
  std::optional<SmArch> arch;  // cubin: e_flags (+ .nv.compat); PTX: .target; fatbin: none
  int ptx_version_major = 0;   // PTX: ISA version of `.version X.Y`
  int ptx_version_minor = 0;
  int elf_abi_version = 0;     // cubin: e_ident[EI_ABIVERSION]
  // Entry points. For a fatbin these come from its first image that can be
  // read (uncompressed cubin or PTX); `entries_known` is false when none can.
  std::vector<EntryPoint> entries;
  bool entries_known = true;
  std::vector<FatbinImage> images;  // fatbin only
};

// Detects the format and parses. Throws ArgumentError("compiled_source", ...)
// for anything that is not PTX text, an EM_CUDA ELF cubin or a fatbin, and
// for truncated or malformed ones.
BinaryImage parse_binary(std::string_view bytes);

// The entry called `name`. Throws ArgumentError("name", ...) listing the
// entry points that are there (when they are known; nullptr otherwise).
const EntryPoint* find_entry(const BinaryImage& image, const std::string& name);
// The ArgumentError("name", ...) find_entry throws, for entry names listed
// another way (by the driver, for binaries whose entries cannot be parsed;
// nullopt when they cannot be listed at all).
[[noreturn]] void throw_missing_entry(const std::string& name, BinaryFormat format,
                                      const std::optional<std::vector<std::string>>& entry_names);

// Throws ArgumentError("compiled_source", ...) when the binary cannot run on
// a device of this compute capability, saying both (e.g. "cubin built for
// sm_80 but device 0 is sm_90 (NVIDIA H100 80GB HBM3)"). `device_label` is
// "device 0" and `device_name` the product name.
void check_arch(const BinaryImage& image, int cc_major, int cc_minor,
                const std::string& device_label, const std::string& device_name);

// What a call passes, in order: a pointer per input, a pointer per output,
// then each scalar by value.
struct ParamCheck {
  std::string kernel_name;
  int num_inputs = 0;
  int num_outputs = 0;
  std::vector<DType> scalar_dtypes;
};
// Throws ArgumentError naming "inputs", "output_shapes" or "scalars" (with the
// parameter index, expected and given sizes) when the entry's parameter list
// does not match the call.
void check_params(const std::vector<KernelParam>& params, const ParamCheck& call);

// Highest PTX ISA version (major, minor) a driver of this version
// (cuDriverGetVersion, e.g. 13000) can JIT-compile, or nullopt if unknown.
std::optional<std::pair<int, int>> max_ptx_version_for_driver(int driver_version);

}  // namespace jk::cuda
