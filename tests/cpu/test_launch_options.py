"""Launch options without a GPU: cooperative= / cluster= argument errors (raised before any CUDA work), arrays
offering only __cuda_array_interface__ with a malformed or unsupported dict, launch options refused on traced
paths, and SASS through nvdisasm when the nvidia-cuda-nvdisasm wheel is installed."""
import numpy as np
import pytest

import jitkernel as jk
from jitkernel._frameworks import traced_call

SOURCE = "unsigned i = threadIdx.x + blockIdx.x * blockDim.x; if (i < a_shape[0]) out[i] = a[i];"


def kernel():
    return jk.cuda_kernel("copy", ["a"], ["out"], SOURCE)


def call(k, **options):
    a = np.arange(64, dtype=np.float32)
    return k(inputs=[a], output_shapes=[a.shape], output_dtypes=[a.dtype], grid=(64, 1, 1),
             threadgroup=(8, 1, 1), **options)


@pytest.mark.parametrize("cluster, text", [
    ((0, 1, 1), "positive"),
    ((4, 4, 2), "at most 8"),
    ((3, 1, 1), "not a multiple"),
])
def test_cluster_errors(cluster, text):
    with pytest.raises(jk.ArgumentError, match=text) as e:
        call(kernel(), cluster=cluster)
    assert e.value.argument == "cluster"


def test_cluster_type_errors():
    with pytest.raises(jk.ArgumentTypeError) as e:
        call(kernel(), cluster=8)
    assert e.value.argument == "cluster"
    with pytest.raises(jk.ArgumentError) as e:
        call(kernel(), cluster=(2, 1))
    assert e.value.argument == "cluster"


def test_cluster_error_in_dict_form():
    a = np.arange(64, dtype=np.float32)
    with pytest.raises(jk.ArgumentError, match="not a multiple") as e:
        kernel()(inputs={"a": a}, output_shapes={"out": a.shape}, output_dtypes={"out": a.dtype},
                 grid=(64, 1, 1), threadgroup=(8, 1, 1), cluster=(3, 1, 1))
    assert e.value.argument == "cluster"


def test_cooperative_type_error():
    with pytest.raises(jk.ArgumentTypeError, match="True, False or None") as e:
        call(kernel(), cooperative="yes")
    assert e.value.argument == "cooperative"


def test_unknown_keyword_lists_launch_options():
    with pytest.raises(jk.ArgumentTypeError, match="cooperative, cluster"):
        call(kernel(), clusters=(2, 1, 1))


def test_precompiled_cluster_error():
    ptx = jk.compile_cuda('extern "C" __global__ void k(float* x) {}', target="ptx")
    a = np.zeros(64, np.float32)
    with pytest.raises(jk.ArgumentError) as e:
        jk.precompiled_cuda_kernel(name="k", compiled_source=ptx, inputs=[a], output_shapes=[], output_dtypes=[],
                                   scalars=[], grid=(64, 1, 1), threadgroup=(8, 1, 1), cluster=(3, 1, 1))
    assert e.value.argument == "cluster"


@pytest.mark.parametrize("value", [True, (2, 1, 1)])
def test_traced_paths_refuse_launch_options(value):
    name = "cooperative" if value is True else "cluster"
    with pytest.raises(jk.ArgumentTypeError, match="not supported when traced") as e:
        traced_call.reject_launch_options(*((value, None) if name == "cooperative" else (None, value)))
    assert e.value.argument == name
    traced_call.reject_launch_options(None, None)
    traced_call.reject_launch_options(False, None)


class FakeCai:
    """An object exposing only __cuda_array_interface__ (over host memory: errors are raised before CUDA)."""

    def __init__(self, array, **changes):
        self.array = array
        self.interface = {"shape": array.shape, "typestr": array.dtype.str, "strides": None,
                          "data": (array.ctypes.data, False), "version": 3}
        self.interface.update(changes)

    @property
    def __cuda_array_interface__(self):
        return self.interface


@pytest.mark.parametrize("changes, text", [
    ({"typestr": ">f4"}, "big-endian"),
    ({"typestr": "float32"}, "typestr"),
    ({"typestr": "<V2"}, "no dtype"),
    ({"mask": object()}, "mask"),
    ({"version": 1}, "versions 2 and 3"),
    ({"data": (0,)}, "data"),
    ({"stream": 0}, "disallows"),
    ({"strides": (4,)}, None),  # one stride for two dims
])
def test_cai_errors(changes, text):
    fake = FakeCai(np.zeros((4, 2), np.float32), **changes)
    with pytest.raises((jk.ArgumentError, jk.ArgumentTypeError), match=text) as e:
        kernel()(
            inputs=[fake], output_shapes=[(4,)], output_dtypes=[np.float32], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    assert e.value.argument == "inputs"


def test_cai_read_only_output():
    a = np.zeros(4, np.float32)
    out = FakeCai(np.zeros(4, np.float32), data=(np.zeros(4, np.float32).ctypes.data, True))
    with pytest.raises(jk.ArgumentError, match="read-only") as e:
        kernel()(inputs=[a], outputs=[out], output_shapes=[(4,)], output_dtypes=[np.float32], grid=(4, 1, 1),
                 threadgroup=(4, 1, 1))
    assert e.value.argument == "outputs"


def test_sass_from_wheel():
    from jitkernel._kernels import sass

    try:
        sass.tool()
    except jk.JitKernelError as e:
        assert "jitkernel[sass]" in str(e)
        pytest.skip("no nvdisasm here")
    k = kernel()
    a = np.zeros(4, np.float32)
    text = k.sass(inputs=[a], output_dtypes=[np.float32], arch="sm_90a")
    assert k.entry_name(inputs=[a], output_dtypes=[np.float32]) in text
    assert "EXIT" in text
    assert k.compile(inputs=[a], output_dtypes=[np.float32], target="sass") == text.encode()


def test_sass_missing_tool(monkeypatch):
    import shutil

    from jitkernel._kernels import sass

    monkeypatch.setattr(sass, "_wheel_nvdisasm", lambda: None)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(jk.JitKernelError, match=r"nvidia-cuda-nvdisasm"):
        kernel().sass(inputs=[np.zeros(4, np.float32)], output_dtypes=[np.float32])
