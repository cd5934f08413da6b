"""A user's script that mypy and basedpyright must accept without a single error (tests/cpu/test_typing.py): each
kernel kind, the list and dict call forms, the queries, jitkernel.fast and the extension's types (jk.Array, DType).
Only type-checked, never run."""
from __future__ import annotations

from typing import Any

import numpy as np

import jitkernel as jk

a = np.ones(4, np.float32)

# CUDA: the list form returns a list, the dict form a dict; outputs= instead of shapes and dtypes.
k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];",
                   compile_options={"math_mode": "fast"})
outs: list[Any] = k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1),
                    threadgroup=(4, 1, 1), template=[("T", jk.float32)])
named: dict[str, Any] = k(inputs={"a": a}, output_shapes={"b": (4,)}, output_dtypes={"b": jk.float32},
                          grid=(4, 1, 1), threadgroup=(4, 1, 1), template={"T": jk.float32})
given = k(inputs=[a], outputs=[outs[0]], grid=(4, 1, 1), threadgroup=(4, 1, 1), stream=None, init_value=0.0,
          cooperative=False, cluster=None, verbose=False)
# One keyword dict serves the call and its queries (the queries ignore the launch-only keywords).
call: dict[str, Any] = dict(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype], grid=(4, 1, 1),
                            threadgroup=(4, 1, 1))
k(**call)
src: str = k.source(**call)
entry: str = k.entry_name(inputs=[a], output_dtypes=[jk.float32], grid=(4, 1, 1))
cubin: bytes = k.compile(inputs=[a], output_dtypes=["float32"], arch="sm_80", target="ptx")
asm: str = k.sass(inputs=[a], output_dtypes=[jk.float32], arch="sm_90a")
attrs: dict[str, Any] = k.attributes(inputs=[a], output_dtypes=[jk.float32], threadgroup=(128, 1, 1), device=0)
# A bound call: the static part once, the arrays per call.
bound: jk.BoundCall = k.bind(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1),
                             threadgroup=(4, 1, 1))
bound_outs: list[Any] = bound(a)
bound_given = k.bind(inputs=(a,), outputs=[outs[0]], grid=(4, 1, 1), threadgroup=(4, 1, 1))(a, outputs=[outs[0]])
ptx: bytes = jk.compile_cuda("extern \"C\" __global__ void f() {}", arch="sm_90a", target="ptx")


@k.vjp
def backward(primals: list[Any], outputs: list[Any], cotangents: list[Any]) -> list[Any]:
    return [cotangents[0]]


backward_again = backward  # vjp returns the function it decorates, with its type

# Metal: the same two forms (stream must be None), its queries, and the older MetalKernel form.
m = jk.metal_kernel(name="mcopy", input_names=["a"], output_names=["b"], source="b[0] = a[0];",
                    atomic_outputs=False, compile_options={"math_mode": "fast"})
m_outs: list[Any] = m(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1),
                      threadgroup=(4, 1, 1), verbose=True)
m_named: dict[str, Any] = m(inputs={"a": a}, output_shapes={"b": (4,)}, output_dtypes={"b": jk.float32},
                            grid=(4, 1, 1), threadgroup=(4, 1, 1), stream=None)
m_src: str = m.source(inputs=[a], output_dtypes=[jk.float32], with_utils=True, grid=(4, 1, 1))
m_name: str = m.kernel_name(inputs=[a], output_dtypes=[jk.float32])
m_buffers = m.buffers(inputs=[a], output_dtypes=[jk.float32])
first_index: int = m_buffers[0][0]
seed000 = jk.metal_kernel("seed000", "out[0] = inp[0];")
old = jk.MetalKernel(name="myexp", source="out[0] = inp[0];", grid=(4, 1, 1), threadgroup=(4, 1, 1),
                     output_shapes={"out": (4,)}, output_dtypes={"out": jk.float32})
old_outs: dict[str, Any] = old.template(T=jk.float32)(inp=a)
old_src: str = old.source(inp=a, with_utils=False)

# Precompiled binaries.
pre: list[Any] = jk.precompiled_cuda_kernel(name="scale", compiled_source=ptx, inputs=[a], output_shapes=[(4,)],
                                            output_dtypes=[jk.float32], scalars=[2.0], grid=(4, 1, 1),
                                            threadgroup=(4, 1, 1), shared_memory=0, stream=None)

# jitkernel.fast: MLX's names for the same factories.
f = jk.fast.cuda_kernel(name="f", input_names=["x"], output_names=["y"], source="y[0] = x[0];")
fm = jk.fast.metal_kernel(name="fm", input_names=["x"], output_names=["y"], source="y[0] = x[0];")
f_outs: list[Any] = f(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1),
                      threadgroup=(4, 1, 1))

# Names as any list or tuple of str; every compile option, typed (call_types.CudaCompileOptions).
names: tuple[str, ...] = ("a",)
typed = jk.cuda_kernel(name="typed", input_names=names, output_names=list(names), source="",
                       compile_options={"math_mode": "safe", "line_info": True, "debug": False,
                                        "defines": {"N": 4, "NAME": "x", "FLAG": None}, "std": "c++20",
                                        "max_registers": 64, "include_dirs": ["include"],
                                        "extra_flags": ("--ftz=true",), "checked": True})
fast_options: jk.CudaCompileOptions = {"math_mode": "fast"}
program: bytes = jk.compile_cuda("", compile_options=fast_options)
made = jk.cuda_kernel(name="made", source="", compile_options=jk.CudaCompileOptions(debug=True))
metal_options: jk.MetalCompileOptions = {"math_mode": "safe"}
relaxed = jk.metal_kernel(name="r", input_names=("a",), output_names=("b",), source="",
                          compile_options={"math_mode": "relaxed"})


# Outputs follow the inputs: jk.Array for NumPy inputs (its shape a tuple of ints), a framework's own array type
# for its arrays (anything with __dlpack__: torch.Tensor, jax.Array; a stand-in here), the given outputs= arrays,
# and NumPy arrays from Metal.
class FrameworkTensor:
    def __dlpack__(self, *, stream: Any = None) -> object:
        return None


t = FrameworkTensor()
on_gpu: list[jk.Array] = k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1),
                           threadgroup=(4, 1, 1))
rows: int = on_gpu[0].shape[0]
dims: tuple[int, ...] = on_gpu[0].shape
by_name: dict[str, jk.Array] = k(inputs={"a": a}, output_shapes={"b": (4,)}, output_dtypes={"b": jk.float32},
                                 grid=(4, 1, 1), threadgroup=(4, 1, 1))
tensors: list[FrameworkTensor] = k(inputs=[t, t], output_shapes=[(4,)], output_dtypes=[jk.float32],
                                   grid=(4, 1, 1), threadgroup=(4, 1, 1))
written: list[np.ndarray] = k(inputs=[a], outputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1))
mixed: list[Any] = k(inputs=[a, 2.0], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1),
                     threadgroup=(4, 1, 1))
from_metal: list[np.ndarray] = m(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1),
                                 threadgroup=(4, 1, 1))

# The extension's types (jitkernel/_core.pyi): dtypes and jk.Array are typed, not Any.
dt: jk.DType = jk.dtype("float16")
size: int = jk.float32.itemsize
spelling: str = jk.bfloat16.cuda_type
maybe: jk.DType | None = jk._core.dtype_from_name("half")


def describe(x: jk.Array) -> tuple[int, int, jk.DType]:
    host: np.ndarray = x.numpy()
    return x.ndim + host.ndim, x.nbytes, x.dtype


count: int = jk.device_count()
available: bool = jk.cuda_available() and jk.metal_available()
host = np.zeros(3, jk.float32) + np.array(0, dtype=jk.bfloat16.dtype).astype(np.float32)  # NumPy takes jk dtypes
