"""Array helpers the extension calls: what a Python type is (``classify_type``, asked once per type), how results
go back to the caller's framework (``output_converter``), and host-side conversions.

The per-call work (reading DLPack capsules, NumPy's ``__array_interface__``, scalars) happens in C++
(cpp/bindings/array_import.cpp, call_arguments.cpp); only the decisions that need framework knowledge live
here. No framework is imported eagerly: a type from torch can only show up once torch has been imported.
"""
from __future__ import annotations

import sys

from . import _core

Array = _core.Array

_FRAMEWORKS = {"torch": "torch", "cupy": "cupy", "cupyx": "cupy", "jax": "jax", "jaxlib": "jax",
               "numpy": "numpy", "ml_dtypes": "numpy", "jitkernel": "jitkernel"}


def classify_type(tp: type) -> tuple[str, str]:
    """(kind, framework) of objects of type ``tp``; kinds are those of Kind in cpp/bindings/convert_detail.hpp."""
    module = getattr(tp, "__module__", "")
    root = module.partition(".")[0] if isinstance(module, str) else ""
    # A type's __module__ is only a claim: an object is a framework's only while that framework is loaded (its
    # streams and converters are looked up in it).
    framework = _FRAMEWORKS.get(root, "other") if root in sys.modules else "other"
    np = sys.modules.get("numpy")
    if np is not None and issubclass(tp, np.generic):  # before float: numpy.float64 subclasses it
        return "numpy_scalar", "numpy"
    for base, kind in ((bool, "bool"), (int, "int"), (float, "float"), (complex, "complex")):
        if issubclass(tp, base):
            return kind, "none"
    if np is not None and issubclass(tp, np.ndarray):
        return "numpy_array", "numpy"
    torch = sys.modules.get("torch")
    if torch is not None and (tp is torch.Tensor or tp is torch.nn.Parameter):
        return "torch_tensor", "torch"
    if hasattr(tp, "__dlpack__") and hasattr(tp, "__dlpack_device__"):
        return "dlpack", framework
    if hasattr(tp, "__array_interface__") or hasattr(tp, "__array__"):
        return "host_array", framework
    return "unknown", framework


def output_converter(framework: str):
    """The function that turns a jk.Array into the framework's array (for "torch_capsule": a DLPack capsule into a
    torch.Tensor), or None to return jk.Array itself."""
    if framework == "torch_capsule":  # a bare DLPack capsule (torch on its current stream)
        torch = sys.modules["torch"]
        # torch.from_dlpack(capsule) only adds a failed __dlpack__ lookup before calling this.
        return getattr(torch._C, "_from_dlpack", None) or torch.from_dlpack
    if framework == "torch":
        return sys.modules["torch"].from_dlpack
    if framework == "cupy":
        return sys.modules["cupy"].from_dlpack
    if framework == "jax":
        import jax.numpy as jnp

        from_dlpack = getattr(jnp, "from_dlpack", None)
        if from_dlpack is None:
            import jax.dlpack

            from_dlpack = jax.dlpack.from_dlpack
        return from_dlpack
    return None


def as_host_array(obj):
    """A NumPy array for objects that only offer __array_interface__ / __array__."""
    import numpy as np

    return np.asarray(obj)


def empty_host(shape: tuple, dtype_name: str):
    """An uninitialised NumPy array to download a jk.Array into (bfloat16 through ml_dtypes)."""
    import numpy as np

    if dtype_name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise ModuleNotFoundError("copying a bfloat16 jitkernel.Array to NumPy needs ml_dtypes: "
                                      "pip install ml-dtypes") from None
        return np.empty(shape, dtype=ml_dtypes.bfloat16)
    return np.empty(shape, dtype=dtype_name)
