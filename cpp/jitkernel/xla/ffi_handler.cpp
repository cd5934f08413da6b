// The three FFI stages of jitkernel's XLA custom call (ffi_handler.hpp) over
// XLA's FFI C ABI (the vendored xla/ffi/api/c_api.h; ffi_abi.hpp): the
// metadata answer (API version and the command-buffer trait), the checks of
// XLA's struct sizes and API version before anything is read, attribute
// lookup, and the translation of jitkernel's typed errors into FFI errors.
#include "jitkernel/xla/ffi_handler.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/driver/driver_api.hpp"
#include "jitkernel/xla/prepared_call.hpp"

namespace jk::xla {
namespace {

// An error XLA itself returned (from Stream_Get, ...), handed back unchanged.
struct PassThrough {
  abi::Error* error;
};

std::atomic<std::uint64_t> g_executes{0};
std::atomic<bool> g_timing{false};
std::atomic<std::uint64_t> g_timed_calls{0}, g_handler_ns{0}, g_launch_ns{0};

std::uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

bool is_metadata_query(const abi::CallFrame* frame) {
  return frame->struct_size >= XLA_FFI_STRUCT_SIZE(abi::CallFrame, extension_start) &&
         frame->extension_start != nullptr && frame->extension_start->type == abi::kExtensionMetadata;
}

// Struct sizes too small to hold our fields leave the metadata untouched:
// XLA then sees API version 0.0 and refuses the registration by itself.
abi::Error* answer_metadata(abi::CallFrame* frame) {
  auto* ext = reinterpret_cast<abi::MetadataExtension*>(frame->extension_start);
  if (ext->extension_base.struct_size < abi::kMetadataExtensionSize || ext->metadata == nullptr) return nullptr;
  abi::Metadata* m = ext->metadata;
  if (m->struct_size < abi::kMetadataSize) return nullptr;
  m->api_version = abi::ApiVersion{abi::kApiVersionSize, nullptr, abi::kApiMajor, abi::kApiMinor};
  m->traits = abi::kTraitCommandBufferCompatible;
  if (m->struct_size >= XLA_FFI_STRUCT_SIZE(abi::Metadata, state_type_id)) m->state_type_id = XLA_FFI_TypeId{0};
  return nullptr;
}

// `text` as valid UTF-8 without NULs: messages quote names and tokens of the
// attribute text, which may be any bytes, and XLA hands the message to
// Python as a str (and to C as a C string). Bytes that do not start a whole
// UTF-8 sequence (and NUL) are written as \xNN.
std::string utf8_text(const std::string& text) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = byte(i);
    std::size_t n = c >= 0x01 && c < 0x80 ? 1 : (c & 0xE0) == 0xC0 && c >= 0xC2 ? 2 : (c & 0xF0) == 0xE0 ? 3
                    : (c & 0xF8) == 0xF0 && c <= 0xF4                                     ? 4
                                                                                          : 0;
    if (n > 1 && i + n <= text.size()) {
      for (std::size_t k = 1; k < n; ++k) n = (byte(i + k) & 0xC0) == 0x80 ? n : 0;
      // No overlong three- or four-byte forms, no surrogates, nothing past U+10FFFF.
      if (n == 3 && ((c == 0xE0 && byte(i + 1) < 0xA0) || (c == 0xED && byte(i + 1) >= 0xA0))) n = 0;
      if (n == 4 && ((c == 0xF0 && byte(i + 1) < 0x90) || (c == 0xF4 && byte(i + 1) >= 0x90))) n = 0;
    } else if (n > 1) {
      n = 0;
    }
    if (n == 0) {
      out += "\\x";
      out += digits[c >> 4];
      out += digits[c & 0xF];
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

abi::Error* make_error(const abi::CallFrame* frame, abi::ErrorCode code, const std::string& message) {
  const abi::Api* api = frame->api;
  if (api == nullptr || api->struct_size < XLA_FFI_STRUCT_SIZE(abi::Api, XLA_FFI_Error_Create) ||
      api->XLA_FFI_Error_Create == nullptr) {
    // Cannot happen with XLA (it always passes its API); nothing to report through.
    return nullptr;
  }
  std::string text = utf8_text("jitkernel: " + message);
  abi::ErrorCreateArgs args{abi::kErrorCreateArgsSize, nullptr, text.c_str(), code};
  return api->XLA_FFI_Error_Create(&args);
}

// The layout checks every stage makes before reading the frame.
std::string layout_problem(const abi::CallFrame* frame) {
  if (frame->struct_size < abi::kCallFrameSize) {
    return "XLA's call frame (" + std::to_string(frame->struct_size) + " bytes) is smaller than the FFI layout " +
           "jitkernel was built for (" + std::to_string(abi::kCallFrameSize) + " bytes)";
  }
  const abi::Api* api = frame->api;
  if (api->struct_size < abi::kApiSize) {
    return "XLA's FFI API struct is smaller than the FFI layout jitkernel was built for";
  }
  if (api->api_version.major_version != abi::kApiMajor) {
    return "XLA's FFI API is version " + std::to_string(api->api_version.major_version) + "." +
           std::to_string(api->api_version.minor_version) + "; jitkernel speaks " +
           std::to_string(abi::kApiMajor) + "." + std::to_string(abi::kApiMinor);
  }
  return {};
}

struct Attributes {
  std::string_view text;
  bool has_text = false;
  std::uint64_t key = 0;
};

Attributes read_attributes(const abi::CallFrame& frame) {
  if (frame.attrs.struct_size < abi::kAttrsSize) {
    throw ArgumentError("jk_call", "XLA's attribute struct is smaller than the FFI layout jitkernel knows");
  }
  Attributes out;
  bool has_key = false;
  for (std::int64_t i = 0; i < frame.attrs.size; ++i) {
    const abi::ByteSpan* name = frame.attrs.names[i];
    if (name == nullptr) continue;
    const std::string_view n(name->ptr, name->len);
    if (n == "jk_key") {
      const auto* s = static_cast<const abi::ScalarAttr*>(frame.attrs.attrs[i]);
      if (frame.attrs.types[i] != abi::kAttrScalar || s == nullptr ||
          (s->dtype != abi::kU64 && s->dtype != abi::kS64)) {
        throw ArgumentTypeError("jk_key", "expected a 64-bit integer attribute");
      }
      std::memcpy(&out.key, s->value, sizeof(out.key));
      has_key = true;
    } else if (n == "jk_call") {
      const auto* b = static_cast<const abi::ByteSpan*>(frame.attrs.attrs[i]);
      if (frame.attrs.types[i] != abi::kAttrString || b == nullptr) {
        throw ArgumentTypeError("jk_call", "expected a string attribute");
      }
      out.text = std::string_view(b->ptr, b->len);
      out.has_text = true;
    }
  }
  if (!has_key || !out.has_text) {
    throw ArgumentError(has_key ? "jk_call" : "jk_key", "missing: this custom call was not written by jitkernel");
  }
  return out;
}

PreparedCall& call_of(const abi::CallFrame& frame, const PreparedCall** named) {
  const Attributes attrs = read_attributes(frame);
  PreparedCall& call = prepare_call(attrs.text, attrs.key);
  *named = &call;
  return call;
}

int device_ordinal(const abi::CallFrame& frame) {
  abi::DeviceOrdinalGetArgs args{abi::kDeviceOrdinalGetArgsSize, nullptr, frame.ctx, -1};
  if (abi::Error* e = frame.api->XLA_FFI_DeviceOrdinal_Get(&args)) throw PassThrough{e};
  if (args.device_ordinal < 0) throw Error("XLA gave no device ordinal for the call");
  return args.device_ordinal;
}

std::uintptr_t stream_of(const abi::CallFrame& frame) {
  abi::StreamGetArgs args{abi::kStreamGetArgsSize, nullptr, frame.ctx, nullptr};
  if (abi::Error* e = frame.api->XLA_FFI_Stream_Get(&args)) throw PassThrough{e};
  return reinterpret_cast<std::uintptr_t>(args.stream);
}

bool capturing(std::uintptr_t stream) {
  cuda::CUstreamCaptureStatus status = cuda::CU_STREAM_CAPTURE_STATUS_NONE;
  cuda::check(cuda::driver().cuStreamIsCapturing(reinterpret_cast<cuda::CUstream>(stream), &status),
              "asking whether XLA's stream is capturing a CUDA graph");
  return status != cuda::CU_STREAM_CAPTURE_STATUS_NONE;
}

template <typename Body>
abi::Error* run_stage(abi::CallFrame* frame, int stage, const char* stage_name, Body&& body) {
  if (frame == nullptr) return nullptr;
  if (is_metadata_query(frame)) return answer_metadata(frame);
  if (frame->struct_size < XLA_FFI_STRUCT_SIZE(abi::CallFrame, api) || frame->api == nullptr) return nullptr;
  const std::string problem = layout_problem(frame);
  if (!problem.empty()) return make_error(frame, abi::kFailedPrecondition, problem);
  if (frame->stage != stage) {
    return make_error(frame, abi::kInternal, std::string(stage_name) + " handler called for stage " +
                                                 std::to_string(frame->stage));
  }
  const PreparedCall* named = nullptr;
  auto prefix = [&] {
    std::string p = std::string(stage_name) + " stage";
    if (named != nullptr) p += " of kernel '" + named->kernel().spec.name + "'";
    return p + ": ";
  };
  try {
    body(*frame, &named);
    return nullptr;
  } catch (const PassThrough& e) {
    return e.error;
  } catch (const CompileError& e) {
    return make_error(frame, abi::kInvalidArgument, prefix() + e.what() + "\n" + e.log());
  } catch (const ArgumentError& e) {
    return make_error(frame, abi::kInvalidArgument, prefix() + e.what());
  } catch (const ArgumentTypeError& e) {
    return make_error(frame, abi::kInvalidArgument, prefix() + e.what());
  } catch (const CudaNotAvailable& e) {
    return make_error(frame, abi::kFailedPrecondition, prefix() + e.what());
  } catch (const CudaError& e) {
    return make_error(frame, abi::kInternal, prefix() + e.what());
  } catch (const std::bad_alloc&) {
    return make_error(frame, abi::kResourceExhausted, prefix() + "out of host memory");
  } catch (const std::exception& e) {
    return make_error(frame, abi::kUnknown, prefix() + e.what());
  } catch (...) {
    return make_error(frame, abi::kUnknown, prefix() + "unknown error");
  }
}

}  // namespace

std::uint64_t execute_count() { return g_executes.load(std::memory_order_relaxed); }

abi::Error* instantiate_stage(abi::CallFrame* frame) {
  return run_stage(frame, abi::kInstantiate, "instantiate",
                   [](const abi::CallFrame& f, const PreparedCall** named) { call_of(f, named); });
}

abi::Error* initialize_stage(abi::CallFrame* frame) {
  return run_stage(frame, abi::kInitialize, "initialize", [](const abi::CallFrame& f, const PreparedCall** named) {
    PreparedCall& call = call_of(f, named);
    call.make_ready(f, device_ordinal(f), stream_of(f));
  });
}

namespace {

abi::Error* execute_body(abi::CallFrame* frame, bool timed) {
  return run_stage(frame, abi::kExecute, "execute", [timed](const abi::CallFrame& f, const PreparedCall** named) {
    g_executes.fetch_add(1, std::memory_order_relaxed);
    PreparedCall& call = call_of(f, named);
    const int device = device_ordinal(f);
    const std::uintptr_t stream = stream_of(f);
    if (!call.ready(device)) {
      // XLA runs initialize first; this covers a runtime that does not.
      if (capturing(stream)) {
        throw Error("the kernel was not loaded on cuda:" + std::to_string(device) +
                    " before XLA captured it in a CUDA graph (XLA skipped the initialize stage)");
      }
      call.make_ready(f, device, stream);
    }
    if (!timed) {
      call.launch(f, device, stream);
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    call.launch(f, device, stream);
    g_launch_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
  });
}

}  // namespace

void time_executes(bool on) { g_timing.store(on, std::memory_order_relaxed); }

ExecuteTimes execute_times() {
  return {g_timed_calls.load(std::memory_order_relaxed), g_handler_ns.load(std::memory_order_relaxed),
          g_launch_ns.load(std::memory_order_relaxed)};
}

abi::Error* execute_stage(abi::CallFrame* frame) {
  if (!g_timing.load(std::memory_order_relaxed)) return execute_body(frame, false);
  const auto t0 = std::chrono::steady_clock::now();
  abi::Error* e = execute_body(frame, true);
  g_handler_ns.fetch_add(ns_since(t0), std::memory_order_relaxed);
  g_timed_calls.fetch_add(1, std::memory_order_relaxed);
  return e;
}

}  // namespace jk::xla
