"""``clgrad.serialization``: PyTorch's ``torch.serialization`` names: ``save``, ``load`` and the
allow-list of globals that ``load`` may rebuild from a pickle.

``clgrad.load`` never runs Python's default unpickler: every global a checkpoint's pickle names
must be in an allow-list (clgrad/io/torch_format.py). With ``weights_only=True`` (the default, as
in PyTorch >= 2.6) that is tensors, storages, dtypes, devices and containers; with
``weights_only=False`` also clgrad's own nn.Module / Optimizer / LR scheduler classes. Your own
classes (a model class saved with ``clgrad.save(model, path)``) load only once you allow them:

    clgrad.serialization.add_safe_globals([MyNet])            # for the rest of the process
    with clgrad.serialization.safe_globals([MyNet]):          # for a block
        model = clgrad.load("model.pt", weights_only=False)

Allowed classes are rebuilt as pickle does (``cls.__new__`` then ``__setstate__`` or a
``__dict__`` update); allowed functions are called with the pickle's arguments, so allow only
what you trust. Unlike PyTorch, clgrad's own classes are not allowed with ``weights_only=True``.
"""
from __future__ import annotations

from clgrad.io.serialization import load, save
from clgrad.io.torch_format import _SAFE_GLOBALS  # (module, qualified name) -> the object

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]


def _entries(globals_list, op):
    if not isinstance(globals_list, (list, tuple)):
        raise TypeError(f"{op}: expected a list of classes or functions, got "
                        f"{type(globals_list).__name__}")
    out = {}
    for g in globals_list:
        if isinstance(g, tuple) and len(g) == 2 and isinstance(g[1], str) and "." in g[1]:
            obj, full = g  # (object, "module.Name"), as PyTorch allows
            module, name = full.rsplit(".", 1)
        else:
            obj, module, name = g, getattr(g, "__module__", None), getattr(g, "__qualname__",
                                                                            None)
            if not isinstance(module, str) or not isinstance(name, str):
                raise TypeError(f"{op}: expected classes or functions (with __module__ and "
                                f"__qualname__) or (object, 'module.name') pairs, got {g!r}")
        out[(module, name)] = obj
    return out


def add_safe_globals(safe_globals):
    """Allow ``clgrad.load`` to rebuild these classes / functions (any ``weights_only``).

    Args:    safe_globals: a list of classes or functions, or (object, "module.Name") pairs
    Raises:  TypeError for anything else
    """
    _SAFE_GLOBALS.update(_entries(safe_globals, "add_safe_globals"))


def get_safe_globals():
    """The objects allowed with ``add_safe_globals`` (a list)."""
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals():
    """Forget every global allowed with ``add_safe_globals``."""
    _SAFE_GLOBALS.clear()


class safe_globals:  # PyTorch's name
    """Context manager: ``add_safe_globals(globals_list)`` inside the block only (the allow-list
    is restored on exit)."""

    def __init__(self, safe_globals):
        self.entries = _entries(safe_globals, "safe_globals")
        self.saved = None

    def __enter__(self):
        self.saved = dict(_SAFE_GLOBALS)
        _SAFE_GLOBALS.update(self.entries)
        return self

    def __exit__(self, *exc):
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(self.saved)
        return False
