// The part of XLA's FFI C ABI (xla/ffi/api/c_api.h) that jitkernel's XLA
// handler uses, declared here so that building jitkernel needs no jaxlib:
// the call frame (args, rets, attributes, stage), error creation, the
// stream and device ordinal of a call, and the metadata extension through
// which XLA asks a handler for its API version and traits. Every struct
// starts with its size; the handler checks the sizes XLA passes against
// these declarations (and the API's version) and refuses a layout it does
// not know with an error instead of reading past it. The layouts here are
// the same in FFI API 0.3 (jaxlib 0.10) and 0.4 (jaxlib 0.11, which accepts
// handlers that report 0.3); later changes in those versions touch only
// structs and entries this file does not use.
#pragma once

#include <cstddef>
#include <cstdint>

namespace jk::xla::abi {

// The FFI API version this file declares; XLA compares it with its own at
// handler registration.
inline constexpr int kApiMajor = 0;
inline constexpr int kApiMinor = 3;

struct ExtensionBase {
  std::size_t struct_size;
  int type;  // 1: metadata
  ExtensionBase* next;
};
inline constexpr int kExtensionMetadata = 1;

struct ApiVersion {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  int major_version;
  int minor_version;
};

struct Error;  // opaque, owned by XLA

enum ErrorCode : int {
  kOk = 0,
  kUnknown = 2,
  kInvalidArgument = 3,
  kNotFound = 5,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
};

struct ErrorCreateArgs {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  const char* message;
  ErrorCode errc;
};

// XLA's element types (XLA_FFI_DataType), those jitkernel has a dtype for.
enum DataType : int {
  kPred = 1,
  kS8 = 2,
  kS16 = 3,
  kS32 = 4,
  kS64 = 5,
  kU8 = 6,
  kU16 = 7,
  kU32 = 8,
  kU64 = 9,
  kF16 = 10,
  kF32 = 11,
  kF64 = 12,
  kC64 = 15,
  kBF16 = 16,
};

struct Buffer {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  int dtype;  // DataType
  void* data;
  std::int64_t rank;
  std::int64_t* dims;
};

inline constexpr int kArgBuffer = 1;
inline constexpr int kRetBuffer = 1;
inline constexpr int kAttrScalar = 3;
inline constexpr int kAttrString = 4;

struct ByteSpan {
  const char* ptr;
  std::size_t len;
};

struct ScalarAttr {
  int dtype;  // DataType
  void* value;
};

enum Stage : int { kInstantiate = 0, kPrepare = 1, kInitialize = 2, kExecute = 3 };

struct ExecutionContext;  // opaque

struct Args {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  std::int64_t size;
  int* types;  // kArgBuffer (1) or a token
  void** args;
};

struct Rets {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  std::int64_t size;
  int* types;
  void** rets;
};

struct Attrs {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  std::int64_t size;
  int* types;
  ByteSpan** names;
  void** attrs;
};

struct Api;

struct CallFrame {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  const Api* api;
  ExecutionContext* ctx;
  int stage;  // Stage
  Args args;
  Rets rets;
  Attrs attrs;
  void* future;  // out: only for asynchronous handlers (not ours)
};

struct StreamGetArgs {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  ExecutionContext* ctx;
  void* stream;  // out: the CUstream
};

struct DeviceOrdinalGetArgs {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  ExecutionContext* ctx;
  std::int32_t device_ordinal;  // out
};

inline constexpr std::uint32_t kTraitCommandBufferCompatible = 1u << 0;

struct Metadata {
  std::size_t struct_size;
  ApiVersion api_version;
  std::uint32_t traits;
  std::int64_t state_type_id;  // 0: the handler keeps no XLA-owned state
};

struct MetadataExtension {
  ExtensionBase extension_base;
  Metadata* metadata;
};

using Handler = Error*(CallFrame*);
using ErrorCreateFn = Error*(ErrorCreateArgs*);
using StreamGetFn = Error*(StreamGetArgs*);
using DeviceOrdinalGetFn = Error*(DeviceOrdinalGetArgs*);
using UnusedFn = void (*)();

// XLA_FFI_Api up to the last entry jitkernel calls (DeviceOrdinal_Get);
// entries it does not call are kept as untyped pointers for the layout.
struct Api {
  std::size_t struct_size;
  ExtensionBase* extension_start;
  ApiVersion api_version;
  const void* internal_api;
  ErrorCreateFn* Error_Create;
  UnusedFn Error_GetMessage;
  UnusedFn Error_Destroy;
  UnusedFn Handler_Register;
  StreamGetFn* Stream_Get;
  UnusedFn Type_Register;
  UnusedFn ExecutionContext_Get;
  UnusedFn State_Set;
  UnusedFn State_Get;
  UnusedFn DeviceMemory_Allocate;
  UnusedFn DeviceMemory_Free;
  UnusedFn ThreadPool_Schedule;
  UnusedFn ThreadPool_NumThreads;
  UnusedFn Future_Create;
  UnusedFn Future_SetAvailable;
  UnusedFn Future_SetError;
  UnusedFn RunId_Get;
  DeviceOrdinalGetFn* DeviceOrdinal_Get;
};

// XLA_FFI_STRUCT_SIZE: the bytes up to and including a struct's last field
// this file declares (what a caller of at least this version passes).
#define JK_XLA_SIZE_THROUGH(S, field) \
  (offsetof(S, field) + sizeof(static_cast<S*>(nullptr)->field))

inline constexpr std::size_t kCallFrameSize = JK_XLA_SIZE_THROUGH(CallFrame, attrs);
inline constexpr std::size_t kApiSize = JK_XLA_SIZE_THROUGH(Api, DeviceOrdinal_Get);
inline constexpr std::size_t kBufferSize = JK_XLA_SIZE_THROUGH(Buffer, dims);
inline constexpr std::size_t kArgsSize = JK_XLA_SIZE_THROUGH(Args, args);
inline constexpr std::size_t kRetsSize = JK_XLA_SIZE_THROUGH(Rets, rets);
inline constexpr std::size_t kAttrsSize = JK_XLA_SIZE_THROUGH(Attrs, attrs);
inline constexpr std::size_t kMetadataSize = JK_XLA_SIZE_THROUGH(Metadata, traits);
inline constexpr std::size_t kMetadataExtensionSize = JK_XLA_SIZE_THROUGH(MetadataExtension, metadata);
inline constexpr std::size_t kApiVersionSize = JK_XLA_SIZE_THROUGH(ApiVersion, minor_version);
inline constexpr std::size_t kErrorCreateArgsSize = JK_XLA_SIZE_THROUGH(ErrorCreateArgs, errc);
inline constexpr std::size_t kStreamGetArgsSize = JK_XLA_SIZE_THROUGH(StreamGetArgs, stream);
inline constexpr std::size_t kDeviceOrdinalGetArgsSize =
    JK_XLA_SIZE_THROUGH(DeviceOrdinalGetArgs, device_ordinal);

}  // namespace jk::xla::abi
