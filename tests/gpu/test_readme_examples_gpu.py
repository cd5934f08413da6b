"""The README's framework examples run as written (PyTorch: torch.compile + kernel.vjp; JAX: jit, vmap,
shard_map, donation, grad), so that the documentation cannot drift from the library."""
import pathlib
import re

import numpy as np
import pytest

from _gpu_util import need

pytestmark = pytest.mark.gpu


def _example(heading: str) -> str:
    text = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text.split(heading, 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_pytorch_example():
    torch = need("torch")
    scope = {}
    exec(compile(_example("## PyTorch: torch.compile"), "README.md", "exec"), scope)
    x = scope["x"]
    torch.testing.assert_close(x.grad, torch.sigmoid(x.detach()))


def test_jax_example():
    need("jax")
    scope = {}
    exec(compile(_example("## JAX"), "README.md", "exec"), scope)
    x = np.asarray(scope["x"])
    np.testing.assert_allclose(np.asarray(scope["z"]), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(scope["ys"]).ravel(), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(scope["w"]), np.exp(np.ones(4096)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(scope["g"]), 1 / (1 + np.exp(-x)), rtol=1e-5)
