"""Run a callback once a framework module has been imported, without importing it.

jitkernel registers its torch.library ops and its XLA FFI target with torch and JAX, but ``import jitkernel`` must
not import either (both take seconds). ``when_imported(name, callback)`` runs ``callback(module)`` right away when
``name`` is already in ``sys.modules``, else right after the import of ``name`` finishes (a finder on
``sys.meta_path`` that wraps the module's loader), so that a program which imports torch after jitkernel, or loads a
``torch.export`` archive / a JAX executable from a persistent cache, finds jitkernel's ops registered. A callback
that raises is reported as a warning: a broken framework must not break the import of the program.
"""
from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable

_lock = threading.RLock()
_pending: dict[str, list[Callable]] = {}


def when_imported(name: str, callback: Callable) -> None:
    """Calls ``callback(sys.modules[name])`` once module ``name`` is imported (now, if it already is)."""
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            _pending.setdefault(name, []).append(callback)
            if _finder not in sys.meta_path:
                sys.meta_path.insert(0, _finder)
            return
    _run(name, module, [callback])


def _run(name: str, module, callbacks: list) -> None:
    for callback in callbacks:
        try:
            callback(module)
        except Exception as e:  # noqa: BLE001 - reported, never raised into the user's import
            warnings.warn(f"jitkernel: setting up its {name} integration failed: {type(e).__name__}: {e}",
                          RuntimeWarning, stacklevel=2)


class _Loader:
    """The module's own loader, then the callbacks waiting for it (duck-typed: importing importlib.abc would cost
    more than the rest of ``import jitkernel``)."""

    def __init__(self, name: str, loader):
        self._name = name
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        with _lock:
            callbacks = _pending.pop(self._name, [])
        _run(self._name, module, callbacks)

    def __getattr__(self, attr):  # get_source, is_package, ... of the wrapped loader
        return getattr(self._loader, attr)


class _Finder:
    """Finds nothing itself: for a watched name it asks the other finders and wraps the loader they return."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _pending:
            return None
        spec = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(fullname, spec.loader)
        return spec


_finder = _Finder()
