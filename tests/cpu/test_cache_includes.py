"""The compile cache never serves a binary built from headers that have changed since: the key covers the content of
every file a compile can read through ``#include`` outside the toolkit's folders, wherever it was found (absolute
path, a path relative to the program's folder, a ``JITKERNEL_INCLUDE_PATH`` folder, nested in another header, named by
``__has_include``), and the places looked at before it (a file created there later is found instead).

Each kernel's value comes from a macro in a header. One process compiles every kernel (storing it), the headers are
edited (same size, modification time set back, so only their content tells), and a new process compiles them again
with the cache on and with it off: both must agree and differ from the first. An ``#include`` whose file is named by
a macro cannot be followed before compiling: such a kernel is never stored on disk, with one CacheWarning.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import jitkernel as jk
from jitkernel import _core

# Child process: compiles each job (cubin for sm_90a; no GPU needed) and prints, per job, the SHA-256 of the binary,
# whether the disk cache answered, and with "fresh" also the binary compiled with the cache off.
CHILD = r"""
import hashlib, json, os, sys, warnings
import numpy as np
import jitkernel as jk
from jitkernel import _core
jobs, fresh = json.loads(sys.argv[1]), sys.argv[2] == "fresh"

def build(job):
    if job["kind"] == "compile_cuda":
        src = job["header"] + '\nextern "C" __global__ void k(float* o) { o[0] = VALUE; }\n'
        return jk.compile_cuda(src, name=job["name"] + ".cu")
    kernel = jk.cuda_kernel(name=job["name"], input_names=["inp"], output_names=["out"], header=job["header"],
                            source="out[threadIdx.x] = inp[threadIdx.x] * VALUE;")
    return kernel.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])

out = {}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for job in jobs:
        hits = jk.cache_info().hits
        out[job["name"]] = {"cached": hashlib.sha256(build(job)).hexdigest(), "hit": jk.cache_info().hits > hits}
out["_warnings"] = [str(w.message) for w in caught if issubclass(w.category, jk.CacheWarning)]
if fresh:
    os.environ["JITKERNEL_CACHE"] = "0"
    _core._cache_reset()
    for job in jobs:
        out[job["name"]]["fresh"] = hashlib.sha256(build(job)).hexdigest()
print(json.dumps(out))
"""


def write_same_size(path, text):
    """Rewrites `path` with `text` (same length as before) and sets its modification time back, so that only the
    content differs."""
    before = os.stat(path)
    assert len(text.encode()) == before.st_size
    with open(path, "w") as f:
        f.write(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    root = tmp_path_factory.mktemp("includes")
    for sub in ("work", "other", "abs", "inc", "nest/mid", "cache"):
        (root / sub).mkdir(parents=True)
    value = "#define VALUE 2\n"
    files = {
        "abs/abs.h": value,
        "other/rel.h": value,
        "work/near.h": value,
        "inc/dir.h": value,
        "nest/top.h": '#include "mid/mid.h"\n',
        "nest/mid/mid.h": '#pragma once\n#include "deep.h"\n',
        "nest/mid/deep.h": value,
        "inc/shadowed.h": value,
        "abs/cc.h": value,
        "abs/computed.h": value,
        "abs/same.h": value,
    }
    for name, text in files.items():
        (root / name).write_text(text)
    return root


# name -> (how the kernel reaches its header, the header= text (or compile_cuda's first lines), file edited/created)
def scenarios(root):
    return {
        "absolute": ("kernel", f'#include "{root}/abs/abs.h"', "abs/abs.h"),
        "relative": ("kernel", '#include "../other/rel.h"', "other/rel.h"),
        "program_folder": ("kernel", '#include "near.h"', "work/near.h"),
        "include_path": ("kernel", "#include <dir.h>", "inc/dir.h"),
        "nested": ("kernel", f'#include "{root}/nest/top.h"', "nest/mid/deep.h"),
        "shadowing": ("kernel", '#include "shadowed.h"', "work/shadowed.h"),  # created in the program's folder
        "has_include": ("kernel", '#if __has_include("optional.h")\n#include "optional.h"\n#else\n#define VALUE 2\n'
                                  "#endif", "work/optional.h"),
        "compile_cuda": ("compile_cuda", f'#include "{root}/abs/cc.h"', "abs/cc.h"),
        "computed": ("kernel", f'#define THE_HEADER "{root}/abs/computed.h"\n#include THE_HEADER',
                     "abs/computed.h"),
        "unchanged": ("kernel", f'#include "{root}/abs/same.h"', None),
    }


def run_child(root, jobs, mode):
    env = dict(os.environ, JITKERNEL_CACHE_DIR=str(root / "cache"), JITKERNEL_INCLUDE_PATH=str(root / "inc"))
    env.pop("JITKERNEL_CACHE", None)
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(jobs), mode], cwd=root / "work", env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs(layout):
    root = layout
    cases = scenarios(root)
    jobs = [dict(name=name, kind=kind, header=header) for name, (kind, header, _) in cases.items()]
    first = run_child(root, jobs, "cached")
    for name, (_, _, edited) in cases.items():
        if edited is None:
            continue
        path = root / edited
        if path.exists():
            write_same_size(path, path.read_text().replace("VALUE 2", "VALUE 3"))
        else:
            path.write_text("#define VALUE 3\n")
    second = run_child(root, jobs, "fresh")
    return first, second


EDITED = ["absolute", "relative", "program_folder", "include_path", "nested", "shadowing", "has_include",
          "compile_cuda", "computed"]


@pytest.mark.parametrize("name", EDITED)
def test_edited_header_is_never_served_stale(runs, name):
    first, second = runs
    assert second[name]["cached"] == second[name]["fresh"], "the cache served a binary a fresh compile does not make"
    assert second[name]["cached"] != first[name]["cached"], "the header's new value did not reach the binary"


def test_unchanged_headers_still_hit(runs):
    first, second = runs
    assert second["unchanged"]["hit"]
    assert second["unchanged"]["cached"] == first["unchanged"]["cached"] == second["unchanged"]["fresh"]


def test_computed_include_is_kept_in_memory_only(runs):
    first, second = runs
    assert not first["computed"]["hit"] and not second["computed"]["hit"]
    for run in (first, second):
        said = [m for m in run["_warnings"] if "#include THE_HEADER" in m]
        assert len(said) == 1, run["_warnings"]


def test_computed_include_stores_no_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    _core._cache_reset()
    try:
        header = tmp_path / "v.h"
        header.write_text("#define VALUE 5\n")
        kernel = jk.cuda_kernel(name="computed_only", input_names=["inp"], output_names=["out"],
                                header=f'#define H "{header}"\n#include H',
                                source="out[threadIdx.x] = inp[threadIdx.x] * VALUE;")
        args = dict(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel.compile(**args)
            kernel.compile(**args)
        said = [w for w in caught if issubclass(w.category, jk.CacheWarning)]
        assert len(said) == 1 and "#include H" in str(said[0].message), [str(w.message) for w in caught]
        info = jk.cache_info()
        assert (info.entries, info.stores, info.hits) == (0, 0, 0)
    finally:
        monkeypatch.undo()
        _core._cache_reset()
