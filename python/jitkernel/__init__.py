"""jitkernel: write only the body of a GPU kernel; jitkernel generates the signature from the arrays you pass,
compiles it with NVRTC (cached), and launches it on PyTorch, CuPy, JAX or NumPy arrays. MLX-compatible API::

    import jitkernel as jk
    kernel = jk.cuda_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                            source="auto i = blockIdx.x * blockDim.x + threadIdx.x; out[i] = exp(inp[i]);")
    (b,) = kernel(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype],
                  grid=(a.size, 1, 1), threadgroup=(256, 1, 1))

Importing touches no CUDA library: the driver and NVRTC are loaded on first use, and a missing one raises
CudaNotAvailableError saying what is missing and how to install it.

The package is layered by job (tests/cpu/test_package_layout.py keeps it so): the extension ``_core`` and the
modules every layer shares (``_errors``, ``_dtypes``, ``_arrays``, ``_toolkit_search``); the kernel API
(``_kernels/``); on top of it the framework integrations (``_frameworks/``: torch ops, the JAX call, traced calls,
sharding) and the fleet tools (``_fleet/``: precompile, call records, bundles, the cache API). Imports run down the
layers only; this module names the public API and connects the layers where a lower one calls a higher one
(``_install``).
"""
from __future__ import annotations

import atexit as _atexit

TYPE_CHECKING = False  # True for type checkers only (mypy and pyright treat the name so)

from . import _core, _dtypes, _errors, _toolkit_search
from ._errors import (
    ArgumentError,
    ArgumentTypeError,
    CompileError,
    CudaError,
    CudaNotAvailableError,
    JitKernelError,
    KernelFaultError,
    KernelBoundsError,
    UnwrittenOutputError,
    MetalNotAvailableError,
    RecordError,
    BundleError,
)
from ._dtypes import (
    DType,
    bfloat16,
    bool_,
    complex64,
    dtype,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._arrays import Array
from ._kernels import call_routes as _call_routes
from ._kernels.cuda_kernel import BoundCall, CudaKernel, compile_cuda, cuda_kernel
from ._kernels.metal_kernel import MetalKernel, MetalKernelFunction, metal_kernel
from ._kernels.precompiled import precompiled_cuda_kernel
from ._frameworks import jax_call as _jax_call, post_import as _post_import, torch_ops as _torch_ops
from ._frameworks import traced_call as _traced_call
from ._frameworks import precompiled_call as _precompiled_call
from ._frameworks.sharding import sharded
from ._frameworks.jax_call import jax_export_disabled_checks
from ._fleet.cache import CacheInfo, CacheWarning, cache_info, cache_path, clear_cache
from ._fleet.placeholders import ShapeDtype
from ._fleet.precompile import PrecompileReport, precompile
from ._fleet.bundle import BundleReport, export_cache, import_cache
from ._fleet.autotune import Autotuned, Config, TuningWarning, autotune
from ._toolkit_search import toolkit_info
from . import fast  # MLX's names: jk.fast.cuda_kernel, jk.fast.metal_kernel, jk.fast.precompiled_cuda_kernel

__version__: str = getattr(_core, "__version__", "0.0.0")


def cuda_available() -> bool:
    """True when the CUDA driver loads and reports at least one GPU (never raises)."""
    return _core.cuda_available()


def device_count() -> int:
    """Number of CUDA GPUs (0 without a driver; never raises)."""
    return _core.device_count()


def metal_available() -> bool:
    """True when Metal kernels can run here (macOS on Apple silicon, jitkernel built with Metal; never raises)."""
    return _core.metal_available()


def synchronize(device: int | None = None) -> None:
    """Waits for all work on ``device`` (every device when None); kernel faults surface here as KernelFaultError,
    and checked kernels' reports that no call could wait for (launches captured into CUDA graphs) as
    KernelBoundsError."""
    _core.synchronize(device)


def device_info(device: int = 0) -> dict:
    """Name, compute capability, NVRTC architecture and launch limits of a GPU."""
    return _core.device_info(device)


def _install() -> None:
    """Connects the extension to the Python helpers it calls (errors, rare dtype-likes), and each layer to the one
    above it that it calls without importing it: NVRTC errors to the toolkit search, traced kernel calls to the
    framework integrations, torch and JAX (once imported) to jitkernel's ops."""
    _core._register_exceptions(
        base=_errors.JitKernelError,
        argument=_errors.ArgumentError,
        argument_type=_errors.ArgumentTypeError,
        compile=_errors.CompileError,
        cuda_not_available=_errors.CudaNotAvailableError,
        metal_not_available=_errors.MetalNotAvailableError,
        cuda=_errors.CudaError,
        kernel_fault=_errors.KernelFaultError,
        kernel_bounds=_errors.KernelBoundsError,
        unwritten_output=_errors.UnwrittenOutputError,
    )
    _core._install_hooks(
        normalize_dtype=_dtypes._normalize,
    )
    _errors.register_nvrtc_notes(_toolkit_search.search_notes)
    _atexit.register(_core._clear_caches)
    # A call on traced arrays (or one torch autograd records) leaves the eager path for its framework's op; and
    # TorchDynamo, which reads type(kernel).__call__, finds the Python function it can trace (traced_call.py).
    _call_routes.traced = _traced_call.call
    _call_routes.precompiled = _precompiled_call.call
    _call_routes.compiling = _torch_ops.compiling
    _traced_call.expose_to_dynamo(CudaKernel)
    # The torch.library ops, once torch is imported (now, if it is): torch.compile, torch.export and autograd find
    # jitkernel's kernels as ops, and an exported program loads after `import jitkernel` (_frameworks/torch_ops.py).
    _post_import.when_imported("torch", _torch_ops.register)
    _post_import.when_imported("torch", _precompiled_call.register)
    # The XLA FFI target, once jax is imported: jitted programs (also ones from JAX's cache) find it
    # (_frameworks/jax_call.py).
    _post_import.when_imported("jax", _jax_call.register)


_install()

# The compile_options TypedDicts (_kernels/call_types.py), to annotate an options dict made apart from its call
# (``opts: jk.CudaCompileOptions = {...}``, or ``jk.CudaCompileOptions(math_mode="fast")``): type checkers see the
# TypedDicts; at run time they are dict, so ``import jitkernel`` still imports no ``typing``.
if TYPE_CHECKING:
    from ._kernels.call_types import CudaCompileOptions, MetalCompileOptions
else:
    CudaCompileOptions = MetalCompileOptions = dict

__all__ = [
    "fast", "Array", "BoundCall", "CudaKernel", "DType", "cuda_kernel", "compile_cuda", "precompiled_cuda_kernel",
    "CudaCompileOptions", "MetalCompileOptions",
    "cuda_available", "device_count", "device_info", "synchronize", "toolkit_info", "dtype",
    "cache_info", "clear_cache", "cache_path", "CacheInfo", "CacheWarning",
    "sharded", "jax_export_disabled_checks", "precompile", "ShapeDtype", "PrecompileReport", "export_cache", "import_cache", "BundleReport",
    "RecordError", "BundleError", "autotune", "Config", "Autotuned", "TuningWarning",
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64",
    "JitKernelError", "ArgumentError", "ArgumentTypeError", "CompileError", "CudaNotAvailableError",
    "CudaError", "KernelFaultError", "KernelBoundsError", "UnwrittenOutputError",
    "metal_kernel", "MetalKernel", "MetalKernelFunction", "metal_available", "MetalNotAvailableError",
]
