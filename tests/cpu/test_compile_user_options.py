"""The user's ``compile_options`` of ``cuda_kernel`` / ``compile_cuda`` (cpp/jitkernel/cuda/nvrtc/compile_options.cpp):
each option reaches NVRTC (observed in what it compiles: macros visible to ``#if``, PTX instructions and directives),
each is part of the compile cache key (a kernel that differs by one option is compiled again, never served another's
binary), and every bad option is a typed error naming it, raised when the kernel is made, before NVRTC runs. Real
NVRTC compiles, no GPU needed.
"""
from __future__ import annotations

import logging
import struct
import uuid

import numpy as np
import pytest

import jitkernel as jk

ARCH = "sm_90a"
F32 = np.zeros(8, np.float32)


def ptx_of(body, options=None, header=""):
    k = jk.cuda_kernel(name="copts", input_names=["a"], output_names=["out"], source=body, header=header,
                       compile_options=options)
    return k.compile(inputs=[F32], output_dtypes=[np.float32], arch=ARCH, target="ptx").decode()


def standalone(body, options=None, target="cubin"):
    return jk.compile_cuda('extern "C" __global__ void k(float* o, const float* a) {\n' + body + "\n}\n",
                           arch=ARCH, target=target, compile_options=options)


# --- each option reaches NVRTC -------------------------------------------------------------------------------------

def test_defines_are_visible_to_the_preprocessor():
    check = "#if !defined(WIDTH) || WIDTH != 3 || !defined(FLAG)\n#error defines missing\n#endif\nout[0] = WIDTH;"
    assert ptx_of(check, {"defines": {"WIDTH": 3, "FLAG": None}})
    assert standalone(check.replace("out[0]", "o[0]"), {"defines": {"WIDTH": "3", "FLAG": None}})[:4] == b"\x7fELF"
    with pytest.raises(jk.CompileError, match="defines missing"):
        ptx_of(check)


def test_fast_math_changes_the_instructions():
    body = "out[threadIdx.x] = expf(a[threadIdx.x]) / a[threadIdx.x + 1];"
    safe, fast = ptx_of(body), ptx_of(body, {"math_mode": "fast"})
    # Fast: expf is one scaled ex2.approx, the division approximate; safe: expf's range reduction (fma.rm), IEEE div.
    assert "div.approx.ftz.f32" in fast and "fma.rm.f32" not in fast, fast
    assert "div.rn.f32" in safe and "fma.rm.f32" in safe and "div.approx" not in safe, safe
    assert ptx_of(body, {"math_mode": "safe"}) == safe


def cubin_registers(cubin: bytes) -> list:
    """The register counts the cubin's .nv.info section records (EIATTR_REGCOUNT), one per kernel."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = sections[shstrndx][4]
    counts = []
    for name_at, _, _, _, offset, size, *_ in sections:
        if cubin[names + name_at:cubin.index(b"\0", names + name_at)] != b".nv.info":
            continue
        pos = 0
        while pos + 4 <= size:
            fmt, attr, length = struct.unpack_from("<BBH", cubin, offset + pos)
            if fmt == 4 and attr == 0x2F:
                counts.append(struct.unpack_from("<II", cubin, offset + pos + 4)[1])
            pos += 4 + (length if fmt == 4 else 0)
    return counts


REGISTER_HUNGRY = """float acc[32];
#pragma unroll
for (int i = 0; i < 32; ++i) acc[i] = a[threadIdx.x * 32 + i];
float s = 0.0f;
#pragma unroll
for (int i = 0; i < 32; ++i) s += acc[i] * acc[31 - i] + acc[(i * 7) % 32];
out[threadIdx.x] = s;"""


def test_max_registers_caps_the_cubin():
    def registers(options):
        k = jk.cuda_kernel(name="copts", input_names=["a"], output_names=["out"], source=REGISTER_HUNGRY,
                           compile_options=options)
        return cubin_registers(k.compile(inputs=[F32], output_dtypes=[np.float32], arch=ARCH))

    (free,), (capped,) = registers(None), registers({"max_registers": 32})
    assert free > 32 >= capped, (free, capped)


def test_line_info_is_on_by_default():
    body = "out[threadIdx.x] = a[threadIdx.x] * 2.0f;"
    assert ".loc" in ptx_of(body)
    assert ".loc" not in ptx_of(body, {"line_info": False})


def cubin_sections(cubin: bytes) -> dict:
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = sections[shstrndx][4]
    return {cubin[names + s[0]:cubin.index(b"\0", names + s[0])]: cubin[s[4]:s[4] + s[5]] for s in sections}


def test_line_info_leaves_the_machine_code_alone():
    # Why it is on by default: the SASS is the same, only debug-line sections are added (and NVRTC's time is within
    # noise of the same compile without it).
    src = 'extern "C" __global__ void k(float* o, const float* a) { o[threadIdx.x] = expf(a[threadIdx.x]); }'
    off = cubin_sections(jk.compile_cuda(src, compile_options={"line_info": False}))
    on = cubin_sections(jk.compile_cuda(src))
    code = [n for n in off if n.startswith(b".text.")]
    assert code and all(off[n] == on[n] for n in code)
    assert b".debug_line" in on and b".debug_line" not in off


def test_debug_compiles_device_debug_code():
    ptx = ptx_of("out[0] = a[0];", {"debug": True})
    assert ".target sm_90a, debug" in ptx, ptx[:400]
    assert ", debug" not in ptx_of("out[0] = a[0];")


def test_std_selects_the_language_standard():
    check = "#if __cplusplus < 202002L\n#error not c++20\n#endif\nout[0] = a[0];"
    assert ptx_of(check, {"std": "c++20"})
    with pytest.raises(jk.CompileError, match="not c\\+\\+20"):
        ptx_of(check, {"std": "c++17"})


def test_include_dirs_are_searched_and_keyed(tmp_path):
    (tmp_path / "copts_scale.h").write_text("#define COPTS_SCALE 5.0f\n")
    body = "out[0] = a[0] * COPTS_SCALE;"
    header = "#include <copts_scale.h>\n"
    first = ptx_of(body, {"include_dirs": [str(tmp_path)]}, header)
    assert "0f40A00000" in first  # 5.0f
    (tmp_path / "copts_scale.h").write_text("#define COPTS_SCALE 7.0f\n")  # the key covers the header's content
    assert "0f40E00000" in ptx_of(body, {"include_dirs": [str(tmp_path)]}, header)


def test_extra_flags_reach_nvrtc():
    body = "out[threadIdx.x] = a[threadIdx.x] * a[threadIdx.x + 1];"
    assert "mul.ftz.f32" in ptx_of(body, {"extra_flags": ["--ftz=true"]})
    assert "mul.ftz.f32" not in ptx_of(body)
    assert ptx_of(body, {"extra_flags": ["--fmad=false", "-w", "--ptxas-options=-v,-O3", "--diag-suppress=177"]})


# --- options in the cache key ---------------------------------------------------------------------------------------

@pytest.fixture
def answers():
    """The cache outcome ("memory", "disk", "compile") of each compile request, from the jitkernel logger's records."""
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            if hasattr(record, "jitkernel_cache"):
                seen.append(record.jitkernel_cache)

    logger = logging.getLogger("jitkernel")
    handler, old = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield seen
    logger.removeHandler(handler)
    logger.setLevel(old)


@pytest.mark.parametrize("options", [
    {"math_mode": "fast"}, {"line_info": False}, {"debug": True}, {"defines": {"X": 1}}, {"defines": {"X": None}},
    {"std": "c++20"}, {"max_registers": 64}, {"extra_flags": ["--ftz=true"]},
])
def test_each_option_is_in_the_cache_key(answers, options):
    body = f"// {uuid.uuid4()}\nout[0] = a[0];"  # new to the disk cache
    ptx_of(body)
    ptx_of(body, options)
    ptx_of(body, options)
    assert answers == ["compile", "compile", "disk"]


# --- errors, before NVRTC runs --------------------------------------------------------------------------------------

def make(options):
    return jk.cuda_kernel(name="copts", input_names=["a"], output_names=["out"], source="out[0] = a[0];",
                          compile_options=options)


@pytest.mark.parametrize("options, error, message", [
    ([("math_mode", "fast")], jk.ArgumentTypeError, "expected a dict"),
    ({"fast": True}, jk.ArgumentError, "unknown option 'fast'"),
    ({1: True}, jk.ArgumentTypeError, "keys must be strings"),
    ({"math_mode": "relaxed"}, jk.ArgumentError, "math_mode: expected 'safe' or 'fast'"),
    ({"math_mode": 1}, jk.ArgumentTypeError, "math_mode: expected"),
    ({"line_info": 1}, jk.ArgumentTypeError, "line_info: expected True or False"),
    ({"debug": "yes"}, jk.ArgumentTypeError, "debug: expected True or False"),
    ({"defines": ["X"]}, jk.ArgumentTypeError, "defines: expected a dict"),
    ({"defines": {"1X": 1}}, jk.ArgumentError, "'1X' is not a C identifier"),
    ({"defines": {"X-Y": 1}}, jk.ArgumentError, "'X-Y' is not a C identifier"),
    ({"defines": {"X": "1\n#error"}}, jk.ArgumentError, "contains a line break"),
    ({"defines": {"X": 1.5}}, jk.ArgumentTypeError, "defines\\['X'\\]: expected a string, an int or None"),
    ({"std": "c++14"}, jk.ArgumentError, "std: expected 'c\\+\\+17' or 'c\\+\\+20'"),
    ({"max_registers": 0}, jk.ArgumentError, "max_registers: expected a register count"),
    ({"max_registers": 300}, jk.ArgumentError, "max_registers: expected a register count"),
    ({"max_registers": True}, jk.ArgumentTypeError, "max_registers: expected an int"),
    ({"include_dirs": "/tmp"}, jk.ArgumentTypeError, "include_dirs: expected a list"),
    ({"include_dirs": ["/no/such/folder"]}, jk.ArgumentError, "'/no/such/folder' is not a directory"),
    ({"extra_flags": "--ftz=true"}, jk.ArgumentTypeError, "extra_flags: expected a list"),
    ({"extra_flags": ["--no-such-flag"]}, jk.ArgumentError, "'--no-such-flag' is not an NVRTC option"),
    ({"extra_flags": ["ftz"]}, jk.ArgumentError, "'ftz' is not an NVRTC flag"),
    ({"extra_flags": ["--ftz maybe"]}, jk.ArgumentError, "one flag per item"),
    ({"extra_flags": ["--ftz=maybe"]}, jk.ArgumentError, "--ftz takes =true or =false"),
    ({"extra_flags": ["--ftz"]}, jk.ArgumentError, "--ftz takes =true or =false"),
    ({"extra_flags": ["-w=1"]}, jk.ArgumentError, "takes no value"),
    ({"extra_flags": ["--ptxas-options=-o,out.cubin"]}, jk.ArgumentError, "--ptxas-options takes"),
    ({"extra_flags": ["--gpu-architecture=sm_80"]}, jk.ArgumentError, "jitkernel sets the architecture"),
    ({"extra_flags": ["-arch=sm_80"]}, jk.ArgumentError, "jitkernel sets the architecture"),
    ({"extra_flags": ["--std=c++17"]}, jk.ArgumentError, "use compile_options\\['std'\\]"),
    ({"extra_flags": ["-DX=1"]}, jk.ArgumentError, "use compile_options\\['defines'\\]"),
    ({"extra_flags": ["-I/tmp"]}, jk.ArgumentError, "use compile_options\\['include_dirs'\\]"),
    ({"extra_flags": ["--use_fast_math"]}, jk.ArgumentError, "'math_mode'\\] = 'fast'"),
    ({"extra_flags": ["-G"]}, jk.ArgumentError, "'debug'\\] = True"),
    ({"extra_flags": ["--maxrregcount=32"]}, jk.ArgumentError, "'max_registers'"),
    ({"extra_flags": ["--relocatable-device-code=true"]}, jk.ArgumentError, "links nothing"),
    ({"extra_flags": ["--time=t.csv"]}, jk.ArgumentError, "writes a file"),
])
def test_bad_options_are_typed_errors(options, error, message):
    with pytest.raises(error, match=message) as info:
        make(options)
    assert info.value.argument == "compile_options"
    with pytest.raises(error, match=message):  # compile_cuda checks the same way
        jk.compile_cuda('extern "C" __global__ void k() {}', compile_options=options)


def test_a_kernel_without_names_checks_its_options_when_made():
    with pytest.raises(jk.ArgumentError, match="unknown option"):
        jk.cuda_kernel(name="copts", source="out[0] = a[0];", compile_options={"nope": 1})


def test_options_are_copied_when_the_kernel_is_made():
    options = {"defines": {"V": 2}}
    k = make(options)
    options["defines"]["V"] = 3
    text = k.compile(inputs=[F32], output_dtypes=[np.float32], arch=ARCH, target="ptx")
    assert k.compile_options == {"defines": {"V": 2}} and text
