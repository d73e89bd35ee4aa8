"""Advanced indexing: x[key] and x[key] = v with index tensors, lists, ranges, NumPy arrays or
bool masks among ints, slices, None and Ellipsis; index_put_/index_put.

Kernels: kernels/index.cl (gather_dim, scatter_add_dim, scatter_dim along one virtual dim);
bfloat16 gathers and scatters its bits (index.move_defines) and adds in float32.
"""
from __future__ import annotations

import warnings

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import is_grad_enabled, record
from clgrad.errors import IndexRangeError
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import inplace
from clgrad.ops import views
from clgrad.ops.views import _is_int_like
from clgrad.ops._util import (bump_version, defines_for, empty, launch_1d, one_device,
                              same_device)
from clgrad.tensor import Tensor

__all__ = ["getitem", "advanced_getitem", "setitem", "index_put_", "index_put"]

_BF16 = dtypes.bfloat16


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
    return k is None or k is Ellipsis or isinstance(k, slice) or _is_int_like(k)


def _host_index(op, k, x: Tensor):
    """An advanced entry as (NumPy array, is_mask). Raises IndexError for other dtypes, and
    RuntimeError for an index tensor on a device other than x's or the CPU (PyTorch takes a CPU
    index for a CUDA tensor)."""
    if isinstance(k, Tensor):
        if k._storage.device.type != "cpu":
            same_device(op, k, x)
        dt = k.dtype
        arr = k._values()  # (bfloat16 as float32; a float index: IndexError below)
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
    ydim, xdim, pos_dim, pos_xdim, fill = 0, 0, {}, {}, x.ndim - consumed
    for i, k in enumerate(basic):  # the dims of y and of x each basic entry lands on
        pos_dim[i], pos_xdim[i] = ydim, xdim
        ydim += fill if k is Ellipsis else 0 if views._is_int_like(k) else 1
        xdim += fill if k is Ellipsis else 0 if k is None else 1
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
                                      f"bounds for dimension {pos_xdim[pos]} with size {size}")
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


def _element_offsets(off_c: np.ndarray, flat, bpos: int, y_shape, rest) -> np.ndarray:
    """The offset in a contiguous tensor of ``y_shape`` of every element of the gathered
    shape ``flat`` (int64, of that shape): ``off_c`` (_contiguous_offsets) along the gathered
    dim ``bpos``, the kept dims ``rest`` at their contiguous strides."""
    cs = layout.contiguous_strides(tuple(y_shape))
    strides = [cs[d] for d in rest]
    strides.insert(bpos, None)
    at = np.zeros(flat, np.int64)
    for k, (n, st) in enumerate(zip(flat, strides)):
        shape = [1] * len(flat)
        shape[k] = n
        at += (off_c if st is None else np.arange(n, dtype=np.int64) * st).reshape(shape)
    return at


def _flat_view(t: Tensor, p: _Plan) -> Tensor:
    """The plan's storage view for ``t``, a tensor of y's shape: t's strides along the kept
    dims, 0 along the gathered one (each element adds its offset from _contiguous_offsets
    when t is contiguous)."""
    rs = [t._strides[d] for d in p.rest]
    return Tensor(t._storage, p.flat, rs[:p.bpos] + [0] + rs[p.bpos:], t._offset)


def getitem(x: Tensor, key) -> Tensor:
    """``x[key]`` (Tensor.__getitem__): a basic key (ints, slices, None, Ellipsis) gives a view
    (clgrad.ops.views.getitem); a key with an integer or bool index tensor, list, range or
    NumPy array gives a copy (advanced_getitem). Raises as those two."""
    if views._needs_advanced(key):
        return advanced_getitem(x, key)
    return views.getitem(x, key)


def advanced_getitem(x: Tensor, key) -> Tensor:
    """``x[key]`` where some entry is an index tensor, list, range, NumPy array or bool mask:
    a copy (a gather), with PyTorch's semantics (see the comment above _Plan): several index
    arrays broadcast together, negative indices wrap, a bool mask of k dims stands for its k
    nonzero() index arrays; uint8 index tensors are masks, with PyTorch's deprecation warning.

    Shapes: see above; e.g. x (N, C), x[range(N), target (N,)] -> (N,).
    Dtypes:  indices int32/int64/uint8 (mask)/bool (mask); Python/NumPy integer sequences.
    Grad:    scatter-added into x's shape (repeated indices collect every gradient);
             differentiable again (create_graph: a recorded scatter-add over y's elements).
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
        launch_1d("index.cl", "gather_dim", ix.move_defines(y.dtype), out, (p.view, iv),
                  (np.int64(1), np.int64(0)))
    if y.requires_grad and is_grad_enabled():
        y_shape, flat, bpos = tuple(y.shape), p.flat, p.bpos
        zp = _Plan()  # the plan for a contiguous zeros of y's shape (the backward's target)
        zp.rest, zp.bpos, zp.flat = p.rest, p.bpos, p.flat
        same = y._strides == layout.contiguous_strides(y_shape) and p.view._offset == y._offset
        off_c = p.off if same else _contiguous_offsets(p)

        def backward(g):  # (not calling itself: a closure over its own name is a cycle)
            low = g._storage.dtype
            wdt = ix.wide_add_dtype(low)
            if wdt is not None:  # bfloat16, float16: the scatter-add in float32, rounded once
                g = ew.to(g, wdt)
            z = ew._zeros_scalar(g).expand(y_shape).contiguous(force_copy=True)
            if g.numel():
                iv = _offsets_view(off_c, flat, bpos, g._storage.device)
                launch_1d("index.cl", "scatter_add_dim", defines_for(g.dtype), _flat_view(z, zp),
                          (ew.contiguous(g).reshape(flat), iv), (np.int64(1), np.int64(0)))
            return (ew.to(z, low) if wdt is not None else z,)

        def double(g, node):  # create_graph: a recorded scatter-add over y's flat elements
            at = _element_offsets(off_c, flat, bpos, y_shape, zp.rest)
            idx = creation.tensor(at.reshape(-1), dtype=dtypes.int64, device=g._storage.device)
            n = int(np.prod(y_shape, dtype=np.int64))
            return (ix.scatter_add_rec((n,), 0, idx, g.reshape(-1)).reshape(y_shape),)
        out = record("index", out, (y,), backward, double=double)
    return out.view(p.shape) if p.shape != p.flat else out


def index_put_(x: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """``x[indices] = values`` (or ``+=`` with ``accumulate``), in place; returns x.

    ``indices``: a tuple of index tensors (None for a whole dim), or any key advanced getitem
    takes. ``values`` broadcast to the selection's shape. Duplicated indices: with
    ``accumulate`` every value adds up (atomically); without, one of them wins (unspecified
    which, as in PyTorch).
    Grad (PyTorch's index_put backward): x gets the gradient with the written elements zeroed
    (unchanged with ``accumulate``), values the gradient gathered at the selection (summed
    back over broadcast dims), differentiable again (create_graph). As for other in-place
    writes, x's grad_fn is rebased.
    Raises: IndexError as advanced getitem; RuntimeError for a values tensor of another dtype
    than x's (PyTorch's message; numbers and arrays are cast to x's dtype), a leaf that
    requires grad (grad mode on) or an overlapping x.
    Kernels: kernels/index.cl :: scatter_dim / scatter_add_dim (gather_dim in backward).
    """
    return _index_put(x, _index_key(indices), values, accumulate, "index_put_")


def _index_key(indices):
    """index_put_'s indices as a key: a tuple's None entries (whole dims) as slices."""
    if isinstance(indices, (tuple, list)):
        return tuple(slice(None) if k is None else k for k in indices)
    return indices


def _masked_fill_value(x: Tensor, key, value, op: str):
    """``value`` as index_put_ writes it: where PyTorch's index_put_ is a masked_fill_ of
    ``value.item()`` (ATen's canDispatchToMaskedFill: a value of one element on the CPU,
    whatever its dims, and one bool or uint8 mask on x's device, the key's other entries
    whole slices or an Ellipsis, the mask's shape x's at its dims), the value checked to fit
    x's dtype as masked_fill_ checks its number (RuntimeError), cast to it and moved to x's
    device (``gpu_x[gpu_mask] = torch.tensor([5.])``, ``x_float[mask] = torch.tensor(2)``);
    else ``value`` unchanged (a CPU value of one dim or more then meets the device check, and
    a tensor of another dtype the dtype check). The move and cast are recorded: a value that
    requires grad gets its gradient. Two CPU devices are not joined (PyTorch has one CPU)."""
    dev = x._storage.device
    if not (isinstance(value, Tensor) and value._storage.device.type == "cpu"
            and (value._storage.device is dev or dev.type != "cpu") and value.numel() == 1):
        return value
    keys = key if isinstance(key, tuple) else (key,)
    at = [i for i, k in enumerate(keys) if isinstance(k, Tensor)]
    dots = [i for i, k in enumerate(keys) if k is Ellipsis]  # (no ==: a Tensor compares)
    if len(at) != 1 or len(dots) > 1 or not all(
            k is Ellipsis or isinstance(k, slice) and k == slice(None) for k in keys
            if not isinstance(k, Tensor)):
        return value
    mask = keys[at[0]]
    if not (mask._storage.device is dev and mask.ndim
            and (mask.dtype.is_bool or mask.dtype is dtypes.uint8)):
        return value
    before = at[0] if not dots or dots[0] > at[0] else \
        x.ndim - (len(keys) - 1 - at[0]) - mask.ndim  # (an Ellipsis before: count from the end)
    if tuple(mask.shape) != tuple(x.shape[before:before + mask.ndim]):
        return value
    if value.dtype is not x.dtype:  # (a host read; x's own dtype fits: no read, no cast)
        dtypes.check_fits(op, x.dtype, value.detach().item())
    return ew.to(ew.to_device(value.reshape(()), dev), x.dtype)


def _same_dtype(x: Tensor, values: Tensor):
    """PyTorch's RuntimeError for an index_put_ value tensor of another dtype than x's."""
    if values.dtype is not x.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{dtypes.torch_name(x.dtype)} for the destination and "
                           f"{dtypes.torch_name(values.dtype)} for the source.")


def _index_put(x: Tensor, key, values, accumulate: bool, op: str) -> Tensor:
    from clgrad import autograd
    p = _plan(x, key, op)
    if not accumulate:
        values = _masked_fill_value(x, key, values, op)
    if not isinstance(values, Tensor):
        values = creation.tensor(values, dtype=x.dtype, device=x._storage.device)
    one_device(op, (x, values))
    if values._storage.device is not x._storage.device:
        values = ew.to_device(values, x._storage.device)  # 0-dim on a CPU device: PyTorch's
    try:
        layout.broadcast_shapes(values.shape, p.shape, op=op)
        if values.ndim > len(p.shape) or any(v not in (1, s) for v, s in
                                             zip(values.shape[::-1], p.shape[::-1])):
            raise ValueError
    except ValueError:
        raise RuntimeError(f"{op}: shape mismatch: value tensor of shape {tuple(values.shape)} "
                           f"cannot be broadcast to indexing result of shape {p.shape}") from None
    _same_dtype(x, values)  # PyTorch's rule (after the shape's): no cast of a tensor
    inplace._check_inplace_target(op, x)
    root = x._base if x._base is not None else x
    grad_involved = autograd.is_grad_enabled() and (values.requires_grad or root.requires_grad)
    vals = values
    if vals._storage is x._storage:
        vals = ew.clone(vals)  # the write would overwrite what it reads
    vb = ew.expand_to(vals, p.shape)
    iv = None
    if vb.numel():
        src = ew.contiguous(vb).reshape(p.flat)
        iv = _offsets_view(p.off, p.flat, p.bpos, x._storage.device)
        if accumulate and x.dtype.itemsize < 4 and not x.dtype.is_bool:
            # the kernels' atomic add covers 32- and 64-bit types: add in an int32 copy of y
            # (a float32 one for float16 and bfloat16, rounded once)
            wdt = dtypes.float32 if x.dtype.is_floating_point else dtypes.int32
            wide = ew.to(p.y, wdt)
            wiv = _offsets_view(_contiguous_offsets(p), p.flat, p.bpos, x._storage.device)
            launch_1d("index.cl", "scatter_add_dim", defines_for(wdt),
                      _flat_view(wide, p), (ew.to(src, wdt), wiv),
                      (np.int64(1), np.int64(0)))
            ew.copy_raw(p.y, wide)
        elif accumulate:
            launch_1d("index.cl", "scatter_add_dim", defines_for(x.dtype), p.view, (src, iv),
                      (np.int64(1), np.int64(0)))
        else:
            launch_1d("index.cl", "scatter_dim", ix.move_defines(x.dtype), p.view, (src, iv),
                      (np.int64(1), np.int64(0)))
    bump_version(x)
    if grad_involved:
        _rebase_index_put(root, p, iv, vb, accumulate)
    return x


def _rebase_index_put(root: Tensor, p: _Plan, iv: Tensor, vb: Tensor, accumulate: bool):
    """Give ``root`` the grad_fn of the index_put just done (as views.copy_slices does for a
    write into a view): inputs (root as it was, the broadcast values)."""
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
            launch_1d("index.cl", "gather_dim", ix.move_defines(g.dtype), g_val, (region, iv),
                      (np.int64(1), np.int64(0)))
            if not accumulate:
                launch_1d("index.cl", "scatter_dim", ix.move_defines(g.dtype), region,
                          (ew._zeros_scalar(g).expand(flat), iv), (np.int64(1), np.int64(0)))
        return ew.contiguous(inplace._at(buf, root_geom)), g_val.reshape(v_shape)

    def double(g, node):  # create_graph: the same gradients of recorded ops
        at = ix.geometry_offsets(*vgeom)  # the selection's storage offsets (flat's shape)
        at += off.reshape([-1 if k == bpos else 1 for k in range(len(flat))])
        gr, gv = inplace.region_grads(g, root_geom, size, at, not accumulate, "index_put")
        return gr, gv.reshape(v_shape)
    off, bpos = p.off, p.bpos  # (not p: it holds a view of root, a reference cycle)
    old = root._grad_fn
    record("index_put", root, (root, vb), backward, double=double)
    root._rebase += 1
    if root._retains_grad and old is not None and old.retained is not None:
        old.retained, root._grad_fn.retained = None, old.retained


def index_put(x: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """An out-of-place index_put_: a copy of ``x`` with ``values`` written (or added)."""
    indices = _index_key(indices)
    if isinstance(values, Tensor):
        if not accumulate:  # (index_put_'s masked fill: a one-element CPU value may join)
            values = _masked_fill_value(x, indices, values, "index_put")
        one_device("index_put", (x, values))  # before the clone
    return index_put_(ew.clone(x), indices, values, accumulate)


def setitem(x: Tensor, key, value):
    """``x[key] = value`` (a number, NumPy array or Tensor broadcast to the selection).

    Basic keys (ints, slices, None, Ellipsis) write through the view (autograd rebased as for
    copy_); ``x[bool_mask] = scalar`` is a where() on the device; other keys with index
    tensors, lists, ranges or masks go to index_put_ (duplicates: one wins, as PyTorch), which
    raises RuntimeError for a value tensor of another dtype than x's (numbers are cast, and
    so is a one-element CPU value through a mask on x's device: PyTorch's masked_fill_
    dispatch, _masked_fill_value).
    ``x[idx] += v`` reads x[idx] (a copy), adds, and writes it back. A value's leading
    size-1 dims are dropped first, as PyTorch's (``x[0] = y[None]`` with y of x[0]'s shape).
    """
    if not isinstance(value, (Tensor, int, float, bool)):
        value = creation.tensor(value, dtype=x.dtype, device=x._storage.device)
    if isinstance(value, Tensor) and value.ndim and value.shape[0] == 1 and (
            value._storage.device is x._storage.device or x._storage.device.type != "cpu"):
        # (a GPU x's value too, as PyTorch's copy_to and slicePrefix1sSize: a CPU
        # torch.tensor([5.]) is then 0-dim, and joins as PyTorch's index_put_ lets it; a value
        # on another CPU device keeps its dims and meets the device check: one CPU in PyTorch)
        lead = next((i for i, s in enumerate(value.shape) if s != 1), value.ndim)
        value = value.reshape(tuple(value.shape[lead:]))
    if not views._needs_advanced(key):
        target = views.getitem(x, key)
        if isinstance(value, Tensor):
            inplace.copy_(target, value)
        else:
            inplace.fill_(target, value)
        return
    if isinstance(key, Tensor) and key.dtype.is_bool and key.ndim and \
            tuple(key.shape) == tuple(x.shape[:key.ndim]) and \
            (not isinstance(value, Tensor) or value.numel() == 1):
        # x[mask] = scalar: a where() on the device, no host read of the mask
        if isinstance(value, Tensor):  # PyTorch's index_put_: a masked_fill_ (checked cast)
            filled = _masked_fill_value(x, key, value, "setitem")  # or the dtypes must match
            if filled is value:
                _same_dtype(x, value)
            value = filled
        if key._storage.device is not x._storage.device and key._storage.device.type == "cpu":
            one_device("setitem", (x, value))  # (before the mask's copy)
            key = ew.to_device(key, x._storage.device)  # as PyTorch: CPU indices move to x's
        one_device("setitem", (x, key, value))
        v = value.reshape(()) if isinstance(value, Tensor) else \
            creation.tensor(value, dtype=x.dtype, device=x._storage.device)
        mask = key.reshape(tuple(key.shape) + (1,) * (x.ndim - key.ndim))
        inplace.write_into(x, ew.where(mask, ew.to(v, x.dtype), x), "setitem")
        return
    _index_put(x, key, value, False, "setitem")
