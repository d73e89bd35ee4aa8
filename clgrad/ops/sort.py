"""Sorting along a dim: sort, argsort, topk (kernels/sort.cl), and unique (on the host).

The kernel returns the permutation (int64 indices); the values are a gather of the input by
those indices, so their gradient is the gather's: scattered back to where each value came
from. Order: NaN is the largest value (PyTorch); equal values keep their original order.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops._util import defines_for, empty, row_geometry, shape_arg, view_arg
from clgrad.tensor import Tensor

__all__ = ["sort", "argsort", "topk", "unique"]

_BF16 = dtypes.bfloat16  # ranked in float32 (exact, the same order): ew.via_float32, before
#                          any kernel is built for its storage type (ushort)
SortResult = namedtuple("sort", ["values", "indices"])
TopkResult = namedtuple("topk", ["values", "indices"])


_MAX_P = 2048  # longest row the bitonic kernel sorts in local memory
_MAX_INSERT_K = 32  # topk up to this k keeps the best k per row in private memory


def _rank_indices(op: str, x: Tensor, d: int, k: int, descending: bool) -> Tensor:
    """int64 indices of the first ``k`` elements of each row along ``d`` in sorted order."""
    shape = list(x.shape)
    n = shape[d]
    shape[d] = k
    idx = empty(shape, dtypes.int64, x._storage.device)
    total = layout.numel(x.shape)
    if total == 0 or k == 0:
        return idx
    o_shape, (xo, io) = row_geometry(op, d, x.shape, x, idx)
    defs = defines_for(x.dtype)
    if descending:
        defs["DESC"] = 1
    dev = x._storage.device
    p = max(64, 1 << (n - 1).bit_length())
    geometry = (np.int32(len(o_shape)), shape_arg(o_shape), x._storage.buffer, view_arg(x, xo),
                np.int64(x._strides[d]), idx._storage.buffer, view_arg(idx, io),
                np.int64(idx._strides[d]))
    rows = total // n
    if k <= _MAX_INSERT_K:  # includes whole rows of up to 32 elements (insertion sort)
        kern = dev.kernel("sort.cl", "topk_insert",
                          {**defs, "KCAP": max(8, 1 << (k - 1).bit_length())})
        dev.launch(kern, (rows,), (64,), np.int64(rows), np.int64(n), np.int64(k), *geometry)
    elif p <= _MAX_P and p * (x.dtype.itemsize + 4) <= dev.local_mem_size // 2:
        wg = min(256, p // 2)
        kern = dev.kernel("sort.cl", "sort_bitonic", {**defs, "SORT_P": p, "WG": wg})
        dev.launch(kern, (rows * wg,), (wg,), np.int64(n), np.int64(k), *geometry)
    else:
        dev.launch(dev.kernel("sort.cl", "sort_rank", defs), (total,), (64,), np.int64(total),
                   np.int64(n), np.int64(k), *geometry)
    return idx


def _gathered(name: str, x: Tensor, d: int, idx: Tensor) -> Tensor:
    """x gathered along d by the (in-range, kernel-made) idx, with the gather's backward."""
    out = empty(idx.shape, x.dtype, x._storage.device)
    ix._gather_launch(x, d, idx, out)
    return record(name, out, (x,), ix._gather_backward(tuple(x.shape), d, idx), saved=[idx])


def _finish(name, x, src, d, idx, scalar):
    """(values, indices): src gathered by idx, in x's dtype and (0-dim x) shape."""
    vals = _gathered(name, src, d, idx)
    if x.dtype.is_bool:
        vals = vals.to(dtypes.bool_)
    if scalar:
        vals, idx = vals.reshape(()), idx.reshape(())
    return vals, idx


def _prep(op, x, dim):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if x.dtype.is_bool:
        x = x.to(dtypes.int32)  # same order; the values are cast back by the caller
    if x.ndim == 0:
        return x.reshape(1), 0, True
    return x, layout.wrap_dim(dim, x.ndim, op), False


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """Sort along ``dim`` -> (values, indices) (PyTorch's torch.sort).

    Shapes:  x (*S) -> values, indices (*S); indices int64
    Order:   ascending (descending=True: descending); NaN is the largest value, so it comes
             last (first when descending); equal values keep their order whatever ``stable``
             says (the sort is always stable, which PyTorch allows)
    Grad:    values -> x (scattered back through the permutation)
    Raises:  IndexError for a dim out of range; TypeError for a non-tensor
    Kernels: kernels/sort.cl :: sort_bitonic (rows up to 2048; longer rows: sort_rank, O(n^2)
             compares per row), then kernels/index.cl :: gather_dim
    """
    if isinstance(x, Tensor) and x._storage.dtype is _BF16:
        return ew.via_float32(sort, x, dim, descending, stable)
    src, d, scalar = _prep("sort", x, dim)
    idx = _rank_indices("sort", src, d, src.shape[d], descending)
    return SortResult(*_finish("sort", x, src, d, idx, scalar))


def argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort ``x`` along ``dim`` (see sort); int64, no gradient."""
    if isinstance(x, Tensor) and x._storage.dtype is _BF16:
        return argsort(ew.to(x, dtypes.float32), dim, descending, stable)
    src, d, scalar = _prep("argsort", x, dim)
    idx = _rank_indices("argsort", src, d, src.shape[d], descending)
    return idx.reshape(()) if scalar else idx


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    """The ``k`` largest (``largest=False``: smallest) elements along ``dim`` ->
    (values, indices) (PyTorch's torch.topk).

    Shapes:  x (*S) -> values, indices (*S with S[dim] = k); indices int64
    Order:   always sorted (largest first, or smallest first); among equal values the lower
             index comes first; NaN counts as the largest value (PyTorch). ``sorted=False``
             is accepted and gives the same sorted result (PyTorch leaves the order open)
    Grad:    values -> x (scattered back to the selected positions)
    Raises:  RuntimeError for k < 0 or k > S[dim]; IndexError for a dim out of range
    Kernels: kernels/sort.cl :: topk_insert (k <= 32: one pass per row, O(n k)), else
             sort_bitonic / sort_rank (the whole row sorted, the first k written);
             kernels/index.cl :: gather_dim
    """
    if isinstance(x, Tensor) and x._storage.dtype is _BF16:
        return ew.via_float32(topk, x, k, dim, largest, sorted)
    src, d, scalar = _prep("topk", x, dim)
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"topk: expected an int k, got {type(k).__name__}")
    if not 0 <= k <= src.shape[d]:
        raise RuntimeError(f"topk: expected k in [0, {src.shape[d]}] (the size of dim {d}), "
                           f"got k={k}; selected index k out of range")
    idx = _rank_indices("topk", src, d, int(k), largest)
    return TopkResult(*_finish("topk", x, src, d, idx, scalar))


def unique(x: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim=None):
    """The distinct values of ``x`` (PyTorch's torch.unique), computed on the host: the
    output size depends on the data, so the values are read back (PyTorch's CUDA unique
    synchronises too).

    Shapes:  dim None: x (*S) -> values (U,), inverse (*S), counts (U,);
             dim d: the distinct slices along d -> values (*S with S[d] = U), inverse (S[d],)
    Order:   ascending (``sorted=False`` gives the same ascending order; PyTorch leaves it
             open); NaN sorts last and each NaN is its own value (PyTorch's rule; with
             ``dim`` set NumPy's slice comparison decides)
    Returns: values, or a tuple ``(values[, inverse][, counts])``; inverse and counts int64
    Grad:    none (as PyTorch)
    """
    if x._storage.dtype is _BF16:  # (no NumPy bfloat16: the values as float32)
        return ew.via_float32(unique, x, sorted, return_inverse, return_counts, dim)
    host = x.numpy()
    axis = None if dim is None else layout.wrap_dim(dim, x.ndim, "unique")
    kw = {"equal_nan": False} if axis is None else {"axis": axis}
    vals, inv, counts = np.unique(host, return_inverse=True, return_counts=True, **kw)
    out = [creation.tensor(vals, dtype=x.dtype, device=x._storage.device)]
    if return_inverse:
        inv = inv.reshape(host.shape) if axis is None else inv.reshape(-1)
        out.append(creation.tensor(inv.astype(np.int64), device=x._storage.device))
    if return_counts:
        out.append(creation.tensor(counts.astype(np.int64), device=x._storage.device))
    return out[0] if len(out) == 1 else tuple(out)


# -- h4 (issue 22): median, kthvalue ----------------------------------------------------------
MedianResult = namedtuple("median", ["values", "indices"])
KthvalueResult = namedtuple("kthvalue", ["values", "indices"])


def median(x: Tensor, dim=None, keepdim: bool = False):
    """The lower median: of all elements (a 0-dim tensor), or along ``dim`` ->
    (values, indices) (PyTorch's torch.median).

    With an even count the lower of the two middle values is taken (element (n - 1) // 2 in
    sorted order), as PyTorch; NaN propagates: a row holding NaN gives NaN and the index of
    its first NaN. Among equal values the index is that of the stable sort's middle element.
    Shapes:  x (*S) -> () ; or values, indices (*S without dim, or with 1 there if keepdim)
    Grad:    all elements: split evenly among the elements equal to the median (PyTorch's
             evenly_distribute_backward); along dim: to the element at the index
    Raises:  IndexError for an empty dim or a dim out of range; an empty x without dim gives
             NaN (PyTorch)
    Kernels: kernels/sort.cl (via sort), kernels/index.cl :: gather_dim
    """
    from clgrad.ops import reduce as rd
    if isinstance(x, Tensor) and x._storage.dtype is _BF16:
        return ew.via_float32(median, x, dim, keepdim)
    if dim is None:
        if x.numel() == 0:
            return creation.full((), float("nan"), dtype=x.dtype, device=x.device)
        flat = x.reshape(-1)
        from clgrad.autograd import no_grad
        with no_grad():
            vals, _ = _select("median", flat, 0, (flat.numel() - 1) // 2, False, nan_first=True)
        return rd._record_even("median", x, vals, tuple(range(x.ndim)), False, nan_hits=True)
    src, d, _ = _prep("median", x, dim)
    if src.shape[d] == 0:
        raise IndexError(f"median: Expected reduction dim {d} to have non-zero size.")
    return MedianResult(*_select("median", x, dim, (src.shape[d] - 1) // 2, keepdim,
                                 nan_first=True))


def kthvalue(x: Tensor, k: int, dim: int = -1, keepdim: bool = False):
    """The k-th smallest element along ``dim`` (k counts from 1) -> (values, indices)
    (PyTorch's torch.kthvalue).

    NaN counts as the largest value (so it is returned only for k past the other values).
    Among equal values the index is that of the stable sort's k-th element.
    Shapes:  x (*S) -> values, indices (*S without dim, or with 1 there if keepdim)
    Grad:    values -> the element at the index
    Raises:  RuntimeError for k outside [1, S[dim]]; IndexError for a dim out of range
    Kernels: kernels/sort.cl (via sort), kernels/index.cl :: gather_dim
    """
    if isinstance(x, Tensor) and x._storage.dtype is _BF16:
        return ew.via_float32(kthvalue, x, k, dim, keepdim)
    src, d, _ = _prep("kthvalue", x, dim)
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"kthvalue: expected an int k, got {type(k).__name__}")
    if not 1 <= k <= src.shape[d]:
        raise RuntimeError(f"kthvalue: selected number k out of range for dimension {d}: "
                           f"expected k in [1, {src.shape[d]}], got {k}")
    return KthvalueResult(*_select("kthvalue", x, dim, int(k) - 1, keepdim, nan_first=False))


def _select(name, x, dim, k, keepdim, nan_first):
    """(values, indices) of the element of rank k (0-based, stable ascending order) along dim;
    with ``nan_first`` a row holding NaN gives its first NaN instead."""
    from clgrad.ops import reduce as rd
    src, d, scalar = _prep(name, x, dim)
    idx = _rank_indices(name, src, d, src.shape[d], False).narrow(d, k, 1)
    if nan_first and src.dtype.is_floating_point:
        nan = ew.ne(src, src)
        first = rd.argmax(ew.to(nan, dtypes.int32), d, keepdim=True)
        idx = ew.where(rd.any(nan, d, keepdim=True), first, idx)
    vals, idx = _finish(name, x, src, d, ew.contiguous(idx), False)
    if not keepdim or scalar:
        vals, idx = vals.squeeze(d), idx.squeeze(d)
    return vals, idx


__all__ += ["median", "kthvalue"]
