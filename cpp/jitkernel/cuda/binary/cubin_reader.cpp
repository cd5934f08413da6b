// The ELF cubin reader of readers.hpp.
//
// Encoding facts, checked against cuobjdump -elf on cubins from nvcc 13.0,
// NVRTC 13.5 and NVRTC 12.9 for sm_75 ... sm_120a:
// - ELF64 little-endian, e_machine EM_CUDA (190), EI_OSABI 0x41.
//   EI_ABIVERSION 7 (CUDA <= 12, pre-Blackwell): SM number in e_flags bits
//   0-7, virtual SM in bits 16-23, 0x800 = arch-specific 'a' (sm_90a:
//   0x5a0d5a, sm_90: 0x5a055a). EI_ABIVERSION 8 (CUDA 13, and CUDA 12 for
//   sm_100+): SM number in bits 8-15 (sm_90: 0x06005a04, sm_100: 0x06006402);
//   CUDA 12.9 marks 'a' with bit 0x8, CUDA 13 leaves it clear and instead
//   writes EICOMPAT_ATTR_CUDA_ACCELERATOR_TARGET (attribute 9) = 1 in the
//   .nv.compat section. 'f' cubins are identical to plain ones.
// - Entry points are STT_FUNC symbols whose st_other has 0x10 (cuobjdump
//   prints ENTRY); device functions lack it. Each entry has a SHT_CUDA_INFO
//   (0x70000000) section ".nv.info.<name>" whose sh_info is the entry's
//   .text section index.
// - .nv.info / .nv.compat records: u8 format, u8 attribute, u16 value; format
//   4 (SVAL) means the u16 is a payload size and the payload follows.
//   EIATTR_KPARAM_INFO (0x17) payload, 12 bytes: u32 index, u16 ordinal,
//   u16 offset, u32 flags with the size in bits 18-31. Records are stored
//   from the last parameter to the first. Kernels with more than 4 KiB of
//   parameters use EIATTR_KPARAM_INFO_V2 (0x45): same, but the size is the
//   low 16 bits of the last u32. EIATTR_CBANK_PARAM_SIZE (0x19)
//   holds the total parameter bytes. A kernel without parameters has none.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/binary/readers.hpp"

namespace jk::cuda::binary_detail {
namespace {

constexpr const char* kElf = "ELF cubin";
constexpr std::uint16_t kEmCuda = 190;
constexpr std::uint32_t kShtSymtab = 2;
constexpr std::uint32_t kShtNobits = 8;
constexpr std::uint32_t kShtCudaInfo = 0x70000000;
constexpr std::uint8_t kSttFunc = 2;
constexpr std::uint8_t kStoCudaEntry = 0x10;
constexpr std::uint8_t kEifmtSval = 4;
constexpr std::uint8_t kEiattrKparamInfo = 0x17;
constexpr std::uint8_t kEiattrKparamInfoV2 = 0x45;
constexpr std::uint8_t kEicompatAcceleratorTarget = 9;
constexpr std::string_view kInfoPrefix = ".nv.info.";

struct Section {
  std::string_view name;  // into the section name table
  std::uint32_t name_index = 0;
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0;
  std::uint32_t link = 0, info = 0;
};

// Bytes read from sections (or names copied out of string tables), which a
// well-formed cubin keeps within its size: its sections do not overlap and
// its entry names are stored once each. Without this bound, 65,535 section
// headers naming the same megabyte would have it read 65,535 times.
class ReadBudget {
 public:
  ReadBudget(std::size_t limit, const char* what) : left_(limit), what_(what) {}
  void spend(std::uint64_t n) {
    if (n > left_) {
      malformed(kElf, std::string(what_) + " overlap: reading them takes more bytes than the " +
                          "file holds");
    }
    left_ -= n;
  }

 private:
  std::uint64_t left_;
  const char* what_;
};

// A string table: names as views into the file. The ends of its strings are
// found in one pass over the table, so a lookup costs the same however long
// the name is and however many sections share it.
class StringTable {
 public:
  StringTable(const Reader& elf, const Section& s)
      : strings_(elf.slice(s.offset, s.size, "string table")) {
    for (std::size_t i = 0; i < strings_.size(); ++i) {
      if (strings_[i] == '\0') nuls_.push_back(i);
    }
  }
  std::string_view at(std::uint64_t index) const {
    if (index >= strings_.size()) malformed(kElf, "string index out of range");
    auto end = std::lower_bound(nuls_.begin(), nuls_.end(), index);
    if (end == nuls_.end()) malformed(kElf, "unterminated string");
    return strings_.substr(index, *end - index);
  }

 private:
  std::string_view strings_;
  std::vector<std::size_t> nuls_;  // positions of the NUL bytes, ascending
};

// The bytes of section `s`, counted against `budget`.
std::string_view contents(const Reader& elf, const Section& s, ReadBudget& budget) {
  std::string_view bytes = elf.slice(s.offset, s.size, "section contents");
  budget.spend(bytes.size());
  return bytes;
}

struct Record {
  std::uint8_t format, attribute;
  std::uint16_t value;       // non-SVAL value
  std::string_view payload;  // SVAL payload
};

// Calls `f(record)` for each record of a .nv.info / .nv.compat section.
template <typename F>
void for_each_record(std::string_view bytes, const Section& s, F&& f) {
  std::size_t pos = 0;
  while (bytes.size() - pos >= 4) {
    Record r{static_cast<std::uint8_t>(bytes[pos]), static_cast<std::uint8_t>(bytes[pos + 1]), 0,
             {}};
    std::memcpy(&r.value, bytes.data() + pos + 2, 2);
    pos += 4;
    if (r.format == kEifmtSval) {
      if (r.value > bytes.size() - pos) {
        malformed(kElf, "attribute record past the end of section " + printable(s.name));
      }
      r.payload = bytes.substr(pos, r.value);
      pos += r.value;
    }
    f(r);
  }
}

std::optional<std::vector<KernelParam>> params_from_info(std::string_view bytes,
                                                         const Section& info) {
  std::map<std::uint16_t, KernelParam> by_ordinal;
  bool understood = true;
  for_each_record(bytes, info, [&](const Record& r) {
    const bool v1 = r.attribute == kEiattrKparamInfo, v2 = r.attribute == kEiattrKparamInfoV2;
    if (!understood || r.format != kEifmtSval || !(v1 || v2)) return;
    if (r.payload.size() < 12) {
      understood = false;
      return;
    }
    std::uint16_t ordinal, offset;
    std::uint32_t word;
    std::memcpy(&ordinal, r.payload.data() + 4, 2);
    std::memcpy(&offset, r.payload.data() + 6, 2);
    std::memcpy(&word, r.payload.data() + 8, 4);
    const std::size_t size = v1 ? (word >> 18) & 0x3fff : word & 0xffff;
    if (!by_ordinal.emplace(ordinal, KernelParam{offset, size}).second) {
      understood = false;  // duplicate ordinal: not a layout we understand
    }
  });
  if (!understood) return std::nullopt;
  std::vector<KernelParam> params;
  for (const auto& [ordinal, param] : by_ordinal) {
    if (ordinal != params.size()) return std::nullopt;  // gap
    params.push_back(param);
  }
  return params;
}


// The ELF header's checks: an ELF64 little-endian file for EM_CUDA.
void check_elf_header(std::string_view bytes, const Reader& elf) {
  elf.need(0, 64, "ELF header");
  if (std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0) malformed(kElf, "no ELF magic number");
  if (bytes[4] != 2) {
    throw ArgumentError(kArg, "a 32-bit ELF file; CUDA cubins for 64-bit hosts are ELF64");
  }
  if (bytes[5] != 1) throw ArgumentError(kArg, "a big-endian ELF file; cubins are little-endian");
  const auto machine = elf.get<std::uint16_t>(18);
  if (machine != kEmCuda) {
    throw ArgumentError(kArg, "an ELF file for machine " + std::to_string(machine) +
                                  ", not a CUDA cubin (machine 190); pass the cubin "
                                  "(nvcc -cubin), the fatbin (nvcc -fatbin) or PTX (nvcc -ptx), "
                                  "not a host object or library");
  }
}

// Program headers and the segments they describe must lie in the data
// (the driver loads segments; a truncated file cannot be loaded).
void check_segments(const Reader& elf) {
  const auto phoff = elf.get<std::uint64_t>(32, "e_phoff");
  const auto phentsize = elf.get<std::uint16_t>(54);
  const auto phnum = elf.get<std::uint16_t>(56);
  if (!phnum) return;
  if (phentsize < 56) {
    malformed(kElf, "program header entries of " + std::to_string(phentsize) + " bytes");
  }
  elf.need(phoff, std::size_t(phnum) * phentsize, "program header table");
  for (std::size_t i = 0; i < phnum; ++i) {
    const std::size_t h = phoff + i * phentsize;  // within the table checked above
    elf.need(elf.get<std::uint64_t>(h + 8), elf.get<std::uint64_t>(h + 32), "program segment");
  }
}

// Section headers (at most 65,535 of at least 64 bytes each, all in the
// data), with their names.
std::vector<Section> read_sections(const Reader& elf) {
  const auto shoff = elf.get<std::uint64_t>(40, "e_shoff");
  const auto shentsize = elf.get<std::uint16_t>(58);
  const auto shnum = elf.get<std::uint16_t>(60);
  const auto shstrndx = elf.get<std::uint16_t>(62);
  if (shnum == 0 || shentsize < 64) malformed(kElf, "no section header table");
  if (shstrndx >= shnum) malformed(kElf, "section name table index out of range");
  elf.need(shoff, std::size_t(shnum) * shentsize, "section header table");
  std::vector<Section> sections(shnum);
  for (std::size_t i = 0; i < shnum; ++i) {
    const std::size_t h = shoff + i * shentsize;
    Section& s = sections[i];
    s.name_index = elf.get<std::uint32_t>(h);
    s.type = elf.get<std::uint32_t>(h + 4);
    s.offset = elf.get<std::uint64_t>(h + 24);
    s.size = elf.get<std::uint64_t>(h + 32);
    s.link = elf.get<std::uint32_t>(h + 40);
    s.info = elf.get<std::uint32_t>(h + 44);
    if (s.type != kShtNobits) elf.need(s.offset, s.size, "section contents");
  }
  const StringTable section_names(elf, sections[shstrndx]);
  for (Section& s : sections) s.name = section_names.at(s.name_index);
  return sections;
}

// The architecture from e_flags and, for CUDA 13 cubins, the 'a' marker in
// .nv.compat.
SmArch read_arch(const Reader& elf, int abi_version, const std::vector<Section>& sections,
                 ReadBudget& sections_read) {
  const auto flags = elf.get<std::uint32_t>(48);
  int sm;
  bool accelerated;
  if (abi_version >= 8) {
    sm = (flags >> 8) & 0xff;
    accelerated = (flags & 0x8) != 0;
  } else {
    sm = flags & 0xff;
    accelerated = (flags & 0x800) != 0;
  }
  for (const Section& s : sections) {
    if (s.name != ".nv.compat") continue;
    for_each_record(contents(elf, s, sections_read), s, [&](const Record& r) {
      if (r.format != kEifmtSval && r.attribute == kEicompatAcceleratorTarget && r.value != 0) {
        accelerated = true;
      }
    });
  }
  if (sm < 10) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", flags);
    malformed(kElf, std::string("e_flags ") + buf + " name no SM architecture");
  }
  return SmArch::from_number(sm, accelerated ? 'a' : '\0');
}

// The entry symbols of the symbol table into image.entries; returns the
// entry of each .text section index.
std::map<std::uint32_t, std::size_t> read_entry_symbols(const Reader& elf,
                                                        const std::vector<Section>& sections,
                                                        const Section& symtab,
                                                        ReadBudget& sections_read,
                                                        ReadBudget& names_read, BinaryImage& image) {
  if (symtab.link >= sections.size()) malformed(kElf, "symbol string table index out of range");
  const StringTable symbol_names(elf, sections[symtab.link]);
  const std::string_view symbols = contents(elf, symtab, sections_read);
  std::map<std::uint32_t, std::size_t> entry_by_section;  // .text section index -> entry
  for (std::size_t p = 0; symbols.size() - p >= 24; p += 24) {
    std::uint32_t name;
    std::uint16_t shndx;
    std::memcpy(&name, symbols.data() + p, 4);
    const auto info = static_cast<std::uint8_t>(symbols[p + 4]);
    const auto other = static_cast<std::uint8_t>(symbols[p + 5]);
    std::memcpy(&shndx, symbols.data() + p + 6, 2);
    if ((info & 0xf) != kSttFunc || !(other & kStoCudaEntry)) continue;
    const std::string_view symbol = symbol_names.at(name);
    names_read.spend(symbol.size());
    if (symbol.empty() || !is_printable(symbol)) {
      malformed(kElf, "entry point name '" + printable(symbol) + "' is not printable ASCII");
    }
    entry_by_section[shndx] = image.entries.size();
    image.entries.push_back({std::string(symbol), std::nullopt});
  }
  return entry_by_section;
}

// Parameters from each entry's .nv.info.<name>: the entry whose .text
// section is its sh_info, else the entry of that name.
void read_entry_params(const Reader& elf, const std::vector<Section>& sections,
                       const std::map<std::uint32_t, std::size_t>& entry_by_section,
                       ReadBudget& sections_read, ReadBudget& names_read, BinaryImage& image) {
  std::unordered_map<std::string_view, std::size_t> entry_by_name;
  for (std::size_t i = 0; i < image.entries.size(); ++i) {
    entry_by_name.emplace(image.entries[i].name, i);
  }
  for (const Section& s : sections) {
    if (s.type != kShtCudaInfo || s.name.substr(0, kInfoPrefix.size()) != kInfoPrefix) continue;
    EntryPoint* entry = nullptr;
    if (auto it = entry_by_section.find(s.info); it != entry_by_section.end()) {
      entry = &image.entries[it->second];
    } else {
      const std::string_view entry_name = s.name.substr(kInfoPrefix.size());
      names_read.spend(entry_name.size());  // hashed for the lookup
      if (auto named = entry_by_name.find(entry_name); named != entry_by_name.end()) {
        entry = &image.entries[named->second];
      }
    }
    if (entry) entry->params = params_from_info(contents(elf, s, sections_read), s);
  }
}

}  // namespace

BinaryImage parse_cubin(std::string_view bytes) {
  Reader elf(bytes, kElf);
  check_elf_header(bytes, elf);
  BinaryImage image;
  image.format = BinaryFormat::Cubin;
  image.elf_abi_version = static_cast<unsigned char>(bytes[8]);
  check_segments(elf);
  const std::vector<Section> sections = read_sections(elf);
  ReadBudget sections_read(bytes.size(), "its sections");
  ReadBudget names_read(bytes.size(), "its names");
  image.arch = read_arch(elf, image.elf_abi_version, sections, sections_read);
  const Section* symtab = nullptr;
  for (const Section& s : sections) {
    if (s.type == kShtSymtab) symtab = &s;
  }
  if (!symtab) return image;  // no symbols: no entry points
  const auto entry_by_section =
      read_entry_symbols(elf, sections, *symtab, sections_read, names_read, image);
  read_entry_params(elf, sections, entry_by_section, sections_read, names_read, image);
  return image;
}

}  // namespace jk::cuda::binary_detail
