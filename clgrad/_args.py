"""Argument checks shared by ops and nn modules: ints, int tuples, reductions."""
from __future__ import annotations


def _check_positive(op, **sizes):
    for name, v in sizes.items():
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise ValueError(f"{op}: expected {name} to be a positive int, got {v!r}")


def _pair(op, name, v, minimum):
    """An int or a 2-sequence of ints as a 2-tuple, each >= minimum."""
    if isinstance(v, int) and not isinstance(v, bool):
        pair = (v, v)
    else:
        pair = tuple(v) if isinstance(v, (tuple, list)) else ()
    if len(pair) != 2 or any(not isinstance(x, int) or isinstance(x, bool) or x < minimum
                             for x in pair):
        raise ValueError(f"{op}: expected {name} to be an int >= {minimum} or a pair of them, "
                         f"got {v!r}")
    return pair


def _ntuple(op, name, v, n, minimum):
    vals = (v,) * n if isinstance(v, int) and not isinstance(v, bool) else \
        tuple(v) if isinstance(v, (tuple, list)) else ()
    if len(vals) != n or any(not isinstance(e, int) or isinstance(e, bool) or e < minimum
                             for e in vals):
        raise ValueError(f"{op}: expected {name} to be an int >= {minimum} or {n} of them, got "
                         f"{v!r}")
    return vals


def _check_reduction(op, reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{op}: expected reduction 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
