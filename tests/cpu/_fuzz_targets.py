"""The fuzz test's targets (tests/cpu/_fuzz_child.py runs them): each is a Hypothesis strategy of cases, a case a
tuple of steps (callable name, args, kwargs) whose arguments are literals and ``Make`` descriptions.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import jitkernel as jk
from _fuzz_binaries import BINARY, BINARY_ARG, ENTRY_NAMES, PTX_TARGETS
from _fuzz_strategies import (
    ANY_INT, ARCHES, BAD_SHAPE, COMPILE_BODIES, COMPILE_CUDA_SOURCES, DEVICE_ARRAY, DIM3, DTYPES, DTYPE_LIKE,
    GOOD_SHAPE, HOSTILE_ARRAY, HOSTILE_ARRAY_SAFE, HOSTILE_DLPACK, HOSTILE_INT, INIT_VALUE, INT, JUNK,
    KERNEL_NAMES, M, NAME, OUTPUT_ITEM, POSITIONAL, SCALAR, SOURCE_TEXT, STREAM, TARGETS_BIN, TEMPLATE,
    TEMPLATE_NAME, TEMPLATE_VALUE, UNKNOWN_KWARGS, VALID_DTYPE, VALID_ITEM, VALID_NAME, input_item,
    inputs_arg, per_output, seq_of, sometimes_bad,
)

# ----------------------------------------------------------------------------------------------------------------
# Targets: each draws cases, a case is a tuple of steps (callable name, args, kwargs); ".name" calls a method of
# the previous step's result.

SCALARS_ARG = st.one_of(st.lists(st.one_of(SCALAR, HOSTILE_INT, JUNK), max_size=4),
                        st.just([np.int64(4), np.float64(2.0), True]), seq_of(SCALAR), JUNK)


def call_kwargs(kernel, safe_data=True):
    in_names, out_names = KERNEL_NAMES[kernel]
    required = {"inputs": inputs_arg(in_names, safe_data),
                "output_shapes": per_output(out_names, GOOD_SHAPE, BAD_SHAPE),
                "output_dtypes": per_output(out_names, VALID_DTYPE, DTYPE_LIKE),
                "grid": DIM3, "threadgroup": DIM3}
    optional = {"template": TEMPLATE, "init_value": INIT_VALUE, "verbose": sometimes_bad(st.booleans(), JUNK),
                "stream": sometimes_bad(st.none(), STREAM, bad_weight=2, good_weight=1),
                "outputs": per_output(out_names, DEVICE_ARRAY, OUTPUT_ITEM)}
    return st.fixed_dictionaries(required, optional=optional)


def without_some(kwargs_strategy):
    """Drops a required keyword now and then, and adds unknown keywords or positional arguments now and then."""
    def change(d, drop, extra, positional):
        d = dict(d)
        if drop is not None and drop in d:
            del d[drop]
        d.update(extra)
        return positional, d
    return st.builds(change, kwargs_strategy,
                     sometimes_bad(st.none(), st.sampled_from(["inputs", "grid", "threadgroup", "output_shapes"]),
                                   good_weight=8),
                     sometimes_bad(st.just({}), UNKNOWN_KWARGS, good_weight=8),
                     sometimes_bad(st.just(()), POSITIONAL, good_weight=8))


def step(name, args=(), kwargs=None):
    return (name, tuple(args), dict(kwargs or {}))


def kernel_call_cases(kernels):
    return st.sampled_from(kernels).flatmap(
        lambda k: without_some(call_kwargs(k)).map(lambda pk: (step(k, pk[0], pk[1]),)))


def signature_cases(kernels, methods):
    def for_kernel(k):
        in_names, out_names = KERNEL_NAMES[k]
        kwargs = st.fixed_dictionaries({"inputs": inputs_arg(in_names, safe_data=False),
                                        "output_dtypes": per_output(out_names, VALID_DTYPE, DTYPE_LIKE)},
                                       optional={"template": TEMPLATE})
        return st.tuples(st.sampled_from(methods), kwargs).map(lambda mk: (step(f"{k}.{mk[0]}", (), mk[1]),))
    return st.sampled_from(kernels).flatmap(for_kernel)


def names_arg(good_names):
    return sometimes_bad(st.one_of(good_names, good_names.map(tuple), st.none()),
                         st.one_of(seq_of(st.one_of(NAME, JUNK, INT), max_size=3), JUNK, st.just("ab")))


@st.composite
def factory_cases(draw, metal):
    in_names = draw(names_arg(st.lists(VALID_NAME, max_size=3, unique=True)))
    out_names = draw(names_arg(st.lists(st.sampled_from(["out", "o2", "res"]), min_size=1, max_size=2,
                                        unique=True)))
    kwargs = {"name": draw(sometimes_bad(st.sampled_from(["k", "my_kernel", "k2"]), st.one_of(NAME, JUNK))),
              "input_names": in_names, "output_names": out_names,
              "source": draw(sometimes_bad(st.sampled_from(["out[0] = 1;", "res[0] = a[0];"]),
                                           st.one_of(SOURCE_TEXT, JUNK, st.none())))}
    optional = {"header": sometimes_bad(st.just(""), st.one_of(SOURCE_TEXT, JUNK)),
                "ensure_row_contiguous": sometimes_bad(st.booleans(), st.one_of(JUNK, INT))}
    if metal:
        optional["atomic_outputs"] = sometimes_bad(st.booleans(), st.one_of(JUNK, INT))
        optional["compile_options"] = sometimes_bad(
            st.one_of(st.none(), st.just({"math_mode": "fast"})),
            st.one_of(st.dictionaries(st.sampled_from(["math_mode", "fast_math", ""]),
                                      st.one_of(st.sampled_from(["safe", "relaxed", "fast", "Fast", ""]), JUNK),
                                      max_size=2), JUNK))
    else:
        optional["shared_memory"] = sometimes_bad(st.sampled_from([0, 1024, 49152]), ANY_INT)
    kwargs.update(draw(st.fixed_dictionaries({}, optional=optional)))
    steps = [step("jk.metal_kernel" if metal else "jk.cuda_kernel", (), kwargs)]
    # Then one query on the kernel, with arguments that fit the names when the names are plain lists.
    n_in = len(in_names) if isinstance(in_names, (list, tuple)) else 1
    n_out = len(out_names) if isinstance(out_names, (list, tuple)) else 1
    query = {"inputs": draw(st.lists(VALID_ITEM, min_size=n_in, max_size=n_in)),
             "output_dtypes": draw(st.lists(VALID_DTYPE, min_size=n_out, max_size=n_out))}
    if draw(st.booleans()) and isinstance(in_names, (list, tuple)) and isinstance(out_names, (list, tuple)) \
            and all(isinstance(n, str) for n in list(in_names) + list(out_names)):
        if draw(st.booleans()):
            query["inputs"] = dict(zip(in_names, query["inputs"]))
        if draw(st.booleans()):
            query["output_dtypes"] = dict(zip(out_names, query["output_dtypes"]))
    query["template"] = draw(TEMPLATE)
    if metal:
        method = draw(st.sampled_from(["source", "kernel_name", "buffers", "call"]))
        if method == "source":
            query["with_utils"] = draw(sometimes_bad(st.booleans(), JUNK))
    else:
        method = draw(st.sampled_from(["source", "entry_name", "call"]))
    if method == "call":
        outs = query["output_dtypes"]
        query["output_shapes"] = {k: (2,) for k in outs} if isinstance(outs, dict) else [(2,)] * len(outs)
        query.update(grid=(1, 1, 1), threadgroup=(1, 1, 1))
        steps.append(step(".__call__", (), query))
    else:
        steps.append(step("." + method, (), query))
    return tuple(steps)


@st.composite
def metal_old_form_cases(draw):
    """MLX's older MetalKernel(...) form with .template(...) and inputs as keywords."""
    kwargs = {"name": draw(sometimes_bad(st.just("old"), NAME)), "source": draw(sometimes_bad(
        st.just("out[0] = inp[0];"), st.one_of(SOURCE_TEXT, JUNK))),
              "grid": draw(DIM3), "threadgroup": draw(DIM3),
              "output_shapes": draw(sometimes_bad(st.just({"out": (2,)}), st.one_of(
                  st.dictionaries(NAME, BAD_SHAPE, max_size=2), JUNK))),
              "output_dtypes": draw(sometimes_bad(st.just({"out": jk.float32}), st.one_of(
                  st.dictionaries(NAME, DTYPE_LIKE, max_size=2), JUNK)))}
    template = draw(st.dictionaries(TEMPLATE_NAME, TEMPLATE_VALUE, max_size=2))
    inputs = draw(st.dictionaries(st.one_of(st.just("inp"), NAME), input_item(safe_data=True), max_size=2))
    method = draw(st.sampled_from([".__call__", ".source"]))
    return (step("jk.MetalKernel", (), kwargs), step(".template", (), template), step(method, (), inputs))


@st.composite
def compile_cases(draw):
    if draw(st.integers(0, 2)) == 0:
        kwargs = {"source": draw(sometimes_bad(st.sampled_from(COMPILE_CUDA_SOURCES), st.one_of(SOURCE_TEXT, JUNK))),
                  "arch": draw(sometimes_bad(st.sampled_from(ARCHES), st.one_of(st.text(max_size=8), JUNK))),
                  "target": draw(sometimes_bad(st.sampled_from(TARGETS_BIN), st.one_of(st.text(max_size=5), JUNK))),
                  "name": draw(sometimes_bad(st.sampled_from(["program.cu", "x.cu"]), st.one_of(
                      st.sampled_from(["", "a/b.cu", "/etc/passwd", "\x00", "x" * 5000, "../x.cu"]), JUNK)))}
        return (step("jk.compile_cuda", (), kwargs),)
    body = draw(st.sampled_from(COMPILE_BODIES))
    kwargs = {"inputs": draw(sometimes_bad(st.lists(VALID_ITEM, min_size=2, max_size=2), inputs_arg(["a", "b"], False),
                                           good_weight=4)),
              "output_dtypes": draw(sometimes_bad(st.lists(VALID_DTYPE, min_size=1, max_size=1),
                                                  per_output(["out"], VALID_DTYPE, DTYPE_LIKE))),
              "template": draw(sometimes_bad(st.just([("T", jk.float32), ("N", 3)]), TEMPLATE)),
              "arch": draw(sometimes_bad(st.sampled_from(["sm_90a", "sm_80"]), st.sampled_from(ARCHES))),
              "target": draw(sometimes_bad(st.sampled_from(["cubin", "ptx"]), st.sampled_from(TARGETS_BIN)))}
    factory = {"name": "kc", "input_names": ["a", "b"], "output_names": ["out"], "source": body,
               "ensure_row_contiguous": draw(st.booleans())}
    return (step("jk.cuda_kernel", (), factory), step(".compile", (), kwargs))


@st.composite
def precompiled_cases(draw):
    which = draw(st.integers(0, 4))
    if which == 0:
        return (step("inspect_binary", (draw(BINARY),)),)
    if which == 4:
        return (step("ptx_target_check", (draw(st.sampled_from(PTX_TARGETS)),)),)
    if which == 1:
        cc = draw(st.tuples(st.integers(0, 13), st.integers(0, 9)))
        return (step("check_binary_arch", (draw(BINARY), cc)),)
    kwargs = {"name": draw(sometimes_bad(st.sampled_from(ENTRY_NAMES), st.one_of(NAME, JUNK))),
              "compiled_source": draw(BINARY_ARG),
              "inputs": draw(sometimes_bad(st.lists(VALID_ITEM, min_size=1, max_size=1),
                                           st.one_of(seq_of(input_item(True)), JUNK))),
              "output_shapes": draw(per_output(["y"], GOOD_SHAPE, BAD_SHAPE)),
              "output_dtypes": draw(per_output(["y"], VALID_DTYPE, DTYPE_LIKE)),
              "scalars": draw(sometimes_bad(st.just([np.int64(4), np.float64(2.0), True]), SCALARS_ARG)),
              "grid": draw(DIM3), "threadgroup": draw(DIM3)}
    kwargs.update(draw(st.fixed_dictionaries({}, optional={
        "shared_memory": sometimes_bad(st.just(0), ANY_INT), "init_value": INIT_VALUE,
        "ensure_row_contiguous": sometimes_bad(st.booleans(), JUNK), "stream": STREAM,
        "outputs": per_output(["y"], DEVICE_ARRAY, OUTPUT_ITEM)})))
    return (step("jk.precompiled_cuda_kernel", (), kwargs),)


@st.composite
def array_dtype_cases(draw):
    which = draw(st.integers(0, 3))
    if which == 0:
        return (step("jk.dtype", (draw(DTYPE_LIKE),)),)
    if which == 1:
        return (step("dtype_ops", (draw(st.sampled_from(DTYPES)), draw(st.one_of(DTYPE_LIKE, SCALAR)))),)
    if which == 2:
        return (step("jk.Array", draw(POSITIONAL), draw(UNKNOWN_KWARGS)),)
    array = draw(DEVICE_ARRAY)
    op = draw(st.sampled_from(["__dlpack__", "__dlpack__", "__dlpack__", "__dlpack_device__", "numpy", "__array__",
                               "__cuda_array_interface__", "attributes", "np.asarray"]))
    kwargs = {}
    if op == "__dlpack__":
        kwargs = draw(st.fixed_dictionaries({}, optional={
            "stream": st.one_of(st.none(), INT, JUNK, HOSTILE_INT),
            "max_version": st.sampled_from([None, (1, 0), (0, 8), (2, 0), (1,), "x", (2**70, 0), (1, 0, 0)]),
            "dl_device": st.sampled_from([None, (2, 0), (1, 0), (2, 1), (2,), "x", (2, 2**70), (2**70, 0)]),
            "copy": st.one_of(st.none(), st.booleans(), JUNK)}))
    elif op == "__array__":
        kwargs = draw(st.fixed_dictionaries({}, optional={"dtype": st.one_of(st.none(), DTYPE_LIKE),
                                                          "copy": st.one_of(st.none(), st.booleans(), JUNK)}))
    return (step("array_op", (array, op), kwargs),)


PROTOCOL_ENTRIES = ["K_ab.source", "K_ab.entry_name", "K_ab.compile", "K_ab", "K_nameless.source", "M_ab.source",
                    "M_ab.buffers", "M_ab", "jk.precompiled_cuda_kernel"]
CALL_ENTRIES = ("K_ab", "M_ab", "jk.precompiled_cuda_kernel")


@st.composite
def protocol_cases(draw):
    """One hostile protocol object (an input, an output or the stream) in an otherwise sensible call of every entry
    point that takes arrays."""
    entry = draw(st.sampled_from(PROTOCOL_ENTRIES))
    calls = entry in CALL_ENTRIES
    where = draw(st.sampled_from(["inputs", "inputs", "outputs", "stream"])) if calls else "inputs"
    if where == "stream":
        bad = draw(STREAM.filter(lambda v: v is not None))
    else:
        bad = draw(st.one_of(HOSTILE_DLPACK, HOSTILE_DLPACK, HOSTILE_ARRAY_SAFE if calls else HOSTILE_ARRAY))
    n_in = 1 if entry == "jk.precompiled_cuda_kernel" else 2
    inputs = draw(st.lists(VALID_ITEM, min_size=n_in, max_size=n_in))
    if where == "inputs":
        inputs[draw(st.integers(0, n_in - 1))] = bad
    if entry == "K_nameless.source":
        kwargs = {"inputs": dict(zip(["inp", "a"], inputs)), "output_dtypes": {"out": jk.float32}}
    else:
        kwargs = {"inputs": inputs, "output_dtypes": [jk.float32]}
    if calls:
        kwargs.update(output_shapes=[(2,)], grid=(2, 1, 1), threadgroup=(2, 1, 1))
        if where == "outputs":
            kwargs["outputs"] = [bad]
        elif where == "stream":
            kwargs["stream"] = bad
    if entry == "jk.precompiled_cuda_kernel":
        kwargs.update(name="axpy", compiled_source=M("binary", "cubin", []), scalars=[np.int64(4), np.float64(2.0),
                                                                                     True])
    return (step(entry, (), kwargs),)


CACHE_DAMAGE = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 20), st.integers(0, 200)),
    st.tuples(st.just("flip"), st.integers(0, 20), st.integers(0, 5000)),
    st.tuples(st.just("claim_size"), st.integers(0, 20), st.sampled_from([6 << 30, 2**63, 2**64 - 1, 0, 1])),
    st.tuples(st.just("empty"), st.integers(0, 20)),
    st.tuples(st.just("directory"), st.integers(0, 20)),
    st.tuples(st.just("fifo"), st.integers(0, 20)),
    st.tuples(st.just("symlink_out"), st.integers(0, 20)),
    st.tuples(st.just("swap"), st.integers(0, 20), st.integers(0, 20)),
    st.tuples(st.just("foreign_file"), st.sampled_from(["kernels", "records", ".", "other"]),
              st.sampled_from(["x.jkc", "notes.txt", "0" * 64 + ".jkc", ".hidden", "x.jkc.tmp"])),
    st.tuples(st.just("foreign_link"), st.sampled_from(["kernels", "records", "."]),
              st.sampled_from(["l.jkc", "0" * 64 + ".jkc"])))
CACHE_ENV = st.sampled_from([None, None, None, "0", "1", "512M", "2G", "1", "100", "-1", "9" * 30, "1e3", "",
                             "12Q", "0x10", " 64K", "18446744073709551616", "4096"])


@st.composite
def cache_cases(draw):
    return (step("cache_case", (draw(st.tuples(CACHE_ENV, st.sampled_from([None, None, "0", "1", "no", ""]))),
                                draw(st.lists(CACHE_DAMAGE, max_size=3)),
                                draw(st.sampled_from(["compile0", "compile1", "compile2", "info", "clear",
                                                      "clear_then_compile"])))),)


XLA_STAGES = ["instantiate", "initialize", "execute"]
XLA_EDIT = st.tuples(st.sampled_from(["flip", "set", "cut", "insert", "truncate", "digit"]), st.integers(0, 1 << 20),
                     st.integers(0, 255))


@st.composite
def xla_cases(draw):
    """An XLA custom call whose ``jk_call`` text was edited (bytes flipped, set, cut, inserted, a length digit
    changed) after jitkernel wrote it, handed to one handler stage with the key registered for the original text
    (``registered``), the edited text's own key (``own``) or a wrong one (``wrong``): the stage answers with an FFI
    error unless the text is the one its key was registered for."""
    return (step("xla_case", (draw(st.sampled_from(XLA_STAGES)),
                              draw(st.sampled_from(["registered", "registered", "own", "wrong"])),
                              draw(st.lists(XLA_EDIT, max_size=4)))),)


TARGETS = {
    "factory": lambda: factory_cases(False),
    "source": lambda: signature_cases(["K_ab", "K_x", "K_nameless", "K_empty"], ["source", "entry_name"]),
    "call": lambda: kernel_call_cases(["K_ab", "K_x", "K_nameless", "K_empty"]),
    "protocols": protocol_cases,
    "compile": compile_cases,
    "metal": lambda: st.one_of(factory_cases(True), signature_cases(["M_ab", "M_x", "M_nameless"],
                                                                    ["source", "kernel_name", "buffers"]),
                               kernel_call_cases(["M_ab", "M_x", "M_nameless"]), metal_old_form_cases()),
    "precompiled": precompiled_cases,
    "arrays_dtypes": array_dtype_cases,
    "cache": cache_cases,
    "xla": xla_cases,
}
