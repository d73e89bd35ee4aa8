"""Sorting along a dim: sort, argsort, topk (kernels/sort.cl), and unique (on the host); the
binary searches in sorted sequences: searchsorted, bucketize, and isin over them.

The kernel returns the permutation (int64 indices); the values are a gather of the input by
those indices, so their gradient is the gather's: scattered back to where each value came
from. Order: NaN is the largest value (PyTorch); equal values keep their original order.
"""
from __future__ import annotations

from collections import namedtuple

import math

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops._util import defines_for, empty, row_geometry, shape_arg, view_arg
from clgrad.tensor import Tensor

__all__ = ["sort", "argsort", "topk", "unique", "searchsorted", "bucketize", "isin"]

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
    shape = tuple(x.shape)
    return record(name, out, (x,), ix._gather_backward(shape, d, idx), saved=[idx],
                  double=lambda g, node: (ix.scatter_add_rec(shape, d, idx, g),))


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
    if dim is not None and x._storage.dtype is dtypes.float16:
        # (NumPy's slice order for float16 puts a NaN slice before larger numbers, its
        # float32 order after them, as PyTorch's: the values as float32, exactly)
        return ew.low_via_float32(dtypes.float16, unique, x, sorted, return_inverse,
                                  return_counts, dim)
    host = x.detach().numpy()
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


def unique_consecutive(x: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim=None):
    """``x`` with each run of equal consecutive values (or slices along ``dim``) kept once
    (PyTorch's torch.unique_consecutive), computed on the host as ``unique``.

    NaN never equals NaN, so consecutive NaNs are kept each (PyTorch's rule).
    Shapes:  dim None: x (*S) -> values (U,), inverse (*S), counts (U,); dim d: values (*S
             with S[d] = U), inverse (S[d],), counts (U,)
    Returns: values, or a tuple ``(values[, inverse][, counts])``; inverse and counts int64
    Grad:    none (as PyTorch)
    """
    if x._storage.dtype is _BF16:
        return ew.via_float32(unique_consecutive, x, return_inverse, return_counts, dim)
    host = x.detach().numpy()
    if dim is None:
        rows = host.reshape(-1, 1)
    else:
        axis = layout.wrap_dim(dim, x.ndim, "unique_consecutive")
        moved = np.moveaxis(host, axis, 0)
        rows = moved.reshape(moved.shape[0], -1)
    new = np.ones(len(rows), bool)
    if len(rows) > 1:
        new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    starts = np.flatnonzero(new)
    vals = rows[starts]
    if dim is None:
        vals = vals.reshape(-1)
    else:
        vals = np.moveaxis(vals.reshape((len(starts),) + moved.shape[1:]), 0, axis)
    dev = x._storage.device
    out = [creation.tensor(np.ascontiguousarray(vals), dtype=x.dtype, device=dev)]
    if return_inverse:
        inv = (np.cumsum(new) - 1).astype(np.int64)
        out.append(creation.tensor(inv.reshape(host.shape) if dim is None else inv, device=dev))
    if return_counts:
        counts = np.diff(np.append(starts, len(rows))).astype(np.int64)
        out.append(creation.tensor(counts, device=dev))
    return out[0] if len(out) == 1 else tuple(out)


__all__ += ["unique_consecutive"]


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


# -- binary searches: searchsorted, bucketize, isin -------------------------------------------
_SS = "torch.searchsorted(): "


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"


def searchsorted(sorted_sequence: Tensor, input: Tensor | float, *, out_int32: bool = False,
                 right: bool = False, side=None, sorter: Tensor | None = None) -> Tensor:
    """The indices where ``input``'s values would be inserted into ``sorted_sequence`` (sorted
    ascending along its last dim) to keep it sorted: PyTorch's torch.searchsorted, one binary
    search per value on the device.

    Shapes:  sorted_sequence (N,) with input of any shape (a number: a 0-dim result), or
             sorted_sequence (*B, N) with input (*B, M): each row of input searched in the same
             row of the sequence. The result has input's shape.
    Side:    left (``right=False``, ``side='left'``): the first index i with seq[i] >= v;
             right: the first with seq[i] > v. A NaN value gives N (PyTorch's comparisons).
    sorter:  int64 indices of sorted_sequence's shape that sort it along its last dim
             (argsort's): the sequence is read through them.
    Dtypes:  the operands are compared in dtypes.result_type(sorted_sequence, input); the result
             is int64, or int32 with ``out_int32``. No gradient.
    Raises:  RuntimeError, with PyTorch's messages, for a 0-dim sequence, leading dims that do
             not match, a scalar input with an N-dim sequence, a side other than 'left' or
             'right' or opposite to ``right``, a sorter that is not int64, of another shape, or
             with an index out of [0, N) (read back to check).
    Kernels: kernels/sort.cl :: searchsorted
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{_SS}side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(f"{_SS}side and right can't be set to opposites, got side of "
                               f"left while right was True")
        right = side == "right"
    seq = sorted_sequence
    if seq.ndim == 0:
        raise RuntimeError(f"{_SS}boundaries tensor should have positive dimension, but got 0 "
                           f"dimension")
    scalar_in = not isinstance(input, Tensor)
    if scalar_in and seq.ndim > 1:
        raise RuntimeError(f"{_SS}input value can be a scalar only when boundaries tensor "
                           f"dimension is 1, but we got boundaries tensor dim({seq.ndim}) and "
                           f"input value's dim(0) numel(1)")
    if not scalar_in and seq.ndim > 1 and (input.ndim != seq.ndim or
                                           input.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError(f"{_SS}boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must "
                           f"match, but we got boundaries tensor {_shape_str(seq.shape)} and "
                           f"input value tensor {_shape_str(input.shape)}")
    if sorter is not None:
        if sorter.dtype is not dtypes.int64:
            raise RuntimeError(f"{_SS}sorter must be a tensor of long dtype but got dtype "
                               f"{dtypes.torch_name(sorter.dtype)}")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"{_SS}boundary and sorter must have the same size, but got "
                               f"boundary tensor {_shape_str(seq.shape)}and got sorter tensor "
                               f"{_shape_str(sorter.shape)}")
        n = seq.shape[-1]
        if sorter.numel() and (int(sorter.min().item()) < 0 or
                               int(sorter.max().item()) >= n):
            raise RuntimeError(f"{_SS}sorter index out of range")
    dt = dtypes.result_type(seq, input)
    if dt is _BF16:  # compared in float32 (exact): the int64 result is kept
        seq, input = (ew.to(v, dtypes.float32) if isinstance(v, Tensor) else v
                      for v in (seq, input))
        dt = dtypes.float32
    dev = seq._storage.device
    seq = ew.to(seq.detach(), dt)
    if sorter is not None:
        seq = ix.gather(seq, -1, sorter)
    values = ew.to(input.detach(), dt) if not scalar_in else creation.tensor(
        input, dtype=dt, device=dev)
    out_dt = dtypes.int32 if out_int32 else dtypes.int64
    out = empty(values.shape, out_dt, dev)
    total, n = values.numel(), seq.shape[-1]
    if total == 0:
        return out
    if n == 0:
        return creation.zeros(values.shape, dtype=out_dt, device=dev)
    seq, values = ew.contiguous(seq), ew.contiguous(values)
    rows = seq.numel() // n
    m = values.shape[-1] if rows > 1 else total
    defs = {**defines_for(dt), "OUT_T": "int" if out_int32 else "long"}
    kern = dev.kernel("sort.cl", "searchsorted", defs)
    dev.launch(kern, (total,), (64,), np.int64(total), np.int64(m), np.int64(n),
               np.int64(rows), seq._storage.buffer, np.int64(seq._offset),
               values._storage.buffer, np.int64(values._offset), out._storage.buffer,
               np.int64(out._offset), np.int32(1 if right else 0))
    return out


def bucketize(input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """The index of the bucket of each value of ``input`` among the sorted 1-D
    ``boundaries`` (PyTorch's torch.bucketize): ``searchsorted(boundaries, input,
    right=right)``, so with right=False boundaries[i-1] < v <= boundaries[i], with right=True
    boundaries[i-1] <= v < boundaries[i].

    Shapes:  input any (a number: 0-dim), boundaries (N,); the result has input's shape.
    Dtypes:  int64, or int32 with ``out_int32``. No gradient.
    Raises:  RuntimeError for boundaries that are not 1-dim (PyTorch's message).
    """
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements: Tensor | float, test_elements: Tensor | float, *,
         assume_unique: bool = False, invert: bool = False) -> Tensor:
    """True where an element of ``elements`` occurs in ``test_elements`` (PyTorch's
    torch.isin), or where it does not with ``invert``: test_elements is sorted on the device
    and each element found by a binary search (searchsorted), O((N + M) log N). Equality is
    ``==`` in dtypes.result_type of the two, so NaN is never found. ``assume_unique`` is
    accepted (a hint: the result is the same either way).

    Shapes:  elements any (a number: 0-dim), test_elements any (a number: one value); the
             result has elements' shape, dtype bool. No gradient.
    Raises:  TypeError when neither is a Tensor; RuntimeError for a bool operand (PyTorch's
             "Unsupported input type encountered for isin(): Bool").
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(f"isin(): expected elements or test_elements to be a Tensor, got "
                        f"{type(elements).__name__} and {type(test_elements).__name__}")
    for v in (elements, test_elements):
        if isinstance(v, bool) or isinstance(v, Tensor) and v.dtype.is_bool:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    dt = dtypes.result_type(elements, test_elements)
    if dt is _BF16:
        dt = dtypes.float32  # (exact: the same equalities)
    dev = (elements if isinstance(elements, Tensor) else test_elements)._storage.device
    el, te = (ew.to(v.detach(), dt) if isinstance(v, Tensor) else
              creation.tensor(v, dtype=dt, device=dev) for v in (elements, test_elements))
    te = te.reshape(-1)
    if te.numel() == 0 or el.numel() == 0:
        return creation.full(el.shape, bool(invert), dtype=dtypes.bool_, device=dev)
    ordered = sort(te).values
    keys = ordered
    if dt.is_floating_point:
        # NaNs sort last; as search keys they are +inf, so the keys stay ordered (a NaN key
        # compares unordered and misleads the search); the equality below reads `ordered`
        keys = ew.where(ew.ne(ordered, ordered), math.inf, ordered)
    idx = searchsorted(keys, el).reshape(-1)
    idx = ew.clamp(idx, max=te.numel() - 1)
    found = ew.eq(ix.index_select(ordered, 0, idx).reshape(el.shape), el)
    return ew.logical_not(found) if invert else found
