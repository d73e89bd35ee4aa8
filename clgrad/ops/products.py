"""Products, distances and norms composed of the matmul, elementwise and reduction ops
(PyTorch's names): trace, kron, tensordot, cdist, dist, renorm, addr, addbmm, chain_matmul
and matrix_power. Their gradients are those of the ops they are made of.

Formulas and errors: PyTorch's documentation of each op (torch.<name>) and its ATen sources
(cdist's matmul form of the Euclidean distance: aten/src/ATen/native/Distance.cpp
``_euclidean_dist``; renorm: aten's renorm, factor maxnorm / (norm + 1e-7)).
Kernels: none of their own.
"""
from __future__ import annotations

import math

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.ops import composite as cp
from clgrad.ops import decomp
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import inplace as ip
from clgrad.ops import linalg
from clgrad.ops import matmul as mm
from clgrad.ops import reduce as rd
from clgrad.ops import scan as sc
from clgrad.ops import views as vw
from clgrad.ops._util import _type_name
from clgrad.tensor import Tensor

__all__ = ["trace", "kron", "tensordot", "cdist", "dist", "renorm", "renorm_", "addr", "addr_",
           "addbmm", "addbmm_", "addmv_", "chain_matmul", "matrix_power"]

_HALF = (dtypes.float16, dtypes.bfloat16)


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix (rectangular allowed): a 0-dim tensor; integer
    and bool inputs sum to int64 (sum's dtype rule). Grad: g on the diagonal.
    Raises RuntimeError for an input that is not 2-D."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return rd.sum(vw.diagonal(input, 0, 0, 1))


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: for a (a0, a1, ...) and b (b0, b1, ...) (the shorter padded with
    leading 1s), result[i0*b0 + j0, i1*b1 + j1, ...] = a[i0, i1, ...] * b[j0, j1, ...];
    shape (a0*b0, a1*b1, ...). Dtype: mul's promotion. Grad: both (through mul)."""
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + tuple(input.shape)
    sb = (1,) * (nd - other.ndim) + tuple(other.shape)
    a = vw.reshape(input, tuple(v for s in sa for v in (s, 1)))
    b = vw.reshape(other, tuple(v for s in sb for v in (1, s)))
    return vw.reshape(ew.mul(a, b), tuple(x * y for x, y in zip(sa, sb)))


def _dim_list(v) -> list:
    if isinstance(v, Tensor):
        v = v.tolist()
    return [int(v)] if isinstance(v, (int, np.integer)) else [int(d) for d in v]


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Sum over the contracted dims: ``dims`` an int n (the last n dims of ``a`` with the
    first n of ``b``) or a pair of lists (dims of a, dims of b, contracted pairwise).
    Shapes: a's free dims then b's free dims. One GEMM after permuting (reshape copies).
    Grad: both (through matmul).
    Raises RuntimeError for operands of two dtypes, a negative or too large n, contracted
    dims of different sizes or dim lists of different lengths."""
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    if isinstance(dims, Tensor) and dims.numel() == 1:
        dims = int(dims.item())
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        n = int(dims)
        if n < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={n}")
        if n > a.ndim or n > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={n}")
        da, db = list(range(a.ndim - n, a.ndim)), list(range(n))
    elif isinstance(dims, (list, tuple, Tensor)) and len(dims) == 2:
        da, db = _dim_list(dims[0]), _dim_list(dims[1])
    else:
        raise TypeError(f"tensordot: expected dims to be an int or a pair of dim lists, got "
                        f"{dims!r}")
    if len(da) != len(db):
        raise RuntimeError(f"both dimension lists should have same length, got {len(da)} and "
                           f"{len(db)}")
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in "
                               f"dim {y}")
    da = [layout.wrap_dim(d, max(a.ndim, 1), "tensordot") for d in da]
    db = [layout.wrap_dim(d, max(b.ndim, 1), "tensordot") for d in db]
    if len(set(da)) != len(da) or len(set(db)) != len(db):
        raise RuntimeError(f"tensordot: a dim appears twice in the dim lists {da}, {db}")
    fa = [d for d in range(a.ndim) if d not in da]
    fb = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    sa, sb = [a.shape[d] for d in fa], [b.shape[d] for d in fb]
    A = vw.reshape(vw.permute(a, *(fa + da)), (math.prod(sa), k))
    B = vw.reshape(vw.permute(b, *(db + fb)), (k, math.prod(sb)))
    return vw.reshape(mm.mm(A, B), tuple(sa + sb))


_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
          "donot_use_mm_for_euclid_dist")


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each pair of rows of ``x1`` and ``x2``.

    Shapes:  x1 (*B1, P, M), x2 (*B2, R, M) -> (*B, P, R), B the broadcast of B1 and B2.
    p:       0 (the number of differing coordinates; no gradient), 1, 2, inf (max), any
             p >= 0 (through ``linalg.vector_norm`` of the pairwise differences).
    compute_mode: p = 2 through matmul (sqrt(|x|^2 + |y|^2 - 2 x.y), clamped at 1e-30
             before the root, PyTorch's ``_euclidean_dist``: fast, less exact for close
             points; gradient 0 at distance 0) with 'use_mm_for_euclid_dist', or with the
             default when P > 25 or R > 25; 'donot_use_mm_for_euclid_dist' never.
    Dtypes:  floating, both the same (float16/bfloat16 computed in float32, rounded once).
    Grad:    both inputs; 0 at a zero difference for p < 1 (PyTorch's, not NaN); p = inf:
             sign(diff) at every tied maximum (PyTorch's cdist backward).
    Raises:  RuntimeError for inputs of fewer than 2 dims, other column counts, a negative
             p, non-floating or mixed dtypes; ValueError for another compute_mode.
    """
    for t, name in ((x1, "X1"), (x2, "X2")):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{t.ndim}D")
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{dtypes.torch_name(t.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if isinstance(p, bool) or not isinstance(p, (int, float, np.number)):
        raise TypeError(f"cdist: expected p to be a number, got {type(p).__name__}")
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"cdist: expected both inputs to have the same dtype, got "
                           f"{x1.dtype} and {x2.dtype}")
    if x1.dtype in _HALF:
        out = cdist(ew.to(x1, dtypes.float32), ew.to(x2, dtypes.float32), p, compute_mode)
        return ew.to(out, x1.dtype)
    batch = layout.broadcast_shapes(x1.shape[:-2], x2.shape[:-2], op="cdist")
    P, R = x1.shape[-2], x2.shape[-2]
    x1 = vw.expand(x1, tuple(batch) + tuple(x1.shape[-2:]))
    x2 = vw.expand(x2, tuple(batch) + tuple(x2.shape[-2:]))
    use_mm = p == 2 and (compute_mode == _MODES[1] or (
        compute_mode == _MODES[0] and (P > 25 or R > 25)))
    if use_mm:
        n1 = rd.sum(ew.mul(x1, x1), -1, keepdim=True)             # (*B, P, 1)
        n2 = vw.transpose(rd.sum(ew.mul(x2, x2), -1, keepdim=True), -1, -2)  # (*B, 1, R)
        cross = mm.matmul(x1, vw.transpose(x2, -1, -2))          # (*B, P, R)
        sq = ew.add(ew.add(n1, n2), ew.mul(cross, -2.0))
        return ew.sqrt(ew.clamp(sq, min=1e-30))
    return _pnorm(ew.sub(vw.unsqueeze(x1, -2), vw.unsqueeze(x2, -3)), p)  # (*B, P, R, M)


def _pnorm(diff, p):
    """The p-norm of ``diff`` over its last dim, with cdist/pdist's gradients."""
    if p == math.inf:  # PyTorch's gradient: sign(diff) at every tied maximum (not split)
        a = ew.abs(diff)
        top = rd.amax(a.detach(), -1, keepdim=True)
        mask = ew.to(ew.eq(a.detach(), top), a.dtype)
        return ew.add(top.squeeze(-1), rd.sum(ew.mul(ew.sub(a, a.detach()), mask), -1))
    return linalg.vector_norm(diff, float(p), -1)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between the rows of ``input``, pair by pair: the upper triangle
    (above the diagonal) of cdist(input, input), row-major ((0, 1), (0, 2), ..., (1, 2) ...).

    Shapes:  input (N, M) -> (N (N - 1) / 2,)
    p:       as cdist (0, 1, 2, inf, any p >= 0), computed from the pairs' differences
    Grad:    input (cdist's conventions: 0 at a zero difference, inf: every tied maximum)
    Raises:  RuntimeError for an input not 2-D, not floating, or a negative p
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if isinstance(p, bool) or not isinstance(p, (int, float, np.number)):
        raise TypeError(f"pdist: expected p to be a number, got {type(p).__name__}")
    if not p >= 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input.dtype in _HALF:
        return ew.to(pdist(ew.to(input, dtypes.float32), p), input.dtype)
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    dev = input.device
    rows = [ix.index_select(input, 0, creation.tensor(k, dtype=dtypes.int64, device=dev))
            for k in (i, j)]
    return _pnorm(ew.sub(*rows), p)


__all__ += ["pdist", "multi_dot"]


def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    """The p-norm of ``input - other`` (broadcast) over all elements: a 0-dim tensor.
    p: as ``linalg.vector_norm`` (0, inf, -inf, any number). Dtype: the promoted floating
    type. Grad: both. Raises RuntimeError for non-floating operands."""
    dt = dtypes.result_type(input, other)
    if not dt.is_floating_point:
        raise RuntimeError(f"dist: norm(): input dtype should be either floating point or "
                           f"complex. Got {dtypes.torch_name(dt)} instead.")
    if isinstance(p, bool) or not isinstance(p, (int, float, np.number)):
        raise TypeError(f"dist: expected p to be a number, got {type(p).__name__}")
    return linalg.vector_norm(ew.sub(ew.to(input, dt), ew.to(other, dt)), float(p))


def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Each slice of ``input`` along ``dim`` (``input.select(dim, i)``) whose p-norm exceeds
    ``maxnorm`` scaled to norm ``maxnorm`` (factor maxnorm / (norm + 1e-7), PyTorch's); the
    others unchanged. Grad: through the norm too (PyTorch's renorm_backward).
    Raises RuntimeError for an input of fewer than 2 dims, p <= 0, maxnorm < 0 or a
    non-floating input."""
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if not maxnorm >= 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point input, got "
                           f"{dtypes.torch_name(input.dtype)}")
    d = layout.wrap_dim(dim, input.ndim, "renorm")
    others = tuple(i for i in range(input.ndim) if i != d)
    norm = linalg.vector_norm(input, float(p), others, keepdim=True)
    factor = ew.where(ew.gt(norm, maxnorm),
                      ew.mul(ew.reciprocal(ew.add(norm, 1e-7)), float(maxnorm)), 1.0)
    return ew.mul(input, ew.to(factor, input.dtype))


def renorm_(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """In-place renorm: writes ``renorm(input, p, dim, maxnorm)`` into ``input``; returns it
    (autograd as for other in-place writes, clgrad/ops/inplace.py)."""
    return ip.inplace("renorm_", input, lambda s: renorm(s, p, dim, maxnorm))


def addmv_(input: Tensor, mat: Tensor, vec: Tensor, beta=1, alpha=1) -> Tensor:
    """In-place addmv: writes ``beta * input + alpha * (mat @ vec)`` into ``input`` (of shape
    (n,): it is not broadcast) and returns it."""
    return ip.inplace("addmv_", input, lambda s, m, v: cp.addmv(s, m, v, beta, alpha), mat, vec)


def _int_scalars(op: str, dt, beta, alpha):
    if not dt.is_floating_point and not dt.is_bool:
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float):
                raise RuntimeError(f"{op}: For integral input tensors, argument {name} must "
                                   f"not be a floating point number.")


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2); vec1 (n,), vec2 (m,), input broadcast to
    (n, m); beta = 0 ignores input (NaN included). Dtype: the three's promoted type.
    Grad: all three. Raises RuntimeError for vectors that are not 1-D, an input that does not
    broadcast to (n, m), or a float beta/alpha with integer tensors."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    dt = dtypes.result_type(input, vec1, vec2)
    _int_scalars("addr", dt, beta, alpha)
    shape = (vec1.shape[0], vec2.shape[0])
    if layout.broadcast_shapes(input.shape, shape, op="addr") != shape:
        raise RuntimeError(f"addr: expected input of shape {tuple(input.shape)} to broadcast "
                           f"to {shape}")
    input, vec1, vec2 = (ew.to(t, dt) for t in (input, vec1, vec2))
    return cp._axpy(input, cp.outer, (vec1, vec2), beta, alpha)


def addr_(input: Tensor, vec1: Tensor, vec2: Tensor, beta=1, alpha=1) -> Tensor:
    """In-place addr: writes ``beta * input + alpha * outer(vec1, vec2)`` into ``input``
    (which must have the product's shape) and returns it (recorded for autograd as copy_)."""
    return input.copy_(addr(input, vec1, vec2, beta, alpha))


def _bsum(b1: Tensor, b2: Tensor) -> Tensor:
    """sum_i b1[i] @ b2[i] as one GEMM: (n, b*m) @ (b*m, p)."""
    b, n, m = b1.shape
    return mm.mm(vw.reshape(vw.permute(b1, 1, 0, 2), (n, b * m)),
                 vw.reshape(b2, (b * m, b2.shape[2])))


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, beta=1, alpha=1) -> Tensor:
    """beta * input + alpha * sum_i (batch1[i] @ batch2[i]); batch1 (b, n, m), batch2
    (b, m, p), input broadcast to (n, p); beta = 0 ignores input. One GEMM over the
    concatenated batches. Grad: all three.
    Raises RuntimeError for batches that are not 3-D or do not chain, two dtypes (matmul's),
    or a float beta/alpha with integer tensors."""
    for name, t in (("batch1", batch1), ("batch2", batch2)):
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{batch1.shape[0]} and {batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x"
                           f"{batch1.shape[2]} and {batch2.shape[1]}x{batch2.shape[2]})")
    _int_scalars("addbmm", dtypes.result_type(input, batch1, batch2), beta, alpha)
    shape = (batch1.shape[1], batch2.shape[2])
    if layout.broadcast_shapes(input.shape, shape, op="addbmm") != shape:
        raise RuntimeError(f"addbmm: expected input of shape {tuple(input.shape)} to "
                           f"broadcast to {shape}")
    input, batch1, batch2 = ew.autocast("addbmm", input, batch1, batch2)
    return cp._axpy(input, _bsum, (batch1, batch2), beta, alpha)


def addbmm_(input: Tensor, batch1: Tensor, batch2: Tensor, beta=1, alpha=1) -> Tensor:
    """In-place addbmm: writes the result into ``input`` (of shape (n, p)) and returns it."""
    return input.copy_(addbmm(input, batch1, batch2, beta, alpha))


def multi_dot(tensors) -> Tensor:
    """torch.linalg.multi_dot: the product of the sequence ``tensors`` (at least two), in the
    order of fewest scalar multiplications (chain_matmul's program). The first may be 1-D
    (n,), a row vector (1, n), and the last 1-D (n,), a column vector (n, 1); those unit dims
    are dropped from the result: shapes (a, b) @ ... @ (y, z) -> (a, z); (b,) @ ... -> (z,);
    ... @ (y,) -> (a,); both 1-D -> a 0-dim tensor. Grad: every tensor.

    Raises:  RuntimeError for fewer than 2 tensors, a first/last tensor not 1-D or 2-D, a
             middle one not 2-D, mixed dtypes or shapes that do not chain (PyTorch's
             messages); TypeError for a member that is not a Tensor
    """
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"multi_dot(): argument 'tensors' must be tuple of Tensors, not "
                        f"{_type_name(tensors)}")
    ts = list(tensors)
    n = len(ts)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise TypeError(f"multi_dot(): expected Tensor as element {i} in argument 0, but "
                            f"got {_type_name(t)}")
    if ts[0].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{ts[0].ndim}D")
    if ts[-1].ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got "
                           f"{ts[-1].ndim}D")
    for i in range(1, n - 1):
        if ts[i].ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {ts[i].ndim}D")
    for i, t in enumerate(ts[1:], 1):
        if t.dtype is not ts[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but "
                               f"tensor 0 is {ts[0].dtype} and tensor {i} is {t.dtype}")
    row, col = ts[0].ndim == 1, ts[-1].ndim == 1
    if row:
        ts[0] = vw.unsqueeze(ts[0], 0)
    if col:
        ts[-1] = vw.unsqueeze(ts[-1], 1)
    for i in range(n - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{tuple(ts[i].shape)} and {tuple(ts[i + 1].shape)} cannot be "
                               f"multiplied")
    out = chain_matmul(*ts)
    if row and col:
        return vw.reshape(out, ())
    if row:
        return vw.squeeze(out, 0)
    if col:
        return vw.squeeze(out, 1)
    return out


def chain_matmul(*matrices) -> Tensor:
    """The product of 2-D matrices, multiplied in the order of fewest scalar multiplications
    (the matrix-chain dynamic program, as PyTorch's; the same product up to rounding).
    One matrix: a copy. Grad: every matrix. PyTorch deprecates it for linalg.multi_dot.
    Raises RuntimeError for no matrix or one that is not 2-D (or chains that do not
    match: mm's)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, m in enumerate(matrices):
        if not isinstance(m, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{_type_name(m)}")
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    n = len(matrices)
    if n == 1:
        return ew.clone(matrices[0])
    dims = [matrices[0].shape[0]] + [m.shape[1] for m in matrices]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return matrices[i]
        k = split[i][j]
        return mm.mm(product(i, k), product(k + 1, j))
    return product(0, n - 1)


def matrix_power(input: Tensor, n: int) -> Tensor:
    """The n-th power of square matrices (batched over leading dims) by repeated squaring
    (matmul): n = 0 the identity (input's dtype, no gradient), n = 1 a copy.
    Grad: through the matmuls.
    Raises RuntimeError for an input that is not (*, k, k); TypeError for a non-int n;
    n < 0: the |n|-th power of linalg.inv(input) (computed on the host with NumPy's LAPACK;
    LinAlgError, a RuntimeError, for a singular matrix)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if input.ndim < 2 or input.shape[-1] != input.shape[-2]:
        got = (f"{input.shape[-2]} by {input.shape[-1]} matrices" if input.ndim >= 2 else
               f"a {input.ndim}-D tensor")
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {got}")
    n = int(n)
    if n < 0:
        input, n = decomp.inv(input), -n
    k = input.shape[-1]
    if n == 0:  # the identity: a zero gradient (recorded, as PyTorch's)
        eye = creation.eye(k, dtype=input.dtype, device=input.device)
        return ew.record_zero_grad("matrix_power", ew.contiguous(
            vw.expand(eye, tuple(input.shape)), force_copy=True), (input,))
    if n == 1:
        return ew.clone(input)
    result, base = None, input
    while n:
        if n & 1:
            result = base if result is None else mm.matmul(result, base)
        n >>= 1
        if n:
            base = mm.matmul(base, base)
    return result


# -- cross, inner, vdot, vander ---------------------------------------------------------------
def cross(input: Tensor, other: Tensor, dim=None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (PyTorch's torch.cross; input and other
    broadcast). ``dim=None`` takes the first dim of size 3 of the broadcast shape, as PyTorch
    (which warns that this default is deprecated: give dim, or use linalg.cross, whose default
    is -1).

    Shapes:  input, other broadcasting to (*S) with S[dim] = 3 -> (*S)
    Dtypes:  one dtype (ints too)
    Grad:    input, other
    Raises:  RuntimeError for another size along dim, no dim of size 3, or dtypes that differ
    """
    if input.dtype is not other.dtype:
        raise RuntimeError(f"linalg.cross: expected input and other to have the same dtype, "
                           f"but got {input.dtype} and {other.dtype}")
    shape = tuple(layout.broadcast_shapes(input.shape, other.shape, op="cross"))
    if dim is None:
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"cross: no dimension of size 3 in input, got shape {shape}")
    d = layout.wrap_dim(dim, len(shape), "cross")
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got "
                           f"{shape[d]}")
    a, b = vw.expand(input, shape), vw.expand(other, shape)
    a0, a1, a2 = (vw.select(a, d, i) for i in range(3))
    b0, b1, b2 = (vw.select(b, d, i) for i in range(3))
    parts = [ew.sub(ew.mul(a1, b2), ew.mul(a2, b1)), ew.sub(ew.mul(a2, b0), ew.mul(a0, b2)),
             ew.sub(ew.mul(a0, b1), ew.mul(a1, b0))]
    return ix.stack(parts, d)


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """torch.linalg.cross: ``cross`` with ``dim=-1`` by default (keyword only)."""
    return cross(input, other, dim)


def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sums of products over the last dims (PyTorch's torch.inner, NumPy's np.inner); a 0-dim
    operand multiplies instead. Shapes: (*A, n), (*B, n) -> (*A, *B). Grad: both."""
    if input.ndim == 0 or other.ndim == 0:
        return ew.mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors (PyTorch's torch.vdot; no conjugate: clgrad has no
    complex dtypes). Raises RuntimeError for other shapes or dtypes that differ."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"vdot: expected both vectors to have same dtype, but found "
                           f"{input.dtype} and {other.dtype}")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D "
                           f"tensors")
    return mm.dot(input, other)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """The Vandermonde matrix of the 1-D ``x`` (PyTorch's torch.vander, NumPy's np.vander):
    columns x^(N-1), ..., x, 1 (``increasing``: 1, x, ..., x^(N-1)).

    Shapes:  x (n,) -> (n, N), N = n by default
    Dtypes:  floats keep theirs; integers and bool give int64 (PyTorch's)
    Grad:    x (through cumprod)
    Raises:  RuntimeError for x not 1-D or N < 0
    """
    if x.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor, got {x.ndim} dims")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError(f"N must be non-negative, got {n}")
    if not x.dtype.is_floating_point:
        x = ew.to(x, dtypes.int64)
    if n == 0:
        return creation.zeros((x.shape[0], 0), dtype=x.dtype, device=x._storage.device)
    ones = creation.ones((x.shape[0], 1), dtype=x.dtype, device=x._storage.device)
    out = ix.cat([ones, vw.expand(vw.unsqueeze(x, 1), (x.shape[0], n - 1))], 1)
    out = sc.cumprod(out, 1)
    return out if increasing else vw.flip(out, (1,))


__all__ += ["cross", "linalg_cross", "inner", "vdot", "vander"]
