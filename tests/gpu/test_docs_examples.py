"""The documentation's examples run fully on a GPU (docs/examples_runner.py): every doctest page with its GPU steps
(their shown results compared), the README's marked examples, whose results are checked here as well, and the
README's whole programs under torchrun on two GPUs (they check their own results). Metal steps run only where
Metal does. tests/cpu/test_docs_pages.py runs the GPU-free part of the same pages anywhere."""
import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

import jitkernel as jk
from _gpu_util import need

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "docs"))
import examples_runner as runner  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("page", runner.doctest_pages())
def test_doctest_page(page):
    tally = runner.run_doctest_page(page, gpu=True, metal=jk.metal_available())
    assert not tally.failures, tally.failures
    assert all("Metal" in step for step in tally.skipped_steps), tally.skipped_steps


def _run(group):
    tally = runner.run_readme_group(group, gpu=True)
    assert not tally.failures, tally.failures
    return tally


def test_readme_numpy_example():
    tally = _run("example")
    scope = tally.namespace
    np.testing.assert_allclose(np.asarray(scope["b"]), np.exp(scope["a"]), rtol=2e-3)
    if tally.skipped:  # only the torch lines, where torch is missing
        assert all("torch" in s or "skipped step" in s for s in tally.skipped_steps), tally.skipped_steps
        return
    torch = need("torch")
    y, x = scope["y"], scope["x"]
    assert isinstance(y, torch.Tensor) and y.device == x.device
    torch.testing.assert_close(y, torch.exp(x.float()).half(), rtol=2e-3, atol=1e-3)


def test_readme_pytorch_example():
    torch = need("torch")
    tally = _run("pytorch")
    assert tally.skipped == 0, tally.skipped_steps
    x = tally.namespace["x"]
    torch.testing.assert_close(x.grad, torch.sigmoid(x.detach()))


def test_readme_jax_example():
    need("jax")
    tally = _run("jax")
    assert tally.skipped == 0, tally.skipped_steps
    scope = tally.namespace
    x = np.asarray(scope["x"])
    np.testing.assert_allclose(np.asarray(scope["y"]), np.exp(x) * 2, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(scope["ys"]).ravel(), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(scope["z"]), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(scope["w"]), np.exp(np.ones(4096)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(scope["g"]), 1 / (1 + np.exp(-x)), rtol=1e-5)


def test_readme_many_gpus_jax_example():
    jax = need("jax")
    tally = _run("many-gpus-jax")
    assert tally.skipped == 0, tally.skipped_steps
    scope = tally.namespace
    n, w = len(jax.devices()), np.linspace(0.0, 1.0, 128)
    np.testing.assert_allclose(np.asarray(scope["y"]), np.broadcast_to(w, (8 * n, 128)), rtol=1e-6)
    # every x is 1: each shard's loss gradient is 2 * 8 rows * w (the pmean's mean of equal shards), the whole
    # array's 2 * 8n rows * w
    np.testing.assert_allclose(np.asarray(scope["dp_grad"]), 16 * w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(scope["grad"]), 16 * n * w, rtol=1e-5, atol=1e-5)
    assert len(scope["y"].sharding.device_set) == n
    text = jax.jit(scope["scale_columns"]).lower(scope["x"], scope["w"]).compile().as_text()
    assert "all-gather" not in text


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("name", sorted(runner.readme_scripts()))
def test_readme_program_on_two_gpus(name, tmp_path):
    torch = need("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs two GPUs, found {torch.cuda.device_count()}")
    script = tmp_path / f"{name}.py"
    script.write_text(runner.readme_scripts()[name])
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                           f"--master_port={_free_port()}", str(script)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-6000:]
