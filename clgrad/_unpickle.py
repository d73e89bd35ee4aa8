"""The one allow-list unpickler: pickles are read without ever running code from them.

``AllowlistUnpickler`` resolves a global a pickle names only when (module, name) is in the
table its subclass's ``allowed()`` builds (once per class, on first use); any other raises
pickle.UnpicklingError before anything runs. Users: clgrad.load (torch_format._Reader: tensors,
storages, containers) and the CIFAR-10 reader (utils.data.datasets: NumPy arrays only).
"""
from __future__ import annotations

import pickle

import numpy as np

__all__ = ["AllowlistUnpickler", "numpy_globals"]


def numpy_globals() -> dict:
    """The globals an ndarray pickle names, under NumPy 1 (numpy.core) and 2 (numpy._core)."""
    try:
        from numpy._core import multiarray, numeric
    except ImportError:  # NumPy < 2
        from numpy.core import multiarray, numeric
    allowed = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for pkg in ("numpy.core", "numpy._core"):
        allowed[(pkg + ".multiarray", "_reconstruct")] = multiarray._reconstruct
        allowed[(pkg + ".multiarray", "scalar")] = multiarray.scalar
        allowed[(pkg + ".numeric", "_frombuffer")] = numeric._frombuffer
    return allowed


class AllowlistUnpickler(pickle.Unpickler):
    """An Unpickler whose find_class resolves only the globals ``allowed()`` lists.

    Subclasses override ``allowed()`` (the table, built once per class) and ``refusal()`` (the
    message for a global not in it). Raises pickle.UnpicklingError for any other global.
    """

    @classmethod
    def allowed(cls) -> dict:
        """{(module, name): object} of the globals this reader resolves; NumPy arrays here."""
        return numpy_globals()

    def refusal(self, module: str, name: str) -> str:
        """The UnpicklingError message for a global outside the table."""
        return f"refusing to load the global {module}.{name}"

    def find_class(self, module, name):
        """Resolve only the allowed globals; any other raises pickle.UnpicklingError before it
        runs (so a hostile pickle cannot execute code)."""
        cls = type(self)
        table = cls.__dict__.get("_table")
        if table is None:
            table = cls.allowed()
            cls._table = table
        try:
            return table[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(self.refusal(module, name)) from None
