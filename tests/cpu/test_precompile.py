"""Ahead-of-time builds without a GPU: ``jk.precompile`` / ``python -m jitkernel precompile`` from a user function
and from a call record (``JITKERNEL_RECORD``), for sm_80, sm_90a and sm_100a, then a fresh process that compiles
nothing: ``kernel.compile`` for those archs (the launch's key) and the real call path through the mock driver (a
cc 9.0 device: sm_90a) both find every kernel in the disk cache (misses == 0). Records: written once per
signature by a process that calls kernels (several at once appending to one file), replayed to the same entries, and
hostile lines refused with a RecordError naming the line before anything is compiled.
"""
from __future__ import annotations

import json
import os
import subprocess
import re
import sys

import numpy as np
import pytest

import jitkernel as jk
from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name
from jitkernel import _core
from jitkernel._fleet import record_replay
from jitkernel._kernels import call_routes

ARCHS = ("sm_80", "sm_90a", "sm_100a")

# A module whose calls() makes kernel calls: named and unnamed kernels, the dict form, a scalar, template
# arguments, outputs= and one call repeated (one kernel per distinct signature: 3).
CALLS = '''
import numpy as np, jitkernel as jk
copy = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"],
                      source="uint32_t i = threadIdx.x; if (i < a_shape[0]) b[i] = (float)a[i];")
axpy = jk.cuda_kernel(name="axpy", source="uint32_t i = threadIdx.x; if (i < N) y[i] = s[0] * x[i];")
geo = dict(grid=(8, 1, 1), threadgroup=(8, 1, 1))

def calls(a=None):
    a = np.arange(8, dtype=np.float32) if a is None else a
    for _ in range(3):
        (b,) = copy(inputs=[a], output_shapes=[(8,)], output_dtypes=[jk.float32], **geo)
    copy(inputs=[a.astype(np.float16)], outputs=[b], template={"T": jk.float16, "N": 3}, **geo)
    out = axpy(inputs={"x": b, "s": np.float32(2.5)}, output_shapes={"y": (8,)}, output_dtypes={"y": np.float32},
               template=[("N", 8)], **geo)
    assert set(out) == {"y"} and out["y"].shape == (8,)

# (kernel, compile arguments) of each distinct signature calls() makes, for checks in a fresh process.
SIGNATURES = [
    (copy, dict(inputs=[np.zeros(8, np.float32)], output_dtypes=[jk.float32])),
    (copy, dict(inputs=[np.zeros(8, np.float16)], output_dtypes=[jk.float32], template={"T": jk.float16, "N": 3})),
    (axpy, dict(inputs={"x": np.zeros(8, np.float32), "s": np.float32(0)}, output_dtypes={"y": jk.float32},
                template=[("N", 8)])),
]
'''

# Compiles every signature for every arch in a fresh process; prints the cache counters.
CHECK = '''
import json, sys, jitkernel as jk
sys.path.insert(0, sys.argv[1])
import aot_calls
for kernel, args in aot_calls.SIGNATURES:
    for arch in sys.argv[2].split(","):
        kernel.compile(arch=arch, **args)
i = jk.cache_info()
print(json.dumps({"hits": i.hits, "misses": i.misses, "entries": i.entries, "tier_hits": i.readonly_hits}))
'''


def python(args, cache, cwd, **env):
    environment = {k: v for k, v in os.environ.items() if k != "JITKERNEL_RECORD"}
    environment.update(JITKERNEL_CACHE_DIR=str(cache), **env)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd, env=environment,
                          timeout=600)


def check_fresh(cache, folder, archs=ARCHS, **env) -> dict:
    proc = python(["-c", CHECK, str(folder), ",".join(archs)], cache, folder, **env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if not env:
        assert result.pop("tier_hits") == 0, result
    return result


@pytest.fixture
def calls_module(tmp_path):
    (tmp_path / "aot_calls.py").write_text(CALLS)
    return tmp_path


def entries(cache) -> dict:
    return {p.name: p.read_bytes() for p in sorted((cache / "kernels").glob("*.jkc"))}


def test_precompile_from_a_function_then_a_fresh_process_compiles_nothing(calls_module, tmp_path):
    cache = tmp_path / "built"
    proc = python(["-m", "jitkernel", "precompile", "--arch", ",".join(ARCHS), "--calls", "aot_calls:calls"],
                  cache, calls_module)
    assert proc.returncode == 0, proc.stderr
    assert "precompiled 3 kernels (5 calls) for sm_80, sm_90a, sm_100a: 9 compiled" in proc.stdout
    assert len(entries(cache)) == 9
    assert check_fresh(cache, calls_module) == {"hits": 9, "misses": 0, "entries": 9}
    again = python(["-m", "jitkernel", "precompile", "--arch", ",".join(ARCHS), "--calls", "aot_calls:calls"],
                   cache, calls_module)
    assert "0 compiled, 9 already cached" in again.stdout, again.stdout
    # The build's folder as a read-only tier of a node whose own folder is empty: every answer comes from the tier.
    node = tmp_path / "node"
    tier = check_fresh(node, calls_module, JITKERNEL_CACHE_READONLY_DIRS=str(cache))
    assert tier == {"hits": 9, "misses": 0, "entries": 0, "tier_hits": 9}, tier


def test_launches_on_a_precompiled_cache_hit_only(calls_module, mock_driver, tmp_path):
    """The launch path of a cc 9.0 device (the mock driver) loads every kernel from the disk cache."""
    jk_cache = tmp_path / "cache"  # the folder run_with_mock uses
    proc = python(["-m", "jitkernel", "precompile", "--arch", "sm_80,sm_90a", "--calls", "aot_calls:calls"],
                  jk_cache, calls_module)
    assert proc.returncode == 0, proc.stderr
    run = run_with_mock(mock_driver, f"""
        import sys, jitkernel as jk
        sys.path.insert(0, {str(calls_module)!r})
        import aot_calls
        aot_calls.calls()
        i = jk.cache_info()
        print("COUNTS", i.hits, i.misses, i.stores)
    """, tmp_path)
    assert run.returncode == 0, run.stderr
    assert "COUNTS 3 0 0" in run.stdout, run.stdout


def test_a_recorded_run_replays_to_the_same_entries(calls_module, mock_driver, tmp_path, monkeypatch):
    record = tmp_path / "calls.jsonl"
    code = f"""
        import os, sys, jitkernel as jk
        sys.path.insert(0, {str(calls_module)!r})
        import aot_calls
        aot_calls.calls()
        aot_calls.calls()
    """
    monkeypatch.setenv("JITKERNEL_RECORD", str(record))
    run = run_with_mock(mock_driver, code, tmp_path)
    assert run.returncode == 0, run.stderr
    lines = record.read_text().splitlines()
    assert len(lines) == 3, lines  # one per distinct signature, not per call
    assert all(json.loads(line)["jitkernel_record"] == 2 for line in lines)
    ran = entries(tmp_path / "cache")  # what the run compiled for its device (sm_90a)
    rebuilt = tmp_path / "rebuilt"
    # In the run's working folder: NVRTC writes it into the cubin's line info (-lineinfo), not into the key.
    proc = python(["-m", "jitkernel", "precompile", "--arch", ",".join(ARCHS), "--record", str(record)],
                  rebuilt, os.getcwd())
    assert proc.returncode == 0, proc.stderr
    assert "precompiled 3 kernels (3 calls)" in proc.stdout
    built = entries(rebuilt)
    assert len(built) == 9
    assert {name: built.get(name) == data for name, data in ran.items()} == {name: True for name in ran}
    assert check_fresh(rebuilt, calls_module) == {"hits": 9, "misses": 0, "entries": 9}


def test_processes_append_whole_lines_to_one_record(calls_module, mock_driver, tmp_path):
    record = tmp_path / "shared.jsonl"
    env = dict(os.environ, LD_LIBRARY_PATH=mock_driver, JITKERNEL_RECORD=str(record))
    code = f"import sys; sys.path.insert(0, {str(calls_module)!r}); import aot_calls; aot_calls.calls()"
    procs = [subprocess.Popen([sys.executable, "-c", code], env=dict(env, JITKERNEL_CACHE_DIR=str(tmp_path / f"c{i}")),
                              stderr=subprocess.PIPE) for i in range(6)]
    assert all(p.wait(timeout=600) == 0 for p in procs)
    lines = record.read_text().splitlines()
    assert len(lines) == 18 and len(set(lines)) == 3  # whole lines, each process wrote each once
    before = jk.cache_info().misses
    report = jk.precompile(str(record), ["sm_80"])
    assert (report.calls, report.kernels, report.binaries) == (18, 3, 3)
    assert report.compiled + report.cached == 3 and jk.cache_info().misses - before == report.compiled


def test_precompile_api_placeholders_and_forms(calls_module):
    k = jk.cuda_kernel(name="scale", input_names=["x"], output_names=["y"],
                       source="uint32_t i = threadIdx.x; y[i] = x[i] + x[i];")
    seen = {}

    def program():
        x = jk.ShapeDtype((1 << 40,), jk.float16)  # no memory is taken for it, nor for the output
        (y,) = k(inputs=[x], output_shapes=[(1 << 40,)], output_dtypes=[jk.float16], grid=(1, 1, 1),
                 threadgroup=(32, 1, 1))
        seen["y"] = y
        given = np.ones(4, np.float32)
        seen["given"] = k(inputs=[np.zeros(4, np.float32)], outputs=[given], grid=(1, 1, 1),
                          threadgroup=(4, 1, 1))[0] is given

    report = jk.precompile(program, "sm_80, sm_90a")
    assert report.archs == ("sm_80", "sm_90a") and report.kernels == 2 and report.binaries == 4
    y = seen["y"]
    assert y.shape == (1 << 40,) and y.dtype == np.float16 and not y.flags.writeable and seen["given"]
    assert call_routes.precompile_session is None
    # Outside a session the kernel compiles for real again (the same binaries, now from the cache).
    assert k.compile(inputs=[np.zeros(4, np.float32)], output_dtypes=[jk.float32], arch="sm_80")


def test_precompile_errors():
    with pytest.raises(jk.ArgumentError, match="archs"):
        jk.precompile(lambda: None, ["sm_9"])
    with pytest.raises(jk.ArgumentTypeError, match="archs"):
        jk.precompile(lambda: None, [])
    with pytest.raises(jk.ArgumentTypeError, match="calls"):
        jk.precompile(42, ["sm_80"])
    with pytest.raises(jk.ArgumentTypeError, match="shape"):
        jk.ShapeDtype((2, -1), jk.float32)

    def fails():
        raise KeyError("in the user's function")

    with pytest.raises(KeyError):
        jk.precompile(fails, ["sm_80"])
    assert call_routes.precompile_session is None  # the session ends with the function, whatever happens

    def nested():
        jk.precompile(lambda: None, ["sm_80"])

    with pytest.raises(jk.JitKernelError, match="another precompile"):
        jk.precompile(nested, ["sm_80"])


def test_precompile_needs_the_cache(monkeypatch):
    monkeypatch.setenv("JITKERNEL_CACHE", "0")
    _core._cache_reset()
    try:
        with pytest.raises(jk.JitKernelError, match="cache is off"):
            jk.precompile(lambda: None, ["sm_80"])
    finally:
        monkeypatch.undo()
        _core._cache_reset()


GOOD = json.loads(_core._call_record_line(
    jk.cuda_kernel(name="k", input_names=["a"], output_names=["b"], source="b[0] = a[0];"),
    [np.zeros(2, np.float32)], [jk.float32], [("N", 4)]))


def dump(line) -> str:
    """A line as the core writes it (keys in their order, no spaces), so only a changed field is wrong."""
    return json.dumps(line, separators=(",", ":"))


def variant(**changes) -> str:
    line = json.loads(json.dumps(GOOD))
    for path, value in changes.items():
        where = line
        *parents, last = path.split("__")
        for p in parents:
            where = where[p]
        where[last] = value
    return dump(line)


HOSTILE = {
    "expected a string key at byte 1": "{'jitkernel_record': 2}",
    "nested deeper than 32 levels": "[" * 100000 + "]" * 100000,
    'duplicate key "call"': dump(GOOD)[:-1] + ',"call":{}}',
    "format 1 is not the one": variant(jitkernel_record=1),
    "format ? is not the one": variant(jitkernel_record=True),
    'expected "cuda" or "precompiled"': variant(kernel__backend="metal"),
    "jitkernel_record: missing": dump([GOOD]),
    'unknown field "extra"': variant(extra=1),
    "shared_memory: expected an int, got a bool": variant(kernel__shared_memory=False),
    'unknown dtype "float128"': variant(call__outputs=[["float128", None]]),
    "more than 64 dimensions": variant(call__inputs=[["array", "float32", [None] * 65]]),
    'expected ["array"': variant(call__inputs=[["file", "/etc/passwd", None]]),
    "1 inputs for 2 input names": variant(call__input_names=["a", "c"]),
    "expected a JSON value at": dump(GOOD).replace('"shared_memory":0', '"shared_memory":NaN'),
    "not a valid call record": variant(kernel__name="__import__('os').system('x')", call__input_names=["a"]),
    'unknown option "exec"': variant(kernel__compile_options={"exec": "rm -rf /"}),
    "not in the form jitkernel writes": variant(kernel__compile_options={"line_info": True}),  # a default written
    "template[0].value: expected an int, got a number": variant(call__template=[["N", "int", 1.5]]),
    # JSON's escapes can spell a lone surrogate, which is no UTF-8 text
    "a lone surrogate": variant(kernel__name="k\ud800"),
}


@pytest.mark.parametrize("why", sorted(HOSTILE))
def test_hostile_record_lines_are_refused_before_any_compile(tmp_path, why):
    record = tmp_path / "record.jsonl"
    record.write_text(dump(GOOD) + "\n\n" + HOSTILE[why] + "\n")
    before = jk.cache_info()
    with pytest.raises(jk.RecordError, match="line 3: .*" + re.escape(why)) as e:
        jk.precompile(str(record), ["sm_80"])
    assert e.value.line == 3 and e.value.path == str(record)
    after = jk.cache_info()
    assert (after.hits, after.misses) == (before.hits, before.misses)  # nothing compiled, not even line 1


def test_record_lines_that_are_not_text_or_too_long(tmp_path, monkeypatch):
    record = tmp_path / "record.jsonl"
    record.write_bytes(dump(GOOD).encode() + b"\n\xff\xfe\n")
    with pytest.raises(jk.RecordError, match="line 2: not UTF-8"):
        jk.precompile(str(record), ["sm_80"])
    monkeypatch.setattr(record_replay, "MAX_LINE_BYTES", 100)
    record.write_text(dump(GOOD) + "\n")
    with pytest.raises(jk.RecordError, match="line 1: longer than 100 bytes"):
        jk.precompile(str(record), ["sm_80"])
    with pytest.raises(jk.RecordError, match="cannot be read"):
        jk.precompile(str(tmp_path / "missing.jsonl"), ["sm_80"])


def test_cli_reports_errors(tmp_path):
    record = tmp_path / "bad.jsonl"
    record.write_text("nope\n")
    proc = python(["-m", "jitkernel", "precompile", "--arch", "sm_80", "--record", str(record)], tmp_path / "c",
                  tmp_path)
    assert proc.returncode == 1 and "RecordError" in proc.stderr and "line 1" in proc.stderr
    proc = python(["-m", "jitkernel", "precompile", "--arch", "sm_80", "--calls", "nomodule"], tmp_path / "c",
                  tmp_path)
    assert proc.returncode == 2 and "module:function" in proc.stderr
