"""The documentation's examples run fully on a GPU (docs/examples_runner.py): every doctest page with its GPU steps
(their shown results compared), and the README's marked examples, whose results are checked here as well. Metal
steps run only where Metal does. tests/cpu/test_docs_pages.py runs the GPU-free part of the same pages anywhere."""
import pathlib
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
