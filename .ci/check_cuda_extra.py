"""Run by .ci/cuda_extras.sh inside a fresh virtual environment holding jitkernel and one CUDA extra's wheels
(`cuda12` or `cuda13`): jitkernel finds that extra's NVRTC and headers, compiles a kernel that needs both (half
precision, cooperative groups) to cubin and PTX for the GPUs that NVRTC major supports, keys the compile cache by
the NVRTC it used, and names the other extra when an architecture needs it. No GPU is needed.

usage: check_cuda_extra.py MAJOR FIRST|AGAIN   (FIRST: this NVRTC has not filled the shared cache folder yet)"""
import os
import sys

import numpy as np

import jitkernel as jk

ARCHS = {"12": ["sm_70", "sm_80", "sm_90a"], "13": ["sm_75", "sm_90a", "sm_100a"]}
major, phase = sys.argv[1], sys.argv[2]

info = jk.toolkit_info()
assert info["nvrtc_version"].split(".")[0] == major, info
for path in [info["nvrtc_library"]] + info["include_dirs"][:2]:
    assert os.path.realpath(path).startswith(os.path.realpath(sys.prefix)), (path, sys.prefix)

kernel = jk.cuda_kernel(name="scaled_half", input_names=["x"], output_names=["y"], source="""
    auto i = cooperative_groups::this_grid().thread_rank();
    if (i < x_shape[0]) y[i] = __float2half(__half2float(x[i]) * 2.0f);
""")
args = dict(inputs=[np.zeros(8, np.float16)], output_dtypes=[np.float16])
compiled = 0
for arch in ARCHS[major]:
    cubin = kernel.compile(**args, arch=arch)
    assert cubin[:4] == b"\x7fELF", (arch, cubin[:16])
    ptx = kernel.compile(**args, arch=arch, target="ptx")
    assert b".target " + arch.encode() in ptx, (arch, ptx[:400])
    compiled += 2

stats = jk.cache_info()
assert stats.enabled, stats
# The cache folder is shared by both extras' environments: a key that ignored the NVRTC would hit here.
if phase == "FIRST":
    assert (stats.hits, stats.misses) == (0, compiled), stats
else:
    assert (stats.hits, stats.misses) == (compiled, 0), stats

if major == "13":
    try:
        kernel.compile(**args, arch="sm_70")
    except jk.ArgumentError as error:
        assert "jitkernel[cuda12]" in str(error), error
    else:
        raise AssertionError("NVRTC 13 compiled for sm_70")
print(f"CUDA {major} extra: NVRTC {info['nvrtc_version']} from {info['nvrtc_library']}; compiled "
      f"{', '.join(ARCHS[major])} (cubin and PTX); cache {phase.lower()}: {stats.hits} hits, {stats.misses} misses")
