"""Inclusive scans along a dim: cumsum and cumprod, with their gradients.

Kernels: kernels/scan.cl :: scan (OP_SUM / OP_PROD, REVERSE), cumprod_grad.
"""
from __future__ import annotations

import numpy as np

from clgrad import dtypes, layout
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops._util import empty, row_geometry, shape_arg, view_arg
from clgrad.tensor import Tensor

__all__ = ["cumsum", "cumprod"]


def _prep(op, x, dim, dtype):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = ew.to(x, dtype)
    elif not x.dtype.is_floating_point:
        x = ew.to(x, dtypes.int64)  # integer and bool scans accumulate in int64 (PyTorch)
    return x, layout.wrap_dim(dim, x.ndim, op)


def _acc(dt):
    return {"float": "float", "double": "double", "half": "float"}.get(dt.cl, "long")


def _launch(kname, x: Tensor, d: int, defines: dict, *extra_in) -> Tensor:
    out = empty(x.shape, x.dtype, x._storage.device)
    n = x.shape[d] if x.ndim else 1
    if out.numel() == 0:
        return out
    o_shape, strides = row_geometry(kname, d, x.shape, out, x, *extra_in)
    rows = out.numel() // n
    args = [np.int32(len(o_shape)), shape_arg(o_shape), out._storage.buffer,
            view_arg(out, strides[0]), np.int64(out._strides[d])]
    for t, st in zip((x,) + extra_in, strides[1:]):
        args += [t._storage.buffer, view_arg(t, st), np.int64(t._strides[d])]
    total = rows if kname == "scan" else out.numel()
    dev = x._storage.device
    dev.launch(dev.kernel("scan.cl", kname, {"T": x.dtype.cl, "ACC": _acc(x.dtype), **defines}),
               (total,), (64,), np.int64(total), np.int64(n), *args)
    return out


def cumsum(x: Tensor, dim: int, dtype=None) -> Tensor:
    """Running sums along ``dim``: out[..., j, ...] = sum_{i <= j} x[..., i, ...].

    Shapes:  x (*S) -> (*S)
    Dtypes:  floats keep theirs; integers and bool give int64 (PyTorch); ``dtype`` casts first
    Grad:    the reversed running sum of the gradient
    Raises:  IndexError for a dim out of range; TypeError for a non-tensor
    Kernels: kernels/scan.cl :: scan (OP_SUM; REVERSE for the backward), Kahan-compensated
    """
    src, d = _prep("cumsum", x, dim, dtype)
    if src.ndim == 0:
        return ew.clone(src)
    out = _launch("scan", src, d, {"OP_SUM": 1})
    return record("cumsum", out, (src,),
                  lambda g: (_launch("scan", g, d, {"OP_SUM": 1, "REVERSE": 1}),))


def cumprod(x: Tensor, dim: int, dtype=None) -> Tensor:
    """Running products along ``dim``: out[..., j, ...] = prod_{i <= j} x[..., i, ...].

    Shapes:  x (*S) -> (*S)
    Dtypes:  floats keep theirs; integers and bool give int64 (PyTorch); ``dtype`` casts first
    Grad:    grad[i] = sum_{j >= i} g[j] * prod_{k <= j, k != i} x[k], computed without
             division, so exact where x holds zeros (as PyTorch's)
    Raises:  IndexError for a dim out of range; TypeError for a non-tensor
    Kernels: kernels/scan.cl :: scan (OP_PROD), cumprod_grad
    """
    src, d = _prep("cumprod", x, dim, dtype)
    if src.ndim == 0:
        return ew.clone(src)
    out = _launch("scan", src, d, {"OP_PROD": 1})
    return record("cumprod", out, (src,),
                  lambda g: (_launch("cumprod_grad", src, d, {}, g),), saved=[src])
