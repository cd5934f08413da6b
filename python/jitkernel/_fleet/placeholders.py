"""The inputs of kernel calls made without data, for ahead-of-time builds: ``jitkernel.ShapeDtype`` (a caller's
placeholder under ``precompile``) and ``placeholder`` (a read-only array of zeros that takes no memory), which stand
for arrays wherever only a kernel's signature matters (``precompile.Session``, ``record_replay``).
"""
from __future__ import annotations

from .._dtypes import _normalize, numpy_dtype
from .._errors import ArgumentTypeError


class ShapeDtype:
    """A placeholder input for calls made under ``precompile``: an array of this shape and dtype that has no data.
    The generated kernel depends only on an input's dtype and number of dimensions, so this is enough to compile
    it; it takes no memory. (NumPy arrays work too.)"""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        if isinstance(shape, int) and not isinstance(shape, bool):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or any(
                isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in shape):
            raise ArgumentTypeError("shape", f"expected a tuple of non-negative ints, got {shape!r}")
        self.shape = tuple(shape)
        self.dtype = _normalize(dtype, "dtype", "")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"jitkernel.ShapeDtype({self.shape!r}, jitkernel.{self.dtype.name})"


ShapeDtype.__module__ = "jitkernel"


def placeholder(shape, dtype):
    """A read-only NumPy array of zeros of ``shape`` that takes no memory (every element is one element)."""
    import numpy as np  # imported on use: `import jitkernel` imports no NumPy

    return np.broadcast_to(np.zeros((), numpy_dtype(_normalize(dtype, "output_dtypes", ""))), tuple(shape))
