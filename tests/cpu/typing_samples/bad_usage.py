"""A user's script with known mistakes (tests/cpu/test_typing.py): mypy and basedpyright must each report errors
on exactly the lines marked "# mistake", and on no other line. Only type-checked, never run."""
from __future__ import annotations

import numpy as np

import jitkernel as jk

a = np.ones(4, np.float32)
k = jk.cuda_kernel(name="copy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
m = jk.metal_kernel(name="mcopy", input_names=["a"], output_names=["b"], source="b[0] = a[0];")

k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], gird=(4, 1, 1), threadgroup=(4, 1, 1))  # mistake
k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=4, threadgroup=(4, 1, 1))  # mistake
k([a], grid=(4, 1, 1), threadgroup=(4, 1, 1))  # mistake
k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], threadgroup=(4, 1, 1))  # mistake
jk.cuda_kernel(name=1, source="")  # mistake
jk.cuda_kernel(name="k", source="", shared_memory="1k")  # mistake
jk.cuda_kernel(name="k", sorce="")  # mistake
jk.metal_kernel(name="k", source="", atomic_output=True)  # mistake
k.source(inputs=[a], output_dtype=[jk.float32])  # mistake
k.compile(inputs=[a], output_dtypes=[jk.float32], arch=90)  # mistake
k.source([a], [jk.float32])  # mistake
k.bind([a], grid=(4, 1, 1), threadgroup=(4, 1, 1))  # mistake
k.bind(inputs=[a], grid=(4, 1, 1), threadgroup=(4, 1, 1))(a, output=[a])  # mistake
m(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1), threadgroups=(4, 1, 1))  # mistake
m(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1), stream=1)  # mistake
m.source(inputs=[a], output_dtypes=[jk.float32], with_utils="yes")  # mistake
jk.metal_kernel(name="m", source="", atomic_outputs="no")  # mistake
jk.fast.metal_kernel(nmae="m", source="")  # mistake
jk.precompiled_cuda_kernel(name="f", compiled_source="ptx text", inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], scalars=[], grid=(4, 1, 1), threadgroup=(4, 1, 1))  # mistake
jk.precompiled_cuda_kernel("f", b"", [a], [(4,)], [jk.float32], [], (4, 1, 1), (4, 1, 1))  # mistake
jk.precompiled_cuda_kernel(name="f", compiled_source=b"", inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))  # mistake
old = jk.MetalKernel(name="o", source="", grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes={}, output_dtypes={})
old(a)  # mistake
named: list = k(inputs={"a": a}, output_shapes={"b": (4,)}, output_dtypes={"b": jk.float32}, grid=(4, 1, 1), threadgroup=(4, 1, 1))  # mistake
size: str = jk.float32.itemsize  # mistake
jk.cuda_kernel(name="k", input_names="a", output_names=["b"], source="")  # mistake
jk.metal_kernel(name="k", input_names=["a"], output_names="b", source="")  # mistake
jk.cuda_kernel(name="k", source="", compile_options={"math_mod": "fast"})  # mistake
jk.cuda_kernel(name="k", source="", compile_options={"max_registers": "64"})  # mistake
jk.metal_kernel(name="k", source="", compile_options={"math_mode": "fastest"})  # mistake
rows: str = k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))[0].shape[0]  # mistake
k(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))[0].cpu()  # mistake
host: list[jk.Array] = m(inputs=[a], output_shapes=[(4,)], output_dtypes=[jk.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))  # mistake


def shape_text(x: jk.Array) -> str:
    return x.nbytes  # mistake
