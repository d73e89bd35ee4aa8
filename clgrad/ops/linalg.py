"""Vector and matrix norms (PyTorch's torch.linalg.vector_norm / matrix_norm / norm).

Built on the reductions of clgrad/ops/reduce.py (no kernels of their own). The p-norms for
p > 0 are computed scaled by the largest |x|, s (sum((|x| / s)^p))^(1/p), so they overflow only
when the norm itself does: float32 ``vector_norm([1e20, 1e20])`` is 1.4142e20 (PyTorch: inf).
The spectral (ord 2, -2) and nuclear ('nuc') matrix norms reduce the singular values of
clgrad/ops/decomp.py's svdvals (computed on the host with NumPy's LAPACK).
"""
from __future__ import annotations

import math

from clgrad import dtypes, layout
from clgrad.autograd import no_grad, record
from clgrad.autograd.graph import output_of
from clgrad.errors import ShapeError
from clgrad.ops import decomp
from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd
from clgrad.ops._util import full
from clgrad.tensor import Tensor

__all__ = ["vector_norm", "matrix_norm", "norm"]

_INF = math.inf


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """The vector ``ord``-norm over ``dim`` (int, tuple, or None: all elements).

    ord:     p > 0: (sum |x|^p)^(1/p); inf: max |x|; -inf: min |x|; 0: the number of non-zeros;
             p < 0: (sum |x|^p)^(1/p) (unscaled).
    Shapes:  (*S) -> S without the reduced dims (kept as 1 with ``keepdim``).
    Dtypes:  float16 and bfloat16 (computed in float32, rounded once), float32, float64
             (``dtype`` casts the input first).
    Grad:    p > 0: g sign(x) (|x| / norm)^(p-1), and 0 where the norm is 0 (PyTorch's; not
             nan at an all-zero input or row); inf/-inf: split evenly among the tied extremes;
             0: zero.
    Raises:  RuntimeError for a non-floating input; TypeError for a non-number ord.
    Formula: PyTorch's linalg_vector_norm_backward (torch/csrc/autograd/FunctionsManual.cpp).
    """
    if dtype is not None:
        x = ew.to(x, dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {x.dtype}")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg.vector_norm: expected ord to be a number, got {ord!r}")
    if x.dtype is dtypes.float16 or x.dtype is dtypes.bfloat16:  # in float32, rounded once
        # (PyTorch's float accumulation)
        return ew.to(vector_norm(ew.to(x, dtypes.float32), ord, dim, keepdim), x.dtype)
    dims = rd._dims(x, dim, "linalg.vector_norm")
    ord = float(ord)
    if ord == _INF:
        return rd.amax(ew.abs(x), dims, keepdim)
    if ord == -_INF:
        return rd.amin(ew.abs(x), dims, keepdim)
    if ord == 0:  # a count: a zero gradient (recorded, as PyTorch's)
        return ew.record_zero_grad("vector_norm", rd.sum(ew.to(ew.ne(x, 0), x.dtype), dims,
                                                          keepdim).detach(), (x,))
    if ord == 1:
        return rd.sum(ew.abs(x), dims, keepdim)
    if ord < 0:
        return ew.pow(rd.sum(ew.pow(ew.abs(x), ord), dims, keepdim), 1.0 / ord)
    return _scaled_pnorm(x, ord, dims, keepdim)


def matrix_norm(x: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, dtype=None):
    """The matrix norm over the two dims ``dim`` of ``x`` (batched over the others).

    ord:     'fro' (sqrt of the sum of squares), 1 / -1 (max / min column sum of |x|),
             inf / -inf (max / min row sum of |x|), 2 / -2 (largest / smallest singular
             value), 'nuc' (their sum); the last three through linalg.svdvals (computed on the
             host with NumPy's LAPACK; its gradient U diag(g) V^T).
    Raises:  ValueError for any other ord; ShapeError (a ValueError and RuntimeError) unless
             ``dim`` names two distinct dims of an input of at least 2 dims; RuntimeError for
             a float16/bfloat16 input with ord 2, -2 or 'nuc' (as linalg.svdvals).
    """
    if dtype is not None:
        x = ew.to(x, dtype)
    if not isinstance(x, Tensor) or x.ndim < 2:
        got = f"a {x.ndim}-dim input" if isinstance(x, Tensor) else type(x).__name__
        raise ShapeError(f"linalg.matrix_norm: expected a tensor of at least 2 dims, got {got}")
    dd = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    if len(dd) != 2:
        raise ShapeError(f"linalg.matrix_norm: expected dim to be a 2-tuple, got {dim!r}")
    r, c = (layout.wrap_dim(d, x.ndim, "linalg.matrix_norm") for d in dd)
    if r == c:
        raise ShapeError(f"linalg.matrix_norm: expected two distinct dims, got {dim!r}")
    if ord == "fro":
        return vector_norm(x, 2, (r, c), keepdim)
    if x.dtype is dtypes.bfloat16:  # the sums in float32, rounded once
        return ew.via_float32(matrix_norm, x, ord, dim, keepdim)
    if ord in (1, -1, _INF, -_INF) and not isinstance(ord, bool):
        inner, outer = (r, c) if abs(ord) == 1 else (c, r)   # 1: sum down each column
        sums = rd.sum(ew.abs(x), inner, keepdim=True)
        out = (rd.amax if ord > 0 else rd.amin)(sums, outer, keepdim=True)
        return out if keepdim else out.squeeze((r, c))
    if ord in (2, -2, "nuc") and not isinstance(ord, bool):
        rest = [d for d in range(x.ndim) if d not in (r, c)]
        sv = decomp.svdvals(x.permute(*rest, r, c))
        out = (rd.sum(sv, -1) if ord == "nuc" else
               (rd.amax if ord == 2 else rd.amin)(sv, -1))
        if keepdim:
            for d in sorted((r, c)):
                out = out.unsqueeze(d)
        return out
    raise ValueError(f"linalg.matrix_norm: expected ord 'fro', 'nuc', 1, -1, 2, -2, inf or "
                     f"-inf, got {ord!r}")


def norm(x: Tensor, ord=None, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """PyTorch's torch.linalg.norm: a vector or a matrix norm, chosen as PyTorch does.

    ord None: the 2-norm of ``x`` flattened (dim None), or over ``dim`` (an int: vector,
    a 2-tuple: Frobenius). ord given: dim None needs a 1-D (vector norm) or 2-D (matrix norm)
    input; an int dim takes a vector norm, a 2-tuple a matrix norm (see matrix_norm).
    Raises:  ValueError for an unknown ord or a string ord with a vector; ShapeError
             (ValueError and RuntimeError) for ord with dim None and an input that is not
             1-D or 2-D.
    """
    if isinstance(dim, int) or (isinstance(dim, (tuple, list)) and len(dim) == 1):
        if isinstance(ord, str):
            raise ValueError(f"linalg.norm: ord={ord!r} is a matrix norm, which needs 2 dims, "
                             f"got dim={dim!r}")
        return vector_norm(x, 2 if ord is None else ord, dim, keepdim, dtype)
    if dim is not None:
        return matrix_norm(x, "fro" if ord is None else ord, dim, keepdim, dtype)
    if ord is None:
        return vector_norm(x, 2, None, keepdim, dtype)
    if x.ndim == 1 and not isinstance(ord, str):
        return vector_norm(x, ord, None, keepdim, dtype)
    if x.ndim == 2:
        return matrix_norm(x, ord, (0, 1), keepdim, dtype)
    raise ShapeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D "
                     f"or 2D (ord={ord!r} with a {x.ndim}-dim input)")


# -- helpers ----------------------------------------------------------------------------------
def _scaled_pnorm(x: Tensor, p: float, dims, keepdim):
    """s * (sum((|x| / s)^p))^(1/p) with s = max |x| (1 where s is 0, inf or nan, which the
    unscaled sum handles: 0, inf and nan come out as they should)."""
    kept, final = rd._out_shapes(x, dims, keepdim)
    with no_grad():
        a = ew.abs(x)
        if x.numel():
            s = rd.amax(a, dims, keepdim=True)
            s = ew.where(ew.logical_or(ew.eq(s, 0), ew.ne(ew.sub(s, s), 0)), 1.0, s)
        else:  # an empty reduction is 0
            s = full((), 1.0, x.dtype, x._storage.device).expand(kept)
        q = ew.div(a, s)
        acc = rd.sum(ew.mul(q, q) if p == 2 else ew.pow(q, p), dims, keepdim=keepdim)
        out = ew.mul(ew.sqrt(acc) if p == 2 else ew.pow(acc, 1.0 / p), s.reshape(final))
    y = out.detach()  # the closure must not hold its own output
    n = y.reshape(kept)

    def backward(g, n=n):  # (create_graph: n, the output, re-attached to its Node)
        g = g.reshape(kept)
        safe = ew.where(ew.eq(n, 0), 1.0, n)
        r = ew.div(x, safe) if p == 2 else ew.mul(ew.sign(x), ew.pow(ew.div(ew.abs(x), safe),
                                                                      p - 1))
        if p < 1:  # 0 * |0|^(p-1) = 0 * inf: the gradient at a zero element is 0 (PyTorch's)
            r = ew.where(ew.eq(x, 0), 0.0, r)
        return (ew.where(ew.eq(n, 0), 0.0, ew.mul(r, g)),)
    return record("vector_norm", out, (x,), backward, saved=[x, n],
                  double=lambda g, node: backward(g, output_of(node, y).reshape(kept)))
