"""Starting several Python processes so that their work begins at the same moment (the compile cache tests: many
processes on one empty folder). A script starts with ``WAIT_FOR_GO``, which announces the process and waits; the
parent runs ``run_together`` and releases them all once every one has started."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

# First lines of a script run by run_together (imports first, so the wait excludes start-up).
WAIT_FOR_GO = """
import os as _os, time as _time
_go = _os.environ.get("JK_TEST_GO")
if _go:
    open(_go + "." + str(_os.getpid()), "w").close()
    while not _os.path.exists(_go):
        _time.sleep(0.001)
"""


def run_together(script: str, envs: list, folder, timeout: float = 600) -> list:
    """Runs ``script`` once per environment in ``envs``, all released together; returns each process's last stdout
    line parsed as JSON, in order. ``folder`` (an empty scratch folder) holds the start files. ``timeout`` guards
    against a hang: dozens of processes starting on a loaded 2-core machine take minutes, a hang for ever."""
    go = os.path.join(folder, "go")
    procs = [subprocess.Popen([sys.executable, "-c", script], env=dict(env, JK_TEST_GO=go), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for env in envs]
    try:
        deadline = time.monotonic() + timeout
        while len([p for p in os.listdir(folder) if p.startswith("go.")]) < len(procs):
            assert time.monotonic() < deadline, "the processes did not start"
            assert all(p.poll() is None for p in procs), "a process exited before the start"
            time.sleep(0.01)
        open(go, "w").close()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, err
            results.append(json.loads(out.strip().splitlines()[-1]))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
