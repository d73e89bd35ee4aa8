"""Inclusive scans along a dim: cumsum and cumprod, with their gradients.

Kernels: kernels/scan.cl :: scan (OP_SUM / OP_PROD, REVERSE), cumprod_grad.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import special as sp
from clgrad.ops import views as vw
from clgrad.ops._util import (defines_for, empty, full, row_geometry, shape_arg,
                              view_arg)
from clgrad.tensor import Tensor

__all__ = ["cumsum", "cumprod"]

_BF16 = dtypes.bfloat16  # scanned in float32 and rounded once (ew.via_float32): before any
#                          kernel is built for its storage type (ushort)


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
    Dtypes:  floats keep theirs (bfloat16: summed in float32, rounded once per element);
             integers and bool give int64 (PyTorch); ``dtype`` casts first
    Grad:    the reversed running sum of the gradient (differentiable again, create_graph)
    Raises:  IndexError for a dim out of range; TypeError for a non-tensor
    Kernels: kernels/scan.cl :: scan (OP_SUM; REVERSE for the backward), Kahan-compensated
    """
    src, d = _prep("cumsum", x, dim, dtype)
    if src._storage.dtype is _BF16:
        return ew.via_float32(cumsum, src, d)
    if src.ndim == 0:
        return ew.clone(src)
    out = _launch("scan", src, d, {"OP_SUM": 1})
    return record("cumsum", out, (src,),
                  lambda g: (_launch("scan", g, d, {"OP_SUM": 1, "REVERSE": 1}),),
                  double=lambda g, node: (_reverse_cumsum(g, d),))


def _reverse_cumsum(g: Tensor, d: int) -> Tensor:
    """The running sums of ``g`` along ``d`` from the end (cumsum's gradient), recorded: its
    backward is cumsum, so it is differentiable again (create_graph)."""
    out = _launch("scan", g.detach(), d, {"OP_SUM": 1, "REVERSE": 1})
    return record("cumsum", out, (g,), lambda gg: (cumsum(gg, d),), double=True)


def cumprod(x: Tensor, dim: int, dtype=None) -> Tensor:
    """Running products along ``dim``: out[..., j, ...] = prod_{i <= j} x[..., i, ...].

    Shapes:  x (*S) -> (*S)
    Dtypes:  floats keep theirs; integers and bool give int64 (PyTorch); ``dtype`` casts first
    Grad:    grad[i] = sum_{j >= i} g[j] * prod_{k <= j, k != i} x[k], computed without
             division, so exact where x holds zeros (as PyTorch's); differentiable again
             (create_graph: _cumprod_grad, of recorded ops, n times x's memory)
    Raises:  IndexError for a dim out of range; TypeError for a non-tensor
    Kernels: kernels/scan.cl :: scan (OP_PROD), cumprod_grad
    """
    src, d = _prep("cumprod", x, dim, dtype)
    if src._storage.dtype is _BF16:
        return ew.via_float32(cumprod, src, d)
    if src.ndim == 0:
        return ew.clone(src)
    out = _launch("scan", src, d, {"OP_PROD": 1})
    return record("cumprod", out, (src,),
                  lambda g: (_launch("cumprod_grad", src, d, {}, g),), saved=[src],
                  double=lambda g, node: (_cumprod_grad(src, d, g),))


def _cumprod_grad(x: Tensor, d: int, g: Tensor) -> Tensor:
    """cumprod's gradient of recorded ops (create_graph), exact where x holds zeros:
    grad[i] = prod_{k<i} x[k] * sum_{j>=i} g[j] prod_{i<k<=j} x[k], the inner products
    as the cumprod of an (n, n) matrix per row (x with the entries k <= i set to 1), masked
    to j >= i. Memory: n times x's."""
    n = x.shape[d]
    if x.numel() == 0:
        return ew.clone(g)
    xt, gt = vw.movedim(x, d, -1), vw.movedim(g, d, -1)
    dev = x._storage.device
    k = np.arange(n)
    upto = creation.tensor(k[None, :] <= k[:, None], device=dev)        # (i, k): k <= i
    after = creation.tensor(k[None, :] >= k[:, None], device=dev)       # (i, j): j >= i
    inner = cumprod(ew.where(upto, 1.0, vw.unsqueeze(xt, -2)), -1)      # prod_{i<k<=j} x[k]
    inner = ew.mul(ew.where(after, inner, 0.0), vw.unsqueeze(gt, -2)).sum(-1)
    ones = full(tuple(xt.shape[:-1]) + (1,), 1, xt.dtype, dev)
    before = cumprod(ix.cat([ones, vw.narrow(xt, -1, 0, n - 1)], -1), -1)  # prod_{k<i} x[k]
    return vw.movedim(ew.mul(before, inner), -1, d)


# -- h4 (issue 22): cummax, cummin, diff -------------------------------------------------------
CummaxResult = namedtuple("cummax", ["values", "indices"])
CumminResult = namedtuple("cummin", ["values", "indices"])


def cummax(x: Tensor, dim: int):
    """Running maximum along ``dim`` and where it was reached -> (values, indices).

    Shapes:  x (*S) -> values (*S) of x's dtype, indices (*S) int64
    Order:   equal values move the index to the later one; from the first NaN on the value is
             NaN and the index that of the latest NaN (PyTorch's cummax)
    Grad:    values -> x: each gradient goes to the element its value came from (scatter-add)
    Raises:  IndexError for a dim out of range; TypeError for a non-tensor
    Kernels: kernels/scan.cl :: scan_arg (CMP_GE)
    """
    return CummaxResult(*_scan_arg("cummax", x, dim, "CMP_GE"))


def cummin(x: Tensor, dim: int):
    """Running minimum along ``dim`` and where it was reached -> (values, indices); ties and
    NaN as cummax. Kernels: kernels/scan.cl :: scan_arg (CMP_LE)."""
    return CumminResult(*_scan_arg("cummin", x, dim, "CMP_LE"))


def _scan_arg(op, x, dim, cmp):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x._storage.dtype is _BF16:  # (the values are bfloat16's: the round trip is exact)
        return ew.via_float32(_scan_arg, op, x, dim, cmp)
    src = ew.to(x, dtypes.int32) if x.dtype.is_bool else x
    scalar = src.ndim == 0
    if scalar:
        src = src.reshape(1)
    d = layout.wrap_dim(dim, src.ndim, op)
    vals = empty(src.shape, src.dtype, src._storage.device)
    idx = empty(src.shape, dtypes.int64, src._storage.device)
    n = src.shape[d]
    if vals.numel():
        o_shape, (so, si, sx) = row_geometry(op, d, src.shape, vals, idx, src)
        rows = vals.numel() // n
        dev = src._storage.device
        kern = dev.kernel("scan.cl", "scan_arg", {**defines_for(src.dtype), "ACC": _acc(src.dtype),
                                                  cmp: 1})
        dev.launch(kern, (rows,), (64,), np.int64(rows), np.int64(n), np.int32(len(o_shape)),
                   shape_arg(o_shape), vals._storage.buffer, view_arg(vals, so),
                   np.int64(vals._strides[d]), idx._storage.buffer, view_arg(idx, si),
                   np.int64(idx._strides[d]), src._storage.buffer, view_arg(src, sx),
                   np.int64(src._strides[d]))
    if src.dtype.is_floating_point:
        from clgrad.ops import index as ix
        shape = tuple(src.shape)
        vals = record(op, vals, (src,), ix._gather_backward(shape, d, idx), saved=[idx],
                      double=lambda g, node: (ix.scatter_add_rec(shape, d, idx, g),))
    if x.dtype.is_bool:
        vals = ew.to(vals, dtypes.bool_)
    if scalar:
        vals, idx = vals.reshape(()), idx.reshape(())
    return vals, idx


def diff(x: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The n-th forward difference along ``dim``: out[i] = x[i + 1] - x[i], applied n times
    (PyTorch's torch.diff); ``prepend``/``append`` are concatenated along dim first.

    Shapes:  x (*S) -> (*S with S[dim] = max(S[dim] + len(prepend) + len(append) - n, 0))
    Dtypes:  x's (bool: x[i + 1] != x[i], PyTorch's logical xor)
    Grad:    x, prepend, append (through the narrow views and subtraction)
    Raises:  RuntimeError for a 0-dim x, n < 0, or prepend/append of another number of dims
             or other sizes off dim; TypeError for a non-Tensor prepend/append; IndexError for
             a dim out of range
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"diff: expected a Tensor, got {type(x).__name__}")
    if x.ndim == 0:
        raise RuntimeError("diff: expected input to be at least one-dimensional, got a 0-dim "
                           "tensor")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise RuntimeError(f"diff: expected order n to be a non-negative int, got {n!r}")
    if x._storage.dtype is _BF16:  # (n differences in float32, rounded once)
        return ew.via_float32(diff, x, n, dim, prepend, append)
    d = layout.wrap_dim(dim, x.ndim, "diff")
    parts = []
    for name, t in (("prepend", prepend), (None, x), ("append", append)):
        if t is None:
            continue
        if name is not None:
            t = _diff_side(name, t, x, d)
        parts.append(t)
    if len(parts) > 1:
        from clgrad.ops import index as ix
        x = ix.cat(parts, d)
    for _ in range(int(n)):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = ew.ne(hi, lo) if x.dtype.is_bool else ew.sub(hi, lo)
    return x


def _diff_side(name, t, x, d):
    if not isinstance(t, Tensor):
        raise TypeError(f"diff: expected {name} to be a Tensor, got {type(t).__name__}")
    if t.ndim != x.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, x.shape))
                               if i != d):
        raise RuntimeError(f"diff: expected {name} to have the same number of dims as input "
                           f"and the same sizes off dim {d}, got {tuple(t.shape)} for input "
                           f"{tuple(x.shape)}")
    return t


__all__ += ["cummax", "cummin", "diff"]


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input), dim)) without overflow or underflow (PyTorch's
    torch.logcumsumexp): a scan of ``logaddexp`` in log2(n) doubling steps (Hillis-Steele),
    so each prefix is as accurate as logaddexp, whatever the range of the values.

    Shapes:  (*S) -> (*S)
    Dtypes:  floats (PyTorch's; integers raise)
    Grad:    input (through logaddexp and the views)
    Raises:  RuntimeError for an integer or bool input; IndexError for a dim out of range
    Kernels: kernels/elementwise.cl :: logaddexp_op, copy.cl (cat)
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"logcumsumexp: expected a floating input, got {input.dtype} "
                           f"(\"logcumsumexp_out_cpu\" not implemented for it in PyTorch)")
    x = input if input.ndim else vw.reshape(input, 1)
    d = layout.wrap_dim(dim, x.ndim, "logcumsumexp")
    n, out, step = x.shape[d], x, 1
    while step < n:
        tail = sp.logaddexp(vw.narrow(out, d, step, n - step), vw.narrow(out, d, 0, n - step))
        out = ix.cat([vw.narrow(out, d, 0, step), tail], d)
        step *= 2
    out = ew.clone(out) if out is x else out
    return vw.reshape(out, ()) if input.ndim == 0 else out


__all__ += ["logcumsumexp"]
