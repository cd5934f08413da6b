// The warm path of an autotuned call (python/jitkernel/_fleet/tune_call.py's
// Autotuned) in one call into the core: the call's inputs described, the
// key bucket formed (the user's key function called when there is one), the
// configuration found in this process's memory or, on a miss, in the
// compile cache (GPU identity, bucket JSON, decision key, read and check:
// tune_lookup, tune_gpus), and its launch keywords made (grid / threadgroup
// resolved per configuration and kept per shapes). A second process's first
// tuned call must cost about what an untuned call does (issue 30: within
// 0.1 ms), and as Python these steps cost 5-30 us each the first time they
// ran in a process.
//
// The table answers None whenever the call needs the slow path (Python):
// another argument form, no usable stored decision
// (tuning, claims, captures and traces are decided there), a bucket the JSON
// writer here does not cover, or calls being recorded. Both paths share the
// dicts the table holds (decisions by memory key, launches, payloads, stats),
// so what one decides the other finds; the slow path's memory keys are made
// here too (`key_of`).
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <nanobind/stl/string.h>

#include "bindings.hpp"
#include "python_api.hpp"
#include "services/tune_gpus.hpp"
#include "services/tune_lookup.hpp"
#include "jitkernel/core/errors.hpp"
#include "jitkernel/engine/record_file.hpp"

namespace jk::py::tune {
namespace {

constexpr Py_ssize_t kMaxLaunches = 4096;  // launch keywords kept per tuned kernel (many shapes: start over)

std::string repr_of(nb::handle o) { return nb::cast<std::string>(nb::repr(o)); }
std::string type_name_of(nb::handle o) {
  return nb::cast<std::string>(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(o.ptr()))).attr("__name__"));
}

// (x, y, z) of positive ints from 1 to 3 ints (missing ones are 1), or
// nullopt: the rule of a tuned kernel's grid and threadgroup, for a
// Config's (tune_config._dims, through `_tune_dims`) and for what grid and
// threadgroup functions return.
std::optional<nb::tuple> dims(nb::handle value) {
  PyObject* v = value.ptr();
  if (!PyList_Check(v) && !PyTuple_Check(v)) return std::nullopt;
  const Py_ssize_t n = api::seq_size(v);
  if (n < 1 || n > 3) return std::nullopt;
  nb::object parts[3] = {nb::int_(1), nb::int_(1), nb::int_(1)};
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = api::seq_item(v, i);
    if (PyBool_Check(item) || !PyLong_Check(item)) return std::nullopt;
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(item, &overflow);
    if (overflow < 0 || (overflow == 0 && x < 1)) return std::nullopt;
    parts[i] = nb::borrow(item);
  }
  return nb::make_tuple(parts[0], parts[1], parts[2]);
}

class TuneTable {
 public:
  TuneTable(std::string static_key, std::string digest, nb::list configs, nb::object grid, nb::object threadgroup,
            nb::list templates, nb::object key, nb::object dtype_name, nb::dict chosen, nb::dict launches,
            nb::dict payloads, nb::dict stats)
      : static_(std::move(static_key)), digest_(std::move(digest)), configs_(std::move(configs)),
        grid_(std::move(grid)), threadgroup_(std::move(threadgroup)), templates_(std::move(templates)),
        key_(std::move(key)), dtype_name_(std::move(dtype_name)), chosen_(std::move(chosen)),
        launches_(std::move(launches)), payloads_(std::move(payloads)), stats_(std::move(stats)) {}

  // (inputs as a list, chosen index, launch keywords) of a call whose bucket
  // is decided (in memory or on disk), else None.
  nb::object warm(nb::tuple args, nb::handle inputs, nb::handle output_dtypes, nb::handle outputs) {
    if (!configs_.is_valid()) return nb::none();  // cleared by the garbage collector
    nb::object list;
    if (nb::len(args) != 0) {
      if (!inputs.is_none()) return nb::none();
      list = nb::steal(PySequence_List(args.ptr()));
    } else if (PyList_Check(inputs.ptr()) || PyTuple_Check(inputs.ptr())) {
      list = nb::steal(PySequence_List(inputs.ptr()));
    } else {
      return nb::none();
    }
    if (!list.is_valid()) nb::raise_python_error();
    const nb::tuple described = describe(list);
    nb::object shapes = described[0], dtypes = described[1];
    nb::object out = output_dtypes_of(output_dtypes, outputs);
    nb::object bucket = bucket_of(shapes, dtypes);  // the key function's value (None without one)
    int device = -1;
    nb::object gpu_text = nb::none();
    if (const std::string* one = one_gpu()) {
      gpu_text = nb::str(one->c_str(), one->size());
    } else if (any_gpu_known()) {
      device = device_of(list);
      if (const std::string* text = known_gpu(device)) gpu_text = nb::str(text->c_str(), text->size());
    }
    nb::object memory = memory_key(gpu_text, shapes, dtypes, bucket, out);
    std::optional<long long> index = remembered(memory);
    if (!index) {
      index = from_disk(list, device, shapes, dtypes, bucket, out);
      if (!index) return nb::none();
    }
    return nb::make_tuple(list, *index, launch(*index, shapes, nb::none(), nb::none()));
  }

  // (shapes, dtypes, memory key) of a call's inputs (a list) with the GPU's
  // text `gpu` (None: not known yet): what the slow path keeps decisions
  // under, made as the warm path makes it.
  nb::tuple key_of(nb::handle inputs, nb::handle output_dtypes, nb::handle outputs, nb::handle gpu) {
    const nb::tuple described = describe(inputs);
    nb::object shapes = described[0], dtypes = described[1];
    nb::object out = output_dtypes_of(output_dtypes, outputs);
    nb::object bucket = bucket_of(shapes, dtypes);
    return nb::make_tuple(shapes, dtypes, memory_key(gpu, shapes, dtypes, bucket, out));
  }

  // The launch keywords (grid, threadgroup, template) of configuration
  // `index` for these shapes; kept per (index, shapes) when the call gives
  // neither grid nor threadgroup (one dict lookup per call).
  nb::object launch(long long index, nb::handle shapes, nb::handle grid, nb::handle threadgroup) {
    if (!configs_.is_valid()) throw ArgumentError("index", "this tuned kernel is being collected");
    if (index < 0 || index >= static_cast<long long>(nb::len(configs_)))
      throw ArgumentError("index", "no configuration " + std::to_string(index));
    const bool kept = grid.is_none() && threadgroup.is_none();
    nb::object where;
    if (kept) {
      where = nb::make_tuple(index, shapes);
      PyObject* found = PyDict_GetItemWithError(launches_.ptr(), where.ptr());  // borrowed
      if (found != nullptr) return nb::borrow(found);
      if (PyErr_Occurred()) nb::raise_python_error();
    }
    nb::handle config = configs_[static_cast<std::size_t>(index)];
    nb::dict made;
    made["grid"] = resolve(config.attr("grid"), grid_, shapes, config, grid, "grid");
    made["threadgroup"] = resolve(config.attr("threadgroup"), threadgroup_, shapes, config, threadgroup,
                                  "threadgroup");
    nb::handle tmpl = templates_[static_cast<std::size_t>(index)];
    made["template"] = nb::len(tmpl) != 0 ? nb::borrow(tmpl) : nb::none();
    if (kept) {
      if (nb::len(launches_) >= static_cast<std::size_t>(kMaxLaunches)) launches_.clear();
      launches_[where] = made;
    }
    return std::move(made);
  }

  // The garbage collector's view: a user's grid, threadgroup or key function
  // may refer back to the tuned object that holds this table.
  int traverse(visitproc visit, void* arg) {
    for (nb::object* o : members()) Py_VISIT(o->ptr());
    return 0;
  }
  void clear() {
    for (nb::object* o : members()) o->reset();
  }

 private:
  std::string static_, digest_;
  nb::list configs_;
  nb::object grid_, threadgroup_;
  nb::list templates_;
  nb::object key_, dtype_name_;
  nb::dict chosen_, launches_, payloads_, stats_;

  std::array<nb::object*, 10> members() {
    return {&configs_, &grid_, &threadgroup_, &templates_, &key_, &dtype_name_, &chosen_, &launches_, &payloads_,
            &stats_};
  }

  // The output dtypes as the memory key holds them (jitkernel dtypes where
  // they are some), from output_dtypes or the given outputs; None if neither.
  static nb::object output_dtypes_of(nb::handle output_dtypes, nb::handle outputs) {
    nb::handle from = output_dtypes;
    const bool given = PyList_Check(output_dtypes.ptr()) || PyTuple_Check(output_dtypes.ptr());
    if (!given) {
      if (!PyList_Check(outputs.ptr()) && !PyTuple_Check(outputs.ptr())) return nb::none();
      from = outputs;
    }
    nb::list out;
    for (nb::handle d : from) {
      nb::object dtype = given ? nb::borrow(d) : nb::object(d.attr("dtype"));
      out.append(jk_dtype_or_same(dtype));
    }
    return nb::tuple(out);
  }

  // The key function's value for these inputs (None without one), which
  // must be hashable: it keys this process's memory.
  nb::object bucket_of(nb::handle shapes, nb::handle dtypes) const {
    if (key_.is_none()) return nb::none();
    nb::object bucket = key_(shapes, names_of(dtypes));
    if (PyObject_Hash(bucket.ptr()) == -1) {
      PyErr_Clear();
      throw ArgumentTypeError("key", "the key function returned an unhashable " + type_name_of(bucket) + " " +
                                         repr_of(bucket) + ": return ints, floats, strings or tuples of them");
    }
    return bucket;
  }

  // The dtypes' names as a key function sees them.
  nb::tuple names_of(nb::handle dtypes) const {
    nb::list names;
    for (nb::handle d : dtypes) names.append(dtype_name_(d));
    return nb::tuple(names);
  }

  nb::object memory_key(nb::handle gpu, nb::handle shapes, nb::handle dtypes, nb::handle bucket,
                        nb::handle out) const {
    if (key_.is_none()) return nb::make_tuple(gpu, shapes, dtypes, out);
    return nb::make_tuple(gpu, bucket, out);
  }

  std::optional<long long> remembered(nb::handle memory) const {
    PyObject* found = PyDict_GetItemWithError(chosen_.ptr(), memory.ptr());  // borrowed
    if (found == nullptr) {
      if (PyErr_Occurred()) nb::raise_python_error();
      return std::nullopt;
    }
    return nb::cast<long long>(nb::handle(found));
  }

  // The chosen index stored on disk for this call's GPU and bucket (kept in
  // memory, its payload and the "loaded" count noted), or nullopt.
  std::optional<long long> from_disk(nb::handle list, int device, nb::handle shapes, nb::handle dtypes,
                                     nb::handle bucket, nb::handle out) {
    if (recording()) return std::nullopt;  // the slow path writes the tuned record line
    if (device < 0) device = device_of(list);
    const Gpu* g = nullptr;
    try {
      g = &gpu(device);
    } catch (const Error&) {  // the slow path reports it (or runs untuned when traced)
      return std::nullopt;
    } catch (const nb::python_error&) {
      return std::nullopt;
    }
    const std::string gpu_text = g->text;  // a copy: the GIL is released while the decision is read
    settle_gpus(gpu_text);
    nb::object memory = memory_key(nb::str(gpu_text.c_str(), gpu_text.size()), shapes, dtypes, bucket, out);
    if (std::optional<long long> index = remembered(memory)) return index;
    const nb::object value = key_.is_none() ? nb::make_tuple(shapes, dtypes, out) : nb::make_tuple(bucket, out);
    const std::optional<std::string> text = bucket_json(value);
    if (!text) return std::nullopt;
    const Found found = find(static_, gpu_text, *text, digest_, static_cast<std::int64_t>(nb::len(configs_)));
    if (!found.chosen) return std::nullopt;
    payloads_[nb::str(text->c_str(), text->size())] = nb::bytes(found.payload->data(), found.payload->size());
    stats_["loaded"] = nb::int_(nb::cast<long long>(stats_["loaded"]) + 1);
    chosen_[memory] = nb::int_(*found.chosen);
    return *found.chosen;
  }

  static nb::object resolve(nb::handle own, nb::handle shared, nb::handle shapes, nb::handle config,
                            nb::handle call_value, const char* argument) {
    if (!own.is_none()) return nb::borrow(own);
    if (PyCallable_Check(shared.ptr())) {
      nb::object value = nb::borrow(shared)(shapes, config);
      if (std::optional<nb::tuple> d = dims(value)) return std::move(*d);
      throw ArgumentTypeError(argument, std::string("the ") + argument + " function returned " + repr_of(value) +
                                            " for " + repr_of(config) + ": expected 1 to 3 positive ints");
    }
    if (!shared.is_none()) return nb::borrow(shared);
    if (call_value.is_none())
      throw ArgumentTypeError(argument, std::string("no ") + argument + " for " + repr_of(config) +
                                            ": give autotune(" + argument + "=...), the Config's " + argument +
                                            " or the call's " + argument + "=");
    return nb::borrow(call_value);
  }
};

int table_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  return nb::inst_ptr<TuneTable>(self)->traverse(visit, arg);
}

int table_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<TuneTable>(self)->clear();
  return 0;
}

PyType_Slot kTableSlots[] = {{Py_tp_traverse, reinterpret_cast<void*>(table_traverse)},
                             {Py_tp_clear, reinterpret_cast<void*>(table_clear)},
                             {0, nullptr}};

void bind(nb::module_& m) {
  using namespace nb::literals;
  m.def(
      "_tune_dims", [](nb::handle value) -> nb::object {
        std::optional<nb::tuple> d = dims(value);
        return d ? nb::object(std::move(*d)) : nb::none();
      },
      "value"_a.none(), "(x, y, z) of 1 to 3 positive ints (missing ones are 1), or None when it is not that.");
  nb::class_<TuneTable>(m, "_TuneTable",
                        "An autotuned kernel's decisions and launches as its calls find them (internal: "
                        "tune_call.py).",
                        nb::type_slots(kTableSlots))
      .def(nb::init<std::string, std::string, nb::list, nb::object, nb::object, nb::list, nb::object, nb::object,
                    nb::dict, nb::dict, nb::dict, nb::dict>(),
           "static"_a, "digest"_a, "configs"_a, "grid"_a.none(), "threadgroup"_a.none(), "templates"_a,
           "key"_a.none(), "dtype_name"_a, "chosen"_a, "launches"_a, "payloads"_a, "stats"_a)
      .def("warm", &TuneTable::warm, "args"_a, "inputs"_a.none(), "output_dtypes"_a.none(), "outputs"_a.none(),
           "(inputs, chosen index, launch keywords) of a call whose bucket is decided (in memory or stored), "
           "else None (the slow path decides).")
      .def("key_of", &TuneTable::key_of, "inputs"_a, "output_dtypes"_a.none(), "outputs"_a.none(), "gpu"_a.none(),
           "(shapes, dtypes, memory key) of a call's inputs (a list), the key function called (its value must be "
           "hashable), with the GPU's text (None: not known yet).")
      .def("launch", &TuneTable::launch, "index"_a, "shapes"_a.none(), "grid"_a.none(), "threadgroup"_a.none(),
           "The launch keywords of a configuration for these shapes (kept when grid and threadgroup are None).");
}

const Registration reg(order::toolkit, "tune_table", bind);

}  // namespace
}  // namespace jk::py::tune
