"""Whether a call releases the GIL: run it on a worker thread while this thread spins, and report the longest pause
between two turns of the spin (with the GIL held through the call, that pause is the whole call)."""
from __future__ import annotations

import threading
import time


def run_while_spinning(fn):
    """(fn's result, seconds fn took, longest pause of this thread's loop while fn ran)."""
    result = {}

    def worker_body():
        start = time.perf_counter()
        result["value"] = fn()
        result["seconds"] = time.perf_counter() - start

    worker = threading.Thread(target=worker_body)
    last = time.perf_counter()
    longest_pause = 0.0
    worker.start()
    while worker.is_alive():
        now = time.perf_counter()
        longest_pause, last = max(longest_pause, now - last), now
    worker.join()
    if "value" not in result:
        raise AssertionError("the call on the worker thread raised (its traceback is printed above)")
    return result["value"], result["seconds"], longest_pause
