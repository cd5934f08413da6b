// Validation of compile options and their NVRTC flags (compile_options.hpp).
// An extra flag is one list item, "--name", "--name=value" (or the short
// spelling NVRTC documents, "-name" / "-name=value"); its value is checked
// against what the option takes, so a typo is an ArgumentError here rather
// than NVRTC_ERROR_INVALID_OPTION (or a silently different binary) later.
#include "jitkernel/cuda/nvrtc/compile_options.hpp"

#include <sys/stat.h>

#include <cctype>
#include <string>
#include <vector>

#include "jitkernel/core/errors.hpp"

namespace jk::cuda {
namespace {

constexpr const char* kArg = "compile_options";

enum class Takes { Nothing, Bool, Count, Choice, Numbers, Identifier, Ptxas };

struct AllowedFlag {
  const char* name;   // long spelling, without the leading "--"
  const char* alias;  // short spelling without the leading "-", or null
  Takes takes;
  const char* choices = nullptr;  // Takes::Choice: "|"-separated
};

constexpr AllowedFlag kAllowed[] = {
    {"ftz", nullptr, Takes::Bool},
    {"prec-sqrt", nullptr, Takes::Bool},
    {"prec-div", nullptr, Takes::Bool},
    {"fmad", nullptr, Takes::Bool},
    {"dopt", nullptr, Takes::Choice, "on|off"},
    {"Ofast-compile", "Ofc", Takes::Choice, "0|min|mid|max"},
    {"extra-device-vectorization", "extra-device-vectorization", Takes::Nothing},
    {"modify-stack-limit", nullptr, Takes::Bool},
    {"device-stack-protector", nullptr, Takes::Bool},
    {"jump-table-density", nullptr, Takes::Count},
    {"split-compile", nullptr, Takes::Count},
    {"ptxas-options", "Xptxas", Takes::Ptxas},
    {"undefine-macro", "U", Takes::Identifier},
    {"no-source-include", "no-source-include", Takes::Nothing},
    {"builtin-move-forward", nullptr, Takes::Bool},
    {"builtin-initializer-list", nullptr, Takes::Bool},
    {"disable-warnings", "w", Takes::Nothing},
    {"restrict", "restrict", Takes::Nothing},
    {"device-as-default-execution-space", "default-device", Takes::Nothing},
    {"device-int128", "device-int128", Takes::Nothing},
    {"optimization-info", "opt-info", Takes::Choice, "inline"},
    {"display-error-number", "err-no", Takes::Nothing},
    {"no-display-error-number", "no-err-no", Takes::Nothing},
    {"diag-error", nullptr, Takes::Numbers},
    {"diag-suppress", nullptr, Takes::Numbers},
    {"diag-warn", nullptr, Takes::Numbers},
    {"brief-diagnostics", "brief-diag", Takes::Bool},
};

// Documented NVRTC flags that compile_options spells another way, or that
// jitkernel cannot allow; the message says why.
struct RefusedFlag {
  const char* name;
  const char* alias;
  const char* why;
};

constexpr RefusedFlag kRefused[] = {
    {"gpu-architecture", "arch", "jitkernel sets the architecture (the device's, or compile(arch=...))"},
    {"std", "std", "use compile_options['std'] ('c++17' or 'c++20')"},
    {"minimal", nullptr, "jitkernel decides --minimal from the source"},
    {"define-macro", "D", "use compile_options['defines']"},
    {"include-path", "I", "use compile_options['include_dirs'] (the cache key covers their headers)"},
    {"use_fast_math", "use_fast_math", "use compile_options['math_mode'] = 'fast'"},
    {"device-debug", "G", "use compile_options['debug'] = True"},
    {"generate-line-info", "lineinfo", "use compile_options['line_info']"},
    {"maxrregcount", "maxrregcount", "use compile_options['max_registers']"},
    {"pre-include", "include", "a pre-included file is not covered by the compile cache key"},
    {"relocatable-device-code", "rdc", "jitkernel loads whole-program cubins and links nothing"},
    {"extensible-whole-program", "ewp", "jitkernel loads whole-program cubins and links nothing"},
    {"dlink-time-opt", "dlto", "jitkernel loads cubins, not LTO IR"},
    {"gen-opt-lto", nullptr, "jitkernel loads cubins, not LTO IR"},
    {"optix-ir", nullptr, "jitkernel loads cubins, not OptiX IR"},
    {"fdevice-syntax-only", nullptr, "it produces no binary"},
    {"time", nullptr, "it writes a file"},
    {"fdevice-time-trace", nullptr, "it writes a file"},
    {"create-pch", nullptr, "precompiled headers are not used"},
    {"use-pch", nullptr, "precompiled headers are not used"},
    {"pch", nullptr, "precompiled headers are not used"},
    {"pch-dir", nullptr, "precompiled headers are not used"},
    {"instantiate-templates-in-pch", nullptr, "precompiled headers are not used"},
};

// ptxas options accepted inside --ptxas-options (comma-separated).
constexpr const char* kPtxasOptions[] = {
    "-v", "--verbose", "-O0", "-O1", "-O2", "-O3", "--warn-on-spills", "--warn-on-local-memory-usage",
    "--warn-on-double-precision-use", "--allow-expensive-optimizations=true",
    "--allow-expensive-optimizations=false", "-dlcm=ca", "-dlcm=cg", "-dscm=wt", "-dscm=wb",
    "--disable-optimizer-constants", "--suppress-stack-size-warning",
};

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

bool is_count(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == sep) {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  return parts;
}

bool value_ok(const AllowedFlag& f, const std::string& value) {
  switch (f.takes) {
    case Takes::Nothing: return false;  // a value where none belongs
    case Takes::Bool: return value == "true" || value == "false";
    case Takes::Count: return is_count(value);
    case Takes::Choice:
      for (const std::string& c : split(f.choices, '|'))
        if (c == value) return true;
      return false;
    case Takes::Numbers:
      for (const std::string& n : split(value, ','))
        if (!is_count(n)) return false;
      return true;
    case Takes::Identifier: return is_identifier(value);
    case Takes::Ptxas:
      for (const std::string& o : split(value, ',')) {
        bool known = false;
        for (const char* p : kPtxasOptions) known = known || o == p;
        if (!known) return false;
      }
      return true;
  }
  return false;
}

std::string expected_value(const AllowedFlag& f) {
  switch (f.takes) {
    case Takes::Nothing: return "no value";
    case Takes::Bool: return "=true or =false";
    case Takes::Count: return "=N (a non-negative integer)";
    case Takes::Choice: return std::string("one of =") + f.choices;
    case Takes::Numbers: return "=N[,N...] (diagnostic numbers)";
    case Takes::Identifier: return "=NAME (a C identifier)";
    case Takes::Ptxas: {
      std::string list;
      for (const char* p : kPtxasOptions) list += (list.empty() ? "" : ", ") + std::string(p);
      return "=OPT[,OPT...] with OPT one of " + list;
    }
  }
  return "";
}

// "--name=value" / "-alias" -> the option's name as written and its value.
struct SplitFlag {
  std::string name;
  std::string value;
  bool has_value = false;
  bool long_form = false;
};

SplitFlag split_flag(const std::string& flag) {
  SplitFlag out;
  std::size_t start = flag.rfind("--", 0) == 0 ? 2 : 1;
  out.long_form = start == 2;
  std::size_t eq = flag.find('=');
  out.name = flag.substr(start, eq == std::string::npos ? std::string::npos : eq - start);
  if (eq != std::string::npos) {
    out.value = flag.substr(eq + 1);
    out.has_value = true;
  }
  return out;
}

bool names(const char* name, const char* alias, const SplitFlag& f) {
  return f.long_form ? f.name == name : alias != nullptr && f.name == alias;
}

void check_extra_flag(const std::string& flag) {
  const std::string what = "extra_flags: '" + flag + "'";
  if (flag.size() < 2 || flag[0] != '-' || flag.find_first_of(" \t\r\n") != std::string::npos) {
    throw ArgumentError(kArg, what + " is not an NVRTC flag: give one flag per item, as "
                                     "'--name' or '--name=value' without spaces");
  }
  const SplitFlag f = split_flag(flag);
  for (const RefusedFlag& r : kRefused) {
    // -I/-D/-U take their value glued on: "-Ifolder", "-DNAME".
    const bool glued = !f.long_form && r.alias != nullptr && std::string(r.alias).size() == 1 &&
                       flag.size() > 2 && flag[1] == r.alias[0];
    if (names(r.name, r.alias, f) || glued)
      throw ArgumentError(kArg, what + " is not allowed: " + r.why);
  }
  for (const AllowedFlag& a : kAllowed) {
    const bool glued = a.takes == Takes::Identifier && !f.long_form && a.alias != nullptr &&
                       std::string(a.alias).size() == 1 && flag.size() > 2 && flag[1] == a.alias[0] &&
                       !f.has_value;
    if (!names(a.name, a.alias, f) && !glued) continue;
    const std::string value = glued ? flag.substr(2) : f.value;
    const bool ok = a.takes == Takes::Nothing ? !f.has_value : (f.has_value || glued) && value_ok(a, value);
    if (!ok) throw ArgumentError(kArg, what + ": --" + a.name + " takes " + expected_value(a));
    return;
  }
  throw ArgumentError(kArg, what + " is not an NVRTC option jitkernel accepts (see the NVRTC user guide's "
                                   "supported compile options; options jitkernel sets itself or that "
                                   "compile_options spells are refused)");
}

bool is_directory(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

void validate_compile_options(const CudaCompileOptions& o) {
  for (const auto& [name, value] : o.defines) {
    if (!is_identifier(name))
      throw ArgumentError(kArg, "defines: '" + name + "' is not a C identifier (letters, digits, _)");
    if (value && value->find_first_of("\r\n") != std::string::npos)
      throw ArgumentError(kArg, "defines: the value of '" + name + "' contains a line break");
    if (value && value->find('\0') != std::string::npos)
      throw ArgumentError(kArg, "defines: the value of '" + name + "' contains a NUL character");
  }
  if (o.std != "c++17" && o.std != "c++20")
    throw ArgumentError(kArg, "std: expected 'c++17' or 'c++20', got '" + o.std + "'");
  if (o.max_registers < 0)
    throw ArgumentError(kArg, "max_registers: expected a positive number of registers, got " +
                                  std::to_string(o.max_registers));
  for (const std::string& dir : o.include_dirs)
    if (!is_directory(dir)) throw ArgumentError(kArg, "include_dirs: '" + dir + "' is not a directory");
  for (const std::string& flag : o.extra_flags) check_extra_flag(flag);
}

std::vector<std::string> include_flags(const CudaCompileOptions& o) {
  std::vector<std::string> flags;
  for (const std::string& dir : o.include_dirs) flags.push_back("-I" + dir);
  return flags;
}

std::vector<std::string> option_flags(const CudaCompileOptions& o) {
  std::vector<std::string> flags;
  for (const auto& [name, value] : o.defines) flags.push_back("-D" + name + (value ? "=" + *value : ""));
  if (o.fast_math) flags.push_back("--use_fast_math");
  if (o.line_info) flags.push_back("-lineinfo");
  if (o.debug) flags.push_back("-G");
  if (o.max_registers > 0) flags.push_back("--maxrregcount=" + std::to_string(o.max_registers));
  flags.insert(flags.end(), o.extra_flags.begin(), o.extra_flags.end());
  return flags;
}

}  // namespace jk::cuda
