"""precompiled_cuda_kernel without a GPU: format detection of PTX / cubin / fatbin bytes, entry points and
parameter sizes read from them, the architecture check, and every argument error that is raised before
anything touches a GPU. Binaries come from NVRTC (jk.compile_cuda) on this machine; nvcc is used where
installed."""
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

import jitkernel as jk
from jitkernel._kernels.precompiled import check_binary_arch, inspect_binary

SOURCE = r"""
extern "C" __global__ void axpy(const float* x, float* y, long n, double alpha, bool flag) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (flag && i < n) y[i] = (float)(alpha * x[i]);
}
extern "C" __global__ void copy2(const float* x, float* a, float* b, unsigned short tag) {
  a[0] = x[0]; b[0] = x[0] + tag;
}
__global__ void cpp_kernel(float* out, short s, char c) { out[0] = s + c; }
"""
CPP_NAME = "_Z10cpp_kernelPfsc"  # Itanium mangling of cpp_kernel(float*, short, char)

NVCC = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
HAVE_NVCC = os.path.exists(NVCC)


def compile_or_skip(source=SOURCE, arch="sm_90a", target="cubin"):
    try:
        return jk.compile_cuda(source, arch=arch, target=target)
    except jk.CudaNotAvailableError as e:  # no NVRTC on this machine
        pytest.skip(f"NVRTC not available: {e}")


# The architecture binaries that may be launched are built for: the GPU's when there is one (this file also
# runs on GPU machines), else Hopper's.
ARCH = jk.device_info(0)["arch"] if jk.cuda_available() else "sm_90a"


@pytest.fixture(scope="module")
def cubin():
    return compile_or_skip(arch=ARCH)


@pytest.fixture(scope="module")
def ptx():
    return compile_or_skip(arch=ARCH, target="ptx")


def nvcc(tmp_path, *flags, source=SOURCE):
    if not HAVE_NVCC:
        pytest.skip("nvcc not installed")
    src = tmp_path / "k.cu"
    src.write_text(source)
    out = tmp_path / "k.out"
    subprocess.run([NVCC, *flags, str(src), "-o", str(out)], check=True, capture_output=True)
    return out.read_bytes()


def make_fatbin(images):
    """A fatbin holding `images`, a list of (kind, sm, payload): kind 1 PTX, 2 ELF (the layout nvcc writes)."""
    body = b""
    for kind, sm, payload in images:
        header = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x0101, 64, len(payload), 0, 0, 8, 1, sm, 0, 0, 0x11, 0, 0)
        body += header + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def expect_argument_error(fn, argument, *fragments, cls=None):
    with pytest.raises(cls or jk.ArgumentError) as info:
        fn()
    assert info.value.argument == argument, str(info.value)
    message = str(info.value)
    assert message.startswith(argument + ": ")
    for fragment in fragments:
        assert fragment in message, message
    return message


# --- format detection -----------------------------------------------------------------------------------


def test_cubin_is_detected_with_arch_and_entries(cubin):
    info = inspect_binary(cubin)
    assert info["format"] == "cubin"
    assert info["arch"] == ARCH
    assert info["elf_abi_version"] in (7, 8)
    assert set(info["entries"]) == {"axpy", "copy2", CPP_NAME}


def test_ptx_is_detected_with_version_target_and_entries(ptx):
    info = inspect_binary(ptx)
    assert info["format"] == "ptx"
    assert info["arch"] == ARCH
    major, minor = info["ptx_version"]
    assert major >= 7 and minor >= 0
    assert set(info["entries"]) == {"axpy", "copy2", CPP_NAME}


@pytest.mark.parametrize("kind", ["cubin", "ptx"])
def test_parameter_sizes_of_long_double_bool_pointer_short_char(kind):
    binary = compile_or_skip(arch="sm_90a", target=kind)
    entries = inspect_binary(binary)["entries"]
    assert entries["axpy"] == [8, 8, 8, 8, 1]     # pointer, pointer, long, double, bool
    assert entries["copy2"] == [8, 8, 8, 2]       # three pointers, unsigned short
    assert entries[CPP_NAME] == [8, 2, 1]          # pointer, short, char


@pytest.mark.parametrize("kind", ["cubin", "ptx"])
def test_struct_int4_and_kernel_without_parameters(kind):
    source = r"""
    struct Pair { double a; int b; };
    extern "C" __global__ void noparams() {}
    extern "C" __global__ void structs(float* o, int4 v, Pair p) { o[0] = v.x + p.a + p.b; }
    """
    entries = inspect_binary(compile_or_skip(source, arch="sm_80", target=kind))["entries"]
    assert entries["noparams"] == []
    assert entries["structs"] == [8, 16, 16]


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_90", "sm_90a", "sm_100a", "sm_120"])
def test_arch_read_from_cubin(arch):
    cubin = compile_or_skip("extern \"C\" __global__ void k(int* p) { p[0] = 1; }", arch=arch)
    assert inspect_binary(cubin)["arch"] == arch


def _patched_legacy_abi(cubin, e_flags):
    """The cubin with the CUDA <= 12 ELF encoding: EI_ABIVERSION 7, SM in the low byte of e_flags."""
    data = bytearray(cubin)
    data[8] = 7
    struct.pack_into("<I", data, 48, e_flags)
    return bytes(data)


def test_arch_from_legacy_e_flags_encoding():
    cubin = compile_or_skip("extern \"C\" __global__ void k(int* p) { p[0] = 1; }", arch="sm_90")
    # Values written by NVRTC 12.9 (verified with cuobjdump): sm_80 0x500550, sm_90 0x5a055a, sm_90a 0x5a0d5a.
    assert inspect_binary(_patched_legacy_abi(cubin, 0x500550))["arch"] == "sm_80"
    assert inspect_binary(_patched_legacy_abi(cubin, 0x5A055A))["arch"] == "sm_90"
    assert inspect_binary(_patched_legacy_abi(cubin, 0x5A0D5A))["arch"] == "sm_90a"


def test_ptx_with_and_without_trailing_nul(ptx):
    text = ptx.rstrip(b"\0")
    assert not text.endswith(b"\0")
    for data in (text, text + b"\0", bytearray(text), memoryview(text)):
        info = inspect_binary(data)
        assert info["format"] == "ptx" and "axpy" in info["entries"]


def test_ptx_with_leading_block_comment_is_ptx(ptx):
    assert inspect_binary(b"/* made elsewhere */\n" + ptx)["format"] == "ptx"


def test_handmade_fatbin_lists_images_and_entries(cubin, ptx):
    fat = make_fatbin([(2, 90, cubin), (1, 90, ptx.rstrip(b"\0"))])
    info = inspect_binary(fat)
    assert info["format"] == "fatbin"
    assert info["arch"] is None
    assert [(i["kind"], i["arch"]) for i in info["images"]] == [("cubin", "sm_90"), ("ptx", "sm_90")]
    assert info["entries"]["axpy"] == [8, 8, 8, 8, 1]


def test_nvcc_fatbin(tmp_path):
    fat = nvcc(tmp_path, "-fatbin", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
               "arch=compute_90a,code=[sm_90a,compute_90a]")
    info = inspect_binary(fat)
    assert info["format"] == "fatbin"
    kinds = [(i["kind"], i["arch"]) for i in info["images"]]
    assert ("cubin", "sm_80") in kinds and ("cubin", "sm_90a") in kinds and ("ptx", "sm_90a") in kinds
    assert info["entries"]["axpy"] == [8, 8, 8, 8, 1]
    check_binary_arch(fat, (9, 0))   # sm_90a cubin fits an H100
    check_binary_arch(fat, (8, 6))   # sm_80 cubin runs on 8.6
    expect_argument_error(lambda: check_binary_arch(fat, (7, 5)), "compiled_source", "sm_75", "sm_80")


def test_nvcc_cubin_and_ptx(tmp_path):
    cubin = nvcc(tmp_path, "-cubin", "-arch=sm_90a")
    info = inspect_binary(cubin)
    assert info["arch"] == "sm_90a" and info["entries"]["axpy"] == [8, 8, 8, 8, 1]
    ptx = nvcc(tmp_path, "-ptx", "-arch=sm_80")
    info = inspect_binary(ptx)
    assert info["format"] == "ptx" and info["arch"] == "sm_80" and info["entries"][CPP_NAME] == [8, 2, 1]


# --- bytes that are not a CUDA binary ---------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"hello world, not a kernel", bytes(range(40)), b"\x00" * 16, b"MZ\x90\x00"])
def test_garbage_is_rejected_showing_its_first_bytes(data):
    message = expect_argument_error(lambda: inspect_binary(data), "compiled_source",
                                    "expected PTX text, an ELF cubin or a fatbin")
    assert " ".join(f"{b:02x}" for b in data[:4]) in message


def test_empty_bytes_are_rejected():
    expect_argument_error(lambda: inspect_binary(b""), "compiled_source", "empty")


def test_cuda_source_gets_a_hint():
    expect_argument_error(lambda: inspect_binary(SOURCE.encode()), "compiled_source", "CUDA C++ source",
                          "compile_cuda")


def test_host_elf_is_not_a_cubin():
    with open(sys.executable, "rb") as f:
        head = f.read(1 << 16)
    if not head.startswith(b"\x7fELF"):
        pytest.skip("the Python executable is not an ELF file")
    expect_argument_error(lambda: inspect_binary(head), "compiled_source", "not a CUDA cubin")


@pytest.mark.parametrize("cut", [10, 64, 200, -100])
def test_truncated_cubin_is_rejected(cubin, cut):
    with pytest.raises(jk.ArgumentError) as info:
        inspect_binary(cubin[:cut])
    assert info.value.argument == "compiled_source"


def test_corrupted_binaries_never_crash(cubin, ptx):
    rng = np.random.default_rng(0)
    fat = make_fatbin([(2, 90, cubin)])
    for data in (cubin, ptx, fat):
        for _ in range(200):
            b = bytearray(data)
            for pos in rng.integers(0, min(len(b), 512), size=int(rng.integers(1, 8))):
                b[pos] = int(rng.integers(0, 256))
            try:
                inspect_binary(bytes(b))
            except jk.ArgumentError as e:
                assert e.argument == "compiled_source"


def test_ptx_without_target_is_rejected():
    expect_argument_error(lambda: inspect_binary(b".version 8.0\n.address_size 64\n"), "compiled_source",
                          ".target")


def test_str_compiled_source_is_a_type_error(ptx):
    text = ptx.rstrip(b"\0").decode()
    expect_argument_error(lambda: inspect_binary(text), "compiled_source", "got str", cls=jk.ArgumentTypeError)
    expect_argument_error(lambda: run(text, "axpy"), "compiled_source", "got str", cls=jk.ArgumentTypeError)


# --- architecture vs device -------------------------------------------------------------------------------


def test_cubin_for_another_architecture_names_both():
    cubin = compile_or_skip("extern \"C\" __global__ void k(int* p) { p[0] = 1; }", arch="sm_80")
    message = expect_argument_error(lambda: check_binary_arch(cubin, (9, 0), "NVIDIA H100 80GB HBM3"),
                                    "compiled_source", "cubin built for sm_80", "device 0 is sm_90",
                                    "NVIDIA H100 80GB HBM3")
    assert "sm_90a" in message  # what to compile for instead


@pytest.mark.parametrize("arch, cc, ok", [
    ("sm_80", (8, 0), True), ("sm_80", (8, 6), True), ("sm_86", (8, 0), False), ("sm_80", (9, 0), False),
    ("sm_90", (9, 0), True), ("sm_90a", (9, 0), True), ("sm_90a", (10, 0), False), ("sm_100a", (10, 0), True),
    ("sm_100a", (10, 3), False), ("sm_120", (9, 0), False),
])
def test_cubin_arch_rule(arch, cc, ok):
    cubin = compile_or_skip("extern \"C\" __global__ void k(int* p) { p[0] = 1; }", arch=arch)
    if ok:
        check_binary_arch(cubin, cc)
    else:
        expect_argument_error(lambda: check_binary_arch(cubin, cc), "compiled_source", arch)


@pytest.mark.parametrize("arch, cc, ok", [
    ("sm_80", (8, 0), True), ("sm_80", (9, 0), True), ("sm_80", (12, 0), True), ("sm_90", (8, 9), False),
    ("sm_90a", (9, 0), True), ("sm_90a", (10, 0), False), ("sm_100", (9, 0), False),
])
def test_ptx_arch_rule(arch, cc, ok):
    ptx = compile_or_skip("extern \"C\" __global__ void k(int* p) { p[0] = 1; }", arch=arch, target="ptx")
    if ok:
        check_binary_arch(ptx, cc)
    else:
        expect_argument_error(lambda: check_binary_arch(ptx, cc), "compiled_source", "PTX targets " + arch)


# --- call errors raised before any GPU work ---------------------------------------------------------------

X = np.arange(4, dtype=np.float32)


def run(binary, name, inputs=(X,), output_shapes=((4,),), output_dtypes=(np.float32,), scalars=(), **kw):
    kw.setdefault("grid", (4, 1, 1))
    kw.setdefault("threadgroup", (4, 1, 1))
    return jk.precompiled_cuda_kernel(name=name, compiled_source=binary, inputs=list(inputs),
                                      output_shapes=list(output_shapes), output_dtypes=list(output_dtypes),
                                      scalars=list(scalars), **kw)


def reaches_launch(fn):
    """Valid arguments: the call runs on a GPU, and without one fails only for want of CUDA."""
    if jk.cuda_available():
        try:
            fn()
        except jk.ArgumentError as e:  # PTX from an NVRTC newer than the driver: refused at load, after validation
            if "newer than the installed driver" not in str(e):
                raise
        jk.synchronize()
    else:
        with pytest.raises(jk.CudaNotAvailableError):
            fn()


AXPY_SCALARS = [np.int64(4), np.float64(2.0), True]


@pytest.fixture(scope="module", params=["cubin", "ptx"])
def binary(request, cubin, ptx):
    return cubin if request.param == "cubin" else ptx


def test_valid_calls_pass_validation(binary):
    reaches_launch(lambda: run(binary, "axpy", scalars=AXPY_SCALARS))
    reaches_launch(lambda: run(binary, "copy2", output_shapes=[(1,), (1,)], output_dtypes=[np.float32] * 2,
                               scalars=[np.uint16(7)]))
    reaches_launch(lambda: run(binary, CPP_NAME, inputs=[], scalars=[np.int16(3), np.int8(4)]))


def test_bytearray_and_memoryview_sources(cubin):
    reaches_launch(lambda: run(bytearray(cubin), "axpy", scalars=AXPY_SCALARS))
    reaches_launch(lambda: run(memoryview(cubin), "axpy", scalars=AXPY_SCALARS))


def test_ptx_without_nul_reaches_launch(ptx):
    reaches_launch(lambda: run(ptx.rstrip(b"\0"), "axpy", scalars=AXPY_SCALARS))


def test_name_not_in_binary_lists_entry_points(binary):
    expect_argument_error(lambda: run(binary, "cpp_kernel", scalars=AXPY_SCALARS), "name", "'cpp_kernel'",
                          "axpy", "copy2", CPP_NAME)


def test_name_must_be_a_string(cubin):
    expect_argument_error(lambda: run(cubin, b"axpy"), "name", "string", cls=jk.ArgumentTypeError)


def test_output_shapes_and_dtypes_of_different_lengths(cubin):
    expect_argument_error(lambda: run(cubin, "axpy", output_shapes=[(4,), (4,)], scalars=AXPY_SCALARS),
                          "output_dtypes")


@pytest.mark.parametrize("bad", ["text", None, object(), [1], np.zeros(2)])
def test_unknown_scalar_types(cubin, bad):
    expect_argument_error(lambda: run(cubin, "axpy", scalars=[np.int64(4), bad, True]), "scalars", "scalar 1",
                          cls=jk.ArgumentTypeError)


def test_scalars_must_be_a_list(cubin):
    with pytest.raises(jk.ArgumentTypeError) as info:
        jk.precompiled_cuda_kernel(name="axpy", compiled_source=cubin, inputs=[X], output_shapes=[(4,)],
                                   output_dtypes=[np.float32], scalars=3.0, grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert info.value.argument == "scalars"


def test_python_int_beyond_int32_is_an_error(cubin):
    expect_argument_error(lambda: run(cubin, "axpy", scalars=[2**40, np.float64(1), True]), "scalars", "int32",
                          "int64")


def test_python_float_for_a_double_parameter(binary):
    expect_argument_error(lambda: run(binary, "axpy", scalars=[np.int64(4), 2.0, True]), "scalars",
                          "parameter 3", "8 bytes", "float32 (4 bytes)")


def test_python_int_for_a_long_parameter(binary):
    expect_argument_error(lambda: run(binary, "axpy", scalars=[4, np.float64(2), True]), "scalars",
                          "parameter 2", "8 bytes", "int32 (4 bytes)")


def test_int_for_a_bool_parameter(binary):
    expect_argument_error(lambda: run(binary, "axpy", scalars=[np.int64(4), np.float64(2), 1]), "scalars",
                          "parameter 4", "is 1 byte but", "int32 (4 bytes)")


def test_numpy_scalars_pass_their_exact_size(binary):
    # np.float16 is 2 bytes like unsigned short; np.float32 is not.
    reaches_launch(lambda: run(binary, "copy2", output_shapes=[(1,), (1,)], output_dtypes=[np.float32] * 2,
                               scalars=[np.float16(1)]))
    expect_argument_error(lambda: run(binary, "copy2", output_shapes=[(1,), (1,)],
                                      output_dtypes=[np.float32] * 2, scalars=[np.float32(1)]),
                          "scalars", "parameter 3", "2 bytes")


def test_parameter_count_mismatch(binary):
    expect_argument_error(lambda: run(binary, "axpy", scalars=[np.int64(4), np.float64(2)]), "scalars",
                          "takes 5 parameters", "passes 4")
    expect_argument_error(lambda: run(binary, "axpy", scalars=AXPY_SCALARS + [True]), "scalars",
                          "takes 5 parameters", "passes 6")


def test_scalar_where_a_pointer_belongs(binary):
    # cpp_kernel(float*, short, char) called with an input array: parameter 1 is 2 bytes, not a pointer.
    expect_argument_error(lambda: run(binary, CPP_NAME, inputs=[X, X], output_shapes=[], output_dtypes=[]),
                          "scalars", "takes 3 parameters")
    expect_argument_error(lambda: run(binary, CPP_NAME, inputs=[X, X], scalars=[np.int8(1)],
                                      output_shapes=[], output_dtypes=[]),
                          "inputs", "parameter 1", "2 bytes", "inputs[1] is passed as a pointer")


def test_grid_and_shared_memory_checks(cubin):
    expect_argument_error(lambda: run(cubin, "axpy", scalars=AXPY_SCALARS, grid=(0, 1, 1)), "grid")
    expect_argument_error(lambda: run(cubin, "axpy", scalars=AXPY_SCALARS, shared_memory=-1), "shared_memory")
    expect_argument_error(lambda: run(cubin, "axpy", scalars=AXPY_SCALARS, shared_memory=1.5), "shared_memory",
                          cls=jk.ArgumentTypeError)


def test_garbage_compiled_source_in_a_call():
    expect_argument_error(lambda: run(b"\x01\x02\x03\x04 not a kernel", "axpy"), "compiled_source",
                          "01 02 03 04")


def test_same_name_in_two_binaries_are_told_apart():
    one = compile_or_skip("extern \"C\" __global__ void k(float* o) { o[0] = 1; }", arch=ARCH)
    two = compile_or_skip("extern \"C\" __global__ void k(float* o, int v) { o[0] = v; }", arch=ARCH)
    assert inspect_binary(one)["entries"]["k"] == [8]
    assert inspect_binary(two)["entries"]["k"] == [8, 4]
    # The second binary's parameter list is checked, not the first one's (content, not name, is the key).
    reaches_launch(lambda: run(one, "k", inputs=[], output_shapes=[(1,)]))
    expect_argument_error(lambda: run(two, "k", inputs=[], output_shapes=[(1,)]), "scalars", "takes 2")
    reaches_launch(lambda: run(two, "k", inputs=[], output_shapes=[(1,)], scalars=[5]))


def test_exported_from_the_package():
    assert jk.precompiled_cuda_kernel is not None
    assert "precompiled_cuda_kernel" in jk.__all__


# --- content keys ------------------------------------------------------------------------------------------


def test_binaries_with_colliding_64_bit_hashes_are_told_apart():
    # Equal size and equal hash_bytes, different parameter lists: a cache keyed by (hash, size) would check the
    # second call against the first binary's parse (takes 1 parameter) and refuse it.
    from _hash_collision import colliding_ptx

    one, two = colliding_ptx(".visible .entry k(\n.param .u64 o\n)\n{\nret;\n}\n",
                             ".visible .entry k(\n.param .u64 o,\n.param .u32 v\n)\n{\nret;\n}\n")
    assert inspect_binary(one)["entries"] == {"k": [8]}
    assert inspect_binary(two)["entries"] == {"k": [8, 4]}
    reaches_launch(lambda: run(one, "k", inputs=[], output_shapes=[(1,)]))
    reaches_launch(lambda: run(two, "k", inputs=[], output_shapes=[(1,)], scalars=[5]))
    expect_argument_error(lambda: run(two, "k", inputs=[], output_shapes=[(1,)]), "scalars", "takes 2")


def parsed_then_refused(source, name, n_params):
    """A call that parses ``source`` and is refused right after, before any module load (one pointer too many):
    the same cheap path with or without a GPU (loading 100k-entry PTX would have the driver JIT it)."""
    with pytest.raises(jk.ArgumentError, match=f"takes {n_params} parameters but the call passes {n_params + 1}"):
        run(source, name, inputs=[], output_shapes=[(1,)] * (n_params + 1),
            output_dtypes=[np.float32] * (n_params + 1))


def test_parsed_binary_cache_is_bounded():
    # Every call with new bytes parses them; the parses kept are bounded in count and in bytes.
    limits = jk._core._precompiled_cache_info()
    body = ".visible .entry k{}(\n.param .u64 o\n)\n{{\nret;\n}}\n"
    sources = [(".version 8.0\n.target sm_90\n.address_size 64\n" + body.format(i)).encode()
               for i in range(limits["max_entries"] + 50)]
    for i, source in enumerate(sources):
        parsed_then_refused(source, f"k{i}", 1)
    info = jk._core._precompiled_cache_info()
    assert info["entries"] == limits["max_entries"]
    # Big parses (100k entry names of 64 bytes each): bounded by bytes long before the count.
    names = "".join(".visible .entry k{}{}()\n{{\nret;\n}}\n".format(i, "x" * 60) for i in range(100000))
    big = [(".version 8.0\n.target sm_90\n.address_size 64\n" + f"// {j}\n" + names).encode() for j in range(3)]
    for source in big:
        parsed_then_refused(source, "k0" + "x" * 60, 0)
    info = jk._core._precompiled_cache_info()
    assert 0 < info["bytes"] <= info["max_bytes"]
    assert info["entries"] < limits["max_entries"]
