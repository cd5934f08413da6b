"""MLX's names for the kernel factories: code written for ``mx.fast.metal_kernel`` / ``mx.fast.cuda_kernel`` /
``mx.fast.precompiled_cuda_kernel`` changes only its import (``import jitkernel as jk`` then ``jk.fast.cuda_kernel``,
or ``from jitkernel import fast``). The same functions as ``jitkernel.cuda_kernel`` and the others."""
from ._kernels.cuda_kernel import cuda_kernel
from ._kernels.metal_kernel import metal_kernel
from ._kernels.precompiled import precompiled_cuda_kernel

__all__ = ["metal_kernel", "cuda_kernel", "precompiled_cuda_kernel"]
