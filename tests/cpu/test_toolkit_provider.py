"""The core finds the toolkit itself on whatever path first needs NVRTC or the CUDA headers: a fresh process that
compiles the builtin copy/fill kernels (what a precompiled launch compiles first, through an entry point that
does nothing about the toolkit beforehand) loads the NVRTC the package's search finds (the pip wheels here), not a
library guessed by name, and compiles with that search's header folders.

Each check runs in a fresh process (the toolkit is resolved once per process), with the compile cache off so that
no toolkit record of another test is used; threads that need the toolkit at once share one resolution (none
deadlocks, whether it holds the GIL or not).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import jitkernel as jk
from jitkernel import _toolkit_search

PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(jk.__file__)))
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps: Linux only")

# Compiles the builtin kernels right after import, then reports what NVRTC the process mapped.
PROBE = textwrap.dedent("""
    import json, sys
    import jitkernel as jk
    from jitkernel import _core
    result = {}
    try:
        result["cubin_bytes"] = len(_core._compile_builtin_kernels("sm_90a"))
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
    with open("/proc/self/maps") as maps:
        result["mapped"] = sorted({line.split()[-1] for line in maps if "libnvrtc.so" in line})
    result["paths"] = _core.toolkit_paths()
    print(json.dumps(result))
""")


def probe(script: str = PROBE, **env_overrides) -> dict:
    """Runs ``script`` in a fresh interpreter with the compile cache off; the JSON it prints last."""
    env = dict(os.environ, JITKERNEL_CACHE="0")
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_PARENT, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(env_overrides)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def searched():
    tk = _toolkit_search.search()
    if tk.nvrtc_missing or not os.path.isfile(tk.nvrtc_library):
        pytest.fail(f"NVRTC is not installed ({_toolkit_search.search_notes()}): pip install \"jitkernel[cuda]\"")
    return tk


def test_builtin_kernels_compile_with_the_searched_toolkit(searched):
    out = probe()
    assert "error" not in out, out.get("error")
    assert out["cubin_bytes"] > 0
    # The NVRTC mapped is the file the search found, by path (not a soname the loader resolved).
    assert out["mapped"] == [os.path.realpath(searched.nvrtc_library)]
    assert out["paths"] == dict(nvrtc_library=searched.nvrtc_library, nvrtc_preload=searched.nvrtc_preload,
                                include_dirs=searched.include_dirs)


def test_explicit_nvrtc_path_is_what_the_core_loads(searched, tmp_path):
    # The environment steers the search the core asks for, as it did when every entry asked first.
    lib = tmp_path / "libnvrtc.so.13"
    lib.symlink_to(os.path.realpath(searched.nvrtc_library))
    out = probe(JITKERNEL_NVRTC_PATH=str(lib))
    assert "error" not in out, out.get("error")
    assert out["paths"]["nvrtc_library"] == str(lib)
    assert out["mapped"] == [os.path.realpath(searched.nvrtc_library)]


THREADS = textwrap.dedent("""
    import json, threading
    import jitkernel as jk
    from jitkernel import _core
    errors, sizes = [], []
    def work(i):
        try:  # half ask holding the GIL, half without it: one resolves, the others wait for it
            sizes.append(len(_core._compile_builtin_kernels("sm_90a")) if i % 2 else _core.nvrtc_version()[0])
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    print(json.dumps(dict(errors=errors, done=len(sizes), alive=sum(t.is_alive() for t in threads),
                          paths=_core.toolkit_paths())))
""")


def test_threads_that_need_the_toolkit_at_once_resolve_it_once(searched):
    out = probe(THREADS)
    assert out["errors"] == [] and out["alive"] == 0 and out["done"] == 8
    assert out["paths"]["nvrtc_library"] == searched.nvrtc_library
