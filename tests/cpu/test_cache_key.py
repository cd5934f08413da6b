"""The compile cache's keys: SHA-256 against the FIPS 180-4 test vectors (both the portable code and the CPU's SHA
extensions where present), and the compile key, which must change with everything that changes the binary (source,
program name, architecture, target, every option, the NVRTC library, the headers it can include) and nothing else.
Through the public API: kernels that differ in body, header, template arguments, dtypes, architecture or target get
entries of their own in the cache folder; the same kernel compiled again gets none.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core

# FIPS 180-4 / NIST example vectors.
VECTORS = [
    (b"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    (b"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    (b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    (b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
     b"ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
     "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
    (b"a" * 1_000_000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
]


@pytest.mark.parametrize("portable", [False, True], ids=["fastest", "portable"])
@pytest.mark.parametrize("data,digest", VECTORS, ids=["empty", "abc", "448 bits", "896 bits", "million a"])
def test_sha256_vectors(data, digest, portable):
    assert _core._sha256(data, portable) == digest


@pytest.mark.parametrize("portable", [False, True], ids=["fastest", "portable"])
def test_sha256_every_padding_length(portable):
    rng = random.Random(4)
    for size in list(range(0, 200)) + [1000, 4095, 4096, 4097, 65 * 1024 + 3]:
        data = bytes(rng.getrandbits(8) for _ in range(size))
        assert _core._sha256(data, portable) == hashlib.sha256(data).hexdigest(), size


SOURCE = '#include <cuda_fp16.h>\nextern "C" __global__ void k(float* out) { out[0] = 1; }\n'


def key(**overrides):
    args = dict(source=SOURCE, program_name="k.cu", arch="sm_90a", target="cubin")
    args.update(overrides)
    return _core._cache_compile_key(**args)


def test_key_is_stable_and_hex():
    k = key()
    assert k == key()
    assert len(k) == 64 and int(k, 16) >= 0


@pytest.mark.parametrize("change", [
    dict(source=SOURCE + " "),
    dict(program_name="other.cu"),
    dict(arch="sm_80"),
    dict(target="ptx"),
    dict(compiler="build-id 00 size 1"),  # another NVRTC release
    dict(options=["--gpu-architecture=sm_90a", "--std=c++17"]),
    dict(include_dirs=[]),
], ids=["source", "program name", "arch", "target", "nvrtc", "options", "include dirs"])
def test_key_changes_with_every_part(change):
    assert key(**change) != key()


def test_key_changes_with_each_option_and_its_order():
    base = ["--gpu-architecture=sm_90a", "--std=c++17", "-I/x"]
    keys = {key(options=base), key(options=base + ["--minimal"]), key(options=base[:2]),
            key(options=[base[1], base[0], base[2]]), key(options=["--gpu-architecture=sm_90a", "--std=c++17 -I/x"])}
    assert len(keys) == 5


def test_key_changes_when_nvrtc_library_changes():
    # The library is identified by its ELF build-id (changes with every release), not its path or mtime.
    assert key(compiler="build-id aa size 10") != key(compiler="build-id ab size 10")
    assert key(compiler="build-id aa size 10") == key(compiler="build-id aa size 10")


def test_key_follows_included_headers(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    header = inc / "helper.h"
    header.write_text("#define SCALE 2\n")
    source = '#include "helper.h"\nextern "C" __global__ void k(float* o) { o[0] = SCALE; }\n'
    first = key(source=source, include_dirs=[str(inc)])
    assert key(source=source, include_dirs=[str(inc)]) == first
    header.write_text("#define SCALE 3\n")
    os.utime(header, ns=(1, 1))  # a rewrite changes size or mtime; make sure both differ from before
    assert key(source=source, include_dirs=[str(inc)]) != first


def test_include_targets():
    text = ('#include <cuda_fp16.h>\n  #  include "my/helper.h"\n#include <>\n#define X 1\n'
            '// #include <in_comment.h> is not a directive\n#include<cooperative_groups.h>')
    assert _core._cache_include_targets(text) == ["cuda_fp16.h", "my/helper.h", "cooperative_groups.h"]


def test_key_rejects_bad_target():
    with pytest.raises(jk.ArgumentError, match="target"):
        key(target="sass")


# ---- through the public API: distinct binaries get distinct entries ----------------------------------------------

def entries(folder):
    return sorted(p.name for p in (folder / "kernels").glob("*.jkc"))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(folder))
    _core._cache_reset()
    yield folder
    monkeypatch.undo()
    _core._cache_reset()


F32 = np.zeros(8, np.float32)


def scale_kernel(body="out[i] = inp[i] * 2;", header=""):
    return jk.cuda_kernel(name="scale", input_names=["inp"], output_names=["out"],
                          source="auto i = threadIdx.x; " + body, header=header)


VARIANTS = {
    "base": (scale_kernel(), dict(inputs=[F32], output_dtypes=[np.float32])),
    "body": (scale_kernel("out[i] = inp[i] * 3;"), dict(inputs=[F32], output_dtypes=[np.float32])),
    "header": (scale_kernel(header="// v2\n"), dict(inputs=[F32], output_dtypes=[np.float32])),
    "input dtype": (scale_kernel(), dict(inputs=[F32.astype(np.float64)], output_dtypes=[np.float32])),
    "output dtype": (scale_kernel(), dict(inputs=[F32], output_dtypes=[np.float64])),
    "arch": (scale_kernel(), dict(inputs=[F32], output_dtypes=[np.float32], arch="sm_80")),
    "target": (scale_kernel(), dict(inputs=[F32], output_dtypes=[np.float32], target="ptx")),
}
TEMPLATED = jk.cuda_kernel(name="tmpl", input_names=["inp"], output_names=["out"],
                           source="out[threadIdx.x] = inp[threadIdx.x] * N;")


def test_each_variant_gets_its_own_entry(cache_dir):
    # (An input's ndim is not among them: it reaches the kernel as a parameter, so the source and binary are the
    # same, and so is the entry.)
    seen = set()
    for name, (kernel, args) in VARIANTS.items():
        kernel.compile(**args)
        now = set(entries(cache_dir))
        assert len(now - seen) == 1, f"{name} did not add exactly one entry"
        seen = now
    for n in (2, 3):
        TEMPLATED.compile(inputs=[F32], output_dtypes=[np.float32], template=[("N", n)])
    assert len(entries(cache_dir)) == len(VARIANTS) + 2
    info = jk.cache_info()
    assert (info.stores, info.hits) == (len(VARIANTS) + 2, 0)


def test_same_kernel_again_is_a_hit(cache_dir):
    kernel, args = VARIANTS["base"]
    first = kernel.compile(**args)
    again = scale_kernel().compile(**args)  # a new kernel object with the same text
    assert again == first
    assert len(entries(cache_dir)) == 1
    info = jk.cache_info()
    assert (info.stores, info.hits, info.misses) == (1, 1, 1)


def test_compile_cuda_uses_the_cache(cache_dir):
    src = 'extern "C" __global__ void k(float* o) { o[threadIdx.x] = 1.5f; }'
    a = jk.compile_cuda(src)
    b = jk.compile_cuda(src)
    c = jk.compile_cuda(src, name="other.cu")  # __FILE__ differs: its own entry
    assert a == b and c[:4] == b"\x7fELF"
    assert len(entries(cache_dir)) == 2
    assert jk.cache_info().hits == 1


# ---- keys are content addresses: nothing of the process, the install path or the install time -------------------

def fake_toolkit(folder, version="13000"):
    """A folder the key treats as a toolkit's (it holds cuda_runtime_api.h), with one header the source includes."""
    folder.mkdir()
    (folder / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION {version}\n" + "// api\n" * 50)
    (folder / "cuda_fp16.h").write_text('#include "cuda_fp16.hpp"\n')
    (folder / "cuda_fp16.hpp").write_text("struct __half { unsigned short x; };\n")
    return str(folder)


def toolkit_key(folder):
    return key(include_dirs=[folder], options=["--gpu-architecture=sm_90a", "-I" + folder])


def test_same_toolkit_at_another_path_and_time_gives_the_same_key(tmp_path):
    first, second = fake_toolkit(tmp_path / "site-a"), fake_toolkit(tmp_path / "b")
    for name in os.listdir(second):
        os.utime(os.path.join(second, name), ns=(10**18, 10**18))  # installed at another time
    assert toolkit_key(first) == toolkit_key(second)
    # A user folder (not a toolkit) is still keyed by its path.
    user_a, user_b = tmp_path / "ua", tmp_path / "ub"
    user_a.mkdir(), user_b.mkdir()
    assert key(include_dirs=[str(user_a)]) != key(include_dirs=[str(user_b)])


@pytest.mark.parametrize("edit", ["version", "header size"])
def test_another_toolkit_release_gives_another_key(tmp_path, edit):
    base, other = fake_toolkit(tmp_path / "a"), fake_toolkit(tmp_path / "b")
    if edit == "version":  # same size, another version macro
        (tmp_path / "b" / "cuda_runtime_api.h").write_text("#define CUDART_VERSION 13010\n" + "// api\n" * 50)
    else:  # a header the source reaches, inside the toolkit
        (tmp_path / "b" / "cuda_fp16.hpp").write_text("struct __half { unsigned short x; int y; };\n")
    assert toolkit_key(base) != toolkit_key(other)


KEY_SCRIPT = """
import json, os, numpy as np, jitkernel as jk
k = jk.cuda_kernel(name="scaled", input_names=["x"], output_names=["y"],
                   source="auto i = cooperative_groups::this_grid().thread_rank(); y[i] = x[i] + x[i];")
k.compile(inputs=[np.zeros(4, np.float16)], output_dtypes=[np.float16], arch="sm_90a")
k.compile(inputs=[np.zeros(4, np.float32)], output_dtypes=[np.float32], arch="sm_80", target="ptx")
print(json.dumps(sorted(os.listdir(os.path.join(os.environ["JITKERNEL_CACHE_DIR"], "kernels")))))
"""


def test_two_interpreters_make_the_same_keys(tmp_path):
    # Different hash seeds, working folders, temp folders and cache folders (so PIDs and paths differ too).
    names = []
    for i, seed in enumerate(["1", "4242"]):
        work = tmp_path / f"work{i}"
        (work / "tmp").mkdir(parents=True)
        env = dict(os.environ, PYTHONHASHSEED=seed, TMPDIR=str(work / "tmp"),
                   JITKERNEL_CACHE_DIR=str(work / "cache"))
        out = subprocess.run([sys.executable, "-c", KEY_SCRIPT], env=env, cwd=work, capture_output=True, text=True,
                             timeout=240)
        assert out.returncode == 0, out.stderr
        names.append(json.loads(out.stdout.splitlines()[-1]))
    # Two binaries and their serving aliases, named alike in both processes.
    assert sorted(name[-4:] for name in names[0]) == [".jka", ".jka", ".jkc", ".jkc"] and names[0] == names[1]
