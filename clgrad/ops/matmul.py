"""Matrix products on strided views: matmul/@ with broadcast batch dims, and the GEMM helper.

Kernels: kernels/matmul.cl :: gemm (tiled in local memory, register-blocked). A transposed
view is read through its strides: no copy is made of any operand.
"""
from __future__ import annotations

import numpy as np

from clgrad import layout
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops._util import defines_for, empty, same_device, scalar, shape_arg, view_arg
from clgrad.tensor import Tensor

__all__ = ["matmul", "mm", "bmm", "dot", "gemm", "linear"]

_TILE = {"cpu": (32, 4, 16), "gpu": (64, 4, 16)}


def gemm(c: Tensor, a: Tensor, b: Tensor, alpha=1.0, beta=0.0):
    """c = alpha * a @ b + beta * c in one launch; no autograd.

    Shapes: a (*B, M, K), b (*B, K, N), c (*B, M, N) with the same batch dims *B (stride-0
    batch dims allowed on a and b). Every operand is any strided view; c must not overlap.
    """
    *batch, m, k = a.shape
    n = b.shape[-1]
    nb = layout.numel(batch)
    if nb == 0 or m == 0 or n == 0:
        return c
    if k == 0 and beta == 0:
        ew.fill_raw(c, 0)
        return c
    bshape, (cb, ab, bb) = layout.collapse(tuple(batch) or (1,), c._strides[:-2] or (0,),
                                           a._strides[:-2] or (0,), b._strides[:-2] or (0,))
    if len(bshape) > 8:
        raise RuntimeError(f"matmul: more than 8 non-mergeable batch dims: {tuple(batch)}")
    dev = c.device
    ts, wpt, tk = _TILE["gpu" if dev.kind == "gpu" else "cpu"]
    d = defines_for(c.dtype)
    d.update(TS=ts, WPT=wpt, TK=tk)
    rts = ts // wpt
    gsize = (-(-n // ts) * rts, -(-m // ts) * rts, nb)
    dev.launch(dev.kernel("matmul.cl", "gemm", d), gsize, (rts, rts, 1),
               np.int64(m), np.int64(n), np.int64(k), np.int32(len(bshape)), shape_arg(bshape),
               c._storage.buffer, view_arg(c, cb), np.int64(c._strides[-2]),
               np.int64(c._strides[-1]),
               a._storage.buffer, view_arg(a, ab), np.int64(a._strides[-2]),
               np.int64(a._strides[-1]),
               b._storage.buffer, view_arg(b, bb), np.int64(b._strides[-2]),
               np.int64(b._strides[-1]), scalar(c.dtype, alpha), scalar(c.dtype, beta))
    return c


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product with PyTorch's rules: 1-D operands are vectors, batch dims broadcast.

    Shapes:  (*B1, M, K) @ (*B2, K, N) -> (broadcast(B1, B2), M, N); (K,) @ (K,) -> ().
    Dtypes:  equal dtypes (RuntimeError otherwise).
    Raises:  RuntimeError on a K mismatch or a 0-dim operand; ValueError if batch dims do not
             broadcast.
    """
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul: expected Tensors, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    same_device("matmul", a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"matmul: expected m1 and m2 to have the same dtype, but got: "
                           f"{a.dtype} != {b.dtype}")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    m, k = a2.shape[-2:]
    k2, n = b2.shape[-2:]
    if k != k2:
        raise RuntimeError(f"matmul: mat1 and mat2 shapes cannot be multiplied ({m}x{k} and "
                           f"{k2}x{n}); shapes {tuple(a.shape)} @ {tuple(b.shape)}")
    batch = layout.broadcast_shapes(a2.shape[:-2], b2.shape[:-2], op="matmul")
    ae = a2.expand(*batch, m, k)
    be = b2.expand(*batch, k, n)
    out = empty(batch + (m, n), a.dtype, a.device)
    with _no_grad():
        gemm(out, ae, be)
    if a.ndim == 1:
        out = out.squeeze(-2)
    if b.ndim == 1:
        out = out.squeeze(-1)
    out = Tensor(out._storage, out.shape, out._strides, out._offset)  # a root, not a view

    def backward(g):
        g2 = g
        if b.ndim == 1:  # first: for vector @ vector, g is 0-dim
            g2 = g2.unsqueeze(-1)
        if a.ndim == 1:
            g2 = g2.unsqueeze(-2)
        ga = gb = None
        if a.requires_grad:
            ga = ew.sum_to(matmul(g2, be.transpose(-1, -2)), a2.shape).reshape(a.shape)
        if b.requires_grad:
            gb = ew.sum_to(matmul(ae.transpose(-1, -2), g2), b2.shape).reshape(b.shape)
        return ga, gb
    return record("matmul", out, (a, b), backward, saved=[a, b])


def _no_grad():
    from clgrad.autograd import no_grad
    return no_grad()


def mm(a: Tensor, b: Tensor) -> Tensor:
    """(M, K) @ (K, N) -> (M, N). Raises RuntimeError for other ranks."""
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"mm: expected 2-D tensors, got {a.ndim}-D and {b.ndim}-D")
    return matmul(a, b)


def bmm(a: Tensor, b: Tensor) -> Tensor:
    """(B, M, K) @ (B, K, N) -> (B, M, N) without broadcasting."""
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0]:
        raise RuntimeError(f"bmm: expected 3-D tensors with equal batch, got "
                           f"{tuple(a.shape)} and {tuple(b.shape)}")
    return matmul(a, b)


def dot(a: Tensor, b: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of equal length."""
    if a.ndim != 1 or b.ndim != 1 or a.shape[0] != b.shape[0]:
        raise RuntimeError(f"dot: expected 1-D tensors of equal size, got {tuple(a.shape)} and "
                           f"{tuple(b.shape)}")
    return matmul(a, b)


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias. Shapes: x (*, in), weight (out, in), bias (out,) -> (*, out)."""
    if weight.ndim != 2:
        raise RuntimeError(f"linear: expected weight of shape (out, in), got "
                           f"{tuple(weight.shape)}")
    if x.shape[-1:] != weight.shape[1:]:
        raise RuntimeError(f"linear: input has {x.shape[-1] if x.ndim else 0} features but "
                           f"weight expects {weight.shape[1]} (input {tuple(x.shape)}, weight "
                           f"{tuple(weight.shape)})")
    out = matmul(x, weight.t())
    return ew.add(out, bias) if bias is not None else out
