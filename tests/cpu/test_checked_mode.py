"""Checked mode without a GPU (docs/checked.md): the generated source of a checked kernel compiles with NVRTC for
every architecture and differs from the unchecked one only by the accessors; unchecked sources are byte for byte
those of before checked mode (hashes recorded from main's generator, equal to the golden files); checked and
unchecked binaries are cached apart; the option is parsed, recorded and refused where it cannot apply
(compile_cuda, Metal); JITKERNEL_CHECKED turns it on; the errors' attributes come back from their messages (the torch
op's error path)."""
from __future__ import annotations

import hashlib
import json
import pickle
import re
import weakref

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core
from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name
from test_cache_key import cache_dir, entries  # noqa: F401 - the fixture is used by name
from test_codegen import GOLDEN, GOLDEN_CASES, build

ARCHS = ("sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_100a", "sm_120")

# sha256 of the unchecked generated source of golden cases, as main generated it before checked mode existed.
UNCHECKED_SHA256 = {
    "mlx_basic": "aaaadd0fcb655be3b5402d947f6fe05abc7f34ad6c88316799eb3544a74a6f5e",
    "scalars_and_shapes": "f623d044a814ca271e9537ead2fc5c9d39d3855c653bada3514403455662acf9",
    "all_dtypes": "0b600d283e48c6e62b15159599a5b1decad7769c8d343c93dc5596cf4dac0f65",
    "mlx_strides_noncontiguous": "3c2b3a983d34594686162bfb39aacb85b5fe8883bf3bcbc8ccf2b55d596ff844",
}


def checked_build(case):
    """The golden case's kernel with compile_options checked (its other options kept)."""
    factory, call = GOLDEN_CASES[case]()
    factory = dict(factory)
    options = dict(factory.pop("compile_options", None) or {}, checked=True)
    k = jk.cuda_kernel(factory.pop("name"), factory.pop("input_names"), factory.pop("output_names"),
                       factory.pop("source"), compile_options=options, **factory)
    return k, call


ACCESSORS = re.compile(r"// Checked mode: bounds-checked array accessors\.\n.*?\n}  // namespace jitkernel\n"
                       r"(?=#ifdef __NVCC_DIAG_PRAGMA_SUPPORT__\n#pragma nv_diagnostic pop)", re.S)
PARAM = re.compile(r"jitkernel::checked_ptr<(const )?([\w:]+)> (\w+)")
SCALAR = re.compile(r"\[\[maybe_unused\]\] const jitkernel::checked_ptr<const ([\w:]+)> (\w+) = "
                    r"\{&\w+__value, &(\w+__value), 0, 1, \d+, 0\};")
ENTRY = re.compile(r'(extern "C" __global__ void \w+)_[0-9a-f]{16}\(')
BACK = re.compile(r'^#line \d+ "(\w+\.cu)"$', re.M)  # back to generated lines after a header: shifts


def normalised(text: str) -> str:
    return BACK.sub(r'#line N "\1"', ENTRY.sub(r"\1_HASH(", text))


def unchecked_equivalent(text: str) -> str:
    """`text` with the accessors taken back out: the definitions, the parameter types, the scalar aliases."""
    text, n = ACCESSORS.subn("", text)
    assert n == 1, "the accessor definitions are missing"
    text = SCALAR.sub(r"[[maybe_unused]] const \1* \2 = &\3;", text)
    text = PARAM.sub(lambda m: f"{m[1] or ''}{m[2]}* {m[3]}", text)
    return normalised(text)


@pytest.mark.parametrize("case", sorted(UNCHECKED_SHA256))
def test_unchecked_sources_are_unchanged(case):
    k, call = build(case)
    text = k.source(**call)
    assert hashlib.sha256(text.encode()).hexdigest() == UNCHECKED_SHA256[case]
    assert text == (GOLDEN / f"{case}.cu").read_text()
    assert "checked_ptr" not in text


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_checked_source_differs_only_by_the_accessors(case):
    k, call = build(case)
    ck, _ = checked_build(case)
    checked = ck.source(**call)
    assert checked != k.source(**call)
    assert "jitkernel::checked_ptr<" in checked
    assert unchecked_equivalent(checked) == normalised(k.source(**call))


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_checked_golden_kernels_compile(case):
    ck, call = checked_build(case)
    cubin = ck.compile(**call, arch="sm_90a")
    assert cubin[:4] == b"\x7fELF"
    assert b"jitkernel_checked_report" in cubin  # the report slot cuModuleGetGlobal finds


# Every way the docs say a checked array may be used (and each integer index type).
USES = """\
const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
unsigned int u = threadIdx.x; long long l = u; int n = 2; int64_t w = 1;
y[i] = x[u] + x[l] + x[n] + x[w] + s[0];
const float* raw = x;
float4 v = *(const float4*)x;
const float4* v2 = reinterpret_cast<const float4*>(&x[0]);
auto p = x + 2; p++; ++p; p += 1; p -= 1; --p;
y[0] += raw[0] + v.x + v2->y + *p + p[1] + (x + 1)[0] + *(x + 3) + static_cast<const float*>(x)[0];
if (p > x && p != x && !(p == x) && p >= x && x < p && x <= p && p - x == 3 && x != nullptr && x) y[1] = twice(x);
auto q = y; q[2] = 1.0f; *q = 2.0f; q[(short)1] = 3.0f; q[(unsigned char)1] = 4.0f;
Index ix{1}; CheckedReport cr{0}; y[ix.v] += cr.w;
"""
# The header's own Index and CheckedReport must not clash with checked mode's (jitkernel::checked_detail).
HEADER = ("__device__ float twice(const float* a) { return 2 * a[0]; }\n"
          "struct Index { int v; };\nstruct CheckedReport { int w; };\n")


def uses_kernel(checked=True):
    return jk.cuda_kernel(name="uses", input_names=["x", "s"], output_names=["y"], source=USES, header=HEADER,
                          compile_options={"checked": checked})


USES_CALL = dict(inputs=[np.zeros(64, np.float32), np.float32(2)], output_dtypes=[jk.float32])


@pytest.mark.parametrize("arch", ARCHS)
def test_checked_kernel_compiles_for_each_arch(arch):
    assert uses_kernel().compile(**USES_CALL, arch=arch)[:4] == b"\x7fELF"
    assert uses_kernel(False).compile(**USES_CALL, arch=arch)[:4] == b"\x7fELF"  # the same body, unchecked


def test_the_body_line_of_each_subscript_is_in_the_code():
    # __builtin_LINE() in Index's default argument is the line of the subscript in the body (#line 1 "source").
    src = "auto i = threadIdx.x;\n\ny[i] = x[i + 1];\n\n\ny[i + 7] = 0;\n"
    k = jk.cuda_kernel(name="lines", input_names=["x"], output_names=["y"], source=src,
                       compile_options={"checked": True})
    ptx = k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[jk.float32], arch="sm_90a",
                    target="ptx").decode()
    # checked_fail(array, index, lo, hi, line): the line is its fifth argument
    lines = {int(v) for v in re.findall(r"st\.param\.b32\s+\[param4(?:\+0)?\], (\d+);", ptx)}
    assert {3, 6} <= lines, ptx[-3000:]


# ---- cache ------------------------------------------------------------------------------------------------------

def test_checked_and_unchecked_binaries_are_cached_apart(cache_dir):
    plain = uses_kernel(False).compile(**USES_CALL, arch="sm_90a")
    assert len(entries(cache_dir)) == 1
    checked = uses_kernel(True).compile(**USES_CALL, arch="sm_90a")
    assert len(entries(cache_dir)) == 2
    assert plain != checked
    assert uses_kernel(True).compile(**USES_CALL, arch="sm_90a") == checked  # a hit, no third entry
    assert len(entries(cache_dir)) == 2
    key = lambda k: _core._cache_compile_key(k.source(**USES_CALL), "uses.cu", "sm_90a", "cubin")
    assert key(uses_kernel(True)) != key(uses_kernel(False))


# ---- the option -------------------------------------------------------------------------------------------------

def kernel(options=None, name="k"):
    return jk.cuda_kernel(name=name, input_names=["x"], output_names=["y"], source="y[0] = x[0];",
                          compile_options=options)


CALL = dict(inputs=[np.zeros(4, np.float32)], output_dtypes=[jk.float32])


def test_option_parsing():
    with pytest.raises(jk.ArgumentTypeError, match=r"^compile_options: checked: expected True or False, got int"):
        kernel({"checked": 1})
    with pytest.raises(jk.ArgumentError, match=r"unknown option 'chekced' \(the options are .*, checked\)"):
        kernel({"chekced": True})
    assert "checked_ptr" not in kernel({"checked": False}).source(**CALL)
    assert "checked_ptr" in kernel({"checked": True}).source(**CALL)


def test_compile_cuda_refuses_checked():
    with pytest.raises(jk.ArgumentError, match=r"^compile_options: checked: checked mode applies to cuda_kernel"):
        jk.compile_cuda('extern "C" __global__ void f() {}', compile_options={"checked": True})


def test_metal_refuses_checked():
    with pytest.raises(jk.ArgumentError, match=r"^compile_options: checked: checked mode is CUDA-only"):
        jk.metal_kernel(name="m", input_names=["x"], output_names=["y"], source="y[0] = x[0];",
                        compile_options={"checked": True})


def test_environment_switch(monkeypatch):
    monkeypatch.setenv("JITKERNEL_CHECKED", "1")
    assert "checked_ptr" in kernel().source(**CALL)
    assert "checked_ptr" in kernel({"math_mode": "fast"}).source(**CALL)
    assert "checked_ptr" not in kernel({"checked": False}).source(**CALL)  # the kernel's own word wins
    monkeypatch.setenv("JITKERNEL_CHECKED", "0")
    assert "checked_ptr" not in kernel().source(**CALL)
    monkeypatch.delenv("JITKERNEL_CHECKED")
    assert "checked_ptr" not in kernel().source(**CALL)


def test_decoded_kernels_are_checked_as_recorded(monkeypatch):
    # A kernel made again from its text (a graph's, an exported program's, a call record's) is checked exactly when
    # the kernel that wrote the text was; JITKERNEL_CHECKED in the decoding process changes nothing.
    from jitkernel._fleet import record_replay
    from jitkernel._kernels import cuda_kernel as module

    monkeypatch.setattr(module, "_by_text", weakref.WeakValueDictionary())  # no kernel object to find: decode
    off, plain, on = kernel({"checked": False}), kernel(), kernel({"checked": True})
    texts = [off._spec, plain._spec, on._spec]
    assert texts[0] == texts[1]  # False is the default, which the text leaves out
    lines = [_core._call_record_line(k, CALL["inputs"], CALL["output_dtypes"], None) for k in (off, on)]
    monkeypatch.setattr(module, "_by_text", weakref.WeakValueDictionary())
    monkeypatch.setenv("JITKERNEL_CHECKED", "1")
    made = [module.kernel_for(text) for text in texts]
    assert all(k not in (off, plain, on) for k in made)
    assert ["checked_ptr" in k.source(**CALL) for k in made] == [False, False, True]
    assert [k._spec for k in made] == texts  # the same texts: the same ops and XLA keys as the writers'
    assert [record_replay._decode(line)[0]["compile_options"] for line in lines] == [{"checked": False},
                                                                                     {"checked": True}]
    # A kernel made under the switch says so in its text (and its pickle), wherever it is decoded.
    switched = kernel()
    monkeypatch.delenv("JITKERNEL_CHECKED")
    assert switched.compile_options == {"checked": True} and "checked_ptr" in switched.source(**CALL)
    monkeypatch.setattr(module, "_by_text", weakref.WeakValueDictionary())
    assert "checked_ptr" in module.kernel_for(switched._spec).source(**CALL)
    assert "checked_ptr" in pickle.loads(pickle.dumps(switched)).source(**CALL)


def test_the_option_is_recorded():
    line = json.loads(_core._call_record_line(kernel({"checked": True}), CALL["inputs"], CALL["output_dtypes"],
                                              None))
    assert line["kernel"]["compile_options"] == {"checked": True}
    plain = json.loads(_core._call_record_line(kernel(), CALL["inputs"], CALL["output_dtypes"], None))
    assert plain["kernel"]["compile_options"] == {}


# ---- the errors -------------------------------------------------------------------------------------------------

def test_bounds_error_from_its_message():
    text = "y[4096] out of bounds (extent 4096) at body line 3, block (16,0,0) thread (0,1,0) in kernel 'add' " \
           "(an output)"
    e = jk.KernelBoundsError(text)
    assert isinstance(e, IndexError) and isinstance(e, jk.JitKernelError)
    assert (e.array, e.index, e.extent, e.line, e.block, e.thread, e.kernel, e.is_output) == \
        ("y", 4096, 4096, 3, (16, 0, 0), (0, 1, 0), "add", True)
    e = jk._errors.from_op_message("jitkernel.KernelBoundsError: x[-1] out of bounds (valid offsets -4 to 11) at "
                                   "an unknown body line (a * or -> access), block (0,0,0) thread (0,0,0) in kernel "
                                   "'k' (an input)")
    assert isinstance(e, jk.KernelBoundsError)
    assert (e.array, e.index, e.extent, e.line, e.is_output) == ("x", -1, 12, None, False)


def test_unwritten_output_error_from_its_message():
    e = jk._errors.from_op_message("jitkernel.UnwrittenOutputError: y[1000] was never written by kernel 'fill' "
                                   "(it still holds the NaN checked mode fills new outputs with)")
    assert isinstance(e, jk.UnwrittenOutputError) and isinstance(e, RuntimeError)
    assert (e.output, e.index, e.kernel) == ("y", 1000, "fill")


# ---- the host side, through the mock driver (its kernels never run; device memory is host memory) --------------

def test_host_side_through_the_mock_driver(mock_driver, tmp_path):
    proc = run_with_mock(mock_driver, """
        import ctypes, struct
        import numpy as np, jitkernel as jk
        mock = ctypes.CDLL("libcuda.so.1")  # the library jitkernel loaded: the same report slot
        k = jk.cuda_kernel(name="add", input_names=["x"], output_names=["y"], source="y[0] = x[0];",
                           compile_options={"checked": True})
        geo = dict(grid=(4, 1, 1), threadgroup=(4, 1, 1))
        x = np.zeros(4, np.float32)
        # the mock's kernel writes nothing: the poisoned float output is found unwritten
        try:
            k(inputs=[x], output_shapes=[(4,)], output_dtypes=[jk.float32], **geo)
        except jk.UnwrittenOutputError as e:
            assert (e.output, e.index, e.kernel) == ("y", 0, "add"), str(e)
        else:
            raise AssertionError("no UnwrittenOutputError")
        # an integer output is poisoned (0xA5 bytes) but not checked; init_value and outputs= are not poisoned
        (i32,) = k(inputs=[x], output_shapes=[(4,)], output_dtypes=[jk.int32], **geo)
        assert (i32.numpy() == -1515870811).all()
        (f,) = k(inputs=[x], output_shapes=[(4,)], output_dtypes=[jk.float32], init_value=3.0, **geo)
        assert (f.numpy() == 3).all()
        k(inputs=[x], outputs=[f], **geo)
        # a report as the device writes it: flag, array id, line, -, index, lo, hi, block, thread
        report = struct.pack("<IiiIqqq3I3I", 1, 1, 3, 0, 4096, 0, 4096, 16, 0, 0, 5, 0, 0)
        mock.mock_set_next_report(report)
        try:
            k(inputs=[x], outputs=[f], **geo)
        except jk.KernelBoundsError as e:
            assert str(e) == ("y[4096] out of bounds (extent 4096) at body line 3, block (16,0,0) thread (5,0,0) "
                              "in kernel 'add' (an output)"), str(e)
            assert (e.array, e.index, e.extent, e.line, e.block, e.thread, e.kernel, e.is_output) == \\
                ("y", 4096, 4096, 3, (16, 0, 0), (5, 0, 0), "add", True)
            assert isinstance(e, IndexError)
        else:
            raise AssertionError("no KernelBoundsError")
        k(inputs=[x], outputs=[f], **geo)  # the slot was reset: the next call is clean
        mock.mock_set_next_report(struct.pack("<IiiIqqq3I3I", 1, 0, 0, 0, -3, -8, 8, 0, 0, 0, 0, 0, 0))
        try:
            k(inputs=[x], outputs=[f], **geo)
        except jk.KernelBoundsError as e:
            assert str(e).startswith("x[-3] out of bounds (valid offsets -8 to 7) at an unknown body line"), str(e)
            assert (e.line, e.extent, e.is_output) == (None, 8, False)
        else:
            raise AssertionError("no KernelBoundsError")
        # unchecked kernels are untouched: the report slot is never read
        plain = jk.cuda_kernel(name="add", input_names=["x"], output_names=["y"], source="y[0] = x[0];")
        mock.mock_set_next_report(report)
        plain(inputs=[x], output_shapes=[(4,)], output_dtypes=[jk.float32], **geo)
        jk.synchronize()
        print("OK")
    """, tmp_path)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr
