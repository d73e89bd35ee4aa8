"""Ops that move elements between tensors: cat, stack, index_select, gather, scatter_add,
advanced indexing (__getitem__/__setitem__ with index tensors, lists, ranges, masks) and
index_put_.

Kernels: kernels/copy.cl (cat/stack copy each input into a narrow view of the output),
kernels/index.cl (gather_dim, scatter_add_dim, scatter_dim).
"""
from __future__ import annotations

import warnings

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import is_grad_enabled, no_grad, record
from clgrad.errors import IndexRangeError
from clgrad.ops import elementwise as ew
from clgrad.ops import inplace
from clgrad.ops._util import (bump_version, defines_for, empty, full, launch_1d, same_device,
                              zeros)
from clgrad.tensor import Tensor

__all__ = ["cat", "stack", "index_select", "gather", "scatter_add", "advanced_getitem",
           "embedding", "one_hot", "setitem", "index_put_", "index_put"]


def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along ``dim``. Shapes must match except along ``dim``; dtypes promote.

    Raises ValueError for an empty list, RuntimeError for mismatched shapes.
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty list of Tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"cat: expected Tensors, got {type(t).__name__}")
    same_device("cat", *tensors)
    # PyTorch skips 1-D empty tensors in cat (legacy behaviour).
    parts = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors[:1]
    ref = parts[0]
    d = layout.wrap_dim(dim, ref.ndim, "cat")
    dt = ref.dtype
    for t in tensors:  # skipped empty tensors take part in type promotion too (PyTorch)
        dt = dtypes.promote(dt, t.dtype)
    for t in parts[1:]:
        if t.ndim != ref.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, ref.shape))
                                     if i != d):
            raise RuntimeError(f"cat: Sizes of tensors must match except in dimension {d}. "
                               f"Expected {tuple(ref.shape)} (except dim {d}), got "
                               f"{tuple(t.shape)}")
    shape = list(ref.shape)
    shape[d] = sum(t.shape[d] for t in parts)
    out = empty(shape, dt, ref._storage.device)
    start = 0
    for t in parts:
        ew.copy_raw(out.narrow(d, start, t.shape[d]), t)
        start += t.shape[d]
    sizes = [t.shape[d] for t in parts]

    def backward(g):
        grads, s = [], 0
        for n in sizes:
            grads.append(g.narrow(d, s, n))
            s += n
        return tuple(grads)
    return record("cat", out, tuple(parts), backward)


def stack(tensors, dim: int = 0) -> Tensor:
    """Stack equal-shaped tensors along a new dim ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty list of Tensors")
    shape = tuple(tensors[0].shape)
    for t in tensors:
        if tuple(t.shape) != shape:
            raise RuntimeError(f"stack: expects each tensor to be equal size, but got {shape} "
                               f"and {tuple(t.shape)}")
    d = layout.wrap_dim(dim, len(shape) + 1, "stack")
    return cat([t.unsqueeze(d) for t in tensors], d)


def _check_index(op, idx: Tensor, size: int, negative: bool = False):
    """Indices in [0, size), or in [-size, size) with ``negative`` (x[idx] and x[idx] = v,
    as PyTorch; index_select, gather and scatter_add raise for negative indices, as PyTorch).
    Checked on the host before any launch. Returns the index as int64."""
    if idx.dtype.is_floating_point or idx.dtype.is_bool:
        raise TypeError(f"{op}: expected an integer index tensor, got {idx.dtype}")
    if idx.numel():
        host = idx.numpy()
        lo, hi = int(host.min()), int(host.max())
        low = -size if negative else 0
        if lo < low or hi >= size:
            bad = lo if lo < low else hi
            rule = "" if negative or bad >= 0 else f"; {op} takes no negative indices"
            raise IndexRangeError(f"{op}: index {bad} is out of bounds for dimension with size "
                                  f"{size}{rule}")
    return ew.to(idx, dtypes.int64)


def _gather_launch(x: Tensor, d: int, idx_view: Tensor, out: Tensor):
    x_st = list(x._strides)
    sa = x_st[d]
    x_st[d] = 0
    xv = Tensor(x._storage, out.shape, x_st, x._offset)
    launch_1d("index.cl", "gather_dim", defines_for(x.dtype), out, (xv, idx_view),
              (np.int64(sa), np.int64(x.shape[d])))


def _scatter_launch(kname, z: Tensor, d: int, idx_view: Tensor, g: Tensor):
    z_st = list(z._strides)
    so = z_st[d]
    z_st[d] = 0
    zv = Tensor(z._storage, g.shape, z_st, z._offset)
    launch_1d("index.cl", kname, defines_for(g.dtype), zv, (g, idx_view),
              (np.int64(so), np.int64(z.shape[d])))


def _gather_backward(x_shape, d: int, idx_view: Tensor):
    """Backward of a gather along d: scatter-add g into zeros of x's shape (repeated indices
    collect every gradient)."""
    def backward(g):
        z = zeros(x_shape, g.dtype, g._storage.device)
        _scatter_launch("scatter_add_dim", z, d, idx_view, ew.contiguous(g))
        return (z,)
    return backward


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """Rows of ``x`` along ``dim`` picked by the 1-D integer ``index`` (a copy).

    Grad: scatter-added back (repeated indices collect every gradient).
    Raises:  IndexError (an IndexRangeError) for an index outside [0, size), negative ones
             included, as PyTorch; IndexError for an index of more than 1 dim.
    """
    return _index_select(x, dim, index, "index_select", False)


def _index_select(x: Tensor, dim: int, index: Tensor, op: str, negative: bool) -> Tensor:
    d = layout.wrap_dim(dim, x.ndim, op)
    if index.ndim > 1:
        raise IndexError(f"{op}: index is supposed to be a vector, got shape "
                         f"{tuple(index.shape)}")
    index = _check_index(op, index.reshape(-1), x.shape[d], negative)
    shape = list(x.shape)
    shape[d] = index.shape[0]
    out = empty(shape, x.dtype, x._storage.device)
    istr = [0] * x.ndim
    istr[d] = index._strides[0]
    iv = Tensor(index._storage, shape, istr, index._offset)
    _gather_launch(x, d, iv, out)
    return record("index_select", out, (x,), _gather_backward(tuple(x.shape), d, iv),
                  saved=[index])


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """out[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (PyTorch's gather); index int64.

    Raises:  IndexRangeError (IndexError and RuntimeError) for an index outside [0, size),
             checked before the launch; RuntimeError for mismatched shapes.
    """
    d = layout.wrap_dim(dim, x.ndim, "gather")
    if index.ndim != x.ndim:
        raise RuntimeError(f"gather: Index tensor must have the same number of dimensions as "
                           f"input tensor ({index.ndim} vs {x.ndim})")
    for i, (a, b) in enumerate(zip(index.shape, x.shape)):
        if i != d and a > b:
            raise RuntimeError(f"gather: Size does not match at dimension {i} expected index "
                               f"{tuple(index.shape)} to be smaller than self {tuple(x.shape)} "
                               f"apart from dimension {d}")
    index = _check_index("gather", index, x.shape[d])
    out = empty(index.shape, x.dtype, x._storage.device)
    _gather_launch(x, d, index, out)
    return record("gather", out, (x,), _gather_backward(tuple(x.shape), d, index),
                  saved=[index])


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with ``src`` added at ``index`` along ``dim`` (PyTorch's scatter_add)."""
    d = layout.wrap_dim(dim, x.ndim, "scatter_add")
    index = _check_index("scatter_add", index, x.shape[d])
    out = ew.clone(x)
    with no_grad():
        part = src[tuple(slice(0, n) for n in index.shape)]
        _scatter_launch("scatter_add_dim", out, d, index, ew.contiguous(part))

    def backward(g):
        return g, (gather(g, d, index) if src.requires_grad else None)
    return record("scatter_add", Tensor(out._storage, out.shape, out._strides, 0), (x, src),
                  backward, saved=[index])


# -- advanced indexing ------------------------------------------------------------------------
# x[key] with index tensors, lists, ranges, NumPy arrays or bool masks among ints, slices, None
# and Ellipsis. PyTorch's rule: the basic entries are applied first, as a view y (ints remove
# their dim); the index arrays, broadcast together to shape B, then pick elements of y along
# their dims. When those dims are adjacent in y, B takes their place; otherwise (a slice or
# None between them) B goes first. This differs from NumPy only for an int between index
# arrays: PyTorch (and clgrad) x[0, :, [0, 1]] on (2, 3, 4) is (3, 2), NumPy's is (2, 3).
#
# The element of y picked by index tuple (i1, ..., ik) sits at y's offset + sum_j ij * s_j
# (s_j: y's stride along the j-th indexed dim), so the whole selection is one gather along
# one virtual dim of B's size, reading the storage at those offsets (kernels/index.cl ::
# gather_dim with stride 1); writes are the matching scatter. Offsets are computed on the
# host, where the index values are read anyway to raise IndexError before any launch.
class _Plan:
    """Where x[key] reads from: ``flat`` is the gathered shape (B flattened to one dim at
    ``bpos``), ``shape`` the result's; ``view`` the storage view with stride 0 along that dim
    (its other strides are y's); ``off`` the host int64 offsets of the B elements; ``y`` the
    basic view, ``arrays`` the wrapped index arrays and ``dims`` their dims in y."""

    __slots__ = ("y", "dims", "rest", "arrays", "bpos", "flat", "shape", "view", "off")


def _key_entries(key):
    """The key as a list of entries (PyTorch: a short list holding a sequence, tensor, slice,
    None or Ellipsis is read as a tuple, with a deprecation warning as PyTorch gives)."""
    if isinstance(key, tuple):
        return list(key)
    if isinstance(key, list) and len(key) < 32 and any(
            isinstance(k, (list, tuple, range, Tensor, np.ndarray, slice)) or k is None or
            k is Ellipsis for k in key):
        warnings.warn("getitem: using a non-tuple sequence for multidimensional indexing is "
                      "deprecated (as in PyTorch); use x[tuple(seq)] instead of x[seq]",
                      UserWarning, stacklevel=5)
        return list(key)
    return [key]


def _is_basic(k) -> bool:
    from clgrad.ops.views import _is_int_like
    return k is None or k is Ellipsis or isinstance(k, slice) or _is_int_like(k)


def _host_index(op, k, x: Tensor):
    """An advanced entry as (NumPy array, is_mask). Raises IndexError for other dtypes."""
    if isinstance(k, Tensor):
        same_device(op, k, x)
        dt = k.dtype
        arr = k.numpy()
    else:
        arr = np.asarray(range(k.start, k.stop, k.step) if isinstance(k, range) else k)
        if arr.dtype.kind == "f" and arr.size == 0:
            arr = arr.astype(np.int64)  # x[[]] selects nothing (PyTorch, NumPy)
        if arr.dtype.kind not in "biuf":
            raise IndexError(f"{op}: expected integer or bool indices, got {arr.dtype}")
        dt = dtypes.uint8 if arr.dtype == np.uint8 else None
    if dt is dtypes.uint8:
        warnings.warn(f"{op}: indexing with dtype uint8 is deprecated, please use a dtype bool "
                      f"instead (uint8 indices are a mask, as in PyTorch)", UserWarning,
                      stacklevel=5)
        return arr.astype(bool), True
    if arr.dtype.kind == "b":
        return arr, True
    if arr.dtype not in (np.int32, np.int64) and not (not isinstance(k, Tensor) and
                                                      arr.dtype.kind in "iu"):
        raise IndexError(f"{op}: tensors used as indices must be long, int, uint8 or bool "
                         f"tensors, got {dt or arr.dtype}")
    return arr.astype(np.int64), False


def _plan(x: Tensor, key, op: str) -> _Plan:
    """Resolve ``x[key]`` (some entry advanced) into a _Plan; every check happens here, before
    any launch."""
    from clgrad.ops import views
    entries = _key_entries(key)
    basic, adv, consumed = [], [], 0  # adv: (entry position in basic, array, is_mask)
    for k in entries:
        if isinstance(k, (bool, np.bool_)) or (isinstance(k, Tensor) and k.ndim == 0 and
                                               k.dtype.is_bool):
            adv.append((len(basic), np.array([0] if bool(k) else [], np.int64), False))
            basic.append(None)  # x[True]: a new dim of size 1, indexed by [0] (or by [])
        elif _is_basic(k):
            consumed += k is not None and k is not Ellipsis
            basic.append(k)
        else:
            arr, mask = _host_index(op, k, x)
            if mask and arr.ndim == 0:  # a 0-dim mask: as x[True] / x[False]
                adv.append((len(basic), np.array([0] if arr else [], np.int64), False))
                basic.append(None)
                continue
            adv.append((len(basic), arr, mask))
            n = arr.ndim if mask else 1
            consumed += n
            basic.extend([slice(None)] * n)
    n_ell = sum(1 for k in basic if k is Ellipsis)
    if n_ell > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"{op}: too many indices for tensor of dimension {x.ndim} (got "
                         f"{consumed})")
    ydim, pos_dim, fill = 0, {}, x.ndim - consumed
    for i, k in enumerate(basic):  # the dim of y each basic entry lands on
        pos_dim[i] = ydim
        ydim += fill if k is Ellipsis else 0 if views._is_int_like(k) else 1
    y = views.getitem(x, tuple(basic))
    dims, arrays = [], []
    for pos, arr, mask in adv:
        d = pos_dim[pos]
        if mask:
            got = tuple(y.shape[d:d + arr.ndim])
            if tuple(arr.shape) != got:
                raise IndexError(f"{op}: the shape of the mask {tuple(arr.shape)} does not "
                                 f"match the shape of the indexed tensor {got} at dim {d}")
            parts = np.nonzero(arr)
            dims += range(d, d + arr.ndim)
            arrays += [p.astype(np.int64) for p in parts]
            continue
        size = y.shape[d]
        if arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < -size or hi >= size:
                raise IndexRangeError(f"{op}: index {lo if lo < -size else hi} is out of "
                                      f"bounds for dimension with size {size}")
        dims.append(d)
        arrays.append(np.where(arr < 0, arr + size, arr))
    try:
        arrays = np.broadcast_arrays(*arrays)
    except ValueError:
        raise IndexError(f"{op}: shape mismatch: indexing tensors could not be broadcast "
                         f"together with shapes {[tuple(a.shape) for a in arrays]}") from None
    bshape = tuple(arrays[0].shape)
    rest = [d for d in range(y.ndim) if d not in dims]
    adjacent = all(b == a + 1 for a, b in zip(dims, dims[1:]))
    bpos = sum(1 for d in rest if d < dims[0]) if adjacent else 0
    rshape = [y.shape[d] for d in rest]
    rstrides = [y._strides[d] for d in rest]
    nb = int(np.prod(bshape, dtype=np.int64))
    off = np.zeros(nb, np.int64)
    for d, a in zip(dims, arrays):
        off += a.reshape(-1) * y._strides[d]
    base = y._offset
    if nb and off.min() < 0:  # negative strides: start from the lowest element read
        base += int(off.min())
        off -= off.min()
    p = _Plan()
    p.y, p.dims, p.rest, p.arrays, p.bpos, p.off = y, dims, rest, arrays, bpos, off
    p.flat = tuple(rshape[:bpos]) + (nb,) + tuple(rshape[bpos:])
    p.shape = tuple(rshape[:bpos]) + bshape + tuple(rshape[bpos:])
    p.view = Tensor(y._storage, p.flat, rstrides[:bpos] + [0] + rstrides[bpos:], base)
    return p


def _offsets_view(off: np.ndarray, flat, bpos: int, device) -> Tensor:
    """The offsets uploaded as an int64 tensor, viewed with ``flat``'s shape (stride 1 along
    the gathered dim, 0 elsewhere) so that each element finds its offset."""
    t = creation.tensor(off, dtype=dtypes.int64, device=device)
    strides = [0] * len(flat)
    strides[bpos] = 1
    return Tensor(t._storage, flat, strides, 0)


def _contiguous_offsets(p: _Plan) -> np.ndarray:
    """The plan's offsets in a contiguous tensor of y's shape (where gradients gather)."""
    cs = layout.contiguous_strides(tuple(p.y.shape))
    off = np.zeros(p.off.shape, np.int64)
    for d, a in zip(p.dims, p.arrays):
        off += a.reshape(-1) * cs[d]
    return off


def _flat_view(t: Tensor, p: _Plan) -> Tensor:
    """The plan's storage view for ``t``, a tensor of y's shape: t's strides along the kept
    dims, 0 along the gathered one (each element adds its offset from _contiguous_offsets
    when t is contiguous)."""
    rs = [t._strides[d] for d in p.rest]
    return Tensor(t._storage, p.flat, rs[:p.bpos] + [0] + rs[p.bpos:], t._offset)


def advanced_getitem(x: Tensor, key) -> Tensor:
    """``x[key]`` where some entry is an index tensor, list, range, NumPy array or bool mask:
    a copy (a gather), with PyTorch's semantics (see the comment above _Plan): several index
    arrays broadcast together, negative indices wrap, a bool mask of k dims stands for its k
    nonzero() index arrays; uint8 index tensors are masks, with PyTorch's deprecation warning.

    Shapes: see above; e.g. x (N, C), x[range(N), target (N,)] -> (N,).
    Dtypes:  indices int32/int64/uint8 (mask)/bool (mask); Python/NumPy integer sequences.
    Grad:    scatter-added into x's shape (repeated indices collect every gradient).
    Raises:  IndexError (IndexRangeError) for an index out of range, a mask of the wrong shape,
             index arrays that do not broadcast, float/int8/int16 indices; all before any
             launch.
    Kernels: kernels/index.cl :: gather_dim (backward: scatter_add_dim).
    """
    p = _plan(x, key, "getitem")
    y = p.y
    out = empty(p.flat, y.dtype, y._storage.device)
    if out.numel():
        iv = _offsets_view(p.off, p.flat, p.bpos, y._storage.device)
        launch_1d("index.cl", "gather_dim", defines_for(y.dtype), out, (p.view, iv),
                  (np.int64(1), np.int64(0)))
    if y.requires_grad and is_grad_enabled():
        y_shape, flat, bpos = tuple(y.shape), p.flat, p.bpos
        zp = _Plan()  # the plan for a contiguous zeros of y's shape (the backward's target)
        zp.rest, zp.bpos, zp.flat = p.rest, p.bpos, p.flat
        same = y._strides == layout.contiguous_strides(y_shape) and p.view._offset == y._offset
        off_c = p.off if same else _contiguous_offsets(p)

        def backward(g):
            z = ew._zeros_scalar(g).expand(y_shape).contiguous(force_copy=True)
            if g.numel():
                iv = _offsets_view(off_c, flat, bpos, g._storage.device)
                launch_1d("index.cl", "scatter_add_dim", defines_for(g.dtype), _flat_view(z, zp),
                          (ew.contiguous(g).reshape(flat), iv), (np.int64(1), np.int64(0)))
            return (z,)
        out = record("index", out, (y,), backward)
    return out.view(p.shape) if p.shape != p.flat else out


def index_put_(x: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """``x[indices] = values`` (or ``+=`` with ``accumulate``), in place; returns x.

    ``indices``: a tuple of index tensors (None for a whole dim), or any key advanced getitem
    takes. ``values`` broadcast to the selection's shape. Duplicated indices: with
    ``accumulate`` every value adds up (atomically); without, one of them wins (unspecified
    which, as in PyTorch).
    Grad (PyTorch's index_put backward): x gets the gradient with the written elements zeroed
    (unchanged with ``accumulate``), values the gradient gathered at the selection (summed
    back over broadcast dims). As for other in-place writes, x's grad_fn is rebased.
    Raises: IndexError as advanced getitem; RuntimeError for a leaf that requires grad (grad
    mode on) or an overlapping x.
    Kernels: kernels/index.cl :: scatter_dim / scatter_add_dim (gather_dim in backward).
    """
    if isinstance(indices, (tuple, list)):
        indices = tuple(slice(None) if k is None else k for k in indices)
    return _index_put(x, indices, values, accumulate, "index_put_")


def _index_put(x: Tensor, key, values, accumulate: bool, op: str) -> Tensor:
    from clgrad import autograd
    p = _plan(x, key, op)
    if not isinstance(values, Tensor):
        values = creation.tensor(values, dtype=x.dtype, device=x._storage.device)
    same_device(op, x, values)
    try:
        layout.broadcast_shapes(values.shape, p.shape, op=op)
        if values.ndim > len(p.shape) or any(v not in (1, s) for v, s in
                                             zip(values.shape[::-1], p.shape[::-1])):
            raise ValueError
    except ValueError:
        raise RuntimeError(f"{op}: shape mismatch: value tensor of shape {tuple(values.shape)} "
                           f"cannot be broadcast to indexing result of shape {p.shape}") from None
    inplace._check_inplace_target(op, x)
    root = x._base if x._base is not None else x
    grad_involved = autograd.is_grad_enabled() and (values.requires_grad or root.requires_grad)
    vals = ew.to(values, x.dtype)
    if vals._storage is x._storage:
        vals = ew.clone(vals)  # the write would overwrite what it reads
    vb = ew.expand_to(vals, p.shape)
    iv = None
    if vb.numel():
        src = ew.contiguous(vb).reshape(p.flat)
        iv = _offsets_view(p.off, p.flat, p.bpos, x._storage.device)
        if accumulate and x.dtype.itemsize < 4 and not x.dtype.is_bool:
            # the kernels' atomic add covers 32- and 64-bit types: add in an int32 copy of y
            wide = ew.to(p.y, dtypes.int32)
            wiv = _offsets_view(_contiguous_offsets(p), p.flat, p.bpos, x._storage.device)
            launch_1d("index.cl", "scatter_add_dim", defines_for(dtypes.int32),
                      _flat_view(wide, p), (ew.to(src, dtypes.int32), wiv),
                      (np.int64(1), np.int64(0)))
            ew.copy_raw(p.y, wide)
        else:
            launch_1d("index.cl", "scatter_add_dim" if accumulate else "scatter_dim",
                      defines_for(x.dtype), p.view, (src, iv), (np.int64(1), np.int64(0)))
    bump_version(x)
    if grad_involved:
        _rebase_index_put(root, p, iv, vb, accumulate)
    return x


def _rebase_index_put(root: Tensor, p: _Plan, iv: Tensor, vb: Tensor, accumulate: bool):
    """Give ``root`` the grad_fn of the index_put just done (as views.copy_slices does for a
    write into a view): inputs (root as it was, the broadcast values)."""
    from clgrad.ops import views
    root_geom = inplace._geometry(root)
    size = root._storage.size
    covered = root.numel() == size
    vgeom = (p.flat, p.view._strides, p.view._offset)
    flat = p.flat
    v_shape = tuple(vb.shape)

    def backward(g):  # geometry only: holding root would be a reference cycle
        buf = inplace._storage_buffer(size, covered, g)
        ew.copy_raw(inplace._at(buf, root_geom), g)
        g_val = empty(flat, g.dtype, g._storage.device)
        region = inplace._at(buf, vgeom)
        if g_val.numel():
            launch_1d("index.cl", "gather_dim", defines_for(g.dtype), g_val, (region, iv),
                      (np.int64(1), np.int64(0)))
            if not accumulate:
                launch_1d("index.cl", "scatter_dim", defines_for(g.dtype), region,
                          (ew._zeros_scalar(g).expand(flat), iv), (np.int64(1), np.int64(0)))
        return ew.contiguous(inplace._at(buf, root_geom)), g_val.reshape(v_shape)
    old = root._grad_fn
    record("index_put", root, (root, vb), backward)
    root._rebase += 1
    if root._retains_grad and old is not None and old.retained is not None:
        old.retained, root._grad_fn.retained = None, old.retained


def index_put(x: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """An out-of-place index_put_: a copy of ``x`` with ``values`` written (or added)."""
    return index_put_(ew.clone(x), indices, values, accumulate)


def setitem(x: Tensor, key, value):
    """``x[key] = value`` (a number, NumPy array or Tensor broadcast to the selection).

    Basic keys (ints, slices, None, Ellipsis) write through the view (autograd rebased as for
    copy_); ``x[bool_mask] = scalar`` is a where() on the device; other keys with index
    tensors, lists, ranges or masks go to index_put_ (duplicates: one wins, as PyTorch).
    ``x[idx] += v`` reads x[idx] (a copy), adds, and writes it back.
    """
    from clgrad.ops import views
    if not views._needs_advanced(key):
        target = views.getitem(x, key)
        if isinstance(value, Tensor):
            inplace.copy_(target, value)
        elif isinstance(value, (int, float, bool)):
            inplace.fill_(target, value)
        else:
            inplace.copy_(target, creation.tensor(value, dtype=x.dtype, device=x._storage.device))
        return
    if isinstance(key, Tensor) and key.dtype.is_bool and key.ndim and \
            tuple(key.shape) == tuple(x.shape[:key.ndim]) and \
            (not isinstance(value, Tensor) or value.numel() == 1):
        # x[mask] = scalar: a where() on the device, no host read of the mask
        same_device("setitem", x, key)
        v = value.reshape(()) if isinstance(value, Tensor) else \
            creation.tensor(value, dtype=x.dtype, device=x._storage.device)
        mask = key.reshape(tuple(key.shape) + (1,) * (x.ndim - key.ndim))
        inplace.write_into(x, ew.where(mask, ew.to(v, x.dtype), x), "setitem")
        return
    _index_put(x, key, value, False, "setitem")


# -- scatter, roll, triangles, nonzero -----------------------------------------------------------
__all__ += ["scatter", "roll", "tril", "triu", "nonzero", "argwhere"]


def _scatter_checks(op, x: Tensor, d: int, index: Tensor, src):
    if index.numel() and index.ndim != x.ndim:
        raise RuntimeError(f"{op}: expected an index with as many dims as self ({x.ndim}), got "
                           f"{index.ndim}")
    for i, n in enumerate(index.shape):
        if i != d and n > x.shape[i]:
            raise RuntimeError(f"{op}: expected index {tuple(index.shape)} to be no larger than "
                               f"self {tuple(x.shape)} apart from dim {d}")
        if isinstance(src, Tensor) and n > src.shape[i]:
            raise RuntimeError(f"{op}: expected index {tuple(index.shape)} to be no larger than "
                               f"src {tuple(src.shape)}")
    return _check_index(op, index, x.shape[d])


def scatter(x: Tensor, dim: int, index: Tensor, src=None, value=None, reduce=None) -> Tensor:
    """A copy of ``x`` with ``src[i][j][k]`` (or the number ``value``) written at
    ``out[index[i][j][k]][j][k]`` for dim 0 (PyTorch's scatter); ``src`` may be a number too.

    Shapes:  x (*S), index (*I) int64 with I[i] <= S[i] for i != dim and I[i] <= src.shape[i]
    reduce:  None (assign; with repeated indices one write wins, unspecified which, as
             PyTorch) or 'add' (accumulate, like scatter_add); 'multiply' is not supported
    Grad:    x: g with the written positions zeroed ('add': g); src: g gathered at index
    Raises:  RuntimeError for mismatched shapes, IndexError for an index out of range,
             NotImplementedError for reduce='multiply', ValueError for another reduce
    Kernels: kernels/index.cl :: scatter_dim / scatter_add_dim
    """
    if src is None and value is None:
        raise TypeError("scatter: expected a src tensor or a value, got neither")
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if reduce not in (None, "add"):
        if reduce == "multiply":
            raise NotImplementedError("scatter: reduce='multiply' is not supported; use "
                                      "reduce='add' or scatter_add")
        raise ValueError(f"scatter: expected reduce None, 'add' or 'multiply', got {reduce!r}")
    d = layout.wrap_dim(dim, x.ndim, "scatter")
    index = _scatter_checks("scatter", x, d, index, src)
    kname = "scatter_add_dim" if reduce == "add" else "scatter_dim"
    out = empty(x.shape, x.dtype, x._storage.device)
    ew.copy_raw(out, x)
    if src is not None:
        same_device("scatter", x, src)
        part = src.detach()[tuple(slice(0, n) for n in index.shape)]
        part = ew.contiguous(ew.to(part, x.dtype))
    else:
        part = full((), value, x.dtype, x._storage.device).expand(index.shape)
    if index.numel():
        _scatter_launch(kname, out, d, index, part)

    def backward(g):
        gx = g
        if reduce is None:
            gx = ew.clone(g)
            zero = ew._zeros_scalar(g).expand(index.shape)
            if index.numel():
                _scatter_launch("scatter_dim", gx, d, index, zero)
        gs = None
        if src is not None and src.requires_grad:
            gs = empty(index.shape, g.dtype, g._storage.device)
            _gather_launch(g, d, index, gs)
            if tuple(gs.shape) != tuple(src.shape):  # src larger than index: zeros elsewhere
                full = ew._zeros_scalar(g).expand(src.shape).contiguous(force_copy=True)
                ew.copy_raw(full[tuple(slice(0, n) for n in index.shape)], gs)
                gs = full
        return gx, gs
    return record("scatter", out, (x, src), backward, saved=[index])


def roll(x: Tensor, shifts, dims=None) -> Tensor:
    """Shift elements along ``dims`` by ``shifts`` with wrap-around (a copy; PyTorch's roll).
    ``dims=None`` rolls the flattened tensor and restores the shape.

    Grad:    rolled back (built from narrow + cat).
    Raises:  RuntimeError when shifts and dims differ in length
    """
    if dims is None:
        if isinstance(shifts, (tuple, list)):
            if len(shifts) != 1:
                raise RuntimeError(f"roll: expected one shift without dims, got {shifts}")
            shifts = shifts[0]
        return roll(x.reshape(-1), shifts, 0).reshape(x.shape)
    shifts = tuple(shifts) if isinstance(shifts, (tuple, list)) else (shifts,)
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(f"roll: expected shifts and dims of the same length, got "
                           f"{len(shifts)} and {len(dims)}")
    out = x
    for s, dim in zip(shifts, dims):
        d = layout.wrap_dim(dim, x.ndim, "roll")
        n = out.shape[d]
        s = int(s) % n if n else 0
        if s:
            out = cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
    return ew.clone(x) if out is x else out


def _triangle(op: str, x: Tensor, diagonal: int, lower: bool) -> Tensor:
    if x.ndim < 2:
        raise RuntimeError(f"{op}: expected a tensor of at least 2 dims, got {x.ndim}")
    n, m = x.shape[-2:]
    j_minus_i = np.arange(m)[None, :] - np.arange(n)[:, None]
    mask = j_minus_i <= diagonal if lower else j_minus_i >= diagonal
    return ew.where(creation.tensor(mask, device=x._storage.device), x, 0)


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims: elements with col - row <= ``diagonal`` are
    kept, others are 0 (a copy). Grad: the same mask. The (rows, cols) mask is made on the
    host and uploaded."""
    return _triangle("tril", x, diagonal, True)


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle: elements with col - row >= ``diagonal`` are kept (see tril)."""
    return _triangle("triu", x, diagonal, False)


def nonzero(x: Tensor, as_tuple: bool = False):
    """Indices of the nonzero elements in row-major order: an int64 tensor (N, ndim), or with
    ``as_tuple`` one 1-D int64 tensor per dim. Computed on the host (the size depends on the
    data: PyTorch's CUDA nonzero synchronises too)."""
    host = x.numpy()
    idx = np.nonzero(host.reshape(1) if x.ndim == 0 else host)
    if as_tuple:
        return tuple(creation.tensor(i.astype(np.int64), device=x._storage.device) for i in idx)
    cols = idx[:x.ndim] if x.ndim else ()
    stacked = np.stack(cols, axis=1) if cols else np.zeros((len(idx[0]), 0), np.int64)
    return creation.tensor(stacked.astype(np.int64), dtype=dtypes.int64, device=x._storage.device)


def argwhere(x: Tensor) -> Tensor:
    """``nonzero(x)``: the (N, ndim) int64 indices of the nonzero elements."""
    return nonzero(x)


# -- embedding and one_hot (the CNN layer set, issue 13) --------------------------------------
def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input`` (PyTorch's F.embedding).

    Shapes:  input (*) int, weight (V, D) -> (*, D)
    Grad:    weight: the output gradient scatter-added into its rows (repeated indices add
             up); the row ``padding_idx`` gets no gradient.
    Raises:  IndexError for an index outside [0, V); NotImplementedError for max_norm,
             scale_grad_by_freq and sparse (not supported: PyTorch's renormalisation writes
             the weight in place, and clgrad has no sparse gradients).
    """
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported by clgrad")
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise RuntimeError(f"embedding: expected a 2-D weight (num_embeddings, embedding_dim), "
                           f"got {getattr(weight, 'shape', type(weight).__name__)}")
    v = weight.shape[0]
    if padding_idx is not None:
        if not -v <= padding_idx < v:
            raise ValueError(f"embedding: expected padding_idx in [{-v}, {v}), got "
                             f"{padding_idx}")
        padding_idx %= v
    idx = _check_index("embedding", input.reshape(-1), v)
    if idx.numel() and int(idx.numpy().min()) < 0:
        raise IndexRangeError(f"embedding: index {int(idx.numpy().min())} is out of range "
                              f"[0, {v})")
    out = empty((idx.shape[0], weight.shape[1]), weight.dtype, weight._storage.device)
    iv = Tensor(idx._storage, out.shape, (idx._strides[0], 0), idx._offset)
    _gather_launch(weight, 0, iv, out)
    scatter = _gather_backward(tuple(weight.shape), 0, iv)

    def backward(g):
        (gw,) = scatter(g)
        if padding_idx is not None:
            ew.fill_raw(gw[padding_idx], 0)
        return (gw,)
    out = record("embedding", out, (weight,), backward, saved=[idx])
    return out.view(tuple(input.shape) + (weight.shape[1],))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 (*, num_classes) with a 1 at each value of the integer ``tensor`` (*);
    num_classes = -1 takes max + 1 (a read on the host).
    Raises RuntimeError for a non-integer tensor, negative values or values >= num_classes,
    or an empty tensor with num_classes = -1."""
    if not isinstance(tensor, Tensor) or tensor.dtype.is_floating_point or tensor.dtype.is_bool:
        raise RuntimeError(f"one_hot: expected an integer (int64) tensor, got "
                           f"{getattr(tensor, 'dtype', type(tensor).__name__)}")
    host = tensor.numpy()
    if host.size == 0 and num_classes < 0:
        raise RuntimeError("one_hot: can not infer the number of classes from an empty tensor")
    if host.size and host.min() < 0:
        raise RuntimeError(f"one_hot: expected non-negative class values, got {host.min()}")
    n = int(host.max()) + 1 if num_classes < 0 else int(num_classes)
    if host.size and host.max() >= n:
        raise RuntimeError(f"one_hot: expected class values smaller than num_classes={n}, got "
                           f"{host.max()}")
    from clgrad.creation import arange
    hit = ew.eq(ew.to(tensor, dtypes.int64).unsqueeze(-1),
                arange(n, dtype=dtypes.int64, device=tensor._storage.device))
    return ew.to(hit, dtypes.int64)


# -- h4 (issue 22): index_add -----------------------------------------------------------------
def index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, alpha=1) -> Tensor:
    """A copy of ``x`` with ``alpha * source`` added along ``dim`` at the rows ``index`` names
    (PyTorch's torch.index_add): out.select(dim, index[i]) += alpha * source.select(dim, i).

    Shapes:  x (*S), index (L,) (or 0-dim), source (*S with S[dim] = L) -> (*S)
    Dtypes:  source must have x's dtype; index an integer type
    Grad:    x: g; source: alpha * g.index_select(dim, index) (repeated indices add up)
    Raises:  IndexError for an index outside [0, S[dim]) or of more than 1 dim, or a dim out of
             range; RuntimeError for mismatched shapes or dtypes
    Kernels: kernels/index.cl :: scatter_add_dim (via scatter_add)
    """
    for name, t in (("input", x), ("index", index), ("source", source)):
        if not isinstance(t, Tensor):
            raise TypeError(f"index_add: expected {name} to be a Tensor, got "
                            f"{type(t).__name__}")
    if index.ndim > 1:
        raise IndexError(f"index_add: index is supposed to be a vector, got shape "
                         f"{tuple(index.shape)}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"index_add: self ({x.dtype}) and source ({source.dtype}) must have "
                           f"the same scalar type")
    xs, ss = (x.reshape(1), source.reshape(1)) if x.ndim == 0 else (x, source)
    if source.ndim == 0 and x.ndim:
        ss = source.reshape(1)
    d = layout.wrap_dim(dim, xs.ndim, "index_add")
    index = index.reshape(-1)
    if ss.ndim != xs.ndim or ss.shape[d] != index.shape[0] or any(
            a != b for i, (a, b) in enumerate(zip(ss.shape, xs.shape)) if i != d):
        raise RuntimeError(f"index_add: expected source of shape {tuple(xs.shape)} with "
                           f"{index.shape[0]} (the index's length) along dim {d}, got "
                           f"{tuple(source.shape)}")
    if alpha != 1:
        ss = ew.mul(ss, alpha)
    strides = [0] * xs.ndim
    strides[d] = index._strides[0]
    idx = Tensor(index._storage, ss.shape, strides, index._offset)
    out = scatter_add(xs, d, idx, ss)
    return out.reshape(()) if x.ndim == 0 else out


__all__ += ["index_add"]
