"""What ``cuda_kernel`` and ``metal_kernel`` share: the checks of the arguments both factories take
(``factory_args``), the kernel objects' common part (``KernelFront``), name resolution of the dict call form
(seed 000), for kernel objects whose C++ engine takes lists, and the errors of keyword-only calls made with
positional arguments, unknown keywords or a required keyword missing (``REQUIRED``, ``bad_call``).

In the dict form ``inputs``, ``output_shapes``, ``output_dtypes`` (and ``outputs``) are dicts keyed by name, the
factory's ``input_names`` / ``output_names`` may be omitted (the dicts' keys give them, in the dicts' order), and
the call returns a dict. ``resolve_call`` turns such a call into the list form (``_cuda_kernel.py``,
``_metal_kernel.py``).
"""
from __future__ import annotations

from ._errors import ArgumentError, ArgumentTypeError


class _Required:
    """The default of a required keyword of a keyword-only API function, so that leaving it out (or passing
    positional arguments) is an ArgumentTypeError naming it rather than Python's bare TypeError."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


REQUIRED = _Required()


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
    if unknown:
        name = next(iter(unknown))
        raise ArgumentTypeError(name, f"{function}() got an unexpected keyword argument {name!r}")
    for name, value in keywords.items():
        if value is REQUIRED:
            raise ArgumentTypeError(name, f"{function}() missing required keyword argument {name!r}")
    raise AssertionError(f"bad_call({function}): nothing wrong with the call")


def names_arg(value, argument: str):
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
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


def dict_keys(value: dict, argument: str) -> tuple:
    keys = tuple(dict.keys(value))  # dict's own view: subclasses cannot make keys and values disagree
    for key in keys:
        if not isinstance(key, str):
            raise ArgumentTypeError(argument, f"dict keys must be names (strings), got {key!r}")
    return keys


def match_names(keys: tuple, names: tuple, argument: str, names_argument: str) -> None:
    if set(keys) != set(names) or len(keys) != len(names):
        raise ArgumentError(argument, f"the keys {list(keys)} do not match the kernel's {names_argument} "
                                      f"{list(names)}")


def resolve_call(inputs, outputs_by_name: tuple, input_names, output_names, factory: str):
    """(input names, inputs as a list, output names, dict_form) of a call in the list or dict form.

    ``outputs_by_name``: (argument name, value) of the per-output arguments given (shapes, dtypes, outputs);
    ``input_names`` / ``output_names``: the factory's tuples, or None; ``factory`` names it in messages.
    """
    dict_form = False
    if isinstance(inputs, dict):
        dict_form = True
        in_names = dict_keys(inputs, "inputs")
        if input_names is not None:
            match_names(in_names, input_names, "inputs", "input_names")
            in_names = input_names
        inputs = [dict.__getitem__(inputs, n) for n in in_names]
    else:
        in_names = input_names
        if in_names is None:
            raise ArgumentError("inputs", f"this kernel was made without input_names: pass inputs as a dict "
                                          f"{{name: array}}, or give input_names to {factory}()")
    out_names = output_names
    for argument, value in outputs_by_name:
        if isinstance(value, dict):
            dict_form = dict_form or argument != "outputs"
            keys = dict_keys(value, argument)
            if out_names is None:
                out_names = keys
            else:
                match_names(keys, out_names, argument, "output names")
    if out_names is None:
        raise ArgumentError(outputs_by_name[0][0], f"this kernel was made without output_names: pass "
                                                   f"output_shapes / output_dtypes as dicts {{name: value}}, "
                                                   f"or give output_names to {factory}()")
    return in_names, inputs, out_names, dict_form


def ordered(value, names: tuple):
    """A per-output dict as a list in ``names`` order; anything else as it is."""
    return [dict.__getitem__(value, n) for n in names] if isinstance(value, dict) else value


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

    def _call_general(self, inputs, output_shapes, output_dtypes, grid, threadgroup, template, init_value, stream,
                      outputs, verbose):
        """A call with dicts, or to a kernel made without names: resolved to the list form of an engine."""
        in_names, inputs, out_names, dict_form = resolve_call(
            inputs, (("output_shapes", output_shapes), ("output_dtypes", output_dtypes), ("outputs", outputs)),
            self.input_names, self.output_names, self._factory)
        results = self._impl_for(in_names, out_names)._call(
            inputs, ordered(output_shapes, out_names), ordered(output_dtypes, out_names), grid, threadgroup,
            template, init_value, stream, ordered(outputs, out_names), verbose)
        return dict(zip(out_names, results)) if dict_form else results

    def _signature_args(self, inputs, output_dtypes):
        """(engine, inputs as a list, output_dtypes as a list) of a source()-like query in either form."""
        impl = self._impl
        if impl is not None and not (isinstance(inputs, dict) or isinstance(output_dtypes, dict)):
            return impl, inputs, output_dtypes
        in_names, inputs, out_names, _ = resolve_call(inputs, (("output_dtypes", output_dtypes),),
                                                      self.input_names, self.output_names, self._factory)
        return self._impl_for(in_names, out_names), inputs, ordered(output_dtypes, out_names)
