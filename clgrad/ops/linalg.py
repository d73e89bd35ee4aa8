"""Vector and matrix norms (PyTorch's torch.linalg.vector_norm / matrix_norm / norm), the
matrix exponential (linalg.matrix_exp) and the product of Householder reflections
(linalg.householder_product, torch.orgqr).

Built on the reductions of clgrad/ops/reduce.py (no kernels of their own). The p-norms for
p > 0 are computed scaled by the largest |x|, s (sum((|x| / s)^p))^(1/p), so they overflow only
when the norm itself does: float32 ``vector_norm([1e20, 1e20])`` is 1.4142e20 (PyTorch: inf).
The spectral (ord 2, -2) and nuclear ('nuc') matrix norms reduce the singular values of
clgrad/ops/decomp.py's svdvals (computed on the host with NumPy's LAPACK).
matrix_exp and householder_product are composed of clgrad ops (matmul, linalg.solve, where,
views), so their gradients are autograd's through those ops.
"""
from __future__ import annotations

import math

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import no_grad, record
from clgrad.autograd.graph import output_of
from clgrad.errors import ShapeError
from clgrad.ops import decomp
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import matmul as mm
from clgrad.ops import reduce as rd
from clgrad.ops import views as vw
from clgrad.ops._util import full, same_device
from clgrad.tensor import Tensor

__all__ = ["vector_norm", "matrix_norm", "norm", "matrix_exp", "householder_product"]

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


# -- matrix exponential ----------------------------------------------------------------------
# Padé [m/m] coefficients b_0..b_m of exp (Higham 2005, "The scaling and squaring method for
# the matrix exponential revisited", SIAM J. Matrix Anal. Appl. 26(4), eq. 2.9 / Algorithm 2.3)
_PADE = {
    7: (17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0),
    13: (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0, 1.0)}
# (degree, theta_m): the largest 1-norm for which the degree-m approximant's backward error is
# below the unit roundoff (Higham 2005 Table 2.3 for float64; float32: the single-precision
# theta_7 of the same analysis, MATLAB's expm)
_DEGREE = {"float64": (13, 5.371920351148152), "float32": (7, 3.925724783138660)}


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) = sum_k A^k / k! of square matrices A (*, n, n) -> (*, n, n) (PyTorch's
    torch.linalg.matrix_exp, torch.matrix_exp, Tensor.matrix_exp).

    Method:  scaling and squaring with a Padé approximant (Higham 2005, Algorithm 2.3): each
             matrix is scaled by 2^-s, s = max(0, ceil(log2(||A||_1 / theta_m))), r_m(X) =
             (V - U)^-1 (V + U) is solved with linalg.solve (on the host with NumPy's LAPACK)
             and squared s times (s per batch element). float64: degree 13, theta_13 = 5.37;
             float32: degree 7, theta_7 = 3.93 (single-precision backward error; PyTorch uses
             a degree-18 Taylor polynomial there: the results agree to float32 rounding).
             n = 1: exp elementwise.
    Dtypes:  float32, float64; float16 and bfloat16 computed in float32 and rounded once.
    Grad:    autograd through the ops above (matmul, linalg.solve, where); the scaling s is
             piecewise constant.
    NaN/inf: a matrix holding a NaN or an infinity gives a matrix of NaN (PyTorch's).
    Raises:  RuntimeError for fewer than 2 dims, non-square matrices or a non-floating input;
             TypeError for a non-Tensor A.
    """
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.matrix_exp(): argument 'A' must be Tensor, not "
                        f"{type(A).__name__}")
    if A.dtype in (dtypes.float16, dtypes.bfloat16) and A.ndim >= 2:
        return ew.to(matrix_exp(ew.to(A, dtypes.float32)), A.dtype)
    decomp._check(A, "matrix_exp")
    n = A.shape[-1]
    if A.numel() == 0:
        return ew.clone(A)
    if n == 1:
        return ew.exp(A)
    degree, theta = _DEGREE[A.dtype.name]
    batch = tuple(A.shape[:-2])
    with no_grad():
        norms = np.asarray(matrix_norm(A, 1).numpy(), dtype=np.float64).reshape(batch)
    bad = ~np.isfinite(norms)  # NaN or inf: computed from zeros, NaN at the end
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(~bad & (norms > theta), np.ceil(np.log2(norms / theta)), 0).astype(int)
    dev = A._storage.device

    def per_matrix(values, dtype):  # a (*, 1, 1) tensor of one value per matrix
        return creation._upload(np.ascontiguousarray(np.reshape(values, batch + (1, 1))),
                                dtype, dev)
    X = A
    if bad.any():
        X = ew.where(per_matrix(bad, dtypes.bool_), 0.0, X)
    if s.any():
        X = ew.mul(X, per_matrix(np.ldexp(1.0, -s), A.dtype))
    R = _pade(X, _PADE[degree])
    for i in range(int(s.max())):
        sq = mm.matmul(R, R)
        R = sq if (s > i).all() else ew.where(per_matrix(s > i, dtypes.bool_), sq, R)
    if bad.any():
        R = ew.where(per_matrix(bad, dtypes.bool_), float("nan"), R)
    return R


def _pade(X: Tensor, b) -> Tensor:
    """r_m(X) = (V - U)^-1 (V + U), U the odd and V the even part of the Padé numerator
    sum_j b_j X^j (Higham 2005, eqs. 2.9 (m = 7) and 2.11 (m = 13: U and V from X^2, X^4, X^6
    only))."""
    Id = creation.eye(X.shape[-1], dtype=X.dtype, device=X.device)

    def comb(coefs, mats):  # sum c_i M_i
        out = None
        for c, M in zip(coefs, mats):
            if c:
                term = ew.mul(M, c)
                out = term if out is None else ew.add(out, term)
        return out
    X2 = mm.matmul(X, X)
    X4 = mm.matmul(X2, X2)
    X6 = mm.matmul(X4, X2)
    if len(b) == 14:
        u_in = ew.add(mm.matmul(X6, comb((b[13], b[11], b[9]), (X6, X4, X2))),
                      comb((b[7], b[5], b[3], b[1]), (X6, X4, X2, Id)))
        V = ew.add(mm.matmul(X6, comb((b[12], b[10], b[8]), (X6, X4, X2))),
                   comb((b[6], b[4], b[2], b[0]), (X6, X4, X2, Id)))
    else:
        u_in = comb((b[7], b[5], b[3], b[1]), (X6, X4, X2, Id))
        V = comb((b[6], b[4], b[2], b[0]), (X6, X4, X2, Id))
    U = mm.matmul(X, u_in)
    return decomp.solve(ew.sub(V, U), ew.add(V, U))


# -- Householder products ---------------------------------------------------------------------
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_1 H_2 ... H_k, H_i = I - tau_i v_i v_i^T, where v_i is the i-th
    column of A below the diagonal with an implicit 1 on it (LAPACK's orgqr: the Q of geqrf's
    output); PyTorch's torch.linalg.householder_product, torch.orgqr, Tensor.orgqr.

    Shapes:  A (*, m, n), tau (*, k) with m >= n >= k and the same batch dims -> (*, m, n);
             k = 0 gives the first n columns of the identity.
    Dtypes:  float32, float64 (A and tau of one dtype).
    Grad:    autograd through the reflections, applied right to left as
             Q <- Q - tau_i v_i (v_i^T Q) from Q = I[:, :n] (matmuls and views).
    Raises:  RuntimeError (PyTorch's messages) for A of fewer than 2 dims, m < n, n < k, tau
             not one dim fewer than A, batch dims that differ, dtypes that differ, a
             non-floating or low-precision dtype, tensors on two devices; TypeError for a
             non-Tensor argument.
    """
    op = "torch.linalg.householder_product"
    for name, t in (("input", A), ("tau", tau)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg_householder_product(): argument '{name}' must be Tensor, "
                            f"not {type(t).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if tau.ndim >= 1 and A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if A.ndim - tau.ndim != 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.ndim} and input.ndim is equal to {A.ndim}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{op}: tau dtype {dtypes.torch_name(tau.dtype)} does not match "
                           f"input dtype {dtypes.torch_name(A.dtype)}")
    if A.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{op}: expected a float32 or float64 input, got "
                           f"{dtypes.torch_name(A.dtype)}")
    same_device(op, A, tau)
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    Q = creation.eye(m, n, dtype=A.dtype, device=A.device)
    if k == 0:  # no reflection: a zero gradient (recorded, as PyTorch's)
        return ew.record_zero_grad("householder_product", ew.contiguous(
            vw.expand(Q, tuple(A.shape)), force_copy=True), (A, tau))
    V = ew.add(vw.narrow(ix.tril(A, -1), -1, 0, k),
               creation.eye(m, k, dtype=A.dtype, device=A.device))
    for i in reversed(range(k)):
        v = vw.narrow(V, -1, i, 1)                                        # (*, m, 1)
        t = vw.unsqueeze(vw.narrow(tau, -1, i, 1), -1)                   # (*, 1, 1)
        Q = ew.sub(Q, ew.mul(t, mm.matmul(v, mm.matmul(vw.transpose(v, -2, -1), Q))))
    return Q


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
