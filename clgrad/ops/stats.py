"""Statistics over a tensor's values: quantiles, the NaN-ignoring median, the mode, counts and
histograms, covariance and correlation, and the trapezoid rule (PyTorch's names).

Composed of other families' ops (sort, gather, lerp, cumsum, matmul), so their gradients come
from those ops' backward closures; the counting ops whose output size depends on the data
(``mode``, ``bincount``, ``histc``) compute on the host, as PyTorch's CPU kernels do, and are
not differentiable (PyTorch's are not either, except mode's values).
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections import namedtuple

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import no_grad
from clgrad.ops import composite as cp
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import matmul as mm
from clgrad.ops import reduce as rd
from clgrad.ops import scan as sc
from clgrad.ops import sort as so
from clgrad.ops import views as vw
from clgrad.tensor import Tensor

__all__ = ["quantile", "nanquantile", "nanmedian", "mode", "aminmax", "bincount", "histc",
           "cov", "corrcoef", "trapezoid", "cumulative_trapezoid"]

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")
ModeResult = namedtuple("mode", ["values", "indices"])
NanmedianResult = namedtuple("nanmedian", ["values", "indices"])
AminmaxResult = namedtuple("aminmax", ["min", "max"])


# -- quantiles --------------------------------------------------------------------------------
def quantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The q-th quantiles of ``input``'s elements (``dim=None``) or along ``dim`` (PyTorch's
    torch.quantile): the sorted values at rank ``q * (n - 1)``, interpolated between the two
    neighbouring ranks as ``interpolation`` says ('linear', 'lower', 'higher', 'midpoint',
    'nearest': round half to even, computed in input's dtype, as PyTorch).

    A row holding NaN gives NaN (``nanquantile`` ignores them instead).
    Shapes:  input (*S); q a number or a 0-dim tensor -> (*S without dim; all dims reduced
             for dim None; 1s there with keepdim); q (Q,) -> (Q, *that)
    Dtypes:  float32, float64; q of input's dtype (a tensor q must have it)
    Grad:    input (through sort and the interpolation; q takes none, as PyTorch)
    Raises:  RuntimeError for an integer input, an empty input, q outside [0, 1], a q tensor
             of another dtype or more than one dim; ValueError for another interpolation
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(input: Tensor, q, dim=None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN (PyTorch's torch.nanquantile): the ranks count the non-NaN
    values of each row; a row of NaN only gives NaN. Shapes, dtypes, grad and errors as
    ``quantile``."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


def _quantile(op, x, q, dim, keepdim, interpolation, ignore_nan):
    if not x.dtype.is_floating_point or x.dtype in (dtypes.float16, dtypes.bfloat16):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype, got "
                           f"{x.dtype}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}() interpolation must be one of linear, lower, higher, "
                         f"midpoint or nearest. Got {interpolation!r}")
    if x.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    qh, scalar_q = _q_host(op, q, x)
    if dim is None:
        src, shape = vw.reshape(x, -1), ((1,) * x.ndim if keepdim else ())
    else:
        d = layout.wrap_dim(dim, x.ndim, op)
        src = vw.movedim(x, d, -1) if x.ndim else vw.reshape(x, 1)
        shape = list(x.shape)
        if keepdim:
            shape[d] = 1
        elif x.ndim:
            del shape[d]
    srt = so.sort(src, -1).values  # NaN last
    # the ranks on the host: q rounded to input's dtype times the last index, in input's
    # dtype (PyTorch's numbers: float32 0.1f * 5 rounds to 0.5, nearest picks rank 0)
    def _in(v):
        return np.asarray(v, dtype=x.dtype.np)

    with no_grad():
        nan = ew.ne(srt.detach(), srt.detach())
        lead = tuple(srt.shape[:-1])
        if ignore_nan:
            count = rd.sum(ew.logical_not(nan), -1).numpy().astype(np.float64)[..., None]
            ranks = np.maximum(_in(qh) * _in(count - 1), 0).astype(np.float64)
        else:
            last = srt.shape[-1] - 1
            ranks = np.broadcast_to((_in(qh) * _in(last)).astype(np.float64),
                                    lead + (qh.size,)).copy()
            ranks[rd.any(nan, -1).numpy()] = last
    rnd = {"lower": np.floor, "higher": np.ceil, "nearest": np.rint}.get(interpolation)
    ranks = rnd(ranks) if rnd is not None else ranks
    dev = x._storage.device
    below = creation.tensor(np.floor(ranks).astype(np.int64), device=dev)
    above = creation.tensor(np.ceil(ranks).astype(np.int64), device=dev)
    out = ix.gather(srt, -1, below)  # (*R, Q)
    if interpolation in ("linear", "midpoint"):
        w = creation.tensor(ranks - np.floor(ranks), dtype=x.dtype, device=dev) if \
            interpolation == "linear" else 0.5
        out = cp.lerp(out, ix.gather(srt, -1, above), w)
    if scalar_q:
        return vw.reshape(out, tuple(shape))
    return vw.reshape(vw.movedim(out, -1, 0), (qh.size, *shape))


def _q_host(op, q, x):
    """q as float64 values rounded to x's dtype, shaped (Q,); and whether q was a number or a
    0-dim tensor."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor, got {q.ndim} dims")
        if q.dtype is not x.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor, got "
                               f"{q.dtype} and {x.dtype}")
        host, scalar = q.detach().numpy().reshape(-1), q.ndim == 0
    elif isinstance(q, numbers.Real) and not isinstance(q, bool):
        host, scalar = np.array([q]), True
    else:
        raise TypeError(f"{op}(): argument 'q' must be a float or a Tensor, got "
                        f"{type(q).__name__}")
    host = host.astype(x.dtype.np).astype(np.float64)
    bad = host[~((host >= 0) & (host <= 1))]
    if bad.size:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {bad[0]:g}")
    return host, scalar


def nanmedian(input: Tensor, dim=None, keepdim: bool = False):
    """The lower median of the non-NaN values: of all elements (a 0-dim tensor), or along
    ``dim`` -> (values, indices) (PyTorch's torch.nanmedian).

    The value of rank ``(m - 1) // 2`` among the m non-NaN values of each row (a row of NaN
    only gives NaN); among equal values the index of the stable sort's element.
    Shapes:  input (*S) -> (); or values, indices int64 (*S without dim, 1 there if keepdim)
    Grad:    all elements: evenly among the elements equal to the result (PyTorch's); along
             dim: to the element at the index
    Raises:  IndexError for an empty dim or a dim out of range
    Differs: a row of NaN only gives the index of its first NaN (PyTorch's CPU kernel picks
             another NaN's)
    """
    if dim is None:
        if input.numel() == 0:
            return creation.full((), float("nan"), dtype=input.dtype, device=input.device)
        with no_grad():
            vals = nanmedian(vw.reshape(input.detach(), -1), 0).values
        return rd._record_even("nanmedian", input, vals, tuple(range(input.ndim)), False,
                               nan_hits=True)
    d = layout.wrap_dim(dim, input.ndim, "nanmedian")
    x = input if input.ndim else vw.reshape(input, 1)
    if x.shape[d] == 0:
        raise IndexError(f"nanmedian(): Expected reduction dim {d} to have non-zero size.")
    with no_grad():
        order = so.sort(x.detach(), d, stable=True).indices  # NaN last
        count = rd.sum(ew.eq(x.detach(), x.detach()), d, keepdim=True)
        k = ew.clamp(ew.floor_divide(ew.sub(count, 1), 2), min=0)
        idx = ix.gather(order, d, k)
    vals = ix.gather(x, d, idx)
    if not keepdim or not input.ndim:
        vals, idx = vw.squeeze(vals, d), vw.squeeze(idx, d)
    return NanmedianResult(vals, idx)


# -- mode, aminmax ----------------------------------------------------------------------------
def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """The most frequent value along ``dim`` and the index of its last occurrence -> (values,
    indices) (PyTorch's torch.mode). Ties between values: the smallest; NaN never equals NaN
    (each counts once, as PyTorch's).

    Computed on the host (run lengths of each sorted row); the values are then gathered on the
    device at the indices, so the gradient reaches those elements (PyTorch's).
    Shapes:  input (*S) -> values, indices int64 (*S without dim, or 1 there if keepdim)
    Raises:  IndexError for an empty dim or a dim out of range
    """
    d = layout.wrap_dim(dim, input.ndim, "mode")
    x = input if input.ndim else vw.reshape(input, 1)
    n = x.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    host = np.moveaxis(x.detach().numpy(), d, -1)
    rows = host.reshape(-1, n)
    order = np.argsort(rows, axis=1, kind="stable")
    srt = np.take_along_axis(rows, order, 1)
    new = np.ones(srt.shape, bool)
    new[:, 1:] = srt[:, 1:] != srt[:, :-1]  # NaN != NaN: each NaN starts a run
    run = np.cumsum(new, axis=1) - 1 + (np.arange(len(rows)) * n)[:, None]
    length = np.bincount(run.ravel(), minlength=rows.size)[run]
    best = np.argmax(length == length.max(axis=1, keepdims=True), axis=1)  # first: smallest
    r = np.arange(len(rows))
    last = order[r, best + length[r, best] - 1]  # stable: the run ends at the last occurrence
    idx = creation.tensor(last.reshape(host.shape[:-1] + (1,)).astype(np.int64),
                          device=x._storage.device)
    idx = vw.movedim(idx, -1, d)
    vals = ix.gather(x, d, idx)
    if not keepdim or not input.ndim:
        vals, idx = vw.squeeze(vals, d), vw.squeeze(idx, d)
    return ModeResult(vals, idx)


def aminmax(input: Tensor, *, dim=None, keepdim: bool = False):
    """(amin, amax) of all elements or along ``dim`` in one call -> (min, max) (PyTorch's
    torch.aminmax). Grad: as amin and amax (evenly among equal elements)."""
    return AminmaxResult(rd.amin(input, dim, keepdim),
                         rd.amax(input, dim, keepdim))


# -- counts and histograms (host) -------------------------------------------------------------
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Counts of each value of a 1-D non-negative integer tensor, or the sums of ``weights``
    per value (PyTorch's torch.bincount): length max(input) + 1, at least ``minlength``.

    Dtypes:  int64 without weights; float32 or float64 weights keep their dtype, other
             weights give float64 (PyTorch's)
    Grad:    none (as PyTorch)
    Raises:  RuntimeError for an input that is not 1-D integer, a negative value, weights of
             another length, a negative minlength
    """
    if input.ndim != 1 or input.dtype.is_floating_point or input.dtype.is_bool:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got "
                           f"{input.ndim}-d {input.dtype}")
    if minlength < 0:
        raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength}")
    if weights is not None and tuple(weights.shape) != tuple(input.shape):
        raise RuntimeError(f"bincount: weights should be 1-d and have the same length as "
                           f"input, got {tuple(weights.shape)} for {tuple(input.shape)}")
    vals = input.numpy().astype(np.int64)
    if vals.size and vals.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs, got a "
                           f"negative value {vals.min()}")
    if weights is None:
        return creation.tensor(np.bincount(vals, minlength=minlength),
                               device=input._storage.device)
    wdt = weights.dtype if weights.dtype in (dtypes.float32, dtypes.float64) else dtypes.float64
    w = weights.detach().numpy().astype(np.float64)
    return creation.tensor(np.bincount(vals, w, minlength=minlength), dtype=wdt,
                           device=input._storage.device)


def histc(input: Tensor, bins: int = 100, min=0, max=0) -> Tensor:
    """A histogram of ``bins`` equal bins over [min, max] (PyTorch's torch.histc): elements
    outside and NaN are ignored, the last bin includes max; ``min == max`` takes the data's
    minimum and maximum (widened by 1 each way if those are equal too).

    Dtypes:  floats; the result has input's dtype; the bin of an element is computed in that
             dtype, as PyTorch's kernel
    Grad:    none (as PyTorch)
    Raises:  RuntimeError for an integer input, bins < 1, min > max or an infinite range
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"histc: expected a floating input, got {input.dtype} "
                           f"(\"histogram_cpu\" not implemented for it in PyTorch either)")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    host = input.detach().float().numpy().ravel() if input.dtype is dtypes.bfloat16 else \
        input.detach().numpy().ravel()
    lo, hi = float(min), float(max)
    if lo == hi and host.size:
        finite = host[~np.isnan(host)]
        if finite.size:
            lo, hi = float(finite.min()), float(finite.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc(): max must be larger than min, got min={lo}, "
                           f"max={hi}")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc(): range of [{lo}, {hi}] is not finite")
    keep = host[(host >= lo) & (host <= hi)]
    t = keep.dtype.type
    pos = ((keep - t(lo)) * t(bins) / (t(hi) - t(lo))).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    counts = np.bincount(pos, minlength=bins)[:bins].astype(np.float64)
    return creation.tensor(counts, dtype=input.dtype, device=input._storage.device)


# -- covariance, correlation ------------------------------------------------------------------
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables (rows) of ``input`` over its observations
    (columns) (PyTorch's torch.cov, NumPy's np.cov): ``fweights`` (integer repeat counts) and
    ``aweights`` (float observation weights) weigh the columns.

    Shapes:  input (V, N) or (N,) -> (V, V) or ()
    Dtypes:  floats keep theirs; integers give the default float dtype
    Grad:    input (and aweights) through the composed ops
    Raises:  RuntimeError for input of more than 2 dims, weights not 1-D of length N,
             fractional or negative fweights, negative aweights; a warning when the degrees
             of freedom are <= 0 (the result is then inf or NaN, as PyTorch)
    """
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    x = input if input.ndim == 2 else vw.reshape(input, 1, -1)
    if not x.dtype.is_floating_point:
        x = ew.to(x, dtypes.get_default_dtype())
    n = x.shape[1]
    w = None
    for name, t in (("fweights", fweights), ("aweights", aweights)):
        if t is None:
            continue
        if t.ndim > 1 or t.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have one dimension and {n} "
                               f"elements (the number of observations), got shape "
                               f"{tuple(t.shape)}")
        host = t.detach().numpy()
        if name == "fweights" and t.dtype.is_floating_point:
            raise RuntimeError("cov(): expected fweights to have integral dtype, got "
                               f"{t.dtype}")
        if (host < 0).any():
            raise RuntimeError(f"cov(): {name} cannot be negative")
        t = ew.to(vw.reshape(t, -1), x.dtype)
        w = t if w is None else ew.mul(w, t)
    if w is None:
        avg = rd.mean(x, 1)
        w_sum = float(n)
        norm = w_sum - correction
    else:
        w_sum = rd.sum(w)
        avg = ew.div(rd.sum(ew.mul(x, w), 1), w_sum)
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = ew.sub(w_sum, correction)
        else:
            aw = ew.to(vw.reshape(aweights, -1), x.dtype)
            norm = ew.sub(w_sum, ew.div(ew.mul(rd.sum(ew.mul(w, aw)), correction), w_sum))
    if float(norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", RuntimeWarning, stacklevel=2)
        norm = 0.0 if w is None else ew.mul(norm, 0)
    xm = ew.sub(x, vw.unsqueeze(avg, 1))
    xw = xm if w is None else ew.mul(xm, w)
    c = mm.matmul(xm, vw.t(xw))
    return vw.squeeze(ew.div(c, norm))


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input`` (PyTorch's torch.corrcoef,
    NumPy's np.corrcoef): ``cov(input)`` divided by the outer product of the rows' standard
    deviations, clipped to [-1, 1].

    Shapes:  (V, N) or (N,) -> (V, V) or ()
    Grad:    input (through cov, sqrt, the divisions and the clip)
    """
    c = cov(input)
    if c.ndim == 0:
        return ew.div(c, c)
    sd = ew.sqrt(vw.diagonal(c))
    c = ew.div(ew.div(c, vw.unsqueeze(sd, 1)), vw.unsqueeze(sd, 0))
    return ew.clamp(c, -1, 1)


# -- the trapezoid rule -----------------------------------------------------------------------
def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The integral of ``y`` along ``dim`` by the trapezoid rule (PyTorch's torch.trapezoid
    and torch.trapz): sample points ``x`` (1-D of y's length along dim, or broadcasting with
    y), or a constant spacing ``dx`` (default 1).

    Shapes:  y (*S) -> (*S without dim)
    Dtypes:  floats keep theirs; integers give the default float dtype
    Grad:    y and x
    Raises:  RuntimeError for both x and dx, or x of another length along dim
    """
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx; give one")
    d = layout.wrap_dim(dim, y.ndim, "trapezoid")
    n = y.shape[d]
    if n == 0:
        shape = tuple(s for i, s in enumerate(y.shape) if i != d)
        dt = dtypes.result_type(y, 1.0) if x is None else dtypes.result_type(y, x, 1.0)
        return creation.zeros(shape, dtype=dt, device=y._storage.device)
    if x is None:
        ends = ew.mul(ew.add(vw.select(y, d, 0), vw.select(y, d, -1)), 0.5)
        return ew.mul(ew.sub(rd.sum(y, d), ends), 1 if dx is None else dx)
    step = _spacing("trapezoid", y, x, d)
    pair = ew.add(vw.narrow(y, d, 1, n - 1), vw.narrow(y, d, 0, n - 1))
    return ew.mul(rd.sum(ew.mul(step, pair), d), 0.5)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None,
                         dim: int = -1) -> Tensor:
    """The running trapezoid-rule integrals of ``y`` along ``dim`` (PyTorch's
    torch.cumulative_trapezoid): one fewer element along dim than y; arguments as
    ``trapezoid``.

    Shapes:  y (*S) -> (*S with S[dim] - 1, or 0 for an empty dim)
    Grad:    y and x
    """
    if x is not None and dx is not None:
        raise RuntimeError("cumulative_trapezoid: received both x and dx; give one")
    d = layout.wrap_dim(dim, y.ndim, "cumulative_trapezoid")
    n = y.shape[d]
    if n == 0:
        dt = dtypes.result_type(y, 1.0) if x is None else dtypes.result_type(y, x, 1.0)
        return creation.zeros(tuple(y.shape), dtype=dt, device=y._storage.device)
    pair = ew.add(vw.narrow(y, d, 1, n - 1), vw.narrow(y, d, 0, n - 1))
    if x is None:
        return sc.cumsum(ew.mul(pair, (1 if dx is None else dx) / 2.0), d)
    step = _spacing("cumulative_trapezoid", y, x, d)
    return ew.div(sc.cumsum(ew.mul(step, pair), d), 2.0)


def _spacing(op, y, x, d):
    """The sample points' differences, shaped to broadcast against y's pairs along d."""
    n = y.shape[d]
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{op}: there must be one `x` value for each sample point, "
                               f"got {x.shape[0]} for {n} samples along dim {d}")
        shape = [1] * y.ndim
        shape[d] = n - 1
        return vw.reshape(ew.sub(vw.narrow(x, 0, 1, n - 1), vw.narrow(x, 0, 0, n - 1)), shape)
    xd = layout.wrap_dim(d - y.ndim, x.ndim, op) if x.ndim < y.ndim else d
    m = x.shape[xd]
    return ew.sub(vw.narrow(x, xd, 1, m - 1), vw.narrow(x, xd, 0, m - 1))
