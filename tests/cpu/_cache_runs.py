"""Fresh processes compiling small kernels through the compile cache, for the tier and claim tests: each prints its
kernels' SHA-256s, its cache counters, how many NVRTC compiles it ran (the ``jitkernel`` logger's answered events)
and its CacheWarnings as one JSON line."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from _processes import WAIT_FOR_GO

SCRIPT = """
import hashlib, json, logging, os, time, warnings
warnings.simplefilter("always")
import numpy as np
import jitkernel as jk

class Count(logging.Handler):
    compiles = 0
    def emit(self, record):
        if getattr(record, "jitkernel_cache", None) == "compile":
            Count.compiles += 1

log = logging.getLogger("jitkernel")
log.setLevel(logging.INFO)
log.addHandler(Count())
""" + WAIT_FOR_GO + """
start = time.monotonic()
shas, errors = [], []
with warnings.catch_warnings(record=True) as record:
    for factor in os.environ.get("JK_TEST_FACTORS", "2").split(","):
        k = jk.cuda_kernel(name="scaled", input_names=["inp"], output_names=["out"],
                           header=os.environ.get("JK_TEST_HEADER", ""),
                           source=f"auto i = threadIdx.x; out[i] = inp[i] * {factor};")
        try:
            b = k.compile(inputs=[np.zeros(8, np.float32)], output_dtypes=[np.float32])
            shas.append(hashlib.sha256(b).hexdigest())
        except jk.JitKernelError as e:
            errors.append(type(e).__name__)
i = jk.cache_info()
print(json.dumps(dict(shas=shas, errors=errors, compiles=Count.compiles, seconds=time.monotonic() - start,
                      hits=i.hits, misses=i.misses, stores=i.stores, corrupt=i.corrupt,
                      readonly_hits=i.readonly_hits, claim_waits=i.claim_waits, claim_timeouts=i.claim_timeouts,
                      warnings=[str(w.message) for w in record if w.category is jk.CacheWarning])))
"""

SETTINGS = ("JITKERNEL_CACHE", "JITKERNEL_CACHE_MAX_BYTES", "JITKERNEL_CACHE_READONLY_DIRS", "JITKERNEL_CACHE_CLAIM",
            "JITKERNEL_CACHE_CLAIM_WAIT")


def environment(folder, factors=(2,), **env) -> dict:
    """The environment of a process using the cache ``folder``: the settings are only those given."""
    full = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    full.update(JITKERNEL_CACHE_DIR=str(folder), JK_TEST_FACTORS=",".join(map(str, factors)))
    full.update({k: str(v) for k, v in env.items()})
    return full


def run(folder, factors=(2,), prefix=(), **env) -> dict:
    """Runs SCRIPT in a fresh process (``prefix``: a command that runs it, e.g. in another mount namespace)."""
    proc = subprocess.run([*prefix, sys.executable, "-c", SCRIPT], env=environment(folder, factors, **env),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def snapshot(folder) -> dict:
    """Every file and folder under ``folder``: relative path -> (mode, bytes or None, mtime in ns)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            data = open(path, "rb").read() if name in files and not os.path.islink(path) else None
            out[os.path.relpath(path, folder)] = (st.st_mode, data, st.st_mtime_ns)
    return out
