// Checked mode's device side (docs/checked.md): the accessor each array
// parameter of a checked kernel becomes, and the module's report slot. An
// access checks `lo <= offset < hi` (offset from the array's base, in
// elements); the first violation of a launch is written to
// jitkernel_checked_report (the host resets it before each launch and reads
// it after, cuda/launch/checked_launch.cpp) and the access goes to a dummy
// element instead (reads of an input see zero). The body line comes from the
// Index argument: its implicit constructor's default argument
// __builtin_LINE() is evaluated where the subscript is written, and the
// body's `#line 1 "source"` makes it a line of the user's body. Only
// checked_ptr sits in namespace jitkernel (which the preamble's
// using-directive makes visible); the rest is in jitkernel::checked_detail.
#include <string_view>

#include "jitkernel/codegen/codegen_detail.hpp"

namespace jk::codegen {
namespace {

constexpr std::string_view kCheckedAccessors = R"(// Checked mode: bounds-checked array accessors.
namespace jitkernel {
namespace checked_detail {  // not reached by `using namespace jitkernel`: user code may name its own Index
// Layout shared with the host (cuda/launch/checked_launch.cpp).
struct CheckedReport {
  unsigned int flag;
  int array;
  int line;
  unsigned int unused;
  long long index;
  long long lo;
  long long hi;
  unsigned int block[3];
  unsigned int thread[3];
};
}  // namespace checked_detail
}  // namespace jitkernel
__device__ jitkernel::checked_detail::CheckedReport jitkernel_checked_report;
__device__ __align__(16) unsigned long long jitkernel_checked_sink[8];
__device__ __align__(16) unsigned long long jitkernel_checked_zero[8];
namespace jitkernel {
namespace checked_detail {
// An element index that remembers the body line it was written on.
struct Index {
  long long value;
  int line;
  template <typename I>
  __device__ __forceinline__ Index(I v, int at = __builtin_LINE()) : value((long long)v), line(at) {}
};

__device__ __noinline__ void checked_fail(int array, long long index, long long lo, long long hi, int line) {
  CheckedReport& r = jitkernel_checked_report;
  if (atomicCAS(&r.flag, 0u, 1u) != 0u) return;
  r.array = array;
  r.line = line;
  r.index = index;
  r.lo = lo;
  r.hi = hi;
  r.block[0] = blockIdx.x;
  r.block[1] = blockIdx.y;
  r.block[2] = blockIdx.z;
  r.thread[0] = threadIdx.x;
  r.thread[1] = threadIdx.y;
  r.thread[2] = threadIdx.z;
  __threadfence();
}

template <typename T>
__device__ __forceinline__ T& checked_dummy(T*) { return *reinterpret_cast<T*>(jitkernel_checked_sink); }
template <typename T>
__device__ __forceinline__ const T& checked_dummy(const T*) {
  return *reinterpret_cast<const T*>(jitkernel_checked_zero);
}
}  // namespace checked_detail

// Behaves like T*; element access through [], * and -> is checked.
template <typename T>
struct checked_ptr {
  T* base_;
  T* ptr_;
  long long lo_;
  long long hi_;
  int id_;
  int pad_;

  __device__ __forceinline__ T& at(long long i, int line) const {
    const long long k = (long long)(ptr_ - base_) + i;
    if (k < lo_ || k >= hi_) {
      checked_detail::checked_fail(id_, k, lo_, hi_, line);
      return checked_detail::checked_dummy(ptr_);
    }
    return ptr_[i];
  }
  __device__ __forceinline__ T& operator[](checked_detail::Index i) const { return at(i.value, i.line); }
  __device__ __forceinline__ T& operator*() const { return at(0, 0); }
  __device__ __forceinline__ T* operator->() const { return &at(0, 0); }
  // Unchecked from here on: the raw pointer (docs/checked.md).
  template <typename U>
  __device__ __forceinline__ operator U*() const { return reinterpret_cast<U*>(ptr_); }
  __device__ __forceinline__ explicit operator bool() const { return ptr_ != nullptr; }

  __device__ __forceinline__ checked_ptr operator+(long long n) const {
    checked_ptr r = *this;
    r.ptr_ += n;
    return r;
  }
  __device__ __forceinline__ checked_ptr operator-(long long n) const { return *this + (-n); }
  __device__ __forceinline__ friend checked_ptr operator+(long long n, const checked_ptr& p) { return p + n; }
  __device__ __forceinline__ long long operator-(const checked_ptr& o) const { return ptr_ - o.ptr_; }
  __device__ __forceinline__ checked_ptr& operator+=(long long n) { ptr_ += n; return *this; }
  __device__ __forceinline__ checked_ptr& operator-=(long long n) { ptr_ -= n; return *this; }
  __device__ __forceinline__ checked_ptr& operator++() { ++ptr_; return *this; }
  __device__ __forceinline__ checked_ptr& operator--() { --ptr_; return *this; }
  __device__ __forceinline__ checked_ptr operator++(int) { checked_ptr r = *this; ++ptr_; return r; }
  __device__ __forceinline__ checked_ptr operator--(int) { checked_ptr r = *this; --ptr_; return r; }
  __device__ __forceinline__ bool operator==(const checked_ptr& o) const { return ptr_ == o.ptr_; }
  __device__ __forceinline__ bool operator!=(const checked_ptr& o) const { return ptr_ != o.ptr_; }
  __device__ __forceinline__ bool operator<(const checked_ptr& o) const { return ptr_ < o.ptr_; }
  __device__ __forceinline__ bool operator<=(const checked_ptr& o) const { return ptr_ <= o.ptr_; }
  __device__ __forceinline__ bool operator>(const checked_ptr& o) const { return ptr_ > o.ptr_; }
  __device__ __forceinline__ bool operator>=(const checked_ptr& o) const { return ptr_ >= o.ptr_; }
  __device__ __forceinline__ bool operator==(decltype(nullptr)) const { return ptr_ == nullptr; }
  __device__ __forceinline__ bool operator!=(decltype(nullptr)) const { return ptr_ != nullptr; }
};
}  // namespace jitkernel
)";

}  // namespace

std::string_view checked_accessors_text() { return kCheckedAccessors; }

}  // namespace jk::codegen
