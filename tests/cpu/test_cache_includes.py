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
import random
import subprocess
import sys
import time
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


@pytest.mark.parametrize("header,said", [
    ('#define H "{path}"\n#include H', "'#include H'"),
    ('#define HAS __has_include\n#if HAS("{path}")\n#include "{path}"\n#endif', "'__has_include'"),
], ids=["include macro", "has_include macro"])
def test_computed_include_stores_no_entry(tmp_path, monkeypatch, header, said):
    monkeypatch.setenv("JITKERNEL_CACHE_DIR", str(tmp_path / "cache"))
    _core._cache_reset()
    try:
        path = tmp_path / "v.h"
        path.write_text("#define VALUE 5\n")
        kernel = jk.cuda_kernel(name="computed_only", input_names=["inp"], output_names=["out"],
                                header=header.format(path=path),
                                source="out[threadIdx.x] = inp[threadIdx.x] * VALUE;")
        args = dict(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kernel.compile(**args)
            kernel.compile(**args)
        warned = [w for w in caught if issubclass(w.category, jk.CacheWarning)]
        assert len(warned) == 1 and said in str(warned[0].message), [str(w.message) for w in caught]
        info = jk.cache_info()
        assert (info.entries, info.stores, info.hits) == (0, 0, 0)
    finally:
        monkeypatch.undo()
        _core._cache_reset()


# ---- the scanner and the key, in process ------------------------------------------------------------------------

SCANNED = r'''#include "a.h"
  #  include <b.h>
# /* a comment */ include "c.h"
#inc\
lude "d.h"
%:include "e.h"
#include_next <f.h>
#if __has_include("g.h") && __has_include_next(<h.h>) && defined(__has_include) && defined __has_include_next
#endif
#ifdef __has_include
#endif
const char* s = "/*";
#include "i.h"
int x = 1'000'000; char c = '"';
#include "j.h"
auto r = R"raw(/* )" )raw";
#include "k.h"
/* #include "in_comment.h" */ #include "l.h"
#define H "m.h"
#include H
'''


def test_scanner_finds_every_form_of_include():
    # Names given by a macro (#include H) are not names: they make the key incomplete instead.
    assert _core._cache_include_targets(SCANNED) == [f"{c}.h" for c in "abcdefghijkl"]


def test_scanner_without_multiline_constructs():
    # Without block comments and raw strings the scanner lexes only the lines that mention "include".
    text = "\n".join(line for line in SCANNED.splitlines() if "/*" not in line and 'R"' not in line)
    assert _core._cache_include_targets(text) == [f"{c}.h" for c in "abdefghijk"]


FRAGMENTS = ["#define HAS __has_include", "#if HAS(<k.h>)", '#include "a.h"', "#include <b.h>", "  # include <c.h>", "%:include <d.h>", "#include_next <e.h>",
             '#if __has_include("f.h")', "#define H <g.h>", "#include H", "// #include <h.h>", 'x = "\\";',
             "c = '\"';", 'p = "#include <i.h>";', "n = 1'000'000;", "u8'x'", "\\", "\r", "", "int include;",
             '"unterminated', "'", '#include "j.h" // trailing', "a / b;", "%:", "#"]


def test_scanner_lines_alone_equal_the_whole_text():
    # The lexer over lines that mention "include" and over the whole text (which a block comment forces) agree.
    rng = random.Random(7)
    for _ in range(400):
        text = "\n".join(rng.choice(FRAGMENTS) for _ in range(rng.randrange(1, 12)))
        assert _core._cache_include_targets(text) == _core._cache_include_targets(text + "\n/**/"), text


def test_scanner_survives_backslash_before_carriage_return():
    # A backslash before a lone CR is not a line splice; the scanner must neither loop nor crash (a child process,
    # as a crash would take the interpreter with it).
    code = ("from jitkernel import _core\n"
            "for text in ['\\\\\\r#include \"a.h\"', 'x\\\\\\r', '\\\\\\r\\\\\\n#include <b.h>']:\n"
            "    print(_core._cache_include_targets(text))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)  # a hang guard
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:3] == ["['a.h']", "[]", "['b.h']"]


def key_of(source, program, dirs):
    return _core._cache_compile_key(source=source, program_name=str(program), arch="sm_90a", target="cubin",
                                    include_dirs=[str(d) for d in dirs])


def test_key_follows_content_after_it_was_memoized(tmp_path):
    # Hashes are reused while a file's stat is unchanged and it was last changed over the timestamps' resolution
    # (2 s) before: wait that long so that the second key really comes from the memo.
    header = tmp_path / "helper.h"
    header.write_text("#define VALUE 2\n")
    time.sleep(2.2)
    source = '#include "helper.h"\n'
    first = key_of(source, tmp_path / "k.cu", [])
    assert key_of(source, tmp_path / "k.cu", []) == first
    write_same_size(header, "#define VALUE 3\n")
    assert key_of(source, tmp_path / "k.cu", []) != first


def test_key_sees_a_file_created_where_the_search_looks_first(tmp_path):
    early, late = tmp_path / "early", tmp_path / "late"
    early.mkdir()
    late.mkdir()
    (late / "x.h").write_text("#define VALUE 2\n")
    for source in ("#include <x.h>\n", '#include "x.h"\n'):
        program = tmp_path / "k.cu"  # "x.h" is looked for next to it first, <x.h> only in the folders
        before = key_of(source, program, [early, late])
        (early / "x.h").write_text("#define VALUE 2\n")  # the same content, found elsewhere
        assert key_of(source, program, [early, late]) != before
        (early / "x.h").unlink()
        assert key_of(source, program, [early, late]) == before
        (tmp_path / "x.h").write_text("#define VALUE 2\n")
        changed = key_of(source, program, [early, late]) != before
        assert changed == (source == '#include "x.h"\n')
        (tmp_path / "x.h").unlink()


def test_relative_names_are_keyed_by_the_current_folder(tmp_path, monkeypatch):
    for sub in ("one", "two"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "x.h").write_text("#define VALUE 2\n")
    keys = set()
    for sub in ("one", "two"):
        monkeypatch.chdir(tmp_path / sub)
        keys.add(key_of('#include "x.h"\n', "k.cu", []))
    assert len(keys) == 2
