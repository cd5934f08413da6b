"""Failures on a GPU: a kernel that faults at run time surfaces as jitkernel.KernelFaultError
naming the kernel (in a child process, since a fault kills the CUDA context), and a compile
error raises jitkernel.CompileError without breaking later compiles and launches."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import INDEX

pytestmark = pytest.mark.gpu

FAULTS = {
    # A store to address 64 (in the page never mapped), known only at run time so the
    # compiler cannot drop it; and a trap.
    "illegal_address": "float* far = reinterpret_cast<float*>(static_cast<size_t>(addr[0]));\n"
                       "if (threadIdx.x == 0) { *far = inp[0]; }\nout[threadIdx.x] = inp[0];",
    "trap": "if (addr[0] != 0) { __trap(); }\nout[threadIdx.x] = inp[0];",
}

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import jitkernel as jk

    kernel = jk.cuda_kernel("oob_writer", ["inp", "addr"], ["out"], sys.argv[1])
    try:
        kernel(inputs=[np.ones(1, np.float32), 64], output_shapes=[(32,)],
               output_dtypes=[jk.float32], grid=(32, 1, 1), threadgroup=(32, 1, 1))
        jk.synchronize()
    except jk.KernelFaultError as e:
        ok = isinstance(e, jk.CudaError) and isinstance(e.code, int) and e.code != 0
        print("KernelFaultError code=%r: %s" % (e.code, e), flush=True)
        sys.exit(3 if ok else 5)
    except BaseException as e:
        print("other error %s: %s" % (type(e).__name__, e), flush=True)
        sys.exit(4)
    print("no error", flush=True)
    sys.exit(0)
""")


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_kernel_fault_names_the_kernel(fault):
    # The child imports jitkernel from wherever this process found it.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    child = subprocess.run([sys.executable, "-c", CHILD, FAULTS[fault]], env=env,
                           capture_output=True, text=True, timeout=300)
    report = f"exit {child.returncode}\nstdout:\n{child.stdout}\nstderr:\n{child.stderr}"
    assert child.returncode == 3, report  # not a crash, a hang or a silent success
    assert "oob_writer" in child.stdout, report


def test_compile_error_then_library_still_works():
    x = np.arange(64, dtype=np.float32)
    call = dict(inputs=[x], grid=(64, 1, 1), threadgroup=(64, 1, 1),
                output_shapes=[(64,)], output_dtypes=[jk.float32])
    good_source = INDEX + "out[i] = inp[i] * 2.0f;"
    good = jk.cuda_kernel("recovers", ["inp"], ["out"], good_source)
    np.testing.assert_array_equal(good(**call)[0].numpy(), x * 2)

    bad = jk.cuda_kernel("recovers", ["inp"], ["out"],
                         INDEX + "out[i] = inp[i] * not_declared_anywhere;")
    for _ in range(2):  # a failed compile is not cached as a success
        with pytest.raises(jk.CompileError) as info:
            bad(**call)
        assert isinstance(info.value, RuntimeError)
        assert "not_declared_anywhere" in info.value.log
        assert re.search(r"line 2\b", info.value.log), info.value.log  # the user's line
        assert "not_declared_anywhere" in info.value.source

    header = "__device__ float helper() {\n  return undefined_thing;\n}\n"
    bad_header = jk.cuda_kernel("recovers", ["inp"], ["out"], good_source, header=header)
    with pytest.raises(jk.CompileError, match="undefined_thing"):
        bad_header(**call)

    # Already compiled, freshly compiled and a new signature all still work.
    np.testing.assert_array_equal(good(**call)[0].numpy(), x * 2)
    fresh = jk.cuda_kernel("after_error", ["inp"], ["out"], INDEX + "out[i] = inp[i] + 1.0f;")
    np.testing.assert_array_equal(fresh(**call)[0].numpy(), x + 1)
    (wide,) = good(**dict(call, inputs=[x.astype(np.float64)], output_dtypes=[jk.float64]))
    np.testing.assert_array_equal(wide.numpy(), x.astype(np.float64) * 2)
