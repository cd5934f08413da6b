"""What the JAX many-device CPU tests share (tests/cpu/test_jax_sharding.py, test_jax_sharded_jit.py): four CPU
devices (or a fresh process that has them), kernels whose custom calls run jnp stand-ins of what their CUDA sources
compute (``_jax_call._runner`` replaced, so jitkernel's custom_vjp and its varying-manual-axes handling run for real),
the kernels with backwards built on them, and mesh/data helpers. A test module imports everything from here,
fixtures included, and defines its own test_in_a_fresh_process_with_four_cpu_devices."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import jitkernel as jk

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402,F401 - P for the test modules

from jitkernel import _core  # noqa: E402
from jitkernel._frameworks import jax_call as _jax_call  # noqa: E402

N_DEVICES = 4


def _four_cpu_devices() -> bool:
    try:
        jax.config.update("jax_num_cpu_devices", N_DEVICES)  # refused once the backend is up
    except Exception:  # noqa: BLE001 - any refusal means: too late in this process
        pass
    return len(jax.devices("cpu")) >= N_DEVICES


IN_PROCESS = _four_cpu_devices()
_CHILD = "JITKERNEL_JAX_SHARDING_CHILD"


@pytest.fixture(autouse=True)
def needs_four_cpu_devices(request):
    if request.node.name.startswith("test_in_a_fresh_process"):
        return
    if not IN_PROCESS:
        pytest.skip(f"JAX was started with fewer than {N_DEVICES} CPU devices in this process: "
                    "test_in_a_fresh_process_with_four_cpu_devices runs these")


def run_in_a_fresh_process(test_file: str) -> None:
    """The body of each test module's test_in_a_fresh_process_with_four_cpu_devices: runs that module again in a
    process whose JAX starts with four CPU devices."""
    if IN_PROCESS:
        pytest.skip("this process has the CPU devices: the tests ran here")
    assert os.environ.get(_CHILD) is None, "the child process too has too few CPU devices"
    env = dict(os.environ, **{_CHILD: "1", "JAX_PLATFORMS": "cpu"})
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-4000:]
    assert " passed" in done.stdout and " failed" not in done.stdout, done.stdout[-4000:]


# ---- kernels and their jnp stand-ins ------------------------------------------------------------------------

INDEX = "const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;\n"


def kernel(name, inputs, outputs, source="(void)0;"):
    return jk.cuda_kernel(name=name, input_names=inputs, output_names=outputs, source=INDEX + source)


def _softplus(x):
    return jnp.where(x > 20, x, jnp.log1p(jnp.exp(jnp.minimum(x, 20))))


def _rms(x, eps=1e-6):
    return jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps)


def _rms_bwd(x, w, g):
    r = _rms(x)
    wg = w * g
    dx = wg * r - x * r ** 3 * jnp.mean(wg * x, axis=-1, keepdims=True)
    return dx, g * x * r  # dx, per-row contributions to dw


# name -> jnp function of the kernel's array operands, returning its outputs (what the CUDA source computes)
STAND_INS = {
    "sp_fwd": lambda x: (_softplus(x),),
    "sp_bwd": lambda x, g: (g * jax.nn.sigmoid(x),),
    "spw_fwd": lambda x, w: (_softplus(x) * w,),
    "spw_bwd": lambda x, w, g: (g * w * jax.nn.sigmoid(x), g * _softplus(x)),
    "rms_fwd": lambda x, w: (x * _rms(x) * w,),
    "rms_bwd": _rms_bwd,
}


@pytest.fixture(autouse=True)
def stand_in_runner(monkeypatch):
    """Every custom call runs its kernel's jnp stand-in instead of the FFI target (which needs a GPU)."""
    def runner(plan):
        fn = STAND_INS[_core.decode_record(plan.text, "jk_call")[0]["name"]]
        return lambda *operands: tuple(fn(*operands))

    monkeypatch.setattr(_jax_call, "_runner", runner)


def launch(k, inputs, outs):
    n = int(np.prod(inputs[0].shape))
    return k(inputs=list(inputs), output_shapes=[o.shape for o in outs], output_dtypes=[o.dtype for o in outs],
             grid=(n, 1, 1), threadgroup=(256, 1, 1), template=[("N", n)])


SP, SP_BWD = kernel("sp_fwd", ["x"], ["y"]), kernel("sp_bwd", ["x", "g"], ["dx"])
SP.vjp(lambda p, o, c: [launch(SP_BWD, [p[0], c[0]], [p[0]])[0]])

SPW, SPW_BWD = kernel("spw_fwd", ["x", "w"], ["y"]), kernel("spw_bwd", ["x", "w", "g"], ["dx", "dw"])


@SPW.vjp
def _spw_backward(p, o, c):
    dx, dw = launch(SPW_BWD, [p[0], jnp.broadcast_to(p[1], p[0].shape), c[0]], [p[0], p[0]])
    return [dx, dw.sum(0)]


RMS, RMS_BWD = kernel("rms_fwd", ["x", "w"], ["y"]), kernel("rms_bwd", ["x", "w", "g"], ["dx", "dw_rows"])


@RMS.vjp
def _rms_backward(p, o, c):
    dx, dw_rows = launch(RMS_BWD, [p[0], p[1], c[0]], [p[0], p[0]])
    return [dx, dw_rows.sum(0)]


def softplus(x):
    return launch(SP, [x], [x])[0]


def scaled_softplus(x, w):
    return launch(SPW, [x, w], [x])[0]


def rmsnorm(x, w):
    return launch(RMS, [x, w], [x])[0]


def rmsnorm_ref(x, w):
    return x * _rms(x) * w


# ---- helpers ------------------------------------------------------------------------------------------------


def shard_map(f, mesh, in_specs, out_specs, **kw):
    sm = getattr(jax, "shard_map", None)
    if sm is None:
        from jax.experimental.shard_map import shard_map as sm
    return sm(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)


def mesh_of(n, names=("x",), shape=None):
    return Mesh(np.array(jax.devices("cpu")[:n]).reshape(shape or (n,)), names)


def put(x, mesh, spec):
    return jax.device_put(jnp.asarray(x), NamedSharding(mesh, spec))


def data(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)
