"""The same-process raw baseline of bench_launch.py: the exp kernel launched through the bare CUDA driver from
Python with ctypes (cuLaunchKernelEx, as cuda.core does, and the plain cuLaunchKernel), so that ratios against the
driver's own cost use numbers from one process. The arguments are packed once; each call is only the ctypes call,
which adds ctypes' own dispatch (a few hundred ns) to the driver's cost.
"""
from __future__ import annotations

import ctypes

import numpy as np

from _bench_common import Skip
from _launch_peers import RAW_EXP, check, cupy_input, exp_of, torch_input, variant


class _LaunchConfig(ctypes.Structure):  # CUlaunchConfig (cuda.h)
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


def _driver():
    try:
        cu = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise Skip(f"no libcuda.so.1 ({e})")
    return cu


def _check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed with CUresult {result}")


def peer_raw(n):
    """The exp kernel through ctypes: cuLaunchKernelEx and cuLaunchKernel, output given, legacy default stream.
    Buffers come from torch (or CuPy), whose import made the device's primary context current."""
    try:
        torch, x = torch_input(n)
        z = torch.full_like(x, float("nan"))
        x_ptr, z_ptr, sync = x.data_ptr(), z.data_ptr(), torch.cuda.synchronize
    except Skip:
        cp, x = cupy_input(n)
        z = cp.full_like(x, float("nan"))
        x_ptr, z_ptr, sync = x.data.ptr, z.data.ptr, cp.cuda.Device().synchronize
    sync()
    import jitkernel as jk
    cu = _driver()
    dev = ctypes.c_int()
    _check(cu.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev), "cuDeviceGetAttribute")
    _check(cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev), "cuDeviceGetAttribute")
    cubin = jk._core.compile_cuda(RAW_EXP, f"sm_{major.value}{minor.value}", "cubin", "raw_exp.cu", None)
    module, function = ctypes.c_void_p(), ctypes.c_void_p()
    _check(cu.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(cubin)), "cuModuleLoadData")
    _check(cu.cuModuleGetFunction(ctypes.byref(function), module, b"raw_exp"), "cuModuleGetFunction")
    args = [ctypes.c_void_p(x_ptr), ctypes.c_void_p(z_ptr), ctypes.c_longlong(n)]
    params = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
    blocks = (n + 255) // 256
    cfg = _LaunchConfig(blocks, 1, 1, 256, 1, 1, 0, None, None, 0)
    launch_ex, launch = cu.cuLaunchKernelEx, cu.cuLaunchKernel
    launch_ex.restype = launch.restype = ctypes.c_int
    cfg_ref = ctypes.byref(cfg)
    keep = (module, args, cfg)  # alive as long as the variants
    ex = lambda keep=keep: launch_ex(cfg_ref, function, params, None)
    plain = lambda keep=keep: launch(function, blocks, 1, 1, 256, 1, 1, 0, None, params, None)
    rows = []
    for name, f in (("raw driver (ctypes cuLaunchKernelEx), outputs given", ex),
                    ("raw driver (ctypes cuLaunchKernel), outputs given", plain)):
        _check(f(), name)
        sync()
        check(z, exp_of(x), name)
        z.fill_(float("nan")) if hasattr(z, "fill_") else z.fill(np.nan)
        rows.append(variant(name, f, sync, 0, "driver via ctypes", "same process; includes ctypes' call cost"))
    return rows
