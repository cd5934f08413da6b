// DLPack import (consumer side) and export (producer side); see dlpack.hpp.
#include "call/dlpack.hpp"

#include <memory>
#include <vector>

#include "jitkernel/core/errors.hpp"

namespace jk::py {
namespace {

constexpr const char* kPlain = "dltensor";
constexpr const char* kVersioned = "dltensor_versioned";

std::string device_type_name(std::int32_t type) {
  switch (type) {
    case dlpack::kCPU: return "CPU";
    case dlpack::kCUDA: return "CUDA";
    case dlpack::kCUDAHost: return "CUDA pinned host memory (kDLCUDAHost)";
    case dlpack::kROCM: return "ROCm";
    case dlpack::kCUDAManaged: return "CUDA managed memory";
    default: return "DLPack device type " + std::to_string(type);
  }
}

// What an exported capsule's manager owns: the buffer and the shape/strides
// arrays the DLTensor points into.
struct ExportContext {
  std::shared_ptr<Buffer> buffer;
  std::vector<std::int64_t> shape, strides;
  dlpack::ManagedTensor plain{};
  dlpack::ManagedTensorVersioned versioned{};
};

// Deleters touch no Python: consumers may call them from any thread.
void delete_plain(dlpack::ManagedTensor* t) { delete static_cast<ExportContext*>(t->manager_ctx); }
void delete_versioned(dlpack::ManagedTensorVersioned* t) {
  delete static_cast<ExportContext*>(t->manager_ctx);
}

// Capsule destructors: a capsule nobody consumed still owns its tensor.
void destroy_plain_capsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kPlain)) return;  // consumed: renamed "used_dltensor"
  auto* t = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(capsule, kPlain));
  if (t && t->deleter) t->deleter(t);
}
void destroy_versioned_capsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kVersioned)) return;
  auto* t = static_cast<dlpack::ManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersioned));
  if (t && t->deleter) t->deleter(t);
}

}  // namespace

DLPackImport& DLPackImport::operator=(DLPackImport&& o) noexcept {
  if (this != &o) {
    reset();
    managed_ = o.managed_;
    versioned_ = o.versioned_;
    o.managed_ = nullptr;
  }
  return *this;
}

void DLPackImport::reset() {
  if (!managed_) return;
  if (versioned_) {
    auto* t = static_cast<dlpack::ManagedTensorVersioned*>(managed_);
    if (t->deleter) t->deleter(t);
  } else {
    auto* t = static_cast<dlpack::ManagedTensor*>(managed_);
    if (t->deleter) t->deleter(t);
  }
  managed_ = nullptr;
}

ImportedTensor import_capsule(nb::handle capsule, DLPackImport& owner, const char* argument,
                              const ItemRef& where) {
  auto context = [&] { return where.str().empty() ? std::string("the array") : where.str(); };
  PyObject* cap = capsule.ptr();
  const dlpack::Tensor* t = nullptr;
  ImportedTensor out;
  if (PyCapsule_IsValid(cap, kVersioned)) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(PyCapsule_GetPointer(cap, kVersioned));
    if (PyCapsule_SetName(cap, "used_dltensor_versioned") != 0) throw nb::python_error();
    owner.adopt(m, true);
    if (m->version.major != 1)
      throw ArgumentTypeError(argument, context() + ": DLPack version " +
                                            std::to_string(m->version.major) + "." +
                                            std::to_string(m->version.minor) +
                                            " is not supported (jitkernel reads 1.x)");
    out.read_only = (m->flags & dlpack::kFlagReadOnly) != 0;
    t = &m->dl_tensor;
  } else if (PyCapsule_IsValid(cap, kPlain)) {
    auto* m = static_cast<dlpack::ManagedTensor*>(PyCapsule_GetPointer(cap, kPlain));
    if (PyCapsule_SetName(cap, "used_dltensor") != 0) throw nb::python_error();
    owner.adopt(m, false);
    t = &m->dl_tensor;
  } else {
    throw ArgumentTypeError(argument, context() + ": __dlpack__() returned " +
                                          nb::cast<std::string>(nb::str(capsule.type())) +
                                          ", not an unused DLPack capsule");
  }

  switch (t->device.device_type) {
    case dlpack::kCPU: out.view.device = kHostDevice; break;
    case dlpack::kCUDA:
    case dlpack::kCUDAManaged: out.view.device = t->device.device_id; break;
    case dlpack::kCUDAHost:
      throw ArgumentError(argument, context() + ": the array is in CUDA pinned host memory "
                                              "(kDLCUDAHost); pass a CUDA device array, or a "
                                              "regular host array to have it copied");
    default:
      throw ArgumentError(argument, context() + ": the array is on " +
                                        device_type_name(t->device.device_type) +
                                        "; jitkernel takes CUDA device arrays and host arrays");
  }
  auto dtype = dtype_from_dlpack(t->dtype.code, t->dtype.bits, t->dtype.lanes);
  if (!dtype)
    throw ArgumentTypeError(argument, context() + ": its DLPack dtype (code " +
                                          std::to_string(t->dtype.code) + ", " +
                                          std::to_string(t->dtype.bits) + " bits, " +
                                          std::to_string(t->dtype.lanes) +
                                          " lanes) is not one jitkernel supports");
  if (t->ndim < 0 || (t->ndim > 0 && !t->shape))
    throw ArgumentError(argument, context() + ": malformed DLPack tensor (ndim " +
                                      std::to_string(t->ndim) + ")");
  out.view.dtype = *dtype;
  out.view.shape.assign(t->shape, t->shape + t->ndim);
  for (auto s : out.view.shape)
    if (s < 0) throw ArgumentError(argument, context() + ": malformed DLPack tensor (negative dim)");
  out.view.strides = t->strides ? std::vector<std::int64_t>(t->strides, t->strides + t->ndim)
                                : row_major_strides(out.view.shape);
  out.view.data = static_cast<char*>(t->data) + t->byte_offset;
  return out;
}

namespace {

// The context of an export and the DLTensor describing `array`.
std::unique_ptr<ExportContext> export_context(const OwnedArray& array, dlpack::Tensor& tensor) {
  auto ctx = std::make_unique<ExportContext>();
  ctx->buffer = array.buffer;
  ctx->shape = array.view.shape;
  ctx->strides = array.view.strides;
  tensor = dlpack::Tensor{};
  tensor.data = array.view.data;
  tensor.device = {dlpack::kCUDA, array.view.device};
  tensor.ndim = array.view.ndim();
  const DTypeInfo& info = dtype_info(array.view.dtype);
  tensor.dtype = {info.dlpack_code, info.dlpack_bits, 1};
  tensor.shape = ctx->shape.data();
  tensor.strides = ctx->strides.data();
  tensor.byte_offset = 0;
  return ctx;
}

void fill_versioned(ExportContext& ctx, const dlpack::Tensor& tensor) {
  ctx.versioned.version = {1, 0};
  ctx.versioned.manager_ctx = &ctx;
  ctx.versioned.deleter = &delete_versioned;
  ctx.versioned.flags = 0;
  ctx.versioned.dl_tensor = tensor;
}

}  // namespace

nb::object export_capsule(const OwnedArray& array, bool versioned) {
  dlpack::Tensor tensor;
  auto ctx = export_context(array, tensor);
  PyObject* capsule;
  if (versioned) {
    fill_versioned(*ctx, tensor);
    capsule = PyCapsule_New(&ctx->versioned, kVersioned, &destroy_versioned_capsule);
  } else {
    ctx->plain.dl_tensor = tensor;
    ctx->plain.manager_ctx = ctx.get();
    ctx->plain.deleter = &delete_plain;
    capsule = PyCapsule_New(&ctx->plain, kPlain, &destroy_plain_capsule);
  }
  if (!capsule) throw nb::python_error();
  ctx.release();  // the capsule (then its consumer) owns the context now
  return nb::steal(capsule);
}

dlpack::ManagedTensorVersioned* export_managed(const OwnedArray& array) {
  dlpack::Tensor tensor;
  auto ctx = export_context(array, tensor);
  fill_versioned(*ctx, tensor);
  return &ctx.release()->versioned;
}

const dlpack::ExchangeAPI* exchange_api_of(nb::handle type) {
  PyObject* attr = PyObject_GetAttrString(type.ptr(), "__dlpack_c_exchange_api__");
  if (attr == nullptr) {
    PyErr_Clear();
    return nullptr;
  }
  const dlpack::ExchangeAPI* api = nullptr;
  if (PyCapsule_IsValid(attr, "dlpack_exchange_api")) {
    api = static_cast<const dlpack::ExchangeAPI*>(PyCapsule_GetPointer(attr, "dlpack_exchange_api"));
  } else if (PyLong_Check(attr)) {  // early producers gave the address as an int
    api = static_cast<const dlpack::ExchangeAPI*>(PyLong_AsVoidPtr(attr));
  }
  Py_DECREF(attr);
  if (PyErr_Occurred()) PyErr_Clear();
  // The table stays alive for the process (the protocol's rule), so the pointer outlives `attr`.
  if (api == nullptr || api->header.version.major != 1 || api->header.version.minor < 2 ||
      api->dltensor_from_py_object_no_sync == nullptr || api->current_work_stream == nullptr ||
      api->managed_tensor_to_py_object_no_sync == nullptr)
    return nullptr;
  return api;
}

bool view_from_dltensor(const dlpack::Tensor& t, ArrayView& view) {
  if (t.device.device_type != dlpack::kCUDA || t.ndim < 0 || (t.ndim > 0 && !t.shape)) return false;
  auto dtype = dtype_from_dlpack(t.dtype.code, t.dtype.bits, t.dtype.lanes);
  if (!dtype) return false;
  for (std::int32_t d = 0; d < t.ndim; ++d)
    if (t.shape[d] < 0) return false;
  view.dtype = *dtype;
  view.device = t.device.device_id;
  view.shape.assign(t.shape, t.shape + t.ndim);
  if (t.strides) {
    view.strides.assign(t.strides, t.strides + t.ndim);
  } else {
    view.strides = row_major_strides(view.shape);
  }
  view.data = static_cast<char*>(t.data) + t.byte_offset;
  return true;
}

}  // namespace jk::py
