// The fatbin container reader of readers.hpp: the images a fatbin holds and
// the entry points of the first one that can be read.
//
// Encoding facts: u32 magic 0xBA55ED50, u16 version, u16 header size, u64
// payload size; then images, each: u16 kind (1 PTX, 2 ELF), u16, u32 header
// size, u64 payload size, ..., at +28 u32 SM number, at +40 u64 flags
// (0x100000 'a', 0x200000 'f', 0x2000 / 0x8000 compressed with LZ4 / zstd).
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/binary/readers.hpp"

namespace jk::cuda::binary_detail {

BinaryImage parse_fatbin(std::string_view bytes) {
  const char* what = "fatbin";
  Reader fat(bytes, what);
  BinaryImage image;
  image.format = BinaryFormat::Fatbin;
  image.entries_known = false;
  const auto header_size = fat.get<std::uint16_t>(6, "fatbin header");
  const auto payload_size = fat.get<std::uint64_t>(8, "fatbin header");
  if (header_size < 16) malformed(what, "header size " + std::to_string(header_size));
  fat.need(header_size, payload_size, "fatbin payload");
  std::size_t pos = header_size, end = header_size + payload_size;
  while (pos + 48 <= end) {
    const auto kind = fat.get<std::uint16_t>(pos);
    const auto entry_header = fat.get<std::uint32_t>(pos + 4);
    const auto size = fat.get<std::uint64_t>(pos + 8);
    const auto sm = fat.get<std::uint32_t>(pos + 28);
    const auto flags = fat.get<std::uint64_t>(pos + 40);
    // pos <= end <= bytes.size() and entry_header < 2**32: the sums cannot wrap.
    if (entry_header < 48 || pos + entry_header > end || size > end - (pos + entry_header)) {
      malformed(what, "image at byte " + std::to_string(pos) + " runs past the payload");
    }
    if (sm > kMaxSm) {
      malformed(what, "image at byte " + std::to_string(pos) + " is for architecture number " +
                          std::to_string(sm) + ", which is too large (at most sm_" +
                          std::to_string(kMaxSm) + ")");
    }
    if (kind == 1 || kind == 2) {
      FatbinImage im;
      im.is_ptx = kind == 1;
      char variant = (flags & 0x100000) ? 'a' : (flags & 0x200000) ? 'f' : '\0';
      im.arch = SmArch::from_number(static_cast<int>(sm), variant);
      im.compressed = (flags & 0xA000) != 0;
      im.offset = pos + entry_header;
      im.size = size;
      image.images.push_back(im);
    }
    pos += entry_header + size;
  }
  if (image.images.empty()) malformed(what, "it holds no cubin or PTX image");
  // Entry points from the first image we can read (all come from one source).
  for (const FatbinImage& im : image.images) {
    if (im.compressed) continue;
    std::string_view payload = bytes.substr(im.offset, im.size);
    try {
      BinaryImage inner = im.is_ptx ? parse_ptx(payload) : parse_cubin(payload);
      image.entries = std::move(inner.entries);
      image.entries_known = true;
      break;
    } catch (const ArgumentError&) {
      // an image we cannot read: try the next one
    }
  }
  return image;
}

const FatbinImage* fatbin_image_for(const BinaryImage& image, int cc_major, int cc_minor) {
  const FatbinImage* best = nullptr;
  for (const FatbinImage& im : image.images) {  // best cubin: highest compatible SM
    if (!im.is_ptx && cubin_runs_on(im.arch, cc_major, cc_minor) &&
        (!best || im.arch.number() > best->arch.number())) {
      best = &im;
    }
  }
  if (best) return best;
  for (const FatbinImage& im : image.images) {
    if (im.is_ptx && ptx_runs_on(im.arch, cc_major, cc_minor) &&
        (!best || im.arch.number() > best->arch.number())) {
      best = &im;
    }
  }
  return best;
}


}  // namespace jk::cuda::binary_detail
