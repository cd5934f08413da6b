// How the Metal backend includes metal-cpp (Apple's C++ headers for Metal),
// plus the few helpers every file of the backend needs around it: UTF-8
// strings in and out of NS::String, the text of an NS::Error, and an
// autorelease pool scope. Include this header, never metal-cpp directly, so
// every file sees the same configuration.
#pragma once

// Keep metal-cpp's selector/class tables private to this library, so that
// another module of the process that embeds its own metal-cpp (MLX does)
// never resolves to ours or we to theirs.
#ifndef METALCPP_SYMBOL_VISIBILITY_HIDDEN
#define METALCPP_SYMBOL_VISIBILITY_HIDDEN
#endif

#include <Foundation/Foundation.hpp>
#include <Metal/Metal.hpp>

#include <string>

namespace jk::metal {

// An autoreleased NS::String holding `text` (UTF-8). Call inside an AutoreleaseScope.
inline NS::String* ns_string(const std::string& text) {
  return NS::String::string(text.c_str(), NS::UTF8StringEncoding);
}

// `text` as UTF-8; "" for null.
inline std::string to_string(const NS::String* text) {
  if (text == nullptr) return {};
  const char* utf8 = text->utf8String();
  return utf8 ? std::string(utf8) : std::string();
}

// What an NS::Error says (its localized description, which for Metal
// compile errors is the compiler's whole log); `fallback` when there is no error object.
inline std::string error_text(const NS::Error* error, const char* fallback) {
  if (error == nullptr) return fallback;
  std::string text = to_string(error->localizedDescription());
  return text.empty() ? std::string(fallback) : text;
}

// Drains the objects autoreleased while it is alive (metal-cpp returns
// autoreleased objects from every method not named alloc/new/copy/Create):
// one per call into the backend, so nothing piles up in a caller's thread.
class AutoreleaseScope {
 public:
  AutoreleaseScope() : pool_(NS::AutoreleasePool::alloc()->init()) {}
  ~AutoreleaseScope() {
    if (pool_) pool_->release();
  }
  AutoreleaseScope(const AutoreleaseScope&) = delete;
  AutoreleaseScope& operator=(const AutoreleaseScope&) = delete;

 private:
  NS::AutoreleasePool* pool_;
};

}  // namespace jk::metal
