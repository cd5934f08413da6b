"""jax.export on a GPU: a jitted program that calls a jitkernel kernel, exported and serialised in one process, runs
in a new process that imports jitkernel, with NumPy's result (the kernel rebuilt from the program's own versioned
record, nothing else shared); a process that did not import jitkernel is refused by XLA naming our target."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from _gpu_util import INDEX  # also keeps JAX from preallocating the GPU

import pytest

pytestmark = pytest.mark.gpu
jax = pytest.importorskip("jax")
pytest.importorskip("flatbuffers", reason="jax.export's serialisation needs flatbuffers")

EXPORT = f"""
    import numpy as np, jax, jax.numpy as jnp, jitkernel as jk
    twice = jk.cuda_kernel(name="twice_plus", input_names=["x", "b"], output_names=["y"],
                           source={INDEX + "if (i < x_shape[0]) y[i] = 2.0f * x[i] + b[0];"!r})
    def program(x):
        y = twice(inputs=[x, 0.5], output_shapes=[x.shape], output_dtypes=[x.dtype], grid=(x.shape[0], 1, 1),
                  threadgroup=(128, 1, 1))[0]
        return jnp.sin(y)
    spec = jax.ShapeDtypeStruct((1000,), jnp.float32)
    blob = jax.export.export(jax.jit(program), disabled_checks=jk.jax_export_disabled_checks())(spec).serialize()
    open(PATH, "wb").write(blob)
"""

RUN = """
    import numpy as np, jax, jax.numpy as jnp
    {imports}
    exported = jax.export.deserialize(bytearray(open(PATH, "rb").read()))
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    got = np.asarray(exported.call(jnp.asarray(x)))
    np.testing.assert_allclose(got, np.sin(2 * x + 0.5), rtol=1e-5, atol=1e-6)
    print("RESULT OK")
"""


def _python(code: str, path: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", JITKERNEL_CACHE_DIR=os.path.dirname(path) + "/c")
    return subprocess.run([sys.executable, "-c", f"PATH = {path!r}\n" + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=240)


def test_exported_program_runs_in_a_new_process(tmp_path):
    path = str(tmp_path / "program.jax")
    done = _python(EXPORT, path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = _python(RUN.format(imports="import jitkernel"), path)
    assert run.returncode == 0 and "RESULT OK" in run.stdout, run.stdout + run.stderr


def test_a_process_without_jitkernel_is_refused_naming_the_target(tmp_path):
    path = str(tmp_path / "program.jax")
    done = _python(EXPORT, path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = _python(RUN.format(imports=""), path)
    assert run.returncode != 0 and "jitkernel_cuda_kernel" in run.stderr, run.stdout + run.stderr
