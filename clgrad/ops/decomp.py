"""Matrix decompositions and solvers (PyTorch's torch.linalg.inv, det, slogdet, solve, cholesky,
qr, eigh, eigvalsh, svd, svdvals, pinv, matrix_rank, lstsq; torch.inverse, det, logdet ...).

Every factorization is computed on the host with NumPy's LAPACK, in float64: the input is
copied device -> host (one synchronisation), and the results are uploaded in the input's dtype
(float32 or float64; float16 and bfloat16 raise, as PyTorch's CPU linalg does). Batched over
the leading dims, as PyTorch. The gradients (autograd.record) follow PyTorch's formulas
(torch/csrc/autograd/FunctionsManual.cpp); the simple ones (inv, det, slogdet, solve) run on
the device with matmuls, the others (cholesky, eigh, svd, pinv) on the host. Where clgrad has
no gradient (qr; svd's U and Vh) the backward raises NotImplementedError naming the op.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from clgrad import creation, dtypes
from clgrad.autograd import no_grad, record
from clgrad.autograd.graph import output_of
from clgrad.errors import LinAlgError
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import matmul as mm
from clgrad.ops._util import same_device
from clgrad.tensor import Tensor

__all__ = ["LinAlgError", "inv", "inv_ex", "det", "slogdet", "logdet", "solve", "cholesky",
           "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv",
           "matrix_rank", "lstsq", "SlogdetResult", "QRResult", "EighResult", "SVDResult",
           "LstsqResult", "solve_triangular", "cholesky_solve", "cholesky_inverse",
           "svd_legacy", "pinverse"]


SlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])
QRResult = namedtuple("qr", ["Q", "R"])
EighResult = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("svd", ["U", "S", "Vh"])
LstsqResult = namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])

_LOW = {"float16": "Half", "bfloat16": "BFloat16"}


# -- host transfer ----------------------------------------------------------------------------
def _check(A, op: str, square: bool = True) -> None:
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.{op}(): argument 'A' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{op}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as "
                           f"input. Got {A.dtype}")
    if A.dtype.name in _LOW:
        raise RuntimeError(f"linalg.{op}: Low precision dtypes not supported. Got "
                           f"{_LOW[A.dtype.name]} (convert first: A.float())")


def _host(t: Tensor) -> np.ndarray:
    """``t``'s values as a float64 NumPy array (a device -> host copy: one synchronisation)."""
    return t.detach().numpy().astype(np.float64)


def _up(arr, like: Tensor, dtype=None) -> Tensor:
    """``arr`` uploaded to ``like``'s device in ``like``'s dtype (or ``dtype``)."""
    return creation._upload(np.asarray(arr, order="C"), dtype or like.dtype,
                            like._storage.device)


def _mT(t: Tensor) -> Tensor:
    return t.transpose(-2, -1)


def _sum_to(arr: np.ndarray, shape) -> np.ndarray:
    """``arr`` summed over the dims broadcasting added (a host gradient for ``shape``)."""
    shape = tuple(shape)
    lead = arr.ndim - len(shape)
    if lead:
        arr = arr.sum(axis=tuple(range(lead)))
    dims = tuple(i for i, n in enumerate(shape) if n == 1 and arr.shape[i] != 1)
    return arr.sum(axis=dims, keepdims=True) if dims else arr


def _no_grad_fn(op: str, what: str):
    def backward(g):
        raise NotImplementedError(f"linalg.{op}: the gradient of {what} is not implemented in "
                                  f"clgrad (its decomposition runs on the host with NumPy)")
    return backward


def _batch_prefix(shape, idx) -> str:
    return f"(Batch element {idx}): " if len(shape) > 2 else ""


# -- inverse, determinants --------------------------------------------------------------------
def inv(A: Tensor) -> Tensor:
    """The inverse of square matrices A (*, n, n) -> (*, n, n), computed on the host with
    NumPy's LAPACK (float64; one device -> host copy), returned in A's dtype (float32/64).

    Grad:    -A^-T g A^-T (PyTorch's); differentiable again (create_graph: the same of
             recorded matmuls, A^-1 the output re-attached).
    Raises:  LinAlgError (a RuntimeError) for a singular matrix; RuntimeError for a
             non-square or non-floating input (float16/bfloat16 included, as PyTorch's CPU).
    """
    _check(A, "inv")
    a = _host(A)
    try:
        ai = np.linalg.inv(a)
    except np.linalg.LinAlgError:
        flat = a.reshape(-1, *a.shape[-2:])
        bad = next(i for i, m in enumerate(flat) if _singular(m))
        raise LinAlgError(f"linalg.inv: {_batch_prefix(a.shape, bad)}The input matrix is "
                          f"singular, the inversion could not be completed") from None
    out = _up(ai, A)
    y = out.detach()  # (the closure must not hold out itself: a reference cycle)
    aiT = _mT(y)

    def backward(g):
        return (ew.neg(mm.matmul(mm.matmul(aiT, g), aiT)),)

    def double(g, node):  # create_graph: A^-1 re-attached to this node
        ti = _mT(output_of(node, y))
        return (ew.neg(mm.matmul(mm.matmul(ti, g), ti)),)
    return record("linalg_inv", out, (A,), backward, saved=[aiT], double=double)


def inv_ex(A: Tensor, check_errors: bool = False):
    """torch.linalg.inv_ex: (inverse, info) of square matrices A (*, n, n), without raising
    for a singular matrix unless ``check_errors``.

    info:    an int32 tensor of A's batch shape (*), on A's device: 0 where the matrix is
             invertible, else i > 0, the 1-based index of the first exactly zero pivot of
             its partial-pivoting LU (LAPACK getrf's info). The test runs in float64 on the
             host (inv's), so a float32 matrix that is singular only after rounding to float32
             may get info 0 here where PyTorch's float32 LAPACK finds a zero pivot.
    inverse: inv(A) (differentiable) where every matrix is invertible; otherwise NaN in the
             singular matrices' slots (PyTorch leaves LAPACK's partial results there:
             unspecified) and their gradient is 0.
    Raises:  LinAlgError with ``check_errors`` for a singular matrix (inv's message);
             RuntimeError for a non-square or non-floating input (inv's)
    """
    _check(A, "inv_ex")
    a = _host(A)
    flat = a.reshape(-1, *a.shape[-2:])
    try:
        np.linalg.inv(a)
        bad = {}
    except np.linalg.LinAlgError:
        bad = {i: _zero_pivot(m) for i, m in enumerate(flat) if _singular(m)}
    info = np.zeros(len(flat), np.int32)
    for i, k in bad.items():
        info[i] = k
    info_t = _up(info.reshape(a.shape[:-2]), A, dtypes.int32)
    if not bad:
        return inv(A), info_t
    if check_errors:
        first = min(bad)
        raise LinAlgError(f"linalg.inv_ex: {_batch_prefix(a.shape, first)}The diagonal "
                          f"element {bad[first]} is zero, the inversion could not be completed "
                          f"because the input matrix is singular.")
    mask = np.zeros((len(flat), 1, 1), bool)
    mask[list(bad)] = True
    mask_t = _up(np.broadcast_to(mask, flat.shape).reshape(a.shape), A, dtypes.bool_)
    eye = _up(np.broadcast_to(np.eye(a.shape[-1]), a.shape), A)
    out = inv(ew.where(mask_t, eye, A))  # the singular slots replaced by I
    return ew.where(mask_t, float("nan"), out), info_t


def _zero_pivot(m: np.ndarray) -> int:
    """The 1-based index of the first zero pivot of m's partial-pivoting LU (0 if none)."""
    u = np.array(m, dtype=np.float64)
    n = u.shape[0]
    first = 0
    for k in range(n):
        p = k + int(np.argmax(np.abs(u[k:, k])))
        if u[p, k] == 0:
            if not first:
                first = k + 1
            continue  # (getrf goes on past a zero pivot; only the first is reported)
        if p != k:
            u[[k, p]] = u[[p, k]]
        u[k + 1:, k:] -= np.outer(u[k + 1:, k] / u[k, k], u[k, k:])
    return first or n  # (NumPy found it singular: report the last pivot if LU did not)


def _singular(m: np.ndarray) -> bool:
    try:
        np.linalg.inv(m)
        return False
    except np.linalg.LinAlgError:
        return True


def _adjugate_T(a: np.ndarray) -> np.ndarray:
    """adj(A)^T = det(A) A^-T, also for singular A (through the SVD)."""
    if a.shape[-1] == 0:
        return a.copy()
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    ones = np.ones(s.shape[:-1] + (1,))
    pre = np.cumprod(np.concatenate([ones, s[..., :-1]], -1), -1)
    post = np.cumprod(np.concatenate([ones, s[..., :0:-1]], -1), -1)[..., ::-1]
    others = pre * post[..., :n]  # the product of the other singular values
    sgn = np.linalg.det(u) * np.linalg.det(vh)
    adj = np.swapaxes(vh, -1, -2) @ (others[..., :, None] * np.swapaxes(u, -1, -2))
    return sgn[..., None, None] * np.swapaxes(adj, -1, -2)


def det(A: Tensor) -> Tensor:
    """The determinant of square matrices A (*, n, n) -> (*), computed on the host with NumPy's
    LAPACK (float64, LU; one device -> host copy), returned in A's dtype (float32/float64).

    Grad:    g adj(A)^T (= g det(A) A^-T; through an SVD on the host, so also at singular A);
             differentiable again (create_graph) at invertible A: g det(A) A^-T of recorded
             ops (det the output re-attached, A^-1 by inv); at a singular A that raises
             RuntimeError (PyTorch differentiates its SVD formula there).
    Raises:  RuntimeError for a non-square or non-floating input (float16/bfloat16 included).
    """
    _check(A, "det")
    a = _host(A)
    out = _up(np.linalg.det(a), A)

    def backward(g):
        adjT = _up(_adjugate_T(a), g)
        return (ew.mul(adjT, g.unsqueeze(-1).unsqueeze(-1)),)
    y = (out._storage, out._shape, out._strides, out._offset,
         out._storage.version - out._storage.hidden)  # (no call)

    def double(g, node):  # create_graph: g det(A) A^-T of recorded ops
        d = ew.mul(output_of(node, y), g).unsqueeze(-1).unsqueeze(-1)
        return (ew.mul(_mT(_inv_for_double(A, a, "det")), d),)
    return record("linalg_det", out, (A,), backward, saved=[A], double=double)


def _inv_for_double(A: Tensor, a: np.ndarray, op: str) -> Tensor:
    """inv(A), recorded, for a create_graph gradient of ``op`` (``a``: A's host values);
    RuntimeError naming ``op`` and the batch element for a singular matrix (the formula
    through A^-1 does not hold there)."""
    flat = a.reshape(-1, *a.shape[-2:])
    bad = next((i for i, m in enumerate(flat) if _singular(m)), None)
    if bad is not None:
        raise RuntimeError(f"linalg.{op}: {_batch_prefix(a.shape, bad)}the second derivative "
                           f"(create_graph=True) at a singular matrix is not supported in "
                           f"clgrad: its formula goes through the inverse")
    return inv(A)


def slogdet(A: Tensor):
    """(sign, logabsdet) of square matrices A (*, n, n), each (*): det A = sign exp(logabsdet);
    a singular matrix gives (0, -inf). Computed on the host with NumPy's LAPACK (float64; one
    device -> host copy), returned in A's dtype (float32/float64), as a namedtuple.

    Grad:    logabsdet: g A^-T (PyTorch's); sign: zero. Differentiable again (create_graph:
             A^-T by inv, recorded; RuntimeError at a singular A).
    Raises:  RuntimeError for a non-square or non-floating input (float16/bfloat16 included).
    """
    _check(A, "slogdet")
    a = _host(A)
    s, ld = np.linalg.slogdet(a)
    sign, logabs = _up(s, A), _up(ld, A)
    sign = ew.record_zero_grad("linalg_slogdet", sign, (A,))

    def backward(g):
        with np.errstate(all="ignore"):
            try:
                aiT = np.swapaxes(np.linalg.inv(a), -1, -2)
            except np.linalg.LinAlgError:  # singular: -inf's gradient is not finite
                aiT = np.swapaxes(np.linalg.pinv(a), -1, -2) * np.inf
        return (ew.mul(_up(aiT, g), g.unsqueeze(-1).unsqueeze(-1)),)

    def double(g, node):  # create_graph: g A^-T of recorded ops
        return (ew.mul(_mT(_inv_for_double(A, a, "slogdet")), g.unsqueeze(-1).unsqueeze(-1)),)
    return SlogdetResult(sign, record("linalg_slogdet", logabs, (A,), backward, saved=[A],
                                      double=double))


def logdet(A: Tensor) -> Tensor:
    """log det A of square matrices A (*, n, n) -> (*): nan where det A < 0, -inf where it is 0
    (PyTorch's torch.logdet). Computed on the host with NumPy's LAPACK (through slogdet).

    Grad:    g A^-T.
    Raises:  as slogdet.
    """
    _check(A, "logdet")
    sign, logabs = slogdet(A)
    return ew.where(ew.lt(sign.detach(), 0), float("nan"), logabs)


# -- solve ------------------------------------------------------------------------------------
def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """PyTorch's linalg_solve_is_vector_rhs: B is (n,) or B's shape is A's without its last."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of A X = B (``left``) or X A = B (not ``left``), A (*, n, n), B (*, n, k)
    or a vector (n,) / (*, n) (PyTorch's rule: B.ndim == 1 or B.shape == A.shape[:-1]); batch
    dims broadcast. Computed on the host with NumPy's LAPACK (float64, LU; one device -> host
    copy), returned in the promoted dtype of A and B.

    Grad:    gB = A^-T g (a host solve), gA = -gB X^T (PyTorch's linalg_solve backward);
             under create_graph the same of recording ops (solve, matmul): differentiable
             again.
    Raises:  LinAlgError (a RuntimeError) for a singular A; RuntimeError for non-square A,
             mismatched shapes, non-floating inputs or tensors on two devices.
    """
    _check(A, "solve")
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.solve(): argument 'B' must be Tensor, not {type(B).__name__}")
    same_device("linalg.solve", A, B)
    dt = dtypes.result_type(A, B)
    if A.dtype is not dt:
        A = ew.to(A, dt)
    if B.dtype is not dt:
        B = ew.to(B, dt)
    _check(B if B.ndim >= 2 else B.unsqueeze(-1), "solve", square=False)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        if B.ndim < 2:
            raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not "
                               "supported for left=False. In this case linalg.solve is "
                               "equivalent to B / A.squeeze(-1)")
        return _mT(solve(_mT(A), _mT(B)))
    if _is_vector_rhs(A, B):
        return solve(A, B.unsqueeze(-1)).squeeze(-1)
    n = A.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = "
                           f"B ({A.shape[-2]}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    a, b = _host(A), _host(B)
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"linalg.solve: the batch dims of A {tuple(A.shape)} and B "
                           f"{tuple(B.shape)} do not broadcast") from None
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    try:
        x = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        flat = a.reshape(-1, n, n)
        bad = next(i for i, m in enumerate(flat) if _singular(m))
        raise LinAlgError(f"linalg.solve: {_batch_prefix(a.shape, bad)}The solver failed "
                          f"because the input matrix is singular.") from None
    out = _up(x, A)
    ashape, bshape = tuple(A.shape), tuple(B.shape)

    def backward(g):
        gb = np.linalg.solve(np.swapaxes(a, -1, -2), _host(g))
        ga = -gb @ np.swapaxes(x, -1, -2)
        return _up(_sum_to(ga, ashape), g), _up(_sum_to(gb, bshape), g)
    y = out.detach()  # (the closure must not hold out itself: a reference cycle)

    def double(g, node):  # create_graph: the same formulas of recording ops (solve, matmul)
        gb = solve(_mT(A), g)
        ga = ew.neg(mm.matmul(gb, _mT(output_of(node, y))))
        return ew.sum_to(ga, ashape), ew.sum_to(gb, bshape)
    return record("linalg_solve", out, (A, B), backward, saved=[A, B], double=double)


# -- cholesky ---------------------------------------------------------------------------------
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive-definite matrices A (*, n, n): L lower with
    A = L L^T (``upper``: U = L^T, A = U^T U). Only A's lower triangle is read. Computed on the
    host with NumPy's LAPACK (float64; one device -> host copy), returned in A's dtype.

    Grad:    PyTorch's cholesky_backward (Murray 2016): L^-T Phi(L^T gL) L^-1 with Phi the
             lower triangle, diagonal halved, symmetrized (a symmetric gradient; host);
             differentiable again (create_graph: the same of recorded ops, L re-attached,
             the triangular solves by linalg.solve).
    Raises:  LinAlgError (a RuntimeError) for a matrix that is not positive-definite (naming
             the order of the first leading minor that is not); RuntimeError for a non-square
             or non-floating input.
    """
    _check(A, "cholesky")
    a = _host(A)
    try:
        L = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        n = a.shape[-1]
        flat = a.reshape(-1, n, n)
        for i, m in enumerate(flat):
            order = next((k for k in range(1, n + 1) if not _is_pd(m[:k, :k])), None)
            if order is not None:
                raise LinAlgError(
                    f"linalg.cholesky: {_batch_prefix(a.shape, i)}The factorization could not "
                    f"be completed because the input is not positive-definite (the leading "
                    f"minor of order {order} is not positive-definite).") from None
        raise
    out = _up(np.swapaxes(L, -1, -2) if upper else L, A)

    def backward(g):
        gL = _host(g)
        if upper:
            gL = np.swapaxes(gL, -1, -2)
        Lh = np.swapaxes(L, -1, -2)
        phi = np.tril(Lh @ gL)
        phi = 0.5 * (phi + np.swapaxes(np.tril(phi, -1), -1, -2))
        ga = np.linalg.solve(Lh, phi)                       # L^-T phi
        ga = np.swapaxes(np.linalg.solve(Lh, np.swapaxes(ga, -1, -2)), -1, -2)  # ... L^-1
        return (_up(ga, g),)
    y = (out._storage, out._shape, out._strides, out._offset,
         out._storage.version - out._storage.hidden)  # (no call)

    def double(g, node):  # create_graph: PyTorch's cholesky_backward of recorded ops
        L, gL = output_of(node, y), g
        if upper:
            L, gL = _mT(L), _mT(gL)
        phi = ix.tril(mm.matmul(_mT(L), gL))
        phi = ew.mul(ew.add(phi, _mT(ix.tril(phi, -1))), 0.5)
        ga = solve(_mT(L), phi)                             # L^-T phi
        return (_mT(solve(_mT(L), _mT(ga))),)               # ... L^-1
    return record("linalg_cholesky", out, (A,), backward, saved=[A], double=double)


def _is_pd(m: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(m)
        return True
    except np.linalg.LinAlgError:
        return False


# -- qr ---------------------------------------------------------------------------------------
def qr(A: Tensor, mode: str = "reduced"):
    """The QR decomposition A = Q R of A (*, m, n), k = min(m, n): ``mode`` 'reduced' Q (*, m, k),
    R (*, k, n); 'complete' Q (*, m, m), R (*, m, n); 'r' Q empty, R (*, k, n). Householder
    (LAPACK geqrf, the signs PyTorch's CPU gives). Computed on the host with NumPy's LAPACK
    (float64; one device -> host copy), returned in A's dtype, as a namedtuple (Q, R).

    Grad:    not implemented: a backward through Q or R raises NotImplementedError.
    Raises:  ValueError for another mode; RuntimeError for a non-floating input.
    """
    _check(A, "qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"qr received unrecognized mode '{mode}' but expected one of "
                         f"'reduced' (default), 'r', or 'complete'")
    a = _host(A)
    if mode == "r":
        r = np.linalg.qr(a, mode="r") if a.size else np.zeros(
            a.shape[:-2] + (min(a.shape[-2:]), a.shape[-1]))
        q = np.zeros((0,))
    else:
        q, r = np.linalg.qr(a, mode=mode)
    Q = record("linalg_qr", _up(q, A), (A,), _no_grad_fn("qr", "Q"))
    R = record("linalg_qr", _up(r, A), (A,), _no_grad_fn("qr", "R"))
    return QRResult(Q, R)


# -- symmetric eigendecomposition -------------------------------------------------------------
def _eigh_host(A: Tensor, UPLO, op):
    _check(A, op)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.{op}: Expected UPLO argument to be 'L' or 'U', but got "
                           f"{UPLO}")
    return np.linalg.eigh(_host(A), UPLO=UPLO)


def eigh(A: Tensor, UPLO: str = "L"):
    """The eigenvalues (ascending, (*, n)) and orthonormal eigenvectors (columns, (*, n, n)) of
    symmetric matrices A (*, n, n), only the ``UPLO`` ('L' or 'U') triangle read. Computed on
    the host with NumPy's LAPACK (float64; one device -> host copy), returned in A's dtype as
    a namedtuple (eigenvalues, eigenvectors). Eigenvectors are unique only up to sign.

    Grad:    PyTorch's linalg_eig_backward (Hermitian case, on the host):
             V (diag(gw) + skew(V^T gV) / (w_j - w_i)) V^T; not finite for repeated
             eigenvalues when the loss depends on the eigenvectors. Differentiable again
             (create_graph: the same of recorded ops, w and V re-attached; at repeated
             eigenvalues, as PyTorch's, not finite).
    Raises:  RuntimeError for a non-square or non-floating input or another UPLO.
    """
    w, v = _eigh_host(A, UPLO, "eigh")
    W, V = _up(w, A), _up(v, A)
    # one node for both outputs: the eigenvectors' gradient needs both gradients at once, so
    # the eigenvalues are a differentiable slice of a joint tensor (n + n*n values per matrix)
    n = w.shape[-1]
    joint = _up(np.concatenate([w, v.reshape(v.shape[:-2] + (n * n,))], -1), A)

    def backward(g):
        gg = _host(g)
        gw, gv = gg[..., :n], gg[..., n:].reshape(v.shape)
        vT = np.swapaxes(v, -1, -2)
        inner = np.zeros(v.shape)
        idx = np.arange(n)
        inner[..., idx, idx] = gw
        if np.any(gv):
            k = vT @ gv
            k = 0.5 * (k - np.swapaxes(k, -1, -2))
            with np.errstate(divide="ignore", invalid="ignore"):
                e = w[..., None, :] - w[..., :, None]
                f = k / e
            f[..., idx, idx] = 0.0
            inner = inner + f
        return (_up(v @ inner @ vT, g),)
    y = (joint._storage, joint._shape, joint._strides, joint._offset,
         joint._storage.version - joint._storage.hidden)

    def double(g, node):  # create_graph: the same formula of recorded ops
        j = output_of(node, y)
        W, V = j[..., :n], j[..., n:].reshape(tuple(v.shape))
        gv = g[..., n:].reshape(tuple(v.shape))
        eye = creation.eye(n, dtype=dtypes.bool_, device=g._storage.device)
        inner = ew.where(eye, g[..., :n].unsqueeze(-2), 0.0)  # diag(gw)
        repeated = bool(np.any(np.diff(w, axis=-1) == 0))
        if not repeated or np.any(_host(gv)):  # (gV = 0 at repeated eigenvalues: skipped,
            k = mm.matmul(_mT(V), gv)          # as the first order's and PyTorch's)
            k = ew.mul(ew.sub(k, _mT(k)), 0.5)
            e = ew.sub(W.unsqueeze(-2), W.unsqueeze(-1))  # w_j - w_i
            inner = ew.add(inner, ew.where(eye, 0.0, ew.div(k, ew.where(eye, 1.0, e))))
        return (mm.matmul(mm.matmul(V, inner), _mT(V)),)
    joint = record("linalg_eigh", joint, (A,), backward, saved=[A], double=double)
    if joint.requires_grad:
        W = joint[..., :n]
        V = joint[..., n:].reshape(tuple(v.shape))
    return EighResult(W, V)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending, (*, n)) of symmetric matrices A (*, n, n), only the ``UPLO``
    triangle read. Computed on the host with NumPy's LAPACK (float64; one device -> host copy),
    returned in A's dtype.

    Grad:    V diag(g) V^T (V the eigenvectors, kept on the device); differentiable again
             (create_graph: V of eigh(A), recorded, so its derivative in A flows).
    Raises:  RuntimeError for a non-square or non-floating input or another UPLO.
    """
    w, v = _eigh_host(A, UPLO, "eigvalsh")
    out = _up(w, A)
    V = _up(v, A)

    def backward(g):
        return (mm.matmul(ew.mul(V, g.unsqueeze(-2)), _mT(V)),)

    def double(g, node):  # create_graph: the eigenvectors of eigh(A), recorded
        Vr = eigh(A, UPLO).eigenvectors
        return (mm.matmul(ew.mul(Vr, g.unsqueeze(-2)), _mT(Vr)),)
    return record("linalg_eigvalsh", out, (A,), backward, saved=[V], double=double)


# -- singular value decomposition -------------------------------------------------------------
def _svdvals_grad(A: Tensor, u: np.ndarray, vh: np.ndarray):
    k = min(A.shape[-2:])
    U, Vh = _up(u[..., :, :k], A), _up(vh[..., :k, :], A)

    def backward(g):
        return (mm.matmul(ew.mul(U, g.unsqueeze(-2)), Vh),)
    return backward, [U, Vh]


def svd(A: Tensor, full_matrices: bool = True):
    """A = U diag(S) Vh of A (*, m, n), k = min(m, n): S (*, k) descending; ``full_matrices``
    U (*, m, m), Vh (*, n, n), else U (*, m, k), Vh (*, k, n). Computed on the host with
    NumPy's LAPACK (float64, gesdd; one device -> host copy), returned in A's dtype as a
    namedtuple (U, S, Vh). Singular vectors are unique only up to sign.

    Grad:    S: U diag(g) Vh; through U or Vh it is not implemented (NotImplementedError at
             backward time, naming the op).
    Raises:  RuntimeError for a non-floating input.
    """
    _check(A, "svd", square=False)
    u, s, vh = np.linalg.svd(_host(A), full_matrices=full_matrices)
    backward, saved = _svdvals_grad(A, u, vh)
    S = record("linalg_svd", _up(s, A), (A,), backward, saved=saved)
    U = record("linalg_svd", _up(u, A), (A,), _no_grad_fn("svd", "U"))
    Vh = record("linalg_svd", _up(vh, A), (A,), _no_grad_fn("svd", "Vh"))
    return SVDResult(U, S, Vh)


def svdvals(A: Tensor) -> Tensor:
    """The singular values (*, min(m, n)), descending, of A (*, m, n). Computed on the host with
    NumPy's LAPACK (float64; one device -> host copy), returned in A's dtype.

    Grad:    U diag(g) V^T (the singular vectors kept from the forward).
    Raises:  RuntimeError for a non-floating input.
    """
    _check(A, "svdvals", square=False)
    if not (A.requires_grad):
        return _up(np.linalg.svd(_host(A), compute_uv=False), A)
    u, s, vh = np.linalg.svd(_host(A), full_matrices=False)
    backward, saved = _svdvals_grad(A, u, vh)
    return record("linalg_svdvals", _up(s, A), (A,), backward, saved=saved)


def _tol(s: np.ndarray, A: Tensor, atol, rtol, op) -> np.ndarray:
    """PyTorch's tolerance: max(atol, rtol * s_max), rtol eps * max(m, n) when neither given
    (eps of A's dtype), 0 when only atol is."""
    for name, v in (("atol", atol), ("rtol", rtol)):
        if isinstance(v, Tensor):
            raise TypeError(f"linalg.{op}: clgrad takes {name} as a float, got a Tensor")
    smax = s[..., :1] if s.shape[-1] else np.zeros(s.shape[:-1] + (1,))
    if rtol is None:
        rtol = (np.finfo(A.dtype.np).eps * max(A.shape[-2:])
                if atol is None or atol == 0 else 0.0)
    return np.maximum(0.0 if atol is None else atol, rtol * smax)


def pinv(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse (*, n, m) of A (*, m, n): singular values below
    max(atol, rtol * s_max) are treated as zero (PyTorch's defaults: rtol = eps * max(m, n)).
    ``hermitian`` is accepted (the SVD is used either way). Computed on the host with NumPy's
    LAPACK (float64; one device -> host copy), returned in A's dtype.

    Grad:    PyTorch's pinv_backward (constant rank; host):
             -X^T g X^T + (I - A X) g^T X X^T + X^T X g^T (I - X A), X = pinv(A);
             differentiable again (create_graph: the same of recorded matmuls, X re-attached).
    Raises:  RuntimeError for a non-floating input; TypeError for tensor atol/rtol.
    """
    _check(A, "pinv", square=False)
    a = _host(A)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    tol = _tol(s, A, atol, rtol, "pinv")
    with np.errstate(divide="ignore"):
        sinv = np.where(s > tol, 1.0 / np.where(s > tol, s, 1.0), 0.0)
    x = np.swapaxes(vh, -1, -2) @ (sinv[..., :, None] * np.swapaxes(u, -1, -2))
    out = _up(x, A)

    def backward(g):
        G = _host(g)
        T = lambda m: np.swapaxes(m, -1, -2)  # noqa: E731
        m_, n_ = a.shape[-2:]
        ga = (-T(x) @ G @ T(x) + (np.eye(m_) - a @ x) @ T(G) @ x @ T(x)
              + T(x) @ x @ T(G) @ (np.eye(n_) - x @ a))
        return (_up(ga, g),)
    y = (out._storage, out._shape, out._strides, out._offset,
         out._storage.version - out._storage.hidden)  # (no call)

    def double(g, node):  # create_graph: PyTorch's pinv_backward of recorded ops
        X, dev = output_of(node, y), g._storage.device
        m_, n_ = A.shape[-2:]
        im = creation.eye(m_, dtype=g.dtype, device=dev)
        i_n = creation.eye(n_, dtype=g.dtype, device=dev)
        gT = _mT(g)
        ga = ew.neg(mm.matmul(mm.matmul(_mT(X), g), _mT(X)))
        ga = ew.add(ga, mm.matmul(mm.matmul(ew.sub(im, mm.matmul(A, X)), gT),
                                  mm.matmul(X, _mT(X))))
        ga = ew.add(ga, mm.matmul(mm.matmul(_mT(X), X),
                                  mm.matmul(gT, ew.sub(i_n, mm.matmul(X, A)))))
        return (ga,)
    return record("linalg_pinv", out, (A,), backward, saved=[A], double=double)


def matrix_rank(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The numerical rank (*) int64 of A (*, m, n): the number of singular values above
    max(atol, rtol * s_max) (PyTorch's defaults: rtol = eps * max(m, n)). Computed on the host
    with NumPy's LAPACK (float64; one device -> host copy). No gradient (an integer).
    Raises:  RuntimeError for a non-floating input; TypeError for tensor atol/rtol.
    """
    _check(A, "matrix_rank", square=False)
    s = np.linalg.svd(_host(A), compute_uv=False)
    tol = _tol(s, A, atol, rtol, "matrix_rank")
    return _up((s > tol).sum(-1).astype(np.int64), A, dtypes.int64)


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """The least-squares solution X of min ||A X - B|| for A (*, m, n), B (*, m, k) (or a vector
    (m,) / (*, m)), batch dims broadcast; a namedtuple (solution (*, n, k), residuals, rank,
    singular_values) as PyTorch's: residuals (*, k) squared column residuals when m > n and
    every A has full rank, else empty; rank (int64) for drivers other than 'gels';
    singular_values for 'gelsd' and 'gelss', else empty. Computed on the host with NumPy's
    LAPACK (float64, through pinv: an SVD; one device -> host copy), returned in A's dtype.

    Grad:    through solution = pinv(A) B (the pinv and matmul gradients; constant rank).
    Raises:  RuntimeError for mismatched shapes, non-floating inputs, tensors on two devices;
             RuntimeError for another driver.
    """
    _check(A, "lstsq", square=False)
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.lstsq(): argument 'B' must be Tensor, not {type(B).__name__}")
    same_device("linalg.lstsq", A, B)
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           f"gelsy, gelsd, gelss), got {driver!r}")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {A.dtype} and other's dtype {B.dtype}")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.ndim < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), "
                           f"got A {tuple(A.shape)} and B {tuple(B.shape)}")
    m, n = A.shape[-2:]
    X = mm.matmul(pinv(A, rtol=rcond), Bm)
    with no_grad():
        s = np.linalg.svd(_host(A), compute_uv=False)
        rank = (s > _tol(s, A, None, rcond, "lstsq")).sum(-1)
        if m > n and np.all(rank == n):
            resid = ((mm.matmul(A, X) - Bm) ** 2).sum(-2)
            if vector:
                resid = resid.squeeze(-1)
        else:
            resid = _up(np.zeros((0,)), A)
    rank_t = (_up(np.zeros((0,)), A, dtypes.int64) if driver == "gels" else
              _up(rank.astype(np.int64), A, dtypes.int64))
    sv = (_up(s, A) if driver in ("gelsd", "gelss") else _up(np.zeros((0,)), A))
    return LstsqResult(X.squeeze(-1) if vector else X, resid, rank_t, sv)


# -- triangular and Cholesky solves; PyTorch's older names ------------------------------------
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """The solution X of A X = B (``left``) or X A = B, A (*, n, n) triangular (only its
    ``upper`` or lower triangle read; its diagonal taken as ones with ``unitriangular``),
    B (*, n, k) (left) or (*, k, n); batch dims broadcast. Computed on the host with NumPy's
    LAPACK (through linalg.solve on the triangle), returned in the promoted dtype.

    Grad:    through linalg.solve and the triangle (gA lies in the triangle read).
    Raises:  LinAlgError for a zero on the diagonal (PyTorch returns inf/nan there);
             RuntimeError as linalg.solve; TypeError for a non-bool ``upper``.
    """
    if not isinstance(upper, bool):
        raise TypeError(f"linalg.solve_triangular(): argument 'upper' must be bool, not "
                        f"{type(upper).__name__}")
    _check(A, "solve_triangular")
    if not isinstance(B, Tensor) or B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    T = A.triu(1 if unitriangular else 0) if upper else A.tril(-1 if unitriangular else 0)
    if unitriangular:
        n = A.shape[-1]
        T = ew.add(T, creation.eye(n, dtype=A.dtype, device=A.device))
    return solve(T, B, left=left)


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """PyTorch's torch.cholesky_solve(B, L, upper=False): the solution X of A X = B for
    A = L L^T (L = ``input2`` lower, or U^T U with ``upper``), B (*, n, k). Two triangular
    solves, computed on the host with NumPy's LAPACK.

    Grad:    through the triangular solves (for both B and L).
    Raises:  as linalg.solve_triangular.
    """
    L = input2
    _check(L, "cholesky_solve")
    if upper:
        y = solve_triangular(_mT(L), input, upper=False)
        return solve_triangular(L, y, upper=True)
    y = solve_triangular(L, input, upper=False)
    return solve_triangular(_mT(L), y, upper=True)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """PyTorch's torch.cholesky_inverse(L, upper=False): (L L^T)^-1 (or (U^T U)^-1) of a
    Cholesky factor (*, n, n). Computed on the host with NumPy's LAPACK (cholesky_solve of
    the identity). Grad: through the solves."""
    _check(L, "cholesky_inverse")
    eye = creation.eye(L.shape[-1], dtype=L.dtype, device=L.device)
    return cholesky_solve(eye.expand(*L.shape), L, upper)


LegacySVD = namedtuple("svd", ["U", "S", "V"])


def svd_legacy(input: Tensor, some: bool = True, compute_uv: bool = True):
    """PyTorch's torch.svd(input, some=True, compute_uv=True): (U, S, V) with V = Vh^T (not
    Vh), reduced when ``some``; without ``compute_uv`` U and V are zeros (m, m) and (n, n).
    Computed on the host with NumPy's LAPACK. Grad: S only (as linalg.svd)."""
    U, S, Vh = svd(input, full_matrices=not some)
    if not compute_uv:
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        return LegacySVD(_up(np.zeros(batch + (m, m)), input), S,
                         _up(np.zeros(batch + (n, n)), input))
    return LegacySVD(U, S, _mT(Vh))


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """PyTorch's torch.pinverse(input, rcond=1e-15): linalg.pinv with rtol=rcond. Computed on
    the host with NumPy's LAPACK."""
    return pinv(input, rtol=rcond)
