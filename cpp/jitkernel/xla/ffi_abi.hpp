// XLA's FFI C ABI as jitkernel's XLA handler uses it. The structs, enums and
// version macros are XLA's own header, vendored unmodified in
// cpp/third_party/xla/ffi/api/c_api.h (FFI API 0.3, from jaxlib 0.10.2;
// cpp/third_party/xla/README.md says where it came from and why 0.3), so
// building jitkernel needs no jaxlib. This file only gives the handler's code
// short names for the parts it reads: the call frame (args, rets, attributes,
// stage), error creation, the stream and device ordinal of a call, and the
// metadata extension through which XLA asks a handler for its API version and
// traits.
//
// The handler reports the header's API version (XLA_FFI_API_MAJOR/MINOR) to
// XLA and checks every struct XLA passes against the header's sizes (the
// XLA_FFI_*_STRUCT_SIZE values: the bytes through each struct's last field in
// that version): a caller of this version or later passes at least that many,
// and the handler refuses a smaller layout, or another major version, with an
// error instead of reading past it. XLA accepts handlers of older minor
// versions (jaxlib 0.11, API 0.4, takes 0.3 handlers) and refuses newer ones,
// so the vendored header is the oldest FFI API jitkernel supports, not the
// newest there is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xla/ffi/api/c_api.h"

namespace jk::xla::abi {

// The FFI API version the vendored header declares; the handler reports it to
// XLA, which compares it with its own at handler registration.
inline constexpr int kApiMajor = XLA_FFI_API_MAJOR;
inline constexpr int kApiMinor = XLA_FFI_API_MINOR;

inline constexpr XLA_FFI_Extension_Type kExtensionMetadata = XLA_FFI_Extension_Metadata;
using ApiVersion = XLA_FFI_Api_Version;
using Error = XLA_FFI_Error;  // opaque, owned by XLA

using ErrorCode = XLA_FFI_Error_Code;
inline constexpr ErrorCode kUnknown = XLA_FFI_Error_Code_UNKNOWN;
inline constexpr ErrorCode kInvalidArgument = XLA_FFI_Error_Code_INVALID_ARGUMENT;
inline constexpr ErrorCode kResourceExhausted = XLA_FFI_Error_Code_RESOURCE_EXHAUSTED;
inline constexpr ErrorCode kFailedPrecondition = XLA_FFI_Error_Code_FAILED_PRECONDITION;
inline constexpr ErrorCode kInternal = XLA_FFI_Error_Code_INTERNAL;
using ErrorCreateArgs = XLA_FFI_Error_Create_Args;

// XLA's element types (XLA_FFI_DataType), those jitkernel has a dtype for.
using DataType = XLA_FFI_DataType;
inline constexpr DataType kPred = XLA_FFI_DataType_PRED;
inline constexpr DataType kS8 = XLA_FFI_DataType_S8;
inline constexpr DataType kS16 = XLA_FFI_DataType_S16;
inline constexpr DataType kS32 = XLA_FFI_DataType_S32;
inline constexpr DataType kS64 = XLA_FFI_DataType_S64;
inline constexpr DataType kU8 = XLA_FFI_DataType_U8;
inline constexpr DataType kU16 = XLA_FFI_DataType_U16;
inline constexpr DataType kU32 = XLA_FFI_DataType_U32;
inline constexpr DataType kU64 = XLA_FFI_DataType_U64;
inline constexpr DataType kF16 = XLA_FFI_DataType_F16;
inline constexpr DataType kF32 = XLA_FFI_DataType_F32;
inline constexpr DataType kF64 = XLA_FFI_DataType_F64;
inline constexpr DataType kC64 = XLA_FFI_DataType_C64;
inline constexpr DataType kBF16 = XLA_FFI_DataType_BF16;

using Buffer = XLA_FFI_Buffer;
inline constexpr XLA_FFI_ArgType kArgBuffer = XLA_FFI_ArgType_BUFFER;
inline constexpr XLA_FFI_AttrType kAttrScalar = XLA_FFI_AttrType_SCALAR;
inline constexpr XLA_FFI_AttrType kAttrString = XLA_FFI_AttrType_STRING;
using ByteSpan = XLA_FFI_ByteSpan;
using ScalarAttr = XLA_FFI_Scalar;

using Stage = XLA_FFI_ExecutionStage;
inline constexpr Stage kInstantiate = XLA_FFI_ExecutionStage_INSTANTIATE;
inline constexpr Stage kInitialize = XLA_FFI_ExecutionStage_INITIALIZE;
inline constexpr Stage kExecute = XLA_FFI_ExecutionStage_EXECUTE;

using Attrs = XLA_FFI_Attrs;
using Api = XLA_FFI_Api;
using CallFrame = XLA_FFI_CallFrame;
using StreamGetArgs = XLA_FFI_Stream_Get_Args;
using DeviceOrdinalGetArgs = XLA_FFI_DeviceOrdinal_Get_Args;

inline constexpr std::uint32_t kTraitCommandBufferCompatible = XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE;
using Metadata = XLA_FFI_Metadata;
using MetadataExtension = XLA_FFI_Metadata_Extension;

using Handler = XLA_FFI_Handler;

// What a caller of the vendored API version passes at least, struct by struct.
inline constexpr std::size_t kCallFrameSize = XLA_FFI_CallFrame_STRUCT_SIZE;
inline constexpr std::size_t kApiSize = XLA_FFI_Api_STRUCT_SIZE;
inline constexpr std::size_t kBufferSize = XLA_FFI_Buffer_STRUCT_SIZE;
inline constexpr std::size_t kArgsSize = XLA_FFI_Args_STRUCT_SIZE;
inline constexpr std::size_t kRetsSize = XLA_FFI_Rets_STRUCT_SIZE;
inline constexpr std::size_t kAttrsSize = XLA_FFI_Attrs_STRUCT_SIZE;
inline constexpr std::size_t kMetadataSize = XLA_FFI_Metadata_STRUCT_SIZE;
inline constexpr std::size_t kMetadataExtensionSize = XLA_FFI_Metadata_Extension_STRUCT_SIZE;
inline constexpr std::size_t kApiVersionSize = XLA_FFI_Api_Version_STRUCT_SIZE;
inline constexpr std::size_t kErrorCreateArgsSize = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
inline constexpr std::size_t kStreamGetArgsSize = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
inline constexpr std::size_t kDeviceOrdinalGetArgsSize = XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE;

}  // namespace jk::xla::abi
