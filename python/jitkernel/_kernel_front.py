"""Name resolution of the dict call form (seed 000), for kernel objects whose C++ engine takes lists.

In the dict form ``inputs``, ``output_shapes``, ``output_dtypes`` (and ``outputs``) are dicts keyed by name, the
factory's ``input_names`` / ``output_names`` may be omitted (the dicts' keys give them, in the dicts' order), and
the call returns a dict. ``resolve_call`` turns such a call into the list form (``_cuda_kernel.py``,
``_metal_kernel.py``).
"""
from __future__ import annotations

from ._errors import ArgumentError, ArgumentTypeError


def dict_keys(value: dict, argument: str) -> tuple:
    keys = tuple(value)
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
        inputs = [inputs[n] for n in in_names]
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
    return [value[n] for n in names] if isinstance(value, dict) else value
