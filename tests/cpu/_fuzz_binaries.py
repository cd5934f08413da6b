"""Binaries for the fuzz test's precompiled target: real NVRTC output (cubin, PTX, fatbins holding them) and the
mutations applied to it, as Hypothesis strategies and the ``mutate`` function that builds a mutated binary.
"""
from __future__ import annotations

import re
import struct

from hypothesis import strategies as st

import jitkernel as jk
from _fuzz_strategies import M

# ----------------------------------------------------------------------------------------------------------------
# Binaries for the precompiled target: mutations of real NVRTC output (cubin / PTX, and fatbins holding them)

BINARIES: dict = {}  # base name -> bytes (filled by setup_binaries)
PRECOMPILED_SOURCE = r"""
extern "C" __global__ void axpy(const float* x, float* y, long n, double alpha, bool flag) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (flag && i < n) y[i] = (float)(alpha * x[i]);
}
extern "C" __global__ void copy2(const float* x, float* a, float* b, unsigned short tag) {
  a[0] = x[0]; b[0] = x[0] + tag;
}
"""
# sm_N of a PTX .target: what inspect_binary reports must be that N (or an error), never another architecture.
PTX_TARGETS = [90, 100, 52, 2**32 + 90, 2**31 + 90, 4294967386, 2**64 + 90, 10**30 + 90, 0, 9]
ENTRY_NAMES = ["axpy", "copy2", "missing", "", "axpy\x00", "_Z4axpy", "a" * 1000]


def make_fatbin(images):
    """A fatbin holding ``images`` (kind, sm, payload): kind 1 PTX, 2 ELF, in the layout nvcc writes."""
    body = b""
    for kind, sm, payload in images:
        header = struct.pack("<HHIQIIHHIIIQQQ", kind, 0x0101, 64, len(payload), 0, 0, 8, 1, sm, 0, 0, 0x11, 0, 0)
        body += header + payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def setup_binaries():
    cubin = jk.compile_cuda(PRECOMPILED_SOURCE, arch="sm_90a", target="cubin")
    ptx = jk.compile_cuda(PRECOMPILED_SOURCE, arch="sm_90a", target="ptx")
    BINARIES.update(cubin=cubin, ptx=ptx, fatbin_cubin=make_fatbin([(2, 90, cubin)]),
                    fatbin_both=make_fatbin([(2, 90, cubin), (1, 90, ptx.rstrip(b"\0"))]))


INTERESTING = [0, 1, 2, 7, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 2**63, 2**64 - 1, 64, 4096,
               65535, 0x10000]
ELF_HEADER_FIELDS = {"e_phoff": (0x20, 8), "e_shoff": (0x28, 8), "e_flags": (0x30, 4), "e_ehsize": (0x34, 2),
                     "e_phentsize": (0x36, 2), "e_phnum": (0x38, 2), "e_shentsize": (0x3A, 2), "e_shnum": (0x3C, 2),
                     "e_shstrndx": (0x3E, 2), "ei_class": (4, 1), "ei_data": (5, 1), "e_machine": (0x12, 2)}
SECTION_FIELDS = {"sh_name": (0, 4), "sh_type": (4, 4), "sh_flags": (8, 8), "sh_offset": (0x18, 8),
                  "sh_size": (0x20, 8), "sh_link": (0x28, 4), "sh_info": (0x2C, 4), "sh_addralign": (0x30, 8),
                  "sh_entsize": (0x38, 8)}


def _elf_at(data: bytes) -> int:
    """Offset of the (first) ELF image in data, or -1."""
    return data.find(b"\x7fELF")


def _put(data: bytearray, pos: int, width: int, value: int):
    if 0 <= pos and pos + width <= len(data):
        data[pos:pos + width] = (value % (1 << (8 * width))).to_bytes(width, "little")


def mutate(base: str, ops) -> bytes:
    """``base`` (a BINARIES name) with the mutations ``ops`` applied in order (positions wrap around the size)."""
    if not BINARIES:
        setup_binaries()
    data = bytearray(BINARIES[base])
    for op in ops:
        kind, args = op[0], op[1:]
        n = max(len(data), 1)
        if kind == "flip":
            pos, mask = args
            if data:
                data[pos % n] ^= mask or 1
        elif kind == "set":
            pos, width, value = args
            _put(data, pos % n, width, value)
        elif kind == "truncate":
            del data[args[0] % n:]
        elif kind == "insert":
            pos, blob = args
            data[pos % n:pos % n] = blob
        elif kind == "repeat":  # a slice repeated: long tables, many sections, huge text
            pos, length, times = args
            chunk = bytes(data[pos % n:pos % n + length])
            data[pos % n:pos % n] = chunk * times
        elif kind in ("elf", "section"):
            elf = _elf_at(bytes(data))
            if elf < 0:
                continue
            if kind == "elf":
                field, value = args
                offset, width = ELF_HEADER_FIELDS[field]
                _put(data, elf + offset, width, value)
            else:
                index, field, value = args
                shoff = int.from_bytes(data[elf + 0x28:elf + 0x30], "little")
                shnum = int.from_bytes(data[elf + 0x3C:elf + 0x3E], "little") or 1
                offset, width = SECTION_FIELDS[field]
                _put(data, elf + shoff + (index % shnum) * 64 + offset, width, value)
        elif kind == "fatbin":  # a field of the fatbin header (0..15) or of the first image header (16..79)
            offset, width, value = args
            if data[:4] == b"\x50\xed\x55\xba":
                _put(data, offset, width, value)
        elif kind == "ptx":  # a textual edit of PTX
            pattern, replacement = args
            data = bytearray(re.sub(pattern.encode(), replacement.encode("utf-8", "surrogatepass"), bytes(data),
                                    count=1))
        if len(data) > 2 << 20:
            del data[2 << 20:]
    return bytes(data)


PTX_EDITS = st.one_of(
    st.tuples(st.just(r"\.target sm_\w+"), st.sampled_from([".target sm_4294967386", ".target sm_99999999999999999999",
                                                             ".target sm_", ".target sm_-1", ".target compute_90",
                                                             ".target sm_90a, texmode_independent", ".target"])),
    st.tuples(st.just(r"\.version \d+\.\d+"), st.sampled_from([".version 99.99", ".version 4294967296.1",
                                                               ".version 1", ".version -1.0", ".version 8.99999999999"])),
    st.tuples(st.just(r"\.address_size \d+"), st.sampled_from([".address_size 32", ".address_size 4294967360", ""])),
    st.tuples(st.just(r"\.entry axpy\("), st.sampled_from([".entry (", ".entry copy2(", ".entry axpy(\x00",
                                                           ".entry " + "a" * 5000 + "("])),
    st.tuples(st.just(r"\.param \.\w+ \w+"), st.sampled_from([".param .b8 x[4294967296]", ".param .u64",
                                                              ".param .align 4294967296 .b8 p[8]", ".param"])),
    st.tuples(st.just(r"\)"), st.sampled_from(["", "(", ")" * 100])),
    st.tuples(st.just(r"\n"), st.sampled_from(["\x00", "\n" * 1000, "\n.visible .entry x(\n", "\n// ",
                                               "\n/*"])))
BINARY_OP = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 16), st.integers(0, 255)),
    st.tuples(st.just("set"), st.integers(0, 1 << 16), st.sampled_from([1, 2, 4, 8]), st.sampled_from(INTERESTING)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 16)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 16), st.binary(max_size=16)),
    st.tuples(st.just("repeat"), st.integers(0, 1 << 16), st.integers(1, 256), st.integers(2, 4096)),
    st.tuples(st.just("elf"), st.sampled_from(sorted(ELF_HEADER_FIELDS)), st.sampled_from(INTERESTING)),
    st.tuples(st.just("section"), st.integers(0, 64), st.sampled_from(sorted(SECTION_FIELDS)),
              st.sampled_from(INTERESTING)),
    st.tuples(st.just("fatbin"), st.integers(0, 79), st.sampled_from([1, 2, 4, 8]), st.sampled_from(INTERESTING)),
    PTX_EDITS.map(lambda e: ("ptx",) + e))
BINARY = st.builds(M, st.just("binary"), st.sampled_from(["cubin", "ptx", "fatbin_cubin", "fatbin_both"]),
                   st.lists(BINARY_OP, max_size=4))
BINARY_ARG = st.one_of(BINARY, BINARY, BINARY, st.sampled_from([b"", b"\x7fELF", "text", None, bytearray(b"x"),
                                                                memoryview(b"\x7fELF\x02\x01\x01")]))
