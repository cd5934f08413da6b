"""A corpus of crafted binaries for the parser behind precompiled_cuda_kernel / inspect_binary (cuda/binary/):
bombs (sizes and counts that made parsing quadratic or overflowed its arithmetic), every truncation of a real cubin,
PTX module and fatbin, fields pointing past the end or overflowing when added, overlapping and looping section
tables, absurd PTX numbers. Each input must parse or raise a jitkernel ArgumentError about ``compiled_source``,
never crash or hang, with time and memory linear in its size. Everything is generated here with struct (no binary
files in the repository) and parsed in a child process, so a crash or a hang fails one test instead of the run."""
from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

import jitkernel as jk
from jitkernel._kernels.precompiled import inspect_binary

HERE = os.path.dirname(os.path.abspath(__file__))
U64 = 2**64 - 1
SM90_FLAGS = 0x06005A04  # ELF ABI 8 e_flags for sm_90

SOURCE = r"""
extern "C" __global__ void axpy(const float* x, float* y, long n, double alpha, bool flag) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (flag && i < n) y[i] = (float)(alpha * x[i]);
}
__global__ void cpp_kernel(float* out, short s, char c) { out[0] = s + c; }
"""


# --- builders ------------------------------------------------------------------------------------------------


def elf_header(*, shoff=0, shnum=0, shstrndx=0, flags=SM90_FLAGS, phoff=0, phnum=0, shentsize=64, phentsize=56):
    ident = b"\x7fELF" + bytes([2, 1, 1, 0x41, 8]) + bytes(7)
    return struct.pack("<16sHHIQQQIHHHHHH", ident, 2, 190, 1, 0, phoff, shoff, flags, 64, phentsize, phnum,
                       shentsize, shnum, shstrndx)


def section(*, name=0, type=1, offset=0, size=0, link=0, info=0, entsize=0):
    return struct.pack("<IIQQQQIIQQ", name, type, 0, 0, offset, size, link, info, 1, entsize)


def fatbin(images, *, header_size=16, payload_size=None):
    """A fatbin of `images`, each (kind, sm, payload) or a dict of header fields (the layout nvcc writes)."""
    body = b""
    for image in images:
        if isinstance(image, tuple):
            kind, sm, payload = image
            image = {"kind": kind, "sm": sm, "payload": payload}
        payload = image.get("payload", b"")
        header = struct.pack("<HHIQIIHHIIIQQQ", image.get("kind", 2), 0x0101, image.get("header", 64),
                             image.get("size", len(payload)), 0, 0, 8, 1, image.get("sm", 90), 0, 0,
                             image.get("flags", 0x11), 0, 0)
        body += header + payload
    size = len(body) if payload_size is None else payload_size
    return struct.pack("<IHHQ", 0xBA55ED50, 1, header_size, size) + body


def ptx(body, *, version="8.0", target="sm_90"):
    return f".version {version}\n.target {target}\n.address_size 64\n{body}".encode()


class Cubin:
    """A real cubin's layout, for patching its fields."""

    def __init__(self, data: bytes):
        self.data = data
        self.shoff, = struct.unpack_from("<Q", data, 40)
        self.shnum, self.shstrndx = struct.unpack_from("<HH", data, 60)
        self.sections = [struct.unpack_from("<IIQQQQIIQQ", data, self.shoff + 64 * i) for i in range(self.shnum)]
        strings = self.sections[self.shstrndx][4]
        # "replace": a patched table may point a name at bytes that are not text.
        self.names = [data[strings + s[0]:data.index(b"\0", strings + s[0])].decode("utf-8", "replace")
                      for s in self.sections]

    def index(self, predicate):
        return next(i for i, name in enumerate(self.names) if predicate(name, self.sections[i]))

    def patch(self, offset, fmt, *values):
        b = bytearray(self.data)
        struct.pack_into(fmt, b, offset, *values)
        return bytes(b)

    def patch_section(self, i, field, value):
        """field: offset in the 64-byte section header (0 name, 4 type, 24 offset, 32 size, 40 link, 44 info)."""
        return self.patch(self.shoff + 64 * i + field, "<Q" if field in (24, 32) else "<I", value)

    def interesting_offsets(self):
        points = set(range(0, 72)) | {len(self.data) - 1}
        for s in self.sections:
            points |= {s[4] - 1, s[4], s[4] + 1, s[4] + s[5] - 1, s[4] + s[5], s[4] + s[5] + 1}
        for i in range(self.shnum + 1):
            points |= {self.shoff + 64 * i - 1, self.shoff + 64 * i, self.shoff + 64 * i + 1}
        return sorted(p for p in points if 0 <= p < len(self.data))


# --- cases (built in the child from the real binaries the parent passes) -----------------------------------------


def structural_cases(cubin: bytes, ptx_text: bytes):
    cases = _elf_cases(cubin)
    cases.update(_fatbin_cases(cubin, ptx_text))
    cases.update(_ptx_cases())
    return cases


def _elf_cases(cubin: bytes):
    """ELF header and section fields past the end, overflowing when added, huge counts; overlapping sections."""
    c = Cubin(cubin)
    n = len(cubin)
    symtab = c.index(lambda name, s: s[1] == 2)
    compat = c.index(lambda name, s: name == ".nv.compat")
    info = c.index(lambda name, s: name.startswith(".nv.info."))
    nobits = [i for i, s in enumerate(c.sections) if s[1] == 8]
    cases = {
        # ELF header fields past the end, overflowing when added, huge counts
        "shoff at the end": c.patch(40, "<Q", n),
        "shoff max": c.patch(40, "<Q", U64),
        "shoff wraps": c.patch(40, "<Q", U64 - 63),
        "shoff 0 (over the ELF header)": c.patch(40, "<Q", 0),
        "shnum 65535": c.patch(60, "<H", 65535),
        "shentsize 65535": c.patch(58, "<H", 65535),
        "shentsize 0": c.patch(58, "<H", 0),
        "shnum 0": c.patch(60, "<H", 0),
        "shstrndx = shnum": c.patch(62, "<H", c.shnum),
        "shstrndx 65535": c.patch(62, "<H", 65535),
        "shstrndx is the symbol table": c.patch(62, "<H", symtab),
        "shstrndx is section 0": c.patch(62, "<H", 0),
        "phoff max": c.patch(32, "<Q", U64),
        "phnum 65535": c.patch(54, "<HH", 56, 65535),
        "phentsize 65535": c.patch(54, "<HH", 65535, 65535),
        "e_flags without SM": c.patch(48, "<I", 0),
        "e_flags all ones": c.patch(48, "<I", 0xFFFFFFFF),
        # section fields
        "symtab size max": c.patch_section(symtab, 32, U64),
        "symtab offset max": c.patch_section(symtab, 24, U64),
        "symtab offset wraps": c.patch_section(symtab, 24, U64 - 7),
        "symtab past the end": c.patch_section(symtab, 24, n),
        "symtab links itself": c.patch_section(symtab, 40, symtab),
        "symtab link 65535": c.patch_section(symtab, 40, 65535),
        "symtab link max": c.patch_section(symtab, 40, 0xFFFFFFFF),
        "symtab over the section headers": c.patch_section(symtab, 24, c.shoff),
        "nv.compat covers the file": Cubin(c.patch_section(compat, 24, 0)).patch_section(compat, 32, n),
        "nv.compat size max": c.patch_section(compat, 32, U64),
        "nv.info size wraps": c.patch_section(info, 32, U64 - 3),
        "nv.info info max": c.patch_section(info, 44, 0xFFFFFFFF),
        "nv.info over the section headers": Cubin(c.patch_section(info, 24, c.shoff)).patch_section(
            info, 32, 64 * c.shnum),
        "name index max": c.patch_section(info, 0, 0xFFFFFFFF),
        "name index at the table end": c.patch_section(info, 0, c.sections[c.shstrndx][5]),
    }
    if nobits:
        cases["shstrndx is NOBITS"] = c.patch(62, "<H", nobits[0])
        cases["symtab links NOBITS"] = c.patch_section(symtab, 40, nobits[0])
        cases["NOBITS offset max"] = c.patch_section(nobits[0], 24, U64)
    # every section on the same bytes (overlap), and every section named like section 1
    everything = c.data
    same_name = c.data
    for i in range(1, c.shnum):
        everything = Cubin(Cubin(everything).patch_section(i, 24, 0)).patch_section(i, 32, n)
        same_name = Cubin(same_name).patch_section(i, 0, c.sections[1][0])
    cases["all sections overlap the file"] = everything
    cases["all sections share one name"] = same_name
    # attribute records whose size runs past their section
    start, size = c.sections[info][4], c.sections[info][5]
    b = bytearray(cubin)
    struct.pack_into("<BBH", b, start, 4, 0x17, 0xFFFF)
    cases["nv.info record past its section"] = bytes(b)
    return cases


def _fatbin_cases(cubin: bytes, ptx_text: bytes):
    return {
        "fatbin header size max": fatbin([(2, 90, cubin)], header_size=0xFFFF),
        "fatbin header size 0": fatbin([(2, 90, cubin)], header_size=0),
        "fatbin payload max": fatbin([(2, 90, cubin)], payload_size=U64),
        "fatbin payload wraps": fatbin([(2, 90, cubin)], payload_size=U64 - 15),
        "fatbin image header max": fatbin([{"payload": cubin, "header": 0xFFFFFFFF}]),
        "fatbin image header 0": fatbin([{"payload": cubin, "header": 0}]),
        "fatbin image size max": fatbin([{"payload": cubin, "size": U64}]),
        "fatbin image size wraps": fatbin([{"payload": cubin, "size": U64 - 63}]),
        "fatbin image sm max": fatbin([(2, 0xFFFFFFFF, cubin)]),
        "fatbin image sm 2**31": fatbin([(2, 2**31, cubin)]),
        "fatbin of a fatbin": fatbin([(2, 90, fatbin([(2, 90, cubin)]))]),
        "fatbin of many empty images": fatbin([(1, 90, b"")] * 20000 + [(2, 90, cubin)]),
        "fatbin compressed only": fatbin([{"payload": cubin, "flags": 0x2011}]),
        "fatbin of PTX": fatbin([(1, 90, ptx_text)]),
    }


def _ptx_cases():
    """PTX numbers and parameter lists."""
    k = ".visible .entry k(\n{}\n)\n{{\nret;\n}}\n"
    return {
        "ptx target 2**32+90": ptx(k.format(".param .u64 p"), target="sm_4294967386"),
        "ptx target 30 digits": ptx(k.format(".param .u64 p"), target="sm_" + "9" * 30),
        "ptx target 2**31": ptx(k.format(".param .u64 p"), target="sm_2147483648"),
        "ptx version 2**32": ptx(k.format(".param .u64 p"), version="4294967296.0"),
        "ptx version 30 digits": ptx(k.format(".param .u64 p"), version="9" * 30 + ".1"),
        "ptx minor 30 digits": ptx(k.format(".param .u64 p"), version="8." + "9" * 30),
        "ptx array 2**64-1": ptx(k.format(".param .b8 p[18446744073709551615]")),
        "ptx array 2**64": ptx(k.format(".param .b8 p[18446744073709551616]")),
        "ptx array product overflows": ptx(k.format(".param .b64 p[4294967296][4294967296]")),
        "ptx array size overflows": ptx(k.format(".param .b64 p[2305843009213693952]")),
        "ptx align 2**64-1": ptx(k.format(".param .u32 a, .param .align 18446744073709551615 .b8 p[4]")),
        "ptx align 0": ptx(k.format(".param .align 0 .b8 p[4]")),
        "ptx negative array": ptx(k.format(".param .b8 p[-1]")),
        "ptx long name": ptx(k.format(".param .u64 " + "p" * 100000)),
        "ptx long entry name": ptx(".visible .entry " + "k" * 100000 + "()\n{\nret;\n}\n"),
        "ptx 100k entries": ptx("".join(f".visible .entry k{i}()\n{{\nret;\n}}\n" for i in range(100000))),
        "ptx many params": ptx(k.format(",\n".join(f".param .u32 p{i}" for i in range(100000)))),
        "ptx unclosed params": ptx(".visible .entry k(\n.param .u64 p"),
        "ptx entry at the end": ptx(".visible .entry"),
    }


def truncation_cases(cubin: bytes, ptx_text: bytes):
    fat = fatbin([(2, 90, cubin), (1, 90, ptx_text)])
    cases = {f"cubin[:{cut}]": cubin[:cut] for cut in Cubin(cubin).interesting_offsets()}
    cases.update({f"fatbin[:{cut}]": fat[:cut] for cut in range(len(fat))})
    cases.update({f"ptx[:{cut}]": ptx_text[:cut] for cut in range(0, len(ptx_text), 7)})
    return cases


def outcome(data: bytes) -> dict:
    try:
        info = inspect_binary(data)
    except jk.ArgumentError as e:
        return {"error": e.argument, "message": str(e)[:300]}
    except Exception as e:  # noqa: BLE001 - what must not happen
        return {"other": f"{type(e).__name__}: {e}"[:300]}
    entries = info["entries"]
    result = {"ok": info["format"], "arch": info["arch"], "entries": None if entries is None else len(entries)}
    if entries and len(entries) == 1:
        sizes = next(iter(entries.values()))
        result["sizes"] = sizes if sizes is None or len(sizes) <= 4 else len(sizes)
    return result


# --- bombs: one parse per child, with its memory measured ----------------------------------------------------


def bomb(name: str) -> bytes:
    if name == "one name for 65535 sections":
        # 64 KiB section name table; 65535 section headers all naming its one 64 KiB string.
        names = b"A" * 65535 + b"\0"
        shoff = 64 + len(names)
        headers = section(name=0, type=3, offset=64, size=len(names)) * 65535
        return elf_header(shoff=shoff, shnum=65535, shstrndx=0) + names + headers
    if name == "65535 overlapping .nv.compat sections":
        # 1 MiB of .nv.compat records, covered by each of 65535 sections.
        names = b"\0.nv.compat\0"
        records = struct.pack("<BBH", 2, 3, 0) * (1 << 18)
        shoff = 64 + len(names) + len(records)
        headers = section(type=3, offset=64, size=len(names))
        headers += section(name=1, type=0x70000086, offset=64 + len(names), size=len(records)) * 65534
        return elf_header(shoff=shoff, shnum=65535, shstrndx=0) + names + records + headers
    if name == "PTX of one-character tokens":
        return ptx(".visible .entry k()\n{\nret;\n}\n" + "(" * (5 << 20))
    if name == "entry symbols sharing one 64 KiB name":
        # 174,000 entry-point symbols (STT_FUNC, st_other 0x10) all named by one 64 KiB string.
        names = b"\0.symtab\0.strtab\0"
        strings = b"\0" + b"k" * 65535 + b"\0"
        symbols = struct.pack("<IBBHQQ", 1, 0x12, 0x10, 0, 0, 0) * 174000
        offset = 64
        sections = [section(), section(name=1, type=2, offset=offset + len(names) + len(strings), size=len(symbols),
                                        link=3),
                    section(name=9, type=3, offset=offset, size=len(names)),
                    section(name=9, type=3, offset=offset + len(names), size=len(strings))]
        shoff = offset + len(names) + len(strings) + len(symbols)
        return elf_header(shoff=shoff, shnum=len(sections), shstrndx=2) + names + strings + symbols + b"".join(
            sections)
    raise KeyError(name)


BOMBS = ["one name for 65535 sections", "65535 overlapping .nv.compat sections", "PTX of one-character tokens",
         "entry symbols sharing one 64 KiB name"]


def _limit_address_space(extra: int):
    """Caps this process's address space at its current size plus `extra`, so a regression fails with an error
    here instead of taking the machine's memory."""
    import resource

    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[0])
    limit = pages * os.sysconf("SC_PAGE_SIZE") + extra
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def child(kind: str, arg: str, binaries: str):
    """Entry point of the child process: prints one JSON line."""
    import gc
    import resource

    if kind == "bomb":
        data = bomb(arg)
        _limit_address_space(1 << 30)
        gc.collect()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        result = outcome(data)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(json.dumps({"outcome": result, "size": len(data), "growth": after - before}))
        return
    with open(binaries, "rb") as f:
        cubin_len, = struct.unpack("<Q", f.read(8))
        blob = f.read()
    cubin, ptx_text = blob[:cubin_len], blob[cubin_len:]
    cases = (structural_cases if kind == "structural" else truncation_cases)(cubin, ptx_text)
    print(json.dumps({label: outcome(data) for label, data in cases.items()}))


def run_child(kind, arg="", binaries="", timeout=120):
    script = (f"import sys; sys.path.insert(0, {HERE!r}); import test_binary_corpus as t; "
              f"t.child({kind!r}, {arg!r}, {binaries!r})")
    try:
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"parsing {kind} {arg!r} did not finish in {timeout} s")
    assert p.returncode == 0, f"the child process died (exit status {p.returncode}): {p.stderr[-3000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def binaries(tmp_path_factory):
    try:
        cubin = jk.compile_cuda(SOURCE, arch="sm_90a", target="cubin")
        ptx_text = jk.compile_cuda(SOURCE, arch="sm_90a", target="ptx")
    except jk.CudaNotAvailableError as e:
        pytest.skip(f"NVRTC not available: {e}")
    path = tmp_path_factory.mktemp("corpus") / "binaries"
    path.write_bytes(struct.pack("<Q", len(cubin)) + cubin + ptx_text)
    return str(path)


def assert_typed(label, result):
    assert "other" not in result, f"{label}: {result['other']}"
    if "error" in result:
        assert result["error"] == "compiled_source", f"{label}: {result}"
        assert result["message"].startswith("compiled_source: "), f"{label}: {result}"


# --- tests -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BOMBS)
def test_bombs_parse_in_linear_memory(name):
    result = run_child("bomb", name)
    assert_typed(name, result["outcome"])
    limit = 32 * 2**20 + 16 * result["size"]
    assert result["growth"] < limit, f"{name}: parsing {result['size']} bytes took {result['growth']} bytes"


def test_crafted_structures_give_typed_errors_or_parse(binaries):
    results = run_child("structural", binaries=binaries)
    for label, result in results.items():
        assert_typed(label, result)
    # What must be refused, not read as something else.
    for label in ("ptx target 2**32+90", "ptx target 30 digits", "ptx target 2**31", "ptx version 2**32",
                  "ptx version 30 digits", "ptx minor 30 digits", "fatbin image sm max", "fatbin image sm 2**31",
                  "shoff max", "shoff wraps", "symtab size max", "symtab offset max", "fatbin payload max",
                  "fatbin payload wraps", "fatbin image size max", "fatbin image size wraps",
                  "all sections overlap the file", "shstrndx 65535"):
        assert "error" in results[label], f"{label}: {results[label]}"
    for label in ("ptx array 2**64", "ptx array product overflows", "ptx array size overflows",
                  "ptx align 2**64-1", "ptx negative array"):
        # a layout that cannot be computed is an error or unknown, never a wrapped size
        result = results[label]
        assert "error" in result or result["sizes"] is None, f"{label}: {result}"
    # What is valid parses.
    assert results["ptx 100k entries"] == {"ok": "ptx", "arch": "sm_90", "entries": 100000}
    assert results["ptx many params"] == {"ok": "ptx", "arch": "sm_90", "entries": 1, "sizes": 100000}
    assert results["ptx array 2**64-1"]["sizes"] == [2**64 - 1]
    assert results["all sections share one name"].get("ok") == "cubin" or "error" in results[
        "all sections share one name"]
    assert results["fatbin of many empty images"] == {"ok": "fatbin", "arch": None, "entries": 2}


def test_sm_number_beyond_int_is_an_error_naming_it():
    # 2**32 + 90 wrapped to sm_90 in a 32-bit int.
    with pytest.raises(jk.ArgumentError) as info:
        inspect_binary(ptx(".visible .entry k()\n{\nret;\n}\n", target="sm_4294967386"))
    assert info.value.argument == "compiled_source"
    assert str(info.value).startswith("compiled_source: ") and "4294967386" in str(info.value)


def test_huge_ptx_parameter_array_is_not_wrapped():
    # 2**61 elements of 8 bytes: 2**64 bytes, which wrapped to a 0-byte parameter.
    text = ptx(".visible .entry k(\n.param .b64 p[2305843009213693952]\n)\n{\nret;\n}\n")
    try:
        sizes = inspect_binary(text)["entries"]["k"]
    except jk.ArgumentError as e:
        assert e.argument == "compiled_source"
    else:
        assert sizes is None


def test_every_truncation_gives_a_typed_error_or_parses(binaries):
    results = run_child("truncation", binaries=binaries)
    assert len(results) > 1000
    for label, result in results.items():
        assert_typed(label, result)
    for label, result in results.items():
        if label.startswith("cubin[:"):  # a cubin cut anywhere loses data the driver would load
            assert "error" in result, f"{label}: {result}"


def test_missing_entry_message_names_a_few_of_100k_entries():
    import numpy as np

    text = ptx("".join(f".visible .entry k{i}()\n{{\nret;\n}}\n" for i in range(100000)))
    with pytest.raises(jk.ArgumentError) as info:
        jk.precompiled_cuda_kernel(name="absent", compiled_source=text, inputs=[], output_shapes=[(1,)],
                                   output_dtypes=[np.float32], scalars=[], grid=(1, 1, 1), threadgroup=(1, 1, 1))
    message = str(info.value)
    assert info.value.argument == "name" and "k0, k1" in message and "more" in message
    assert len(message) < 4096
