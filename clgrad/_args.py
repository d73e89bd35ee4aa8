"""Argument checks shared by ops and nn modules: ints, int tuples, reductions."""
from __future__ import annotations

import numpy as np


def _check_positive(op, **sizes):
    for name, v in sizes.items():
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ValueError(f"{op}: expected {name} to be a positive int, got {v!r}")


def _ntuple(op, name, v, n, minimum=None, *, allow_none=False, error=ValueError) -> tuple:
    """``v`` as an n-tuple of Python ints: one int (NumPy ints too, never bool) repeated, or a
    list/tuple of n ints (or of one, repeated); each ``>= minimum`` when given, None allowed
    with ``allow_none``. Raises ``error`` (ValueError by default; the functional ops pass
    TypeError) naming ``op`` and ``name`` otherwise."""
    def ok(e):
        if e is None:
            return allow_none
        return isinstance(e, (int, np.integer)) and not isinstance(e, bool) and (
            minimum is None or e >= minimum)
    vals = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n or not all(ok(e) for e in vals):
        what = "an int" + ("" if minimum is None else f" >= {minimum}")
        raise error(f"{op}: expected {name} to be {what} or "
                    f"{'a pair' if n == 2 else n} of them, got {v!r}")
    return tuple(None if e is None else int(e) for e in vals)


def _pair(op, name, v, minimum=None, *, allow_none=False, error=ValueError) -> tuple:
    """``_ntuple`` with n = 2 (kernel sizes, strides, paddings, dilations of 2-D ops)."""
    return _ntuple(op, name, v, 2, minimum, allow_none=allow_none, error=error)


def plain_key(*vals):
    """``vals`` as part of a cache key of argument checks, or None (no caching): each must be
    None, an int, a str or a tuple of ints, exactly so (a bool, a NumPy int, a float or a
    list is checked on every call: True equals 1 to a dict, not to the checks)."""
    for v in vals:
        t = type(v)
        if t is tuple:
            for e in v:
                if type(e) is not int:
                    return None
        elif t is not int and t is not str and v is not None:
            return None
    return vals


def _check_reduction(op, reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: expected reduction 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
