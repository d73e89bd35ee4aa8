"""Layout math: shapes, strides (in elements) and offsets. Pure Python, no device, no autograd.

Each function takes and returns plain tuples so it can be tested against NumPy directly.
"""
from __future__ import annotations

from clgrad.errors import ShapeError

__all__ = ["contiguous_strides", "broadcast_shapes", "collapse", "view_strides", "numel",
           "wrap_dim", "is_contiguous", "has_overlap", "extent", "cdiv"]


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for integers, b > 0 (tile and work-group counts)."""
    return -(-a // b)


def numel(shape) -> int:
    """Number of elements of ``shape``."""
    n = 1
    for s in shape:
        n *= s
    return n


def contiguous_strides(shape) -> tuple:
    """Row-major strides (elements) of ``shape``."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def is_contiguous(shape, strides) -> bool:
    """True when ``strides`` are row-major for ``shape`` (size-1 dims may have any stride)."""
    acc = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s == 0:
            return True
        if s != 1 and st != acc:
            return False
        acc *= s
    return True


def wrap_dim(dim, ndim: int, op: str = "dim") -> int:
    """A dim in ``[-ndim, ndim)`` as a non-negative index. Raises IndexError (PyTorch)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{op}: expected dim to be an int, got {type(dim).__name__}")
    lo, hi = (-max(ndim, 1), max(ndim, 1) - 1)
    if dim < lo or dim > hi:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of "
                         f"[{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 else dim


def broadcast_shapes(*shapes, op: str = "broadcast") -> tuple:
    """NumPy broadcasting of ``shapes``. Raises ShapeError (a ValueError and a RuntimeError)
    naming both shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s):
            j = ndim - len(s) + i
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                shown = " and ".join(str(tuple(x)) for x in shapes)
                raise ShapeError(f"{op}: shapes {shown} are not broadcastable (size {n} vs "
                                 f"{out[j]} at dim {j})")
    return tuple(out)


def broadcast_strides(shape, strides, target) -> tuple:
    """Strides of a tensor of ``shape``/``strides`` expanded to ``target`` (stride 0 where new)."""
    lead = len(target) - len(shape)
    out = [0] * lead
    for n, st, t in zip(shape, strides, target[lead:]):
        out.append(st if n == t else 0)
    return tuple(out)


def collapse(shape, *stride_sets):
    """Merge adjacent dims that are contiguous with each other in every operand; drop size-1 dims.

    Returns ``(shape, [strides, ...])`` with at least one dim. Used before every launch so that
    contiguous tensors are indexed as 1-D and kernels stay within MAXD dims.
    """
    dims = [i for i, n in enumerate(shape) if n != 1]
    if not dims:
        return (1,), [(0,) for _ in stride_sets]
    new_shape = [shape[dims[0]]]
    new_strides = [[st[dims[0]]] for st in stride_sets]
    for d in dims[1:]:
        n = shape[d]
        if all(ns[-1] == st[d] * n for ns, st in zip(new_strides, stride_sets)):
            new_shape[-1] *= n
            for ns, st in zip(new_strides, stride_sets):
                ns[-1] = st[d]
        else:
            new_shape.append(n)
            for ns, st in zip(new_strides, stride_sets):
                ns.append(st[d])
    return tuple(new_shape), [tuple(ns) for ns in new_strides]


def view_strides(shape, strides, new_shape):
    """Strides for viewing (``shape``, ``strides``) as ``new_shape`` without a copy, else None.

    The rule is PyTorch's (``computeStride``): dims may be split or merged only within chunks
    that are contiguous with each other.
    """
    if numel(shape) == 0:
        return contiguous_strides(new_shape)
    if not shape:  # a 0-dim tensor: one element, as a 1-element dim of stride 1
        shape, strides = (1,), (1,)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1] if strides else 1
    tensor_numel, view_numel = 1, 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        if tensor_d == 0 or (shape[tensor_d - 1] != 1 and
                             strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def extent(shape, strides, offset):
    """(lowest, highest) element index a view touches; None for an empty view."""
    if numel(shape) == 0:
        return None
    lo = hi = offset
    for n, st in zip(shape, strides):
        if st > 0:
            hi += (n - 1) * st
        else:
            lo += (n - 1) * st
    return lo, hi


def has_overlap(shape, strides) -> bool:
    """True when two different indices of the view may address the same element.

    Exact for the common cases (a stride 0 on a dim of size > 1, or strides that nest like a
    permuted dense layout); conservative (True) when unsure.
    """
    dims = sorted(((abs(st), n) for n, st in zip(shape, strides) if n > 1), key=lambda t: t[0])
    if any(st == 0 for st, _ in dims):
        return True
    span = 1  # every dim must start beyond the reach of the dims below it
    for st, n in dims:
        if st < span:
            return True
        span = st * (n - 1) + span
    return False
