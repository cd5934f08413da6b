"""``jitkernel.autotune``: a kernel plus a space of launch configurations (template constants, threadgroup,
grid), which picks the fastest configuration per key bucket on the GPU it runs on, once per fleet.

The pieces: ``Config`` and the argument checks (tune_config.py), the tuned object and its rules (tune_call.py:
stored decisions first, claims across processes, never tuning while a graph is captured or a framework traces),
timing (tune_bench.py) and decisions on disk (tune_decisions.py). docs/autotuning.md is the user's guide.
"""
from __future__ import annotations

from .._errors import ArgumentError, ArgumentTypeError
from .._kernels.cuda_kernel import CudaKernel
from . import tune_decisions
from .tune_call import Autotuned, _set_measure
from .tune_config import Config, TuningWarning, _configs_arg, _count_arg, _launch_arg, _names_arg

__all__ = ["Autotuned", "Config", "TuningWarning", "autotune", "tuned_decisions"]


def autotune(kernel, configs, grid=None, threadgroup=None, key=None, restore_inputs=(), warmup: int = 2,
             reps: int | None = None) -> "Autotuned":
    """A callable that runs ``kernel`` with the fastest of ``configs`` for each key bucket (docs/autotuning.md)::

        tuned = jk.autotune(kernel, configs=[jk.Config(template={"BLOCK": b}, threadgroup=(b, 1, 1))
                                             for b in (64, 128, 256)],
                            grid=lambda shapes, cfg: (shapes[0][0] * cfg.threadgroup[0], 1, 1))
        (y,) = tuned(inputs=[x], output_shapes=[x.shape], output_dtypes=[x.dtype])

    ``grid`` / ``threadgroup``: (x, y, z), or a function ``(shapes, config) -> (x, y, z)`` of the inputs' shapes
    (a tuple per input, None for a scalar) and the ``Config``; a config's own ``grid`` / ``threadgroup`` wins, a
    call's ``grid=`` / ``threadgroup=`` is the last resort. ``key``: ``(shapes, dtypes) -> value`` buckets calls (a
    JSON-serialisable, hashable value: ints, floats, strings, tuples); default: the shapes and dtypes.
    ``restore_inputs``: names of inputs the kernel modifies in place (candidates run on copies of them).
    ``warmup`` / ``reps``: runs before timing / timed runs per round (None: enough for ~2 ms of GPU time)."""
    if not isinstance(kernel, CudaKernel):
        raise ArgumentTypeError("kernel", f"expected a kernel made by jitkernel.cuda_kernel, got "
                                          f"{type(kernel).__name__}")
    if kernel.input_names is None or kernel.output_names is None:
        raise ArgumentError("kernel", "autotune needs a kernel made with input_names and output_names")
    if key is not None and not callable(key):
        raise ArgumentTypeError("key", f"expected a function (shapes, dtypes) -> value, got {type(key).__name__}")
    return Autotuned(kernel, _configs_arg(configs), _launch_arg(grid, "grid"),
                     _launch_arg(threadgroup, "threadgroup"), key, _names_arg(kernel, restore_inputs),
                     _count_arg(warmup, "warmup", 0), _count_arg(reps, "reps", 1))


def tuned_decisions() -> list:
    """Every autotuning decision in the compile cache folder and its read-only tiers (what ``python -m jitkernel
    cache tuned`` prints): dicts with ``kernel``, ``device``, ``arch``, ``key``, ``configs``, ``times_ms``,
    ``errors``, ``chosen``, ``tuned_at``, ``where`` and ``entry``."""
    return tune_decisions.listing()
