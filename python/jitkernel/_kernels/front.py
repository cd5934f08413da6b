"""What ``cuda_kernel`` and ``metal_kernel`` share: the checks of the arguments both factories take
(``factory_args``), the kernel objects' common part (``KernelFront``): one C++ engine per name set for kernels made
without names, and the errors of keyword-only calls made with positional arguments, unknown keywords or a required
keyword missing (``REQUIRED``, ``bad_call``).

In the dict form ``inputs``, ``output_shapes``, ``output_dtypes`` (and ``outputs``) are dicts keyed by name, the
factory's ``input_names`` / ``output_names`` may be omitted (the dicts' keys give them, in the dicts' order), and
the call returns a dict. The C++ engines resolve the dict form themselves (cpp/bindings/call/call_form.cpp); this module
only picks the engine for the names a call gives when the kernel was made without them.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

from .. import _core
from .._errors import ArgumentTypeError
from . import call_routes


class _Required:
    """The default of a required keyword of a keyword-only API function, so that leaving it out (or passing
    positional arguments) is an ArgumentTypeError naming it rather than Python's bare TypeError."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


REQUIRED = _Required()


def query_keywords(unknown: dict) -> dict:
    """The keywords of ``unknown`` that a query taking a call's signature (``source``, ``compile``, ...) does not
    take, less those only the launch uses (``grid``, ``output_shapes``, ``outputs``, ...), which it accepts and
    ignores: one keyword dict serves the call and its queries, as in MLX."""
    launch_only = set(_core._call_keywords) - {"inputs", "output_dtypes", "template"}
    return {k: v for k, v in unknown.items() if k not in launch_only}


def bad_call(function: str, args: tuple, unknown: dict, keywords: dict):
    """Raises the ArgumentTypeError of a call to ``function`` (a keyword-only API function declared as
    ``f(*args, a=REQUIRED, ..., **unknown)``) that passed positional ``args``, ``unknown`` keywords, or left a
    required keyword out. ``keywords``: the function's keywords as passed, in signature order (at least the
    required ones)."""
    names = list(keywords)
    if args:
        raise ArgumentTypeError(names[0], f"{function}() takes keyword arguments only "
                                          f"({', '.join(n + '=...' for n in names[:3])}, ...), got {len(args)} "
                                          f"positional")
    refuse_unknown_keywords(function, unknown, tuple(names), listed=False)
    for name, value in keywords.items():
        if value is REQUIRED:
            raise ArgumentTypeError(name, f"{function}() missing required keyword argument {name!r}")
    raise AssertionError(f"bad_call({function}): nothing wrong with the call")


def refuse_unknown_keywords(function: str, unknown: dict, known: tuple, listed: bool = True) -> None:
    """An unknown keyword (``cuda_kernel(sorce=...)``) as an ArgumentTypeError naming it and the keyword of `known`
    it most likely meant, where Python would raise a bare TypeError; ``listed``: `known` is every keyword, and the
    message lists them."""
    if not unknown:
        return
    import difflib  # costly: only when a keyword is misspelt

    name = next(iter(unknown))
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    listing = f" (its keywords: {', '.join(known)})" if listed else ""
    raise ArgumentTypeError(name, f"{function}() got an unexpected keyword argument {name!r}{hint}{listing}")


def names_arg(value, argument: str):
    """A list or tuple (any sequence) of names, as a tuple. A bare str is refused, as call_types.Names refuses it
    for type checkers: it is a sequence too, and ``input_names="xy"`` would name two inputs "x" and "y"."""
    if value is None:
        return None
    if isinstance(value, str):
        raise ArgumentTypeError(argument, f"expected a list of names such as [{value!r}], got the str {value!r}")
    if not isinstance(value, Sequence):
        raise ArgumentTypeError(argument, f"expected a list of names (strings), got {type(value).__name__}")
    # Read by iteration, never sized by len(): a list subclass may report any length (tuple(value) would
    # allocate what it claims), and the names are the items iteration yields.
    names = [name for name in value]
    for i, name in enumerate(names):
        if not isinstance(name, str):
            raise ArgumentTypeError(argument, f"entry {i} must be a string, got {type(name).__name__} {name!r}")
    return tuple(names)


def str_arg(value, argument: str) -> str:
    if not isinstance(value, str):
        raise ArgumentTypeError(argument, f"expected a string, got {type(value).__name__}")
    return value


def bool_arg(value, argument: str) -> bool:
    if not isinstance(value, bool):
        raise ArgumentTypeError(argument, f"expected True or False, got {value!r}")
    return value


def factory_args(name, input_names, output_names, source, header, ensure_row_contiguous):
    """Checks the arguments that ``cuda_kernel`` and ``metal_kernel`` both take; returns (input_names,
    output_names) as tuples (or None where omitted)."""
    str_arg(name, "name")
    input_names = names_arg(input_names, "input_names")
    output_names = names_arg(output_names, "output_names")
    if source is None:
        raise ArgumentTypeError("source", "required: the body of the kernel (a string)")
    str_arg(source, "source")
    str_arg(header, "header")
    bool_arg(ensure_row_contiguous, "ensure_row_contiguous")
    return input_names, output_names


def show_call(cls, call, signature) -> None:
    """Puts ``call`` (a Python function) in ``cls.__dict__`` as ``__call__`` for Python's introspection, while
    CPython keeps calling the C call slot (cpp/bindings/objects/kernel_object.cpp, ``_expose_python_call``), and
    makes ``help(kernel)`` and ``inspect.signature(kernel.__call__)`` show ``signature``: a function declaring the
    call's real keywords, whose docstring ``call`` takes, with the name ``Class.__call__``. inspect follows
    ``__wrapped__``; TorchDynamo, which traces ``call``'s own code, does not read it on a plain function."""
    call.__wrapped__ = signature
    call.__doc__ = signature.__doc__
    call.__name__, call.__qualname__ = "__call__", f"{cls.__name__}.__call__"
    _core._expose_python_call(cls, call)


class KernelFront:
    """The part of ``CudaKernel`` and ``MetalKernelFunction`` that does not depend on the backend: the factory's
    arguments, one C++ engine per (input_names, output_names), and the dict form of calls and of the
    ``source()``-like queries.

    A subclass declares the slots ``name``, ``input_names``, ``output_names``, ``source_text``, ``header``,
    ``ensure_row_contiguous`` and ``_impls``, sets ``_factory`` (its factory's name, for messages), and provides
    ``_impl`` (the engine for the names the kernel was made with; None unless it was made with both) and
    ``_new_engine(input_names, output_names)``. An engine's ``_call(inputs, output_shapes, output_dtypes, grid,
    threadgroup, template, init_value, stream, outputs, verbose)`` takes the list form.
    """

    __slots__ = ()
    _factory = ""

    def _store(self, name, input_names, output_names, source, header, ensure_row_contiguous) -> None:
        self.name = name
        self.input_names = input_names
        self.output_names = output_names
        self.source_text = source
        self.header = header
        self.ensure_row_contiguous = ensure_row_contiguous
        self._impls = {}

    def __repr__(self) -> str:
        return (f"jitkernel.{type(self).__name__}(name={self.name!r}, input_names={self.input_names!r}, "
                f"output_names={self.output_names!r})")

    def _impl_for(self, input_names: tuple, output_names: tuple):
        """The engine for these names: the kernel's own for the names it was made with, else one made once."""
        if input_names == self.input_names and output_names == self.output_names:
            return self._impl
        impl = self._impls.get((input_names, output_names))
        if impl is None:
            impl = self._new_engine(input_names, output_names)
            self._impls[(input_names, output_names)] = impl
        return impl

    def _names(self, inputs, output_shapes, output_dtypes, outputs, query: bool) -> tuple:
        """(input names, inputs, output_shapes, output_dtypes, outputs, output names, dict form) of a call (or a
        source()-like query) in either form, resolved to the list form (cpp/bindings/call/call_form.cpp)."""
        return _core._resolve_call(inputs, output_shapes, output_dtypes, outputs, self.input_names,
                                   self.output_names, self._factory, query)

    def _call_general(self, inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream,
                      outputs, verbose, cooperative=None, cluster=None):
        """A call to a kernel made without names: the engine for the names the call's dicts give, which takes
        the call as it is (either form). ``cooperative`` / ``cluster``: CUDA launch options (None: not given)."""
        if self._traced(inputs, outputs):
            return self._call_traced(inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value,
                                     stream, outputs, verbose, cooperative, cluster)
        in_names, *_, out_names, _ = self._names(inputs, output_shapes, output_dtypes, outputs, False)
        options = () if cooperative is None and cluster is None else (cooperative, cluster)
        return self._impl_for(in_names, out_names)._call(inputs, output_shapes, output_dtypes, grid, threadgroup,
                                                         template, init_value, stream, outputs, verbose, *options)

    def _traced(self, inputs, outputs) -> bool:
        """Whether a call of a kernel made without names must leave the eager path (what the C++ call slot
        decides for kernels made with them): a traced array, or torch autograd with a backward attached."""
        values = [v for arg in (inputs, outputs) if isinstance(arg, (list, tuple, dict))
                  for v in (arg.values() if isinstance(arg, dict) else arg)]
        torch, jax_core = sys.modules.get("torch"), sys.modules.get("jax.core")
        if jax_core is not None and any(isinstance(v, jax_core.Tracer) for v in values):
            return True
        if torch is None:
            return False
        tensors = [v for v in values if isinstance(v, torch.Tensor)]
        if any(type(v) not in (torch.Tensor, torch.nn.Parameter) for v in tensors):
            return True
        return (getattr(self, "_vjp", None) is not None and torch.is_grad_enabled()
                and any(v.requires_grad for v in tensors))

    def _call_traced(self, inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream,
                     outputs, verbose, cooperative=None, cluster=None):
        """A call that a framework records (``call_routes.traced``: python/jitkernel/_frameworks/traced_call.py);
        the C++ call slot sends it here."""
        return call_routes.call_traced(self, inputs, output_shapes, output_dtypes, grid, threadgroup, template,
                                       init_value, stream, outputs, verbose, cooperative, cluster)

    def _signature_args(self, inputs, output_dtypes):
        """(engine, inputs as a list, output_dtypes as a list) of a source()-like query in either form."""
        impl = self._impl
        if impl is not None and not (isinstance(inputs, dict) or isinstance(output_dtypes, dict)):
            return impl, inputs, output_dtypes
        in_names, inputs, _, output_dtypes, _, out_names, _ = self._names(inputs, None, output_dtypes, None, True)
        return self._impl_for(in_names, out_names), inputs, output_dtypes
