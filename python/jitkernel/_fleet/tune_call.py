"""The autotuned kernel object (``jitkernel.autotune``'s result): a call finds its bucket's configuration (in
memory, else a stored decision, else by tuning) and runs the kernel with it.

Rules (docs/autotuning.md): a bucket is tuned at most once per fleet: the decision is looked up first (the compile
cache, its read-only tiers, imported bundles); on a miss the bucket is claimed, so one process tunes it while the
others wait and then read its decision (the compile claims' bound, ``JITKERNEL_CACHE_CLAIM_WAIT``, applies: a
process that gives up tunes itself). Nothing is tuned while a CUDA graph is being captured on the call's stream or
while torch.compile / jax.jit / torch.export trace the call: the stored decision is used, else the first
configuration with one ``TuningWarning`` (that choice is not remembered: the next eager call tunes). In a
``jk.precompile`` session every candidate is compiled (so a fleet that tunes compiles nothing).

A call whose bucket is decided (in memory, or stored on disk) is answered by one core call, the table's ``warm``
(cpp/bindings/services/tune_table.cpp: a second process's first call must cost about what an untuned call does);
everything else comes here (``_choose``). Both share the table's dicts, so what one decides the other finds.
"""
from __future__ import annotations

import json
import sys
import threading
import warnings

from .. import _core
from .._errors import ArgumentError, ArgumentTypeError, JitKernelError
from .._kernels import call_routes
from . import tune_bench, tune_decisions, tune_record
from .tune_config import TuningWarning, _dtype_name, _template_value

__all__ = ["Autotuned"]

# Tests replace timing, the GPU's identity and the capture query here (_set_measure).
_measure = tune_bench.measure  # (candidates, warmup, reps) -> (times, errors)
_device_identity = None  # None: the GPU's (device_info); else device -> {"name", "arch"}
_capturing = _core._stream_capturing  # (stream handle, device) -> whether a CUDA graph is being captured


def _set_measure(measure, device_identity=None, capturing=None, devices: int = 1) -> None:
    """Replaces candidate timing, the GPU's identity (of ``devices`` GPUs) and the capture query (tests on machines
    without a GPU); with ``measure`` None, the real ones come back."""
    global _measure, _device_identity, _capturing
    fake = measure is not None
    _measure = measure if fake else tune_bench.measure
    _device_identity = device_identity if fake else None
    _core._tune_set_gpus(_device_identity, devices)
    _capturing = (capturing or (lambda stream, device: False)) if fake else _core._stream_capturing


def _tracing(inputs, outputs) -> str | None:
    """Why this call must not tune because a framework traces it (None: it may)."""
    if call_routes.compiling():
        return "torch.compile is tracing the call"
    values = list(inputs) + list(outputs or ())
    jax_core = sys.modules.get("jax.core")
    if jax_core is not None and any(isinstance(v, jax_core.Tracer) for v in values):
        return "jax is tracing the call"
    torch = sys.modules.get("torch")
    if torch is not None and any(isinstance(v, torch.Tensor) and type(v) not in (torch.Tensor, torch.nn.Parameter)
                                 for v in values):
        return "a torch tracer (fake or functional tensors) is tracing the call"
    return None


class Autotuned:
    """A kernel with a configuration space (``jitkernel.autotune``). Call it like the kernel, list form, without
    ``template`` constants the space sets: ``tuned(inputs=[x], output_shapes=[...], output_dtypes=[...])`` or
    ``tuned(x, output_shapes=..., ...)``; ``outputs=``, ``stream=``, ``init_value=`` and extra ``template=`` entries
    pass through. ``tune(...)`` (same arguments) returns the chosen ``Config`` without running the kernel.
    ``decisions``: this process's decisions by key bucket (JSON text): chosen index, each candidate's time and
    error. ``stats``: counts of buckets ``tuned`` here, ``loaded`` from disk, ``candidates_timed``."""

    def __init__(self, kernel, configs, grid, threadgroup, key, restore, warmup, reps):
        self.kernel, self.configs = kernel, configs
        self.grid, self.threadgroup, self.key = grid, threadgroup, key
        self.restore_inputs, self.warmup, self.reps = restore, warmup, reps
        self._space = [c.to_json() for c in configs]
        self._code = "|".join(_code_identity(f) for f in (grid, threadgroup, key))
        # What every bucket's decision key and check share, made once (the warm path hashes only the bucket).
        self._static = tune_decisions.static_key(kernel._spec, self._space, self._code)
        self._digest = tune_decisions.space_digest(self._space)
        self._templates = [list(c.template) for c in configs]
        self._chosen: dict = {}  # memory key -> config index
        self._launches: dict = {}  # (config index, shapes) -> launch keywords (_launch)
        self._lock = threading.RLock()
        self._warned: set = set()
        self._payloads: dict = {}  # bucket -> the decision's payload (decoded when ``decisions`` is read)
        self.stats = {"tuned": 0, "loaded": 0, "candidates_timed": 0}
        # The warm path in the core (a decided bucket, in memory or stored): it shares the dicts above.
        self._table = _core._TuneTable(self._static, self._digest, list(configs), grid, threadgroup, self._templates,
                                       key, _dtype_name, self._chosen, self._launches, self._payloads, self.stats)

    def __repr__(self):
        return f"jitkernel.Autotuned({self.kernel.name!r}, {len(self.configs)} configs)"

    @property
    def decisions(self) -> dict:
        """This process's decisions by key bucket (JSON text), decoded now (a call reads only the chosen index)."""
        return {bucket: tune_decisions.decode(payload) for bucket, payload in list(self._payloads.items())}

    def __call__(self, *args, inputs=None, output_shapes=None, output_dtypes=None, outputs=None, grid=None,
                 threadgroup=None, template=None, init_value=None, stream=None):
        warm = None
        if grid is None and threadgroup is None and not template and call_routes.precompile_session is None:
            warm = self._table.warm(args, inputs, output_dtypes, outputs)  # a decided bucket: one core call
        if warm is None:
            inputs, shapes, index = self._choose(args, inputs, output_shapes, output_dtypes, outputs, grid,
                                                 threadgroup, template, init_value, stream)
            launch = self._launch(index, shapes, grid, threadgroup, template)
        else:
            inputs, _, launch = warm
        if outputs is None and init_value is None and stream is None:  # fewer keywords for the kernel to parse
            return self.kernel(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes, **launch)
        return self.kernel(inputs=inputs, output_shapes=output_shapes, output_dtypes=output_dtypes, outputs=outputs,
                           init_value=init_value, stream=stream, **launch)

    def tune(self, *args, inputs=None, output_shapes=None, output_dtypes=None, outputs=None, grid=None,
             threadgroup=None, template=None, init_value=None, stream=None):
        """The ``Config`` a call with these arguments runs (tuning now when its bucket has no decision); the
        kernel is not run with the caller's arrays. Use it to tune before capturing a CUDA graph."""
        if grid is None and threadgroup is None and not template and call_routes.precompile_session is None:
            warm = self._table.warm(args, inputs, output_dtypes, outputs)
            if warm is not None:
                return self.configs[warm[1]]
        return self.configs[self._choose(args, inputs, output_shapes, output_dtypes, outputs, grid, threadgroup,
                                         template, init_value, stream)[2]]

    def _choose(self, args, inputs, output_shapes, output_dtypes, outputs, grid, threadgroup, template, init_value,
                stream) -> tuple:
        """(inputs as a list, their shapes, the index of the configuration to run): the slow path of a call (the
        table's ``warm`` is the fast one); one dict lookup once the bucket is decided."""
        inputs = self._inputs_arg(args, inputs)
        gpu = _core._tune_one_gpu() or _gpu_of(inputs)  # None: _decide asks the GPU
        shapes, dtypes, memory_key = self._table.key_of(inputs, output_dtypes, outputs, gpu)
        index = self._chosen.get(memory_key)
        if index is None:
            call = dict(output_shapes=output_shapes, output_dtypes=output_dtypes, outputs=outputs, grid=grid,
                        threadgroup=threadgroup, template=template, init_value=init_value, stream=stream)
            index = self._decide(memory_key, inputs, shapes, dtypes, call)
        return inputs, shapes, index

    @staticmethod
    def _inputs_arg(args, inputs) -> list:
        if args and inputs is not None:
            raise ArgumentTypeError("inputs", "give the inputs positionally or as inputs=, not both")
        inputs = list(args) if args else inputs
        if isinstance(inputs, (str, bytes, dict)) or not isinstance(inputs, (list, tuple)):
            raise ArgumentTypeError("inputs", f"expected a list of arrays and scalars (the list form), got "
                                              f"{type(inputs).__name__}")
        return list(inputs)

    def _bucket_text(self, memory_key) -> str:
        """The key bucket as stored: JSON of the memory key (the table's ``key_of``: the GPU's text, then the
        shapes, dtypes and output dtypes, or the key function's value and the output dtypes), dtypes as names."""
        text = _core._tune_bucket_json(memory_key[1:])  # the common buckets in one call, without a JSON encoder
        if text is not None:
            return text
        if self.key is None:
            _, shapes, dtypes, out = memory_key
            value = [shapes, [_dtype_name(d) for d in dtypes], None if out is None else [_dtype_name(d) for d in out]]
        else:
            _, bucket, out = memory_key
            value = [bucket, None if out is None else [_dtype_name(d) for d in out]]
        try:
            return json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError):
            raise ArgumentTypeError("key", f"the key function returned {value[0]!r}, which cannot be stored: "
                                           f"return ints, floats, strings or tuples of them") from None

    def _launch(self, index: int, shapes, grid, threadgroup, template) -> dict:
        """The launch keywords (grid, threadgroup, template) of configuration ``index`` for these shapes: the
        table's (a config's own grid / threadgroup, else autotune's, a function called, else the call's; kept per
        (index, shapes) when the call gives neither), plus the call's own ``template`` entries."""
        launch = self._table.launch(index, shapes, grid, threadgroup)
        if not template:
            return launch
        extra = list(template.items()) if isinstance(template, dict) else list(template)
        clash = {n for n, _ in self._templates[index]} & {n for n, _ in extra}
        if clash:
            raise ArgumentError("template", f"{sorted(clash)} are set by the tuned configurations")
        return dict(launch, template=self._templates[index] + [(n, _template_value(n, v)) for n, v in extra])

    def _decide(self, memory_key, inputs, shapes, dtypes, call) -> int:
        """A stored decision first (no capture or trace checks, no claim: the warm path), else ``_tune_or_not``."""
        with self._lock:
            index = self._chosen.get(memory_key)
            if index is not None:
                return index
            session = call_routes.precompile_session
            if session is not None:
                return self._precompile(memory_key, inputs, shapes, dtypes, call, session)
            bucket = self._bucket_text(memory_key)
            device = _core._tune_device_of(inputs)
            try:
                identity, identity_key = _identity(device)
            except JitKernelError:
                why_not = _tracing(inputs, call["outputs"])
                if why_not is None:
                    raise
                return self._untuned(why_not, 5)  # traced where the GPU cannot be asked
            _core._tune_settle_gpus(identity_key)
            memory_key = (identity_key,) + memory_key[1:]  # the GPU the call runs on
            index = self._chosen.get(memory_key)
            if index is not None:
                return index
            # The key, the read and the head line's check in one call (tune_decisions.decision_key / load's).
            key, payload, index, _ = _core._tune_find(self._static, identity_key, bucket, self._digest,
                                                       len(self.configs))
            if index is None:
                return self._tune_or_not(memory_key, key, identity, bucket, inputs, shapes, call, device)
            self.stats["loaded"] += 1
            self._payloads[bucket] = payload
            self._chosen[memory_key] = index
            tune_record.record(self, bucket, inputs, shapes, call)
            return index

    def _tune_or_not(self, memory_key, key, identity, bucket, inputs, shapes, call, device) -> int:
        """No usable stored decision: the first configuration while captured or traced (``_untuned``), else the
        bucket is claimed and tuned here (or another process's decision read once it is stored)."""
        why_not = _tracing(inputs, call["outputs"])
        if why_not is None and _capturing(tune_bench.stream_handle(call["stream"], inputs), device):
            why_not = "a CUDA graph is being captured on the call's stream"
        if why_not is not None:
            return self._untuned(why_not, 6)
        self._launch(0, shapes, call["grid"], call["threadgroup"], call["template"])  # its errors first
        payload, index, claim = tune_decisions.load(key, self._digest, len(self.configs), claim=True)
        try:
            if index is None:
                payload, index = self._tune(key, identity, bucket, inputs, shapes, call, device)
            else:
                self.stats["loaded"] += 1
        finally:
            if claim is not None:
                claim.release()
        self._payloads[bucket] = payload
        self._chosen[memory_key] = index
        tune_record.record(self, bucket, inputs, shapes, call)
        return index

    def _untuned(self, why_not: str, stacklevel: int) -> int:
        """The index to run while tuning is not allowed (the stored decision was looked up first): 0, with one
        warning per cause (not remembered: the next eager call tunes); ``stacklevel`` points at the caller's
        call."""
        if why_not not in self._warned:
            self._warned.add(why_not)
            warnings.warn(f"jitkernel.autotune({self.kernel.name!r}): {why_not}, so nothing is tuned and no decision "
                          f"is stored for this key: running the first configuration {self.configs[0]!r}. Call the "
                          f"tuned kernel once eagerly first (or tuned.tune(...)) to tune it.", TuningWarning,
                          stacklevel=stacklevel)
        return 0

    def _precompile(self, memory_key, inputs, shapes, dtypes, call, session) -> int:
        """In a precompile session: compiles every candidate (the session turns each call into compiles); with
        ``tune=True`` then decides the bucket as an eager call would, on GPU copies of the inputs (zeros for
        placeholders), with the session's interception suspended for those launches only."""
        for i in range(len(self.configs)):
            launch = self._launch(i, shapes, call["grid"], call["threadgroup"], call["template"])
            self.kernel(inputs=inputs, output_shapes=call["output_shapes"], output_dtypes=call["output_dtypes"],
                        outputs=call["outputs"], init_value=call["init_value"], **launch)
        if not session.tune:
            return 0
        tuned = self.stats["tuned"]
        with session.suspended():
            index = self._decide(memory_key, tune_bench.on_device(inputs), shapes, dtypes, call)
        session.decided.add((self._static, self._bucket_text(memory_key)))
        session.tuned += self.stats["tuned"] - tuned
        return index

    def _tune(self, key, identity, bucket, inputs, shapes, call, device) -> tuple:
        """Times every candidate, stores the decision and returns (its payload, the chosen index)."""
        candidates = self._candidates(inputs, shapes, call, device)
        times, errors = _measure(candidates, self.warmup, self.reps)
        self.stats["tuned"] += 1
        self.stats["candidates_timed"] += sum(t is not None for t in times)
        payload, chosen = tune_decisions.choose(self.kernel.name, identity, self._space, bucket, times, errors)
        tune_decisions.store(key, payload)
        return payload, chosen

    def _candidates(self, inputs, shapes, call, device) -> tune_bench.Candidates:
        """The scratch runs: declared in-place inputs and caller-given outputs are copied (aliases stay aliases);
        ``tune_bench.measure`` uploads NumPy arrays once."""
        copies: dict = {}

        def scratch(x):
            if id(x) not in copies:
                copies[id(x)] = tune_bench.clone(x)
            return copies[id(x)]

        names = self.kernel.input_names
        run_inputs = [scratch(x) if names[i] in self.restore_inputs else x for i, x in enumerate(inputs)]
        outputs = call["outputs"]
        run_outputs = None if outputs is None else [scratch(o) for o in outputs]
        out_dtypes = call["output_dtypes"] if outputs is None else [o.dtype for o in outputs]
        stream = tune_bench.stream_handle(call["stream"], inputs)
        calls, compile_args = [], []
        for i in range(len(self.configs)):
            launch = self._launch(i, shapes, call["grid"], call["threadgroup"], call["template"])
            calls.append(dict(inputs=run_inputs, output_shapes=None if outputs is not None else call["output_shapes"],
                              output_dtypes=None if outputs is not None else out_dtypes, outputs=run_outputs,
                              init_value=call["init_value"], stream=stream, **launch))
            compile_args.append(dict(inputs=run_inputs, output_dtypes=out_dtypes, template=launch["template"],
                                     threadgroup=launch["threadgroup"], device=device))
        return tune_bench.Candidates(self.kernel, calls, compile_args, device, stream)


Autotuned.__module__ = "jitkernel"


def _code_identity(fn) -> str:
    """What a grid / threadgroup / key function contributes to a decision's key: its name and bytecode (stable
    across processes of one Python version; values it closes over are not seen)."""
    if fn is None or not callable(fn):
        return repr(fn)
    code = getattr(fn, "__code__", None)
    return f"{getattr(fn, '__qualname__', '?')}:{code.co_code.hex() if code is not None else '?'}"


def _identity(device: int) -> tuple:
    """({"name", "arch"} of the GPU, its decision key text), asked once per device and process (the core keeps
    them: cpp/bindings/services/tune_gpus.cpp)."""
    name, arch, text = _core._tune_gpu(device)
    return {"name": name, "arch": arch}, text


def _gpu_of(inputs) -> str | None:
    """The key text of the GPU a call's inputs are on, when this process has asked that GPU already (else None:
    the call goes to ``_decide``, which asks). Only when the process's GPUs are of several models."""
    return _core._tune_known_gpu(inputs)
