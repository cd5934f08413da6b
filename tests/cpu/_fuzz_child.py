"""One batch of the fuzz test (tests/cpu/test_fuzz.py), run in a child process so that a crash or a hang ends only
this process and is reported with its input.

    python _fuzz_child.py TARGET --examples N --seed S --skip-through K --log LOG

Hypothesis draws N cases for TARGET (a group of public entry points, see ``TARGETS`` in _fuzz_targets.py, whose
arguments come from _fuzz_strategies.py and _fuzz_binaries.py) from the fixed seed S; each case is a chain of calls
described by literals and ``Make`` descriptions (tests/cpu/_fuzz_hostile.py), so its ``repr`` rebuilds it. Before
each call the child appends ``{"i", "input"}`` to LOG and flushes it; after it, the outcome when it is a failure (an
exception that is not a ``jk.JitKernelError``, or a broken invariant), and at the end a line ``{"done": calls}``. A
call that takes longer than ``--call-timeout`` ends the process (faulthandler, exit code 1, "Timeout" on stderr).
The parent reads LOG: the last input without an outcome is the one that crashed or hung, and ``--skip-through K``
reruns the same batch without the cases up to K (nothing is drawn in the test body, so the cases are the same).

The children run with no visible CUDA GPU (the parent sets CUDA_VISIBLE_DEVICES to ""), so a call whose arguments
pass every check ends in CudaNotAvailableError wherever the suite runs, and no fake device pointer is ever launched.
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import os
import re
import shutil
import struct
import sys
import traceback
import warnings

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

import jitkernel as jk
from jitkernel._kernels.precompiled import check_binary_arch, inspect_binary

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _fuzz_binaries import BINARIES, mutate, setup_binaries  # noqa: E402
from _fuzz_hostile import HostileError, Make, build  # noqa: E402
from _fuzz_strategies import CUDA_KERNELS, METAL_KERNELS, ndarray  # noqa: E402
from _fuzz_targets import TARGETS  # noqa: E402


# ----------------------------------------------------------------------------------------------------------------
# Running a case


class Invariant(Exception):
    """A call returned, but broke a promise (a foreign file deleted, a stale binary returned, ...)."""


# Exceptions the Python protocols that jk.Array implements prescribe (DLPack: BufferError; NumPy's __array__:
# ValueError for copy=False; attribute protocols: AttributeError so that hasattr() works), allowed from those
# methods only.
PROTOCOL_EXCEPTIONS = {"__dlpack__": (BufferError, TypeError, ValueError), "__array__": (TypeError, ValueError),
                       "np.asarray": (TypeError, ValueError),
                       "__cuda_array_interface__": (AttributeError,), "jk.Array": (TypeError,)}


def dtype_ops(d, other):
    d == other, d != other, hash(d), repr(d), str(d), d.name, d.itemsize, d.cuda_type, d.dlpack  # noqa: B018
    return jk.dtype(d)


def ptx_target_check(sm):
    if not BINARIES:
        setup_binaries()
    ptx = re.sub(rb"\.target sm_\w+", f".target sm_{sm}".encode(), BINARIES["ptx"], count=1)
    arch = inspect_binary(ptx)["arch"]
    if arch != f"sm_{sm}":
        raise Invariant(f"PTX with .target sm_{sm} was read as {arch!r}")


def array_op(arr, op, **kwargs):
    if op == "attributes":
        return (arr.shape, arr.dtype, arr.device, arr.ndim, arr.size, arr.nbytes, repr(arr))
    if op == "np.asarray":
        return np.asarray(arr)
    if op == "__cuda_array_interface__":
        return arr.__cuda_array_interface__
    return getattr(arr, op)(**kwargs)


class CacheFuzz:
    """The cache target's state: a private cache folder (made by the parent), refilled before each case from a
    snapshot of the entries of ``SOURCES`` (so a case is reproducible on its own), the binaries a fresh compile of
    each source gives, and a file outside the folder that must survive whatever happens."""

    SOURCES = ['extern "C" __global__ void c0(float* x) { x[0] = 0; }',
               'extern "C" __global__ void c1(int* x) { x[0] = 1; }',
               '#include <cuda_fp16.h>\nextern "C" __global__ void c2(__half* x) { x[0] = __float2half(2.f); }']

    def __init__(self):
        self.folder = os.environ["JITKERNEL_CACHE_DIR"]
        self.outside = self.folder + "-outside"
        self.pristine = self.folder + "-pristine"
        os.makedirs(self.outside, exist_ok=True)
        self.victim = os.path.join(self.outside, "precious.txt")
        self._set_env((None, "0"))
        self.fresh = [jk.compile_cuda(s) for s in self.SOURCES]
        self._set_env((None, None))
        for s in self.SOURCES:
            jk.compile_cuda(s)
        shutil.copytree(self.folder, self.pristine, symlinks=True)
        self.foreign = []

    def reset(self):
        shutil.rmtree(self.folder)
        shutil.copytree(self.pristine, self.folder, symlinks=True)
        os.chmod(self.folder, 0o700)
        with open(self.victim, "w") as f:
            f.write("not jitkernel's")
        self.foreign = []

    @staticmethod
    def _set_env(env):
        """env: (JITKERNEL_CACHE_MAX_BYTES, JITKERNEL_CACHE), None for unset; the core re-reads them."""
        for name, value in zip(("JITKERNEL_CACHE_MAX_BYTES", "JITKERNEL_CACHE"), env):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        jk._core._cache_reset()

    def entries(self):
        found = []
        for sub in ("kernels", "records"):
            d = os.path.join(self.folder, sub)
            if os.path.isdir(d):
                found += [os.path.join(d, n) for n in sorted(os.listdir(d))]
        return found

    def damage(self, op):
        kind = op[0]
        if kind in ("foreign_file", "foreign_link"):
            where = os.path.join(self.folder, op[1])
            os.makedirs(where, exist_ok=True)
            path = os.path.join(where, op[2])
            if os.path.lexists(path) or os.path.isdir(path):
                return
            if kind == "foreign_file":
                with open(path, "wb") as f:
                    f.write(b"user data, not a cache entry\n")
                self.foreign.append(path)
            else:
                os.symlink(self.victim, path)
            return
        entries = [e for e in self.entries() if os.path.isfile(e) and not os.path.islink(e)
                   and e not in self.foreign]
        if not entries:
            return
        path = entries[op[1] % len(entries)]
        if kind == "truncate":
            os.truncate(path, min(op[2], os.path.getsize(path)))
        elif kind == "flip":
            with open(path, "r+b") as f:
                data = bytearray(f.read())
                if data:
                    data[op[2] % len(data)] ^= 0x40
                    f.seek(0)
                    f.write(data)
        elif kind == "claim_size":  # a valid-looking header whose payload size is op[2]
            with open(path, "r+b") as f:
                f.seek(48)
                f.write(struct.pack("<Q", op[2]))
        elif kind == "empty":
            open(path, "wb").close()
        elif kind in ("directory", "fifo", "symlink_out"):
            os.unlink(path)
            if kind == "directory":
                os.mkdir(path)
            elif kind == "fifo":
                os.mkfifo(path)
            else:
                os.symlink(self.victim, path)
        elif kind == "swap":
            other = entries[op[2] % len(entries)]
            if other != path:
                tmp = path + ".swap"
                os.rename(path, tmp)
                os.rename(other, path)
                os.rename(tmp, other)

    def check_outside(self):
        if not os.path.isfile(self.victim):
            raise Invariant("a file outside the cache folder (a symlink's target) was deleted")
        with open(self.victim) as f:
            if f.read() != "not jitkernel's":
                raise Invariant("a file outside the cache folder (a symlink's target) was overwritten")
        gone = [p for p in self.foreign if not os.path.isfile(p)]
        if gone:
            raise Invariant(f"files that are not cache entries were deleted: {gone}")

    def run(self, env, damage, action):
        self.reset()
        self._set_env(env)
        for op in damage:
            self.damage(op)
        if action.startswith("compile"):
            i = int(action[-1])
            if jk.compile_cuda(self.SOURCES[i]) != self.fresh[i]:
                raise Invariant(f"compile_cuda(SOURCES[{i}]) returned a binary a fresh compile does not give")
        elif action == "info":
            jk.cache_info()
        else:
            jk.clear_cache()
            self.check_outside()
            self.foreign = []
            if action == "clear_then_compile" and jk.compile_cuda(self.SOURCES[0]) != self.fresh[0]:
                raise Invariant("compile_cuda after clear_cache returned a binary a fresh compile does not give")
        self.check_outside()


_CACHE = None


def cache_case(env, damage, action):
    global _CACHE
    if _CACHE is None:
        _CACHE = CacheFuzz()
    _CACHE.run(env, damage, action)


class XlaFuzz:
    """The xla target's state: one call text registered with the handler (by its instantiate stage), whose edited
    copies the cases hand to the stages (tests/cpu/_fuzz_targets.py, ``xla_cases``)."""

    NO_DEVICE = "stand-in XLA: no device"  # what a stage that resolved its call ends in (the hook has no GPU)

    def __init__(self):
        core = jk._core
        kernel = core.encode_kernel("fuzz_xla", ["a", "n"], ["o"], "o[0] = a[0] * n[0];", "", True, 0, None, None)
        call = core.encode_call(["a", "n"], ["o"], [("array", jk.float32, (4, 2)), ("scalar", 3)],
                                [(jk.float32, (4, 2))], [("T", jk.float32), ("B", True)], (8, 1, 1), (8, 1, 1), 0.5,
                                False, False, 0, True)
        text = core.encode_record(kernel, call)
        self.text, self.key = text.encode(), core.xla_call_key(text)
        if jk._core._xla_run_stage(self.text, self.key, "instantiate") is not None:
            raise HarnessError("the fuzz target's own call text was refused")

    @staticmethod
    def edit(text: bytes, edits) -> bytes:
        t = bytearray(text)
        for kind, at, value in edits:
            i = at % (len(t) + 1)
            if kind == "insert":
                t[i:i] = bytes([value])
            elif kind == "truncate":
                del t[i:]
            elif i == len(t):
                continue
            elif kind == "flip":
                t[i] ^= 1 << (value % 8)
            elif kind == "set":
                t[i] = value
            elif kind == "cut":
                del t[i:i + 1 + value % 16]
            elif kind == "digit" and 0x30 <= t[i] <= 0x39:
                t[i] = 0x30 + value % 10
        return bytes(t)

    def run(self, stage, key_choice, edits):
        import hashlib

        text = self.edit(self.text, edits)
        own = int.from_bytes(hashlib.sha256(text).digest()[:8], "big")
        key = {"registered": self.key, "own": own, "wrong": own ^ (1 << 63)}[key_choice]
        answer = jk._core._xla_run_stage(text, key, stage)
        if answer is not None and not isinstance(answer, str):
            raise Invariant(f"the {stage} stage answered {answer!r}")
        resolved = answer is None or answer == self.NO_DEVICE
        if key == self.key and text != self.text and resolved:
            raise Invariant(f"the {stage} stage ran the call registered under a key for another jk_call text")
        if key_choice == "wrong" and resolved:
            raise Invariant(f"the {stage} stage ran a jk_call text under a key that is not its own")
        if text == self.text and key == self.key and not resolved:
            raise Invariant(f"the {stage} stage refused the registered call's own text: {answer}")


_XLA = None


def xla_case(stage, key_choice, edits):
    global _XLA
    if _XLA is None:
        _XLA = XlaFuzz()
    _XLA.run(stage, key_choice, edits)


def resolver():
    names = {"jk.cuda_kernel": jk.cuda_kernel, "jk.metal_kernel": jk.metal_kernel, "jk.MetalKernel": jk.MetalKernel,
             "jk.compile_cuda": jk.compile_cuda, "jk.precompiled_cuda_kernel": jk.precompiled_cuda_kernel,
             "jk.dtype": jk.dtype, "jk.Array": jk.Array, "inspect_binary": inspect_binary,
             "check_binary_arch": check_binary_arch,
             "ptx_target_check": ptx_target_check, "dtype_ops": dtype_ops, "array_op": array_op,
             "cache_case": cache_case, "xla_case": xla_case}
    kernels = {}

    def get(name):
        if name in names:
            return names[name]
        kernel_name, _, method = name.partition(".")
        if kernel_name not in kernels:
            spec = CUDA_KERNELS.get(kernel_name)
            kernels[kernel_name] = jk.cuda_kernel(**spec) if spec else jk.metal_kernel(**METAL_KERNELS[kernel_name])
        k = kernels[kernel_name]
        return getattr(k, method) if method else k
    return get


_BUILD_EXTRA = {"ndarray": ndarray, "binary": mutate}


def build_all(value):
    if isinstance(value, Make) and value.kind in _BUILD_EXTRA:
        return _BUILD_EXTRA[value.kind](*value.args)
    if isinstance(value, Make):
        return build(Make(value.kind, *[build_all(a) for a in value.args]))
    if type(value) is list:
        return [build_all(v) for v in value]
    if type(value) is tuple:
        return tuple(build_all(v) for v in value)
    if type(value) is dict:
        return {k: build_all(v) for k, v in value.items()}
    return value


def describe(steps) -> str:
    text = ""
    for name, args, kwargs in steps:
        parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        text += f"{name}({', '.join(parts)})"
    return text


class HarnessError(Exception):
    """Building a case's arguments failed: a bug of this file, which ends the child (and fails the test)."""


def run_steps(steps, get):
    obj = None
    for name, args, kwargs in steps:
        fn = getattr(obj, name[1:]) if name.startswith(".") else get(name)
        try:
            args, kwargs = build_all(args), build_all(kwargs)
        except Exception as e:
            raise HarnessError(f"building the arguments of {name} failed: {e!r}") from e
        obj = fn(*args, **kwargs)
    return obj


def allowed(exc: BaseException, steps) -> bool:
    if isinstance(exc, (jk.JitKernelError, HostileError)):
        return True  # HostileError: the input's own code failed, and jitkernel let the error through
    last = steps[-1]
    op = last[1][1] if last[0] == "array_op" else last[0]
    return isinstance(exc, PROTOCOL_EXCEPTIONS.get(op, ()))


# ----------------------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("target", choices=sorted(TARGETS))
    parser.add_argument("--examples", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--skip-through", type=int, default=-1)
    parser.add_argument("--log", required=True)
    parser.add_argument("--call-timeout", type=float, default=60.0)
    args = parser.parse_args()

    warnings.simplefilter("ignore")  # CacheWarning and friends are not failures
    faulthandler.enable()  # a crash prints the Python stack to stderr
    log = open(args.log, "a", buffering=1)
    get = resolver()
    state = {"index": -1, "calls": 0, "propagated": 0}

    @settings(max_examples=args.examples, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=False, print_blob=False)
    @seed(args.seed)
    @given(TARGETS[args.target]())
    def fuzz(steps):
        state["index"] += 1
        i = state["index"]
        if i <= args.skip_through:
            return
        log.write(json.dumps({"i": i, "input": describe(steps)[:4000]}) + "\n")
        log.flush()
        state["calls"] += 1
        faulthandler.dump_traceback_later(args.call_timeout, exit=True)
        try:
            run_steps(steps, get)
        except BaseException as e:  # noqa: BLE001 - everything is recorded, nothing escapes to Hypothesis
            faulthandler.cancel_dump_traceback_later()
            if isinstance(e, (KeyboardInterrupt, HarnessError)):
                raise
            if allowed(e, steps):
                if isinstance(e, HostileError):
                    state["propagated"] += 1
                return
            kind = "invariant" if isinstance(e, Invariant) else "exception"
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            log.write(json.dumps({"i": i, "failure": {
                "kind": kind, "type": f"{type(e).__module__}.{type(e).__qualname__}",
                "message": str(e)[:1000], "entry": steps[-1][0], "traceback": "".join(tb[-4:])[-3000:]}}) + "\n")
            log.flush()
        finally:
            faulthandler.cancel_dump_traceback_later()

    fuzz()
    log.write(json.dumps({"done": state["calls"], "propagated": state["propagated"]}) + "\n")
    log.close()


if __name__ == "__main__":
    main()
