// Which GPU an autotuned call runs on, as its decisions are keyed: the
// device of the call's inputs, and each device's identity (model name and
// architecture, as the text a decision key holds), asked once per process.
// When every visible GPU is of one model (the common case) that text is known
// once settled, and a call needs no device lookup at all. Tests without a GPU
// replace the identities with a Python function (`_tune_set_gpus`).
#pragma once

#include <optional>
#include <string>

#include "bindings.hpp"

namespace jk::py::tune {

struct Gpu {
  std::string name, arch, text;  // text: identity_text(name, arch)
};

// The CUDA device of the first GPU array among a call's inputs (0 when none
// is on a GPU): a torch tensor through .device (type and index), others
// through __dlpack_device__ (CUDA, CUDA host or managed memory).
int device_of(nb::handle inputs);

// Device `device`'s identity, asked the first time (errors propagate: no
// driver, no such device, or the replacement function's).
const Gpu& gpu(int device);

// The identity text of `device` when this process has asked it, else null.
const std::string* known_gpu(int device);
bool any_gpu_known();

// Settles (once per process, at its first decision) whether every visible GPU
// is of one model; `known` is the text of the GPU that decision is for. A GPU
// that cannot be asked leaves it unsettled-as-several (calls look devices up).
void settle_gpus(const std::string& known);

// The one model's text when settled so, else null.
const std::string* one_gpu();

}  // namespace jk::py::tune
