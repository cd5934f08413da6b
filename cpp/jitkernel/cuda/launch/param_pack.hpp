// Kernel arguments packed for cuLaunchKernelEx: each value is copied into
// one buffer (on the stack for the usual few hundred bytes, on the heap past
// that) and pointers() gives the void*[] the driver reads them through.
#pragma once

#include <cstddef>
#include <cstring>
#include <vector>

namespace jk::cuda {

class ParamPack {
 public:
  ParamPack() = default;
  ParamPack(const ParamPack&) = delete;
  ParamPack& operator=(const ParamPack&) = delete;

  template <typename T>
  void add(const T& value) {
    add_bytes(&value, sizeof(T), alignof(T));
  }

  // Appends `size` bytes aligned to `align` (a power of two).
  void add_bytes(const void* value, std::size_t size, std::size_t align) {
    std::size_t offset = (used_ + align - 1) & ~(align - 1);
    std::size_t end = offset + size;
    if (end > kInlineBytes && heap_bytes_.size() < end) {
      if (heap_bytes_.empty()) heap_bytes_.assign(inline_bytes_, inline_bytes_ + used_);
      heap_bytes_.resize(end < 2 * heap_bytes_.size() ? 2 * heap_bytes_.size() : end);
    }
    std::memcpy(bytes() + offset, value, size);
    used_ = end;
    if (count_ == kInlineSlots) heap_offsets_.assign(inline_offsets_, inline_offsets_ + count_);
    if (count_ >= kInlineSlots) {
      heap_offsets_.push_back(offset);
    } else {
      inline_offsets_[count_] = offset;
    }
    ++count_;
  }

  std::size_t count() const { return count_; }

  // One pointer per value, in order; valid until the next add.
  void** pointers() {
    void** out = inline_pointers_;
    const std::size_t* offsets = inline_offsets_;
    if (count_ > kInlineSlots) {
      heap_pointers_.resize(count_);
      out = heap_pointers_.data();
      offsets = heap_offsets_.data();
    }
    for (std::size_t i = 0; i < count_; ++i) out[i] = bytes() + offsets[i];
    return out;
  }

 private:
  static constexpr std::size_t kInlineBytes = 2048;
  static constexpr std::size_t kInlineSlots = 64;

  unsigned char* bytes() { return heap_bytes_.empty() ? inline_bytes_ : heap_bytes_.data(); }

  alignas(16) unsigned char inline_bytes_[kInlineBytes];
  std::size_t inline_offsets_[kInlineSlots];
  void* inline_pointers_[kInlineSlots];
  std::vector<unsigned char> heap_bytes_;
  std::vector<std::size_t> heap_offsets_;
  std::vector<void*> heap_pointers_;
  std::size_t used_ = 0;
  std::size_t count_ = 0;
};

}  // namespace jk::cuda
