"""`python -m jitkernel demo`: the exp example of MLX's cuda_kernel documentation, run through jitkernel.

On a CUDA GPU it launches the kernel on a float16 NumPy array (verbose: the whole generated text is printed) and
checks the result against NumPy. Without one it shows the kernel as jitkernel generates it -- the user's body inside
the signature made for the call (the whole text, jitkernel's preamble included, with `--full-source`) -- compiles it
with NVRTC to a cubin for sm_90a (NVRTC needs no GPU), says whether NVRTC compiled it or the disk cache had it, then
checks that the bytes are an ELF cubin for that architecture. `main()` returns the process exit code: 0 only if every step worked.
"""
from __future__ import annotations

import struct
import sys
import time

import jitkernel as jk

# True for type checkers only (mypy and pyright treat the name so).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import numpy as np

# The kernel body of the documentation example, unchanged.
SOURCE = """
    auto elem = cooperative_groups::this_grid().thread_rank();
    T tmp = inp[elem];
    out[elem] = exp(tmp);
"""
TEMPLATE = [("T", jk.float32)]
ARCH = "sm_90a"
# float16 output: rounding alone is up to 2**-11 relative; exp in float32 adds a few float32 ulps.
RTOL, ATOL = 2e-3, 1e-6


def make_kernel():
    return jk.cuda_kernel(name="myexp", input_names=["inp"], output_names=["out"], source=SOURCE)


def make_input(seed: int = 0) -> np.ndarray:
    import numpy as np  # imported on use: `python -m jitkernel`'s other commands need no NumPy

    return np.random.default_rng(seed).standard_normal((16, 16)).astype(np.float16)


def show_source(kernel, a, full: bool) -> None:
    """The generated kernel: from its signature to the end (the body as written, under it), or the whole text."""
    text = kernel.source(inputs=[a], output_dtypes=[a.dtype], template=TEMPLATE)
    lines = text.splitlines()
    start = max((i for i, line in enumerate(lines) if "__global__" in line), default=0)
    if full or start == 0:
        print(text)
        return
    print(f"// ... {start} lines of jitkernel's preamble (python -m jitkernel demo --full-source shows them)")
    print("\n".join(lines[start:]) + "\n")


def run_on_gpu(full_source: bool = False) -> int:
    import numpy as np  # imported on use: `python -m jitkernel`'s other commands need no NumPy

    a = make_input()
    kernel = make_kernel()
    # verbose=True prints the whole generated text (MLX's behaviour); the short form of show_source() has not been
    # run on a GPU yet, so this path keeps MLX's (full_source is accepted for the command line's sake).
    (b,) = kernel(
        inputs=[a],
        template=TEMPLATE,
        grid=(a.size, 1, 1),
        threadgroup=(256, 1, 1),
        output_shapes=[a.shape],
        output_dtypes=[a.dtype],
        verbose=True,
    )
    got = np.asarray(b)  # jk.Array -> host copy
    if got.shape != a.shape or got.dtype != np.float16:
        print(f"FAIL: output has shape {got.shape} and dtype {got.dtype}, expected {a.shape} float16")
        return 1
    ref = np.exp(a.astype(np.float64))
    err = np.abs(got.astype(np.float64) - ref)
    print(f"output: {type(b).__module__}.{type(b).__name__} shape={got.shape} dtype={got.dtype}")
    print(f"max abs error {err.max():.3e}, max rel error {(err / np.abs(ref)).max():.3e} "
          f"(tolerance rtol={RTOL}, atol={ATOL})")
    if not np.all(np.isfinite(got)) or not np.allclose(got.astype(np.float64), ref, rtol=RTOL, atol=ATOL):
        print("FAIL: the kernel's output does not match numpy.exp")
        return 1
    print("PASS")
    return 0


def no_gpu_reason() -> str:
    """Why CUDA cannot run here, as jitkernel's toolkit_info() reports it."""
    info = jk.toolkit_info()
    if info.get("driver_error"):
        return info["driver_error"]
    return f"the CUDA driver {info.get('driver_version')} reports {info.get('device_count', 0)} devices"


def cubin_arch(data: bytes) -> tuple[int, str | None]:
    """(SM number from the ELF header, the -arch ptxas recorded in the toolkit note or None).

    Raises ValueError when `data` is not a 64-bit little-endian ELF file for NVIDIA CUDA (e_machine 190).
    """
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    e_machine, = struct.unpack_from("<H", data, 18)
    if e_machine != 190:
        raise ValueError(f"ELF machine is {e_machine}, not 190 (NVIDIA CUDA)")
    e_flags, = struct.unpack_from("<I", data, 48)
    # CUDA ELF ABI version 8 (CUDA 12.8+) moved the SM number from bits 0-7 to bits 8-15.
    sm = (e_flags >> 8) & 0xFF if data[8] >= 8 else e_flags & 0xFF
    e_shoff, = struct.unpack_from("<Q", data, 40)
    e_shentsize, e_shnum, e_shstrndx = struct.unpack_from("<HHH", data, 58)

    def section(i):  # (name offset, file offset, size)
        base = e_shoff + i * e_shentsize
        name, = struct.unpack_from("<I", data, base)
        offset, size = struct.unpack_from("<QQ", data, base + 24)
        return name, offset, size

    _, str_off, _ = section(e_shstrndx)
    arch = None
    for i in range(e_shnum):
        name_off, off, size = section(i)
        name = data[str_off + name_off:data.index(b"\0", str_off + name_off)]
        if name == b".note.nv.tkinfo":
            words = data[off:off + size].replace(b"\0", b" ").split()
            if b"-arch" in words[:-1]:
                arch = words[words.index(b"-arch") + 1].decode("ascii", "replace")
    return sm, arch


def compile_without_gpu(full_source: bool = False) -> int:
    print(f"No CUDA GPU found ({no_gpu_reason()})")
    print(f"Showing the generated source and compiling it for {ARCH} instead (NVRTC needs no GPU).\n")
    a = make_input()
    kernel = make_kernel()
    show_source(kernel, a, full_source)
    hits = jk.cache_info().hits
    t0 = time.perf_counter()
    cubin = kernel.compile(inputs=[a], output_dtypes=[a.dtype], template=TEMPLATE, arch=ARCH)
    ms = (time.perf_counter() - t0) * 1e3
    where = (f"loaded from the disk cache ({jk.cache_path()})" if jk.cache_info().hits > hits
             else "compiled by NVRTC")
    try:
        sm, arch = cubin_arch(cubin)
    except ValueError as e:
        print(f"FAIL: compile() returned {len(cubin)} bytes that are not a CUDA cubin: {e}")
        return 1
    if sm != 90 or arch not in (None, ARCH):
        print(f"FAIL: the cubin is for sm_{sm} (ptxas -arch {arch}), expected {ARCH}")
        return 1
    print(f"{where} in {ms:.0f} ms: {len(cubin)} bytes, an ELF cubin for {arch or f'sm_{sm}'} "
          f"(ELF machine NVIDIA CUDA, SM {sm})")
    print("PASS (compile only: no GPU to run on)")
    return 0


def main(full_source: bool = False) -> int:
    try:
        return run_on_gpu(full_source) if jk.cuda_available() else compile_without_gpu(full_source)
    except jk.JitKernelError as e:
        print(f"FAIL: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
