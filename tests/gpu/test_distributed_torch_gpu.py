"""PyTorch on several GPUs with jitkernel kernels that have a backward (RMSNorm and GELU of
tests/gpu/distributed/_kernels.py):

- under torchrun, one rank per GPU, on 2 GPUs and on 4 where there are 4: DDP eagerly, torch.compile(DDP(model)) and
  DDP(torch.compile(model)); FSDP2 eagerly and with compiled blocks; DTensor tensor parallelism through jk.sharded
  (column-parallel Linear -> sharded GELU -> row-parallel Linear, eager and compiled), a rowwise RMSNorm on split
  rows with no collective, and the refusals (a raw kernel given a DTensor, placements a rule does not allow). Each
  rank trains or computes and compares with a one-process reference (the plain-torch twin on the whole batch) and
  reports; the test asserts every rank's report (tests/gpu/distributed/*.py say what each script checks);
- in this process: one thread per GPU, each calling the kernels many times on its device's current stream, and a
  call whose inputs sit on two GPUs refused with an error naming both.

Every test skips when fewer GPUs than it needs are present."""
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import jitkernel as jk
from _gpu_util import SPIN_CYCLES, need

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "distributed"))
from _launch import assert_checks_ok, need_gpus, torchrun  # noqa: E402

pytestmark = pytest.mark.gpu

RANKS = [2, 4]


def _need(ranks: int) -> None:
    need("torch")
    need_gpus(ranks)


@pytest.mark.parametrize("ranks", RANKS)
def test_ddp_eager_and_compiled_both_ways_equal_one_process(ranks, tmp_path):
    _need(ranks)
    assert_checks_ok(torchrun("ddp.py", ranks, tmp_path), ["eager", "compile(DDP)", "DDP(compile)"])


@pytest.mark.parametrize("ranks", RANKS)
def test_fsdp2_eager_and_compiled_blocks_equal_one_process(ranks, tmp_path):
    _need(ranks)
    assert_checks_ok(torchrun("fsdp.py", ranks, tmp_path), ["eager", "compiled"])


@pytest.mark.parametrize("ranks", RANKS)
def test_dtensor_tensor_parallel_mlp_and_sharded_rules(ranks, tmp_path):
    _need(ranks)
    assert_checks_ok(torchrun("tp.py", ranks, tmp_path), [
        "tp eager", "tp compiled", "elementwise on the column-parallel output",
        "rowwise on rows split by batch", "rowwise on rows split by sequence",
        "raw kernel given a DTensor (requires_grad=False)", "raw kernel given a DTensor (requires_grad=True)",
        "rowwise given rows split on their last dim", "rowwise given a split weight",
        "elementwise given a Partial DTensor"])


# --- one process, two GPUs --------------------------------------------------------------------------------------

@pytest.fixture
def kernels():
    """torch, the shared kernels and the rank helpers (imported only once torch with CUDA is known to be there)."""
    torch = need("torch")
    import _kernels
    import _rank

    return torch, _kernels, _rank


ITERATIONS = 100
SPIN = SPIN_CYCLES // 200  # about 0.5 ms per iteration: the stream stays busy while the host launches


def _calls_on_current_stream(torch, K, R, device: int, start: threading.Barrier) -> dict:
    """Many kernel calls on GPU ``device`` from this thread, on a stream of its own made current; each input is
    written only after the stream has spun, so a kernel launched on another stream reads NaN or stale data."""
    try:
        return _calls(torch, K, R, device, start)
    except BaseException:
        start.abort()  # the other thread stops waiting
        raise


def _calls(torch, K, R, device: int, start: threading.Barrier) -> dict:
    torch.cuda.set_device(device)
    g = torch.Generator().manual_seed(device)
    sources = torch.randn(ITERATIONS, 16, K.HIDDEN, generator=g).to(f"cuda:{device}")
    weight = (1 + 0.1 * torch.randn(K.HIDDEN, generator=g)).to(f"cuda:{device}")
    torch.cuda.synchronize(device)
    stream = torch.cuda.Stream(device)
    errors = []  # per call, on the GPU (no synchronisation inside the loop)
    with torch.cuda.stream(stream):
        start.wait()
        for i in range(ITERATIONS):
            x = torch.full_like(sources[i], float("nan"))
            torch.cuda._sleep(SPIN)
            x.copy_(sources[i])
            y = K.rms_norm(K.gelu(x), weight)
            ref = K.rms_norm_ref(K.gelu_ref(x), weight)
            errors.append((y - ref).abs().max() / ref.abs().max().clamp(min=1))
        # The backward kernels (vjp) run where autograd runs the backward: the forward's stream.
        xs = [sources[0].clone().requires_grad_() for _ in range(2)]
        (K.rms_norm(K.gelu(xs[0]), weight) ** 2).sum().backward()
        (K.rms_norm_ref(K.gelu_ref(xs[1]), weight) ** 2).sum().backward()
        grad_diff = R.scaled_diff(xs[0].grad, xs[1].grad)
        diffs = torch.stack(errors).tolist()
    bad = [d for d in diffs if not d <= R.TOL]  # NaN included
    return {"device": device, "output_device": str(y.device), "calls_off": len(bad), "worst": max(diffs),
            "first_off": bad[:3], "grad_diff": grad_diff}


def test_one_thread_per_gpu_each_on_its_current_stream(kernels):
    torch, K, R = kernels
    need_gpus(2)
    start = threading.Barrier(2, timeout=120)
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(_calls_on_current_stream, torch, K, R, d, start) for d in (0, 1)]
        results = [f.result(timeout=300) for f in futures]
    for d, r in enumerate(results):
        assert r["output_device"] == f"cuda:{d}" and r["calls_off"] == 0 and r["grad_diff"] <= R.TOL, results


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "autograd"])
@pytest.mark.parametrize("devices", [(0, 1), (1, 0)])
def test_inputs_on_two_gpus_is_an_error_naming_both(kernels, devices, grad):
    torch, K, _ = kernels
    need_gpus(2)
    x = torch.randn(4, K.HIDDEN, device=f"cuda:{devices[0]}", requires_grad=grad)
    weight = torch.ones(K.HIDDEN, device=f"cuda:{devices[1]}")
    with pytest.raises(jk.ArgumentError) as e:
        K.rms_norm(x, weight)
    message = str(e.value)
    assert "cuda:0" in message and "cuda:1" in message, message
