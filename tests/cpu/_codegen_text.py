"""Helpers of the code generation tests (test_codegen*.py): pieces of a generated CUDA source (entry name, signature,
prologue, preamble), generating one through the public API, and compiling one with NVRTC (skipped without it).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import jitkernel as jk

ENTRY_RE = re.compile(r'extern "C" __global__ void (\w+)\(')


def entry_name(text: str) -> str:
    m = ENTRY_RE.search(text)
    assert m, "generated source has no extern \"C\" __global__ entry point"
    return m.group(1)


def signature(text: str) -> str:
    """The parameter list of the generated entry point."""
    start = ENTRY_RE.search(text).end()
    return text[start:text.index(") {", start)]


def prologue(text: str) -> str:
    """Lines between the signature and the user's body."""
    start = text.index(") {\n", ENTRY_RE.search(text).end()) + 4
    return text[start:text.index('#line 1 "source"', start)]


def preamble(text: str) -> str:
    """Everything before the user's header or, without one, before the entry point."""
    end = text.find('#line 1 "header"')
    return text[:end] if end >= 0 else text[:ENTRY_RE.search(text).start()]


def gen(source, inputs, output_dtypes, template=None, input_names=None, output_names=("out",), header="",
        name="k", **factory):
    names = input_names if input_names is not None else [f"in{i}" for i in range(len(inputs))]
    k = jk.cuda_kernel(name, list(names), list(output_names), source, header=header, **factory)
    return k.source(inputs=inputs, output_dtypes=list(output_dtypes), template=template)


def compile_or_skip(k, call, **kw):
    try:
        return k.compile(**call, arch="sm_90a", **kw)
    except jk.CudaNotAvailableError as e:  # no NVRTC on this machine
        pytest.skip(f"NVRTC not available: {e}")


def bf16(x):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return np.asarray(x, dtype=np.float32).astype(ml_dtypes.bfloat16)


F32 = [np.zeros(4, np.float32)]
# seed 003's example (MLX's documentation kernel): a golden case, and the cooperative groups tests' shim kernel.
SEED_EXP = """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = inp[elem];
        out[elem] = exp(tmp);
    """
