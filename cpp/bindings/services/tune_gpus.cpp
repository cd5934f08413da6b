// The GPU an autotuned call's decision is for (tune_gpus.hpp): the call's
// device, each device's identity asked once, and whether all GPUs are of one
// model. State is per process and guarded by the GIL (every entry holds it).
#include "services/tune_gpus.hpp"

#include <map>
#include <string>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "services/device_arg.hpp"
#include "services/tune_lookup.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/cuda/driver/device.hpp"

namespace jk::py::tune {
namespace {

struct Registry {
  PyObject* fake = nullptr;  // device -> {"name", "arch"} (tests), or null: the driver's (kept to exit)
  int fake_devices = 1;
  std::map<int, Gpu> known;
  bool settled = false;
  std::optional<std::string> one;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: it may hold a Python object past finalisation
  return *r;
}

bool is_cuda_dlpack(long long kind) { return kind == 2 || kind == 3 || kind == 13; }

Gpu ask(int device) {
  Registry& r = registry();
  if (r.fake == nullptr) {
    const cuda::DeviceInfo& info = cuda::device_info(device_arg(nb::int_(device)));
    return {info.name, info.arch, identity_text(info.name, info.arch)};
  }
  nb::object found = nb::borrow(r.fake)(device);
  std::string name = nb::cast<std::string>(found["name"]), arch = nb::cast<std::string>(found["arch"]);
  std::string text = identity_text(name, arch);
  return {std::move(name), std::move(arch), std::move(text)};
}

}  // namespace

int device_of(nb::handle inputs) {
  for (nb::handle x : inputs) {
    if (const std::optional<DeviceFacts> f = device_facts(x)) return f->device;
    nb::object torch_device = nb::getattr(x, "device", nb::none());
    nb::object kind = nb::getattr(torch_device, "type", nb::none());
    if (PyUnicode_Check(kind.ptr()) && nb::hasattr(torch_device, "index")) {
      if (nb::cast<std::string>(kind) != "cuda") continue;
      nb::object index = torch_device.attr("index");
      return index.is_none() ? 0 : nb::cast<int>(index);
    }
    nb::object method = nb::getattr(x, "__dlpack_device__", nb::none());
    if (method.is_none()) continue;
    long long device_kind = 0;
    int ordinal = 0;
    try {
      nb::object pair = method();
      device_kind = nb::cast<long long>(nb::int_(pair[0]));
      ordinal = nb::cast<int>(nb::int_(pair[1]));
    } catch (const nb::python_error&) {  // a tracer's stand-in array may have no device to report
      continue;
    } catch (const nb::cast_error&) {
      continue;
    }
    if (is_cuda_dlpack(device_kind)) return ordinal;
  }
  return 0;
}

const Gpu& gpu(int device) {
  Registry& r = registry();
  auto it = r.known.find(device);
  if (it == r.known.end()) it = r.known.emplace(device, ask(device)).first;
  return it->second;
}

const std::string* known_gpu(int device) {
  const Registry& r = registry();
  const auto it = r.known.find(device);
  return it == r.known.end() ? nullptr : &it->second.text;
}

bool any_gpu_known() { return !registry().known.empty(); }

void settle_gpus(const std::string& known) {
  Registry& r = registry();
  if (r.settled) return;
  r.settled = true;
  try {
    const int count = r.fake != nullptr ? r.fake_devices : cuda::device_count();
    if (count == 1) {
      r.one = known;
      return;
    }
    for (int d = 0; d < count; ++d)
      if (gpu(d).text != known) return;
    r.one = known;
  } catch (const Error&) {  // a GPU that cannot be asked: calls look their device up
    r.one.reset();
  }
}

const std::string* one_gpu() {
  const Registry& r = registry();
  return r.one ? &*r.one : nullptr;
}

namespace {

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def(
      "_tune_gpu",
      [](int device) {
        const Gpu& g = gpu(device);
        return nb::make_tuple(g.name, g.arch, g.text);
      },
      "device"_a, "(name, architecture, identity text) of a CUDA device for tuning decisions, asked once.");
  m.def(
      "_tune_device_of", [](nb::handle inputs) { return device_of(inputs); }, "inputs"_a,
      "The CUDA device of the first GPU array among a tuned call's inputs (0 when none is on a GPU).");
  m.def(
      "_tune_known_gpu",
      [](nb::handle inputs) -> std::optional<std::string> {
        if (!any_gpu_known()) return std::nullopt;
        const std::string* text = known_gpu(device_of(inputs));
        return text ? std::optional<std::string>(*text) : std::nullopt;
      },
      "inputs"_a, "The identity text of the GPU a call's inputs are on when this process has asked it, else None.");
  m.def(
      "_tune_settle_gpus", [](const std::string& known) { settle_gpus(known); }, "known"_a,
      "Settles, once per process, whether every visible GPU is of one model (`known`: one GPU's text).");
  m.def(
      "_tune_one_gpu",
      []() -> std::optional<std::string> {
        const std::string* one = one_gpu();
        return one ? std::optional<std::string>(*one) : std::nullopt;
      },
      "The identity text of every visible GPU when they are all of one model (once settled), else None.");
  m.def(
      "_tune_set_gpus",
      [](nb::handle identity, int devices) {
        Registry& r = registry();
        Py_XDECREF(r.fake);
        r.fake = identity.is_none() ? nullptr : nb::borrow(identity).release().ptr();
        r.fake_devices = devices;
        r.known.clear();
        r.settled = false;
        r.one.reset();
      },
      "identity"_a.none(), "devices"_a,
      "Replaces the GPUs' identities with a function device -> {'name', 'arch'} of `devices` GPUs (None: the "
      "driver's again) and forgets what was asked (tests without a GPU).");
}

const Registration reg(order::toolkit, "tune_gpus", bind);

}  // namespace
}  // namespace jk::py::tune
