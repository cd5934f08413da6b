"""Code generation for cuda_kernel, through the public API and without a GPU: the golden kernels.

Golden tests: ``kernel.source(...)`` for MLX's CUDA test kernels (and a few more) must equal the files in
``tests/cpu/golden/``; any change to the generator fails them. After an intended change, regenerate with
``JITKERNEL_UPDATE_GOLDEN=1 python -m pytest tests/cpu/test_codegen.py`` and review the diff. Every golden kernel is
also compiled for real by NVRTC (sm_90a cubin), with line mapping of compile errors and logs free of warnings about
generated code. The rules the generated text follows are in test_codegen_signature.py (parameters, templates, entry
names, dtypes, headers, naming errors) and test_codegen_cooperative_groups.py.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import jitkernel as jk
from _codegen_text import ENTRY_RE, SEED_EXP, bf16, compile_or_skip, entry_name

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("JITKERNEL_UPDATE_GOLDEN") == "1"


# --------------------------------------------------------------------------- golden kernels
# MLX's CUDA test kernels (python/tests/test_fast.py, test_custom_kernel_*), verbatim, plus seed 003's example.
# (test_custom_kernel_mixed_dtypes is Metal-only in MLX; MLX_MIXED is its body written for CUDA.)

MLX_BASIC = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                out1[elem] = a[elem];
            """
MLX_ARGS = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                T tmp = a[0];
                if (e) {
                    out1[elem] = a[1] + b[2] + static_cast<float>(c[3]) + d[0] + f;
                } else {
                    out1[elem] = 1;
                }
                out2[elem] = a[1] + b[2] + static_cast<float>(c[1]) - d[0];
            """
MLX_STRIDES = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                auto loc = elem_to_loc(elem, inp_shape.data(), inp_strides.data(), inp_ndim);
                T tmp = inp[loc];
                out[elem] = exp(tmp) * WARP_SIZE;
            """
MLX_STRIDES_CONTIG = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                T tmp = inp[elem];
                out[elem] = exp(tmp) * WARP_SIZE;
            """
MLX_HELPER_HEADER = """
            template <typename T>
            __device__ T do_exp(T x) {
                return exp(x);
            }
            """
MLX_HELPER = """
                auto elem = cooperative_groups::this_grid().thread_rank();
                out1[elem] = do_exp(a[elem]);
            """
MLX_MIXED = """
                auto elem = blockIdx.x * blockDim.x + threadIdx.x;
                out[elem] = inp[elem] + inp[elem];
            """
def _strided_input():
    a = np.random.default_rng(7).normal(size=(3, 6)).astype(np.float32)
    return np.tile(a[::2], (4, 1))


def _case_basic():
    return dict(name="basic", input_names=["a"], output_names=["out1"], source=MLX_BASIC), dict(
        inputs=[np.zeros((2, 2), np.float32)], output_dtypes=[jk.float32])


def _case_args():
    return dict(name="arg_test", input_names=["a", "b", "c", "d"], output_names=["out1", "out2"],
                source=MLX_ARGS), dict(
        inputs=[np.zeros((3, 6), np.float32), np.array([3, 4, 5], np.int32), bf16(np.zeros((2, 2))), 7.3],
        output_dtypes=[jk.float32, jk.int32], template=[("e", True), ("f", 3), ("T", jk.float16)])


def _case_strides(contig):
    src = MLX_STRIDES_CONTIG if contig else MLX_STRIDES
    return dict(name=f"myexp{contig}", input_names=["inp"], output_names=["out"], source=src,
                ensure_row_contiguous=contig), dict(
        inputs=[_strided_input()], output_dtypes=[jk.float32], template=[("T", jk.float32)])


def _case_helper():
    return dict(name="helper", input_names=["a"], output_names=["out1"], header=MLX_HELPER_HEADER,
                source=MLX_HELPER), dict(inputs=[np.zeros((2, 2), np.float32)], output_dtypes=[jk.float32])


def _case_attributes():
    return dict(name="test_fun", input_names=["a"], output_names=["out"], source="out[0] = blockDim.x;"), dict(
        inputs=[np.zeros((1, 1), np.float32)], output_dtypes=[jk.uint32])


def _case_mixed(dtype):
    return dict(name="mixed_dtypes", input_names=["inp"], output_names=["out"], source=MLX_MIXED), dict(
        inputs=[np.full((32,), 1.5, dtype)], output_dtypes=[dtype])


def _case_seed_exp():
    return dict(name="myexp", input_names=["inp"], output_names=["out"], source=SEED_EXP), dict(
        inputs=[np.zeros((16, 16), np.float16)], output_dtypes=[np.float16], template=[("T", jk.float32)])


def _case_all_dtypes():
    dtypes = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
              np.float16, None, np.float32, np.float64, np.complex64]
    inputs = [bf16(np.zeros(3)) if d is None else np.zeros(3, d) for d in dtypes]
    names = [f"x{i}" for i in range(len(inputs))]
    return dict(name="all_dtypes", input_names=names, output_names=["out"],
                source="out[0] = x11[0] + float(x4[0]) - inf;"), dict(inputs=inputs, output_dtypes=[jk.float32])


def _case_scalars_and_shapes():
    # A 0-d array and scalars of every Python kind; shape/strides/ndim of each are used.
    src = """
    out[0] = z[0] + s_b[0] + s_i[0] + s_l[0] + s_f[0];
    out[1] = z_ndim + z_shape.size() + s_f_ndim + s_f_shape[0] + s_f_strides[0];
    """
    return dict(name="scalars", input_names=["z", "s_b", "s_i", "s_l", "s_f"], output_names=["out"],
                source=src), dict(inputs=[np.array(2.0, np.float32), True, 3, 2 ** 40, 0.5],
                                  output_dtypes=[jk.float64], template={"N": -4, "BIG": 2 ** 40, "B": False})


GOLDEN_CASES = {
    "mlx_basic": _case_basic,
    "mlx_args": _case_args,
    "mlx_strides_contiguous": lambda: _case_strides(True),
    "mlx_strides_noncontiguous": lambda: _case_strides(False),
    "mlx_helper": _case_helper,
    "mlx_attributes": _case_attributes,
    "mlx_mixed_float16": lambda: _case_mixed(np.float16),
    "mlx_mixed_float32": lambda: _case_mixed(np.float32),
    "seed_exp": _case_seed_exp,
    "all_dtypes": _case_all_dtypes,
    "scalars_and_shapes": _case_scalars_and_shapes,
}


def build(case):
    factory, call = GOLDEN_CASES[case]()
    factory = dict(factory)
    k = jk.cuda_kernel(factory.pop("name"), factory.pop("input_names"), factory.pop("output_names"),
                       factory.pop("source"), **factory)
    return k, call


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden(case):
    k, call = build(case)
    text = k.source(**call)
    path = GOLDEN / f"{case}.cu"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"{path} is missing; create it with JITKERNEL_UPDATE_GOLDEN=1"
    expected = path.read_text()
    assert text == expected, (f"generated source for {case} differs from {path}; if the change is intended, "
                              "regenerate with JITKERNEL_UPDATE_GOLDEN=1 and review the diff")


def test_golden_files_all_have_a_case():
    stale = {p.stem for p in GOLDEN.glob("*.cu")} - set(GOLDEN_CASES)
    assert not stale, f"golden files without a test case: {sorted(stale)}"


def test_source_is_deterministic():
    k, call = build("mlx_args")
    assert k.source(**call) == k.source(**call)
    k2, call2 = build("mlx_args")
    assert k2.source(**call2) == k.source(**call)


# --------------------------------------------------------------------------- real NVRTC compiles

@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_golden_kernels_compile_to_cubin(case):
    k, call = build(case)
    cubin = compile_or_skip(k, call)
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"
    assert entry_name(k.source(**call)).encode() in cubin


def test_compile_error_points_at_user_lines():
    header = "__device__ float twice(float x) {\n  return 2 * x;\n}\n__device__ int broken() { return nope_h; }\n"
    source = "float y = inp[0];\nout[0] = twice(y) + nope_s;\n"
    k = jk.cuda_kernel("bad", ["inp"], ["out"], source, header=header)
    call = dict(inputs=[np.zeros(4, np.float32)], output_dtypes=[jk.float32])
    with pytest.raises(jk.CompileError) as info:
        compile_or_skip(k, call)
    err = info.value
    assert isinstance(err, RuntimeError)
    assert re.search(r"source line 2: error: identifier \"nope_s\" is undefined", err.log), err.log
    assert re.search(r"header line 4: error: identifier \"nope_h\" is undefined", err.log), err.log
    assert err.source == k.source(**call)
    # the library keeps working after a failed compile
    good = jk.cuda_kernel("good", ["inp"], ["out"], "out[0] = inp[0];")
    assert compile_or_skip(good, call)[:4] == b"\x7fELF"


def test_compile_log_has_no_warnings_about_generated_code():
    # An unused scalar input (with its ndim constant), unused template constants and the preamble's helpers must
    # not clutter the log of a compile error; the user's own unused variable is still reported.
    source = "int mine = 0;\nout[0] = inp[0] + nope;\n"
    header = "__device__ int unused_helper_var_in_header() { int theirs = 1; return 0; }\n"
    k = jk.cuda_kernel("noisy", ["inp", "s", "t"], ["out"], source, header=header)
    call = dict(inputs=[np.zeros(4, np.float32), 2.5, 3], output_dtypes=[jk.float32],
                template=[("N", 3), ("B", True), ("T", jk.float32)])
    with pytest.raises(jk.CompileError) as info:
        compile_or_skip(k, call)
    log = info.value.log
    assert re.search(r'source line 2: error: identifier "nope" is undefined', log), log
    for generated in ("__value", "jitkernel::", '"s"', '"t"', '"N"', '"B"', "generated line"):
        assert generated not in log, log
    assert re.search(r'source line 1: warning #177-D: variable "mine" was declared but never referenced', log), log
    assert re.search(r'header line 1: warning #177-D: variable "theirs"', log), log


def test_unused_scalar_input_compiles_cleanly():
    k = jk.cuda_kernel("quiet", ["inp", "s"], ["out"], "out[0] = inp[0] + s_ndim;")
    call = dict(inputs=[np.zeros(4, np.float32), 2.5], output_dtypes=[jk.float32], template=[("N", 3)])
    text = k.source(**call)
    assert "[[maybe_unused]] const float* s = &s__value;" in text
    assert "[[maybe_unused]] constexpr int s_ndim = 0;" in text
    assert "[[maybe_unused]] constexpr int N = 3;" in text
    # the suppression covers only the generated preamble: it is popped before the user's code
    push, pop = text.index("#pragma nv_diagnostic push"), text.index("#pragma nv_diagnostic pop")
    assert push < text.index("namespace jitkernel") < pop < ENTRY_RE.search(text).start()
    assert compile_or_skip(k, call)[:4] == b"\x7fELF"
