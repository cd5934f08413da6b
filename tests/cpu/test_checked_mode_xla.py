"""Checked mode's host side through XLA's handler, without a GPU: the handler's C ABI driven by a stand-in XLA
frame on the mock CUDA driver (its kernels write nothing; device memory is host memory). XLA's result buffers of
a checked kernel are poisoned and an unwritten float result is an error, unless the result is an operand's buffer
(outputs= aliases); unchecked kernels' results are untouched. Two checked launches of one kernel in flight at once
(XLA runs handlers without the GIL) are serialised: a report reaches the launch that made it and is never lost to
the other launch's reset of the shared slot. The same on a GPU: tests/gpu/test_checked_gpu.py."""
from __future__ import annotations

from _mock_driver import mock_driver, run_with_mock  # noqa: F401 - the fixture is used by name

PRELUDE = """
    import ctypes, hashlib, struct, threading, time
    import numpy as np, jitkernel as jk
    from jitkernel import _core
    mock = ctypes.CDLL("libcuda.so.1")  # the library jitkernel loaded: the same report slot
    F32, S32 = 11, 4  # XLA's dtype codes

    def text_of(dtype, checked=True):
        kernel = _core.encode_kernel("k", ["x"], ["y"], "y[0] = x[0];", "", True, 0, {"checked": checked}, None)
        call = _core.encode_call(["x"], ["y"], [("array", jk.float32, (4,))], [(dtype, (4,))], [], (4, 1, 1),
                                 (4, 1, 1), None, False, False, 0, True)
        text = _core.encode_record(kernel, call).encode()
        return text, int.from_bytes(hashlib.sha256(text).digest()[:8], "big")

    def execute(text_key, x, y):
        code = F32 if y.dtype == np.float32 else S32
        return _core._xla_run_stage(*text_key, stage="execute", device=0, operands=[(x.ctypes.data, F32, [4])],
                                    results=[(y.ctypes.data, code, [4])])
"""


def test_xla_results_are_poisoned_and_checked(mock_driver, tmp_path):
    proc = run_with_mock(mock_driver, PRELUDE + """
    x = np.zeros(4, np.float32)
    checked = text_of(jk.float32)
    y = np.ones(4, np.float32)
    message = execute(checked, x, y)
    assert message is not None and "y[0] was never written by kernel 'k'" in message, message
    assert (y.view(np.uint32) == 0xFFFADBAD).all(), y.view(np.uint32)
    # a result that is an operand's buffer (outputs=) is the caller's data: neither poisoned nor checked
    xy = np.ones(4, np.float32)
    assert execute(checked, xy, xy) is None and (xy == 1).all()
    # an integer result is poisoned, not checked
    yi = np.zeros(4, np.int32)
    assert execute(text_of(jk.int32), x, yi) is None and (yi == -1515870811).all(), yi
    # an unchecked kernel's results are left alone
    yu = np.ones(4, np.float32)
    assert execute(text_of(jk.float32, checked=False), x, yu) is None and (yu == 1).all()
    print("OK")
    """, tmp_path)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr


def test_two_launches_in_flight_do_not_share_the_report_slot(mock_driver, tmp_path):
    # The first launch writes a report, then waits for its stream (the mock makes every wait last 300 ms); the
    # second starts 100 ms later. Sharing the slot, the second's reset would erase the report before the first
    # read it (both calls then return clean); serialised, the first raises and the second finds a clean slot.
    proc = run_with_mock(mock_driver, PRELUDE + """
    call = text_of(jk.int32)  # an integer output: only a report can make a call fail
    x = np.zeros(4, np.float32)
    assert execute(call, x, np.zeros(4, np.int32)) is None  # compiled and loaded before the race
    mock.mock_set_sync_delay_ms(300)
    mock.mock_set_next_report(struct.pack("<IiiIqqq3I3I", 1, 1, 3, 0, 4096, 0, 4, 0, 0, 0, 7, 0, 0))
    results = {}
    first = threading.Thread(target=lambda: results.__setitem__("first", execute(call, x, np.zeros(4, np.int32))))
    first.start()
    time.sleep(0.1)
    results["second"] = execute(call, x, np.zeros(4, np.int32))
    first.join()
    raised = [m for m in results.values() if m is not None]
    assert len(raised) == 1 and "y[4096] out of bounds (extent 4) at body line 3, block (0,0,0) thread (7,0,0)" \\
        in raised[0], results
    assert results["second"] is None, results  # the first launch came first and got its own report
    print("OK")
    """, tmp_path)
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stdout + proc.stderr
