"""Real NVRTC compiles through the public API, without a GPU: ``kernel.compile(arch="sm_90a")`` and
``jk.compile_cuda`` return cubins (ELF for NVIDIA CUDA holding the generated entry point) or PTX, for kernels with
float16 / bfloat16 / complex64 data, scalars, templates, a header, strides and cooperative_groups; a compile error
is a CompileError whose ``log`` points at the user's line and whose ``source`` is the generated text, and the
library keeps compiling afterwards. ``verbose=True`` prints exactly ``kernel.source(...)``.

NVRTC and the CUDA headers come from ``pip install "jitkernel[cuda]"`` (part of the README's test command), so a
missing NVRTC fails these tests rather than skipping them.
"""
from __future__ import annotations

import struct

import ml_dtypes
import numpy as np
import pytest

import jitkernel as jk

ARCH = "sm_90a"
EM_CUDA = 190


def assert_cubin(data: bytes, entry: str) -> None:
    assert isinstance(data, bytes)
    assert data[:4] == b"\x7fELF", data[:16]
    assert struct.unpack_from("<H", data, 18)[0] == EM_CUDA  # e_machine: NVIDIA CUDA
    assert entry.encode() in data  # the entry point's symbol


def kernel(name, inputs, source, outputs=("out",), **kwargs):
    return jk.cuda_kernel(name=name, input_names=list(inputs), output_names=list(outputs), source=source, **kwargs)


F16 = np.linspace(-1, 1, 8, dtype=np.float16)
BF16 = np.linspace(-1, 1, 8).astype(ml_dtypes.bfloat16)
C64 = np.zeros(8, np.complex64)

CASES = {
    "float16": (kernel("h_exp", ["inp"], "auto i = threadIdx.x; out[i] = hexp(inp[i]);"),
                dict(inputs=[F16], output_dtypes=[jk.float16])),
    "bfloat16": (kernel("bf_scale", ["inp", "s"],
                        "auto i = threadIdx.x; out[i] = __float2bfloat16(__bfloat162float(inp[i]) * s[0]);"),
                 dict(inputs=[BF16, 2.0], output_dtypes=[ml_dtypes.bfloat16])),
    "complex64": (kernel("c_mul", ["a", "b"], "auto i = threadIdx.x; out[i] = cuCmulf(a[i], b[i]);"),
                  dict(inputs=[C64, C64], output_dtypes=[np.complex64])),
    "scalars": (kernel("axpy", ["x", "alpha", "n", "flag"],
                       "auto i = threadIdx.x; if (flag[0] && i < n[0]) out[i] = alpha[0] * x[i];"),
                dict(inputs=[np.zeros(8, np.float64), np.float64(2), 2**40, True], output_dtypes=[np.float64])),
    "template": (kernel("tmpl", ["inp"], "T acc = 0; for (int k = 0; k < N; ++k) acc += inp[k]; "
                                         "out[0] = B ? acc : -acc;"),
                 dict(inputs=[np.zeros(4, np.int32)], output_dtypes=["int64"],
                      template=[("T", jk.int64), ("N", -3), ("B", True)])),
    "header+strides": (kernel("strided", ["inp"], "out[threadIdx.x] = twice(inp[elem_to_loc(threadIdx.x, "
                                                  "inp_shape, inp_strides, inp_ndim)]);",
                              header="__device__ inline float twice(float v) { return 2 * v; }\n",
                              ensure_row_contiguous=False),
                       dict(inputs=[np.zeros((4, 4), np.float32)[:, ::2]], output_dtypes=[jk.float32])),
    "two outputs": (kernel("split", ["inp"], "out1[threadIdx.x] = inp[threadIdx.x]; out2[0] = 1;",
                           outputs=("out1", "out2")),
                    dict(inputs=[np.zeros(4, np.uint8)], output_dtypes=[jk.uint8, jk.bool_])),
}


@pytest.mark.parametrize("case", list(CASES))
def test_kernels_compile_to_cubin(case):
    k, sig = CASES[case]
    assert_cubin(k.compile(**sig, arch=ARCH), k.entry_name(**sig))


def test_cooperative_groups_compile():
    # The seed's example, body verbatim: it stays inside the light cooperative_groups subset jitkernel defines itself
    # (no CCCL); test_codegen_cooperative_groups.py covers which sources need the real header.
    k = kernel("myexp", ["inp"], """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = inp[elem];
        out[elem] = exp(tmp);
    """)
    sig = dict(inputs=[F16.reshape(2, 4)], output_dtypes=[F16.dtype], template=[("T", jk.float32)])
    assert "cooperative_groups" in k.source(**sig)
    assert_cubin(k.compile(**sig), k.entry_name(**sig))


def test_ptx_target():
    k, sig = CASES["float16"]
    ptx = k.compile(**sig, arch=ARCH, target="ptx")
    assert b".target sm_90a" in ptx and f".entry {k.entry_name(**sig)}".encode() in ptx


def test_an_architecture_the_nvrtc_dropped_names_the_extra_that_has_it():
    k, sig = CASES["float16"]
    major = int(jk.toolkit_info()["nvrtc_version"].split(".")[0])
    if major < 13:
        pytest.skip("NVRTC 12 still compiles for sm_70")
    with pytest.raises(jk.ArgumentError, match=r"arch: NVRTC 1\d\.\d+ cannot compile for sm_70 .*jitkernel\[cuda12\]"):
        k.compile(**sig, arch="sm_70")
    with pytest.raises(jk.ArgumentError, match=r"sm_999 .*newer NVRTC for newer GPUs"):
        k.compile(**sig, arch="sm_999")


def test_dict_form_compiles_the_same_source():
    k = jk.cuda_kernel(name="named", source="out[0] = inp[0] + 1;")
    listed = jk.cuda_kernel(name="named", input_names=["inp"], output_names=["out"], source="out[0] = inp[0] + 1;")
    x = np.zeros(2, np.float32)
    named_sig = dict(inputs={"inp": x}, output_dtypes={"out": jk.float32})
    assert k.source(**named_sig) == listed.source(inputs=[x], output_dtypes=[jk.float32])
    assert_cubin(k.compile(**named_sig), k.entry_name(**named_sig))


def test_compile_error_carries_mapped_log_and_generated_source():
    bad = kernel("broken", ["inp"], "float ok = inp[0];\nout[0] = ok + undefined_name;\n",
                 header="__device__ float helper(float v) { return v; }\n")
    sig = dict(inputs=[np.zeros(2, np.float32)], output_dtypes=[jk.float32])
    for _ in range(2):  # a failed compile is not cached as a success
        with pytest.raises(jk.CompileError) as info:
            bad.compile(**sig)
        e = info.value
        assert isinstance(e, RuntimeError)
        assert "undefined_name" in e.log and "source line 2" in e.log, e.log
        assert e.source == bad.source(**sig)
        assert "undefined_name" in str(e)
    # The library keeps working after the failure.
    k, good = CASES["float16"]
    assert_cubin(k.compile(**good), k.entry_name(**good))


def test_compile_error_in_header_points_at_the_header():
    bad = kernel("bad_header", ["inp"], "out[0] = helper(inp[0]);",
                 header="__device__ float helper(float v) {\n  return v +;\n}\n")
    with pytest.raises(jk.CompileError) as info:
        bad.compile(inputs=[np.zeros(2, np.float32)], output_dtypes=[jk.float32])
    assert "header line 2" in info.value.log, info.value.log


def test_compile_cuda_plain_source():
    src = 'extern "C" __global__ void fill(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 1.0f; }\n'
    assert_cubin(jk.compile_cuda(src, arch=ARCH), "fill")
    ptx = jk.compile_cuda(src, arch=ARCH, target="ptx", name="fill.cu")
    assert b".entry fill" in ptx
    with pytest.raises(jk.CompileError) as info:
        jk.compile_cuda("this is not CUDA", arch=ARCH, name="junk.cu")
    assert "junk.cu" in info.value.log or "error" in info.value.log


def test_verbose_prints_exactly_the_source(capsys):
    k, sig = CASES["scalars"]
    text = k.source(**sig)
    capsys.readouterr()
    try:
        k(**sig, output_shapes=[(8,)], grid=(8, 1, 1), threadgroup=(8, 1, 1), verbose=True)
    except jk.CudaNotAvailableError:
        assert not jk.cuda_available()
    assert capsys.readouterr().out == text + "\n"


def test_source_needs_no_toolkit_and_differs_per_signature():
    k = kernel("variants", ["inp"], "out[0] = inp[0];")
    f32 = k.source(inputs=[np.zeros(1, np.float32)], output_dtypes=[jk.float32])
    f16 = k.source(inputs=[np.zeros(1, np.float16)], output_dtypes=[jk.float32])
    assert f32 != f16 and "const __half* inp" in f16 and "const float* inp" in f32
    assert k.entry_name(inputs=[np.zeros(1, np.float32)], output_dtypes=[jk.float32]) != \
        k.entry_name(inputs=[np.zeros(1, np.float16)], output_dtypes=[jk.float32])


# --------------------------------------------------------------------------- threads

def test_concurrent_compiles_give_the_sequential_cubins():
    # NVRTC runs without the GIL, so compiles from several threads overlap; each must still get its own,
    # correct cubin (the same bytes a compile on its own gives: NVRTC output is deterministic).
    from concurrent.futures import ThreadPoolExecutor

    jobs = [CASES[name] for name in ("float16", "bfloat16", "complex64", "scalars")]
    jobs += jobs[:2]  # the same signature compiled twice at once
    expected = [k.compile(**sig, arch=ARCH) for k, sig in jobs]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        got = list(pool.map(lambda job: job[0].compile(**job[1], arch=ARCH), jobs))
    assert got == expected
    for (k, sig), data in zip(jobs, got):
        assert_cubin(data, k.entry_name(**sig))


def test_compiling_releases_the_gil(no_disk_cache):
    # While one thread compiles, this thread keeps running: the longest pause between two of its loop turns
    # stays far below the compile time (with the GIL held through NVRTC it would be the whole compile). The disk
    # cache is off, so that the second compile runs NVRTC again.
    from _threads import run_while_spinning

    # tiled_partition takes the real <cooperative_groups.h> (a compile of seconds), so the margin is wide
    # even on a loaded CI machine.
    k = kernel("gil_free", ["inp"], """
        auto elem = cooperative_groups::this_grid().thread_rank();
        auto tile = cooperative_groups::tiled_partition<32>(cooperative_groups::this_thread_block());
        (void)tile;
        out[elem] = exp(inp[elem]);
    """)
    sig = dict(inputs=[np.zeros(4, np.float32)], output_dtypes=[jk.float32])
    expected = k.compile(**sig)  # loads NVRTC and warms the header cache first
    cubin, seconds, longest_pause = run_while_spinning(lambda: k.compile(**sig))
    assert cubin == expected
    assert longest_pause < 0.5 * seconds, (longest_pause, seconds)
