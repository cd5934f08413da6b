"""``jitkernel.Array``: the device array jitkernel allocates (a kernel output when no input came from a framework).

Everything else about arrays happens in C++ (cpp/bindings/): what a Python type is (type_table.cpp), reading
arrays (array_import.cpp) and returning results in the inputs' framework (array_export.cpp).
"""
from __future__ import annotations

from . import _core

Array = _core.Array
