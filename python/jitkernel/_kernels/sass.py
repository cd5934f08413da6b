"""SASS for ``CudaKernel.sass`` / ``compile(target="sass")``: a cubin disassembled by NVIDIA's tools.

``nvdisasm`` from the ``nvidia-cuda-nvdisasm`` wheel (the ``sass`` extra) is preferred; else ``nvdisasm`` or
``cuobjdump`` from a CUDA toolkit on PATH. What running them needs is imported when SASS is asked for.
"""
from __future__ import annotations

import glob
import os
import sys

from .._errors import JitKernelError

_INSTALL = ('no SASS disassembler found: pip install "jitkernel[sass]" (the nvidia-cuda-nvdisasm wheel), '
            "or put a CUDA toolkit's nvdisasm or cuobjdump on PATH")


def _wheel_nvdisasm():
    """nvdisasm inside an installed nvidia-cuda-nvdisasm wheel (nvidia/cu*/bin/), or None."""
    for base in sys.path:
        for path in sorted(glob.glob(os.path.join(base or ".", "nvidia", "*", "bin", "nvdisasm")), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def tool() -> list:
    """The command (program and flags) that prints the SASS of a cubin file given after it."""
    import shutil  # milliseconds of `import jitkernel` for SASS requests only (as in disassemble)

    path = _wheel_nvdisasm() or shutil.which("nvdisasm")
    if path:
        return [path, "-c"]
    path = shutil.which("cuobjdump")
    if path:
        return [path, "-sass"]
    raise JitKernelError(_INSTALL)


def disassemble(cubin: bytes) -> str:
    """The SASS text of ``cubin``."""
    # subprocess, tempfile and shutil cost milliseconds of `import jitkernel`, and only SASS requests use them.
    import subprocess
    import tempfile

    command = tool()
    with tempfile.TemporaryDirectory(prefix="jitkernel-sass-") as folder:
        path = os.path.join(folder, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        done = subprocess.run(command + [path], capture_output=True, text=True)
    if done.returncode != 0:
        raise JitKernelError(f"{os.path.basename(command[0])} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout
