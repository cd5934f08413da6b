"""Loads the corpus modules of this folder (shared by the CPU and GPU corpus tests)."""
import importlib.util
from pathlib import Path

import jitkernel as jk

FOLDER = Path(__file__).parent


def names():
    return sorted(p.stem for p in FOLDER.glob("*.py") if not p.stem.startswith("_"))


def load(name):
    spec = importlib.util.spec_from_file_location(f"nvcc_style_{name}", FOLDER / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernel_and_case(name):
    module = load(name)
    return jk.cuda_kernel(**module.KERNEL), module.case()
