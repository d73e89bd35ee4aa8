"""Ops that move elements between tensors along a dim: cat, stack, index_select, gather,
scatter_add, scatter, roll, tril/triu, nonzero/argwhere, embedding, one_hot. Advanced indexing
(__getitem__/__setitem__ with index tensors, index_put_) lives in clgrad/ops/indexing.py.

Kernels: kernels/copy.cl (cat/stack: cat_elems / cat_runs copy up to 8 inputs into their
slices of the output in one launch),
kernels/index.cl (gather_dim, scatter_add_dim, scatter_dim).
bfloat16: the moves (cat, gather_dim, scatter_dim) copy its bits; the scatter-adds run in
float32 on float32 copies, rounded once (ew.via_float32).
"""
from __future__ import annotations

import numpy as np

from clgrad import backends, creation, dtypes, layout
from clgrad.autograd import no_grad, record
from clgrad.errors import IndexRangeError
from clgrad.ops import elementwise as ew
from clgrad.ops.plan import Plan, key as plan_key
from clgrad.ops.plan import record_launches, replay
from clgrad.ops._util import (copy_raw, defines_for, defines_of, empty, full, launch_1d,
                               same_device, zeros)
from clgrad.tensor import Tensor

_NO = object()  # an argument not given (where(condition))
_BF16, _F32 = dtypes.bfloat16, dtypes.float32
# gather_dim and scatter_dim only move elements: on bfloat16's bits (ushort) they are exact,
# so their bfloat16 build says BF16 (the check of clgrad/runtime/device.py); scatter_add_dim
# adds, and bfloat16 adds in float32 (move_defines never serves it)
_BF16_MOVE = {"T": "ushort", "BF16": 1}


def move_defines(dtype) -> dict:
    """The defines of index.cl's gather_dim / scatter_dim (element moves) for ``dtype``
    (shared: never modify it)."""
    return _BF16_MOVE if dtype is _BF16 else defines_of(dtype)

__all__ = ["where", "cat", "stack", "index_select", "gather", "scatter_add", "scatter", "roll",
           "tril", "triu", "nonzero", "argwhere", "embedding_rows", "embedding_weight",
           "one_hot"]


def cat(tensors, dim: int = 0) -> Tensor:
    """Concatenate along ``dim``. Shapes must match except along ``dim``; dtypes promote
    (PyTorch's: float32 and float64 give float64, int64 and float32 float32). 1-D empty
    tensors are skipped whatever their shape (PyTorch's legacy rule); inputs with no elements
    take no copy. Any layouts; the inputs are copied up to 8 in one launch.
    Grad: each input gets its slice of the output's gradient (views, no launch).

    Raises ValueError for an empty list, RuntimeError for mismatched shapes or a 0-dim input
    (PyTorch's), TypeError for a non-Tensor or a dim that is not an integer.
    """
    tensors = list(tensors)
    out = _cat_cached(tensors, dim)
    if out is not None:
        return out
    if not tensors:
        raise ValueError("cat: expected a non-empty list of Tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"cat: expected Tensors, got {type(t).__name__}")
    same_device("cat", *tensors)
    for i, t in enumerate(tensors):
        if not t._shape:
            raise RuntimeError(f"cat: zero-dimensional tensor (at position {i}) cannot be "
                               f"concatenated")
    # PyTorch skips 1-D empty tensors in cat (legacy behaviour).
    idx = [i for i, t in enumerate(tensors) if not (t.ndim == 1 and t.shape[0] == 0)] or [0]
    parts = [tensors[i] for i in idx]
    ref = parts[0]
    d = layout.wrap_dim(dim, ref.ndim, "cat")
    dt = ref.dtype
    bf16 = False
    for t in tensors:  # skipped empty tensors take part in type promotion too (PyTorch)
        dt = dtypes.promote(dt, t.dtype)
        bf16 = bf16 or t._storage.dtype is _BF16
    if bf16 and any(t._storage.dtype is not dt for t in tensors):
        # the kernels' plain C casts between slot and output types would read bfloat16's bits
        # as a number (or write a number as bits): every input converted to dt first (copy.cl
        # through float, recorded), then copied bit for bit
        return cat([ew.to(t, dt) for t in tensors], dim)
    for t in parts[1:]:
        if t.ndim != ref.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, ref.shape))
                                     if i != d):
            raise RuntimeError(f"cat: Sizes of tensors must match except in dimension {d}. "
                               f"Expected {tuple(ref.shape)} (except dim {d}), got "
                               f"{tuple(t.shape)}")
    shape = list(ref.shape)
    shape[d] = sum(t.shape[d] for t in parts)
    dev = ref._storage.device
    out = empty(shape, dt, dev)
    steps = _cat_copy(out, parts, d)
    sizes = [t.shape[d] for t in parts]
    if type(dim) is int and steps is not None and dev._capture is None:
        dev.keep_plan(plan_key(_CAT_TAG, tensors, (dim,)),
                      (out._shape, dt, tuple(idx), tuple(sizes), d, steps))
    return record("cat", out, tuple(parts), _cat_backward(sizes, d), double=True)


def _cat_backward(sizes, d):
    """cat's backward: each input gets its slice of the gradient (a narrow view)."""
    def backward(g):
        grads, s = [], 0
        for n in sizes:
            grads.append(g.narrow(d, s, n))
            s += n
        return tuple(grads)
    return backward


# cat's fast path: what the general path did for a signature, in the device's plans under
# plan.key(_CAT_TAG, the inputs, (dim,)) (every input's shape, strides, offset and dtype; the
# settings epoch): (output shape, dtype, the indices of the inputs taking part, their sizes
# along d, d, the launches as steps: ("multi", cat Plan, input indices) or ("one", the
# recorded launches of copy_raw, input index)). A hit checks only that every input is a Tensor
# on the device, then allocates once and runs the steps.
_CAT_TAG = ("copy.cl", "cat")


def _cat_cached(tensors, dim):
    """cat on a cached signature (see _CAT_TAG), or None (the general path runs)."""
    if not tensors or type(dim) is not int:
        return None
    t0 = tensors[0]
    if type(t0) is not Tensor:
        return None
    dev = t0._storage.device
    for t in tensors:
        if type(t) is not Tensor or t._storage.device is not dev:
            return None
    hit = dev.plans.get(plan_key(_CAT_TAG, tensors, (dim,)))
    if not hit:
        return None
    shape, dt, idx, sizes, d, steps = hit
    out = Tensor._empty(shape, dt, dev)
    ob = out._storage.buffer
    parts = [tensors[i] for i in idx]
    for kind, plan, which in steps:
        if kind == "multi":
            plan.run(dev, plan.data, ob, *[parts[k]._storage.buffer if k is not None else ob
                                           for k in which])
        else:
            replay(dev, plan, (ob, parts[which]._storage.buffer))
    return record("cat", out, tuple(parts), _cat_backward(sizes, d), double=True)


CAT_SLOTS = 8  # inputs per launch (kernels/copy.cl cat_elems / cat_runs): more take batches
_CAT_M = 34    # longs of a slot's geometry in the kernels' meta buffer


def _cat_copy(out: Tensor, parts, d: int):
    """Copy ``parts`` into their slices of ``out`` along dim ``d``: CAT_SLOTS inputs a launch
    (one input: copy_raw); inputs with no elements are skipped. Returns the launches as cat's
    fast-path steps (see _CAT_TAG), or None where one cannot be replayed."""
    jobs, start = [], 0
    for j, t in enumerate(parts):
        n = t._shape[d]
        if t.numel():
            dst = Tensor(out._storage, t._shape, out._strides,
                         out._offset + start * out._strides[d])
            jobs.append((dst, t, j))
        start += n
    steps = []
    for i in range(0, len(jobs), CAT_SLOTS):
        batch = jobs[i:i + CAT_SLOTS]
        if len(batch) == 1:
            dst, src, j = batch[0]
            if steps is None:  # (nothing to keep: no recording)
                copy_raw(dst, src)
                continue
            rec = record_launches(dst._storage.device, lambda: copy_raw(dst, src),
                                  (out._storage.buffer, src._storage.buffer))
            if rec is None:
                steps = None
            else:
                steps.append(("one", rec, j))
        else:
            plan = _cat_launch(out, [(dst, src) for dst, src, _ in batch])
            if steps is not None:
                steps.append(("multi", plan, tuple(j for _, _, j in batch) +
                              (None,) * (CAT_SLOTS - len(batch))))
    return tuple(steps) if steps is not None else None


def _cat_launch(out: Tensor, batch) -> Plan:
    """One launch of cat_elems (GPUs) or cat_runs (CPUs) for up to CAT_SLOTS (slice, input)
    pairs; the geometry (meta buffer) is planned once per layout, in the device's plans.
    Returns the plan (cat's fast path runs it again)."""
    dev = out._storage.device
    parts = []
    for dst, src in batch:
        parts += (dst, src)
    key = plan_key("cat", parts)
    plan = dev.plans.get(key)
    if plan is None:
        plan = dev.keep_plan(key, _cat_plan(dev, out.dtype, batch))
    ob = out._storage.buffer
    plan.run(dev, plan.data, ob, *[batch[k][1]._storage.buffer if k < len(batch) else ob
                                   for k in range(CAT_SLOTS)])
    return plan


CAT_LOCAL = 256  # work-group size of cat_elems (GPUs)
_CAT_BITS = {1: "char", 2: "short", 4: "int", 8: "long"}  # cat_elems' vectors' elements


def _cat_plan(dev, dt, batch) -> Plan:
    """The Plan of _cat_launch (see kernels/copy.cl's cat): buffers meta, out and the
    CAT_SLOTS inputs (out again in unused slots); ``data``: the meta buffer (the geometry of
    every pair, made here once)."""
    import pyopencl as cl
    from clgrad.ops._util import MAXD, copy_run_geometry
    meta = np.zeros(CAT_SLOTS * _CAT_M + 1, np.int64)
    defines = {"D": dt.cl, "S": dt.cl, "CAT_SLOTS": CAT_SLOTS,  # (S: the file's copy)
               "CAT_BITS": _CAT_BITS[dt.itemsize]}
    if dt.is_bool:
        defines["D_IS_BOOL"] = 1
    if dt is _BF16:  # every slot bfloat16 too (cat converts the others first): a bit copy
        defines["BF16"] = 1
    total = 0
    for k in range(CAT_SLOTS):
        src_dt = batch[k][1].dtype if k < len(batch) else dt
        defines[f"S{k}"] = src_dt.cl
    for k, (dst, src) in enumerate(batch):
        shape, (so, sa) = layout.collapse(dst._shape, dst._strides, src._strides)
        if len(shape) > MAXD:
            raise RuntimeError(f"cat: tensors of more than {MAXD} non-mergeable dims are not "
                               f"supported, got shape {tuple(src.shape)}")
        m = meta[k * _CAT_M:(k + 1) * _CAT_M]
        rows, inner, rpw, run, nrun, items = copy_run_geometry(shape)
        unit = so[-1] == 1 and sa[-1] == 1
        if dev.kind != "cpu":  # cat_elems: an item per element, or per 4 (kind 2)
            items = rows * inner
            if (unit and src.dtype is dt and inner % 4 == 0 and dst._offset % 4 == 0 and
                    src._offset % 4 == 0 and all(s % 4 == 0 for s in so[:-1] + sa[:-1])):
                unit, items = 2, items // 4
        m[:8] = (total, len(shape), rows, inner, rpw, run, nrun, unit)
        m[8:8 + len(shape)] = shape
        m[16], m[17:17 + len(so)] = dst._offset, so
        m[25], m[26:26 + len(sa)] = src._offset, sa
        total += items
    meta[CAT_SLOTS * _CAT_M] = len(batch)
    buf = cl.Buffer(dev.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=meta)
    name, local = ("cat_runs", 1) if dev.kind == "cpu" else ("cat_elems", CAT_LOCAL)
    return Plan(dev.kernel("copy.cl", name, defines), (total,), (local,), (0, np.int64(total)),
                tuple(range(1, 3 + CAT_SLOTS)), data=buf)


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


def _check_index(op, idx: Tensor, size: int, dim: int, negative: bool = False, data=None):
    """Indices in [0, size) of dimension ``dim`` (named in the error), or in [-size, size) with
    ``negative`` (x[idx] and x[idx] = v, as PyTorch; index_select, gather and scatter_add raise
    for negative indices, as PyTorch). Checked on the host before any launch. Returns the index
    as int64, on the device of ``data`` (the indexed tensor): an index on another device raises
    RuntimeError as PyTorch's, except a CPU index for x[idx] and x[idx] = v (``negative``), which
    PyTorch takes for a CUDA tensor and so does clgrad (the index is copied over)."""
    if idx.dtype.is_floating_point or idx.dtype.is_bool:
        raise TypeError(f"{op}: expected an integer index tensor, got {idx.dtype}")
    if data is not None and idx._storage.device is not data._storage.device:
        if not negative or idx._storage.device.type != "cpu":
            same_device(op, data, idx)
        idx = idx.to(data._storage.device)
    if idx.numel():
        host = idx.numpy()
        lo, hi = int(host.min()), int(host.max())
        low = -size if negative else 0
        if lo < low or hi >= size:
            bad = lo if lo < low else hi
            rule = "" if negative or bad >= 0 else f"; {op} takes no negative indices"
            raise IndexRangeError(f"{op}: index {bad} is out of bounds for dimension {dim} "
                                  f"with size {size}{rule}")
    return ew.to(idx, dtypes.int64)


def _gather_launch(x: Tensor, d: int, idx_view: Tensor, out: Tensor):
    x_st = list(x._strides)
    sa = x_st[d]
    x_st[d] = 0
    xv = Tensor(x._storage, out.shape, x_st, x._offset)
    launch_1d("index.cl", "gather_dim", move_defines(x.dtype), out, (xv, idx_view),
              (np.int64(sa), np.int64(x.shape[d])))


def _view_offsets(t: Tensor) -> np.ndarray:
    """The storage offset of every element of the view ``t`` (an int64 array of t's shape)."""
    return geometry_offsets(tuple(t.shape), t._strides, t._offset)


def geometry_offsets(shape, strides, offset: int) -> np.ndarray:
    """The storage offset of every element of a view of geometry (shape, strides, offset),
    an int64 array of that shape."""
    off = np.full(tuple(shape), offset, np.int64)
    for k, (n, s) in enumerate(zip(shape, strides)):
        off += (np.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (len(shape) - k - 1))
    return off


def deterministic_add(g: Tensor) -> bool:
    """Whether a scatter-add of ``g`` must run in a fixed order: use_deterministic_algorithms
    is on and g is floating (integer atomic adds give the same sum in any order)."""
    return g.dtype.is_floating_point and backends.determinism["deterministic"]


def add_at_host(dst: Tensor, offsets: np.ndarray, g: Tensor):
    """storage(dst)[offsets] += g, element by element in g's row-major order, on the host (the
    deterministic scatter-add: NumPy's add.at): the storage is read, added into and written
    back (offsets: int64, of a shape g broadcasts to)."""
    st = dst._storage
    whole = Tensor(st, (st.size,), (1,), 0).numpy()
    gh = g.detach().numpy()
    np.add.at(whole, offsets.reshape(-1), np.broadcast_to(gh, offsets.shape).reshape(-1))
    st.write(0, whole)


def wide_add_dtype(dt: dtypes.DType):
    """The dtype a scatter-add into ``dt`` must run in, or None where dt's own kernel serves:
    kernels/atomic.h's atomic add covers 32- and 64-bit types and bool (a logical or) only
    (float16's 4-byte compare-and-swap on a 2-byte element never succeeded: a hang; int8,
    uint8 and int16 took the bool branch: 1s). float16 (and bfloat16) add in float32,
    rounded once; int8, uint8 and int16 in int32, wrapped back into dt as PyTorch's sums."""
    if dt.is_bool or dt.itemsize >= 4:
        return None
    return dtypes.float32 if dt.is_floating_point else dtypes.int32


def widened_add(z: Tensor, g: Tensor, add) -> bool:
    """Run ``add(z, g)`` (a scatter-add of g into the view z) in wide_add_dtype(z.dtype) when
    the kernel cannot add in z's dtype: on a wide copy of z's whole storage, through z's
    geometry there (so a view that overlaps itself still collects every term), copied back.
    False (nothing done) when z's own dtype serves."""
    wdt = wide_add_dtype(z._storage.dtype)
    if wdt is None:
        return False
    flat = Tensor(z._storage, (z._storage.size,), (1,), 0)
    with no_grad():
        wide = ew.to(flat, wdt)
        add(Tensor(wide._storage, tuple(z.shape), z._strides, z._offset), ew.to(g, wdt))
        copy_raw(flat, wide)
    return True


def _scatter_launch(kname, z: Tensor, d: int, idx_view: Tensor, g: Tensor):
    if kname == "scatter_add_dim" and widened_add(
            z, g, lambda zw, gw: _scatter_launch(kname, zw, d, idx_view, gw)):
        return
    z_st = list(z._strides)
    so = z_st[d]
    z_st[d] = 0
    zv = Tensor(z._storage, g.shape, z_st, z._offset)
    if kname == "scatter_add_dim" and deterministic_add(g):
        k = np.broadcast_to(idx_view.numpy(), tuple(g.shape)).astype(np.int64)
        add_at_host(z, _view_offsets(zv) + np.where(k < 0, k + z.shape[d], k) * so, g)
        return
    launch_1d("index.cl", kname, move_defines(g.dtype) if kname == "scatter_dim" else
              defines_for(g.dtype), zv, (g, idx_view),
              (np.int64(so), np.int64(z.shape[d])))


def _gather_backward(x_shape, d: int, idx_view: Tensor):
    """Backward of a gather along d: scatter-add g into zeros of x's shape (repeated indices
    collect every gradient). Raw launches: the gather's Node.double (create_graph) is
    ``lambda g, node: (scatter_add_rec(x_shape, d, idx_view, g),)``, written at each record
    (a lambda made there costs no call on the first-order path)."""
    def backward(g):  # (not calling itself: a closure over its own name is a cycle)
        bf16 = g._storage.dtype is _BF16
        if bf16:  # the scatter-add in float32, rounded once
            g = ew.to(g, _F32)
        z = zeros(x_shape, g.dtype, g._storage.device)
        _scatter_launch("scatter_add_dim", z, d, idx_view, ew.contiguous(g))
        return (ew.to(z, _BF16) if bf16 else z,)
    return backward


def gather_rec(x: Tensor, d: int, idx_view: Tensor) -> Tensor:
    """``x`` gathered along ``d`` at ``idx_view`` (int64, in range, of the result's shape, no
    larger than x off ``d``): one launch, no checks, recorded with the scatter-add backward
    and its differentiable form (gather's own path without the host read of the index)."""
    out = empty(idx_view.shape, x.dtype, x._storage.device)
    if out.numel():
        _gather_launch(x, d, idx_view, out)
    shape = tuple(x.shape)
    return record("gather", out, (x,), _gather_backward(shape, d, idx_view),
                  double=lambda g, node: (scatter_add_rec(shape, d, idx_view, g),))


def scatter_add_rec(x_shape, d: int, idx_view: Tensor, g: Tensor) -> Tensor:
    """zeros(x_shape) with ``g`` scatter-added at ``idx_view`` along ``d`` (the backward of a
    gather), recorded: its backward is gather_rec of the gradient, so it is differentiable
    again (create_graph) w.r.t. ``g``."""
    (z,) = _gather_backward(x_shape, d, idx_view)(g.detach())
    return record("scatter_add", z, (g,), lambda gg: (gather_rec(gg, d, idx_view),), double=True)


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
    if not x.ndim:  # dim 0 or -1 of a 0-dim x: one index (0), a 0-dim result (PyTorch's)
        if index.numel() != 1:
            raise IndexError(f"{op}(): Index to scalar can have only 1 value, got "
                             f"{index.numel()} value(s)")
        return _index_select(x.reshape(1), 0, index, op, negative).reshape(())
    index = _check_index(op, index.reshape(-1), x.shape[d], d, negative, x)
    shape = list(x.shape)
    shape[d] = index.shape[0]
    out = empty(shape, x.dtype, x._storage.device)
    istr = [0] * x.ndim
    istr[d] = index._strides[0]
    iv = Tensor(index._storage, shape, istr, index._offset)
    _gather_launch(x, d, iv, out)
    shape = tuple(x.shape)
    return record("index_select", out, (x,), _gather_backward(shape, d, iv), saved=[index],
                  double=lambda g, node: (scatter_add_rec(shape, d, iv, g),))


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j][k] = x[index[i][j][k]][j][k]`` for dim 0 (PyTorch's gather); index int64.

    Raises:  IndexRangeError (IndexError and RuntimeError) for an index outside [0, size),
             checked before the launch; RuntimeError for mismatched shapes.
    """
    d = layout.wrap_dim(dim, x.ndim, "gather")
    if not x.ndim and not index.ndim:  # dim 0 or -1 of a 0-dim x (PyTorch's): a 0-dim result
        return gather(x.reshape(1), 0, index.reshape(1)).reshape(())
    if index.ndim != x.ndim:
        raise RuntimeError(f"gather: Index tensor must have the same number of dimensions as "
                           f"input tensor ({index.ndim} vs {x.ndim})")
    for i, (a, b) in enumerate(zip(index.shape, x.shape)):
        if i != d and a > b:
            raise RuntimeError(f"gather: Size does not match at dimension {i} expected index "
                               f"{tuple(index.shape)} to be smaller than self {tuple(x.shape)} "
                               f"apart from dimension {d}")
    index = _check_index("gather", index, x.shape[d], d, data=x)
    out = empty(index.shape, x.dtype, x._storage.device)
    _gather_launch(x, d, index, out)
    shape = tuple(x.shape)
    return record("gather", out, (x,), _gather_backward(shape, d, index), saved=[index],
                  double=lambda g, node: (scatter_add_rec(shape, d, index, g),))


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with ``src`` added at ``index`` along ``dim`` (PyTorch's scatter_add).

    Grad:    x: g; src: g gathered at index (differentiable again, create_graph)
    Raises:  RuntimeError when src's dtype is not x's (PyTorch's message) or src, index and x
             are not all on one device
    """
    _check_src_dtype(x, src, "scatter_add")
    if x.dtype is _BF16:  # the sums in float32, rounded once
        return ew.via_float32(scatter_add, x, dim, index, src)
    d = layout.wrap_dim(dim, x.ndim, "scatter_add")
    index = _check_index("scatter_add", index, x.shape[d], d, data=x)
    out = ew.clone(x)
    with no_grad():
        part = src[tuple(slice(0, n) for n in index.shape)]
        _scatter_launch("scatter_add_dim", out, d, index, ew.contiguous(part))

    def backward(g):  # (recorded ops: differentiable again, create_graph)
        return g, (gather_rec(g, d, index) if src.requires_grad else None)
    return record("scatter_add", Tensor(out._storage, out.shape, out._strides, 0), (x, src),
                  backward, saved=[index], double=True)


# -- scatter, roll, triangles, nonzero -----------------------------------------------------------

def _check_src_dtype(x: Tensor, src, op: str = "scatter"):
    """PyTorch's scatter/scatter_add rule: a src tensor has exactly x's dtype (no cast; a
    number src is cast) and lives on x's device (RuntimeError otherwise)."""
    if isinstance(src, Tensor):
        same_device(op, x, src)
    if isinstance(src, Tensor) and src.dtype is not x.dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype, got "
                           f"{dtypes.torch_name(x.dtype)} for self and "
                           f"{dtypes.torch_name(src.dtype)} for src")


def _scatter_checks(op, x: Tensor, d: int, index: Tensor, src):
    _check_src_dtype(x, src, op)
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
    return _check_index(op, index, x.shape[d], d, data=x)


def scatter(x: Tensor, dim: int, index: Tensor, src=None, value=None, reduce=None) -> Tensor:
    """A copy of ``x`` with ``src[i][j][k]`` (or the number ``value``) written at
    ``out[index[i][j][k]][j][k]`` for dim 0 (PyTorch's scatter); ``src`` may be a number too.

    Shapes:  x (*S), index (*I) int64 with I[i] <= S[i] for i != dim and I[i] <= src.shape[i]
    reduce:  None (assign; with repeated indices one write wins, unspecified which, as
             PyTorch) or 'add' (accumulate, like scatter_add); 'multiply' is not supported
    Grad:    x: g with the written positions zeroed ('add': g); src: g gathered at index
             (both differentiable again, create_graph)
    Raises:  RuntimeError for mismatched shapes or a src tensor of another dtype than x's,
             IndexError for an index out of range, NotImplementedError for
             reduce='multiply', ValueError for another reduce
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
    if reduce == "add" and x.dtype is _BF16:  # the sums in float32, rounded once
        return ew.via_float32(scatter, x, dim, index, src, value, reduce)
    kname = "scatter_add_dim" if reduce == "add" else "scatter_dim"
    out = empty(x.shape, x.dtype, x._storage.device)
    ew.copy_raw(out, x)
    if src is not None:
        same_device("scatter", x, src)
        part = src.detach()[tuple(slice(0, n) for n in index.shape)]
        part = ew.contiguous(part)
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

    def double(g, node):  # create_graph: the same gradients of recorded ops
        gs = None
        if src is not None and src.requires_grad:
            gs = _zero_extend(gather_rec(g, d, index), tuple(src.shape))
        return (g if reduce is not None else _zeroed_at(g, d, index)), gs
    return record("scatter", out, (x, src), backward, saved=[index], double=double)


def _zeroed_at(g: Tensor, d: int, index: Tensor) -> Tensor:
    """``g`` with the positions ``index`` names along ``d`` zeroed (scatter's gradient of
    self), recorded: a projection, so its backward is itself (create_graph)."""
    gx = ew.clone(g.detach())
    if index.numel():
        _scatter_launch("scatter_dim", gx, d, index, ew._zeros_scalar(g).expand(index.shape))
    return record("scatter", gx, (g,), lambda gg: (_zeroed_at(gg, d, index),), double=True)


def _zero_extend(t: Tensor, shape) -> Tensor:
    """``t`` followed by zeros up to ``shape`` in each dim (recorded: cat)."""
    for i, n in enumerate(shape):
        if t.shape[i] < n:
            pad = list(t.shape)
            pad[i] = n - t.shape[i]
            t = cat([t, zeros(pad, t.dtype, t._storage.device)], i)
    return t


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
    # a zero of x's dtype: a number 0 would lift a bool x to int64 (where's promotion)
    return ew.where(creation.tensor(mask, device=x._storage.device), x, ew._zeros_scalar(x))


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
    host = x._values()  # (bfloat16: its values; -0.0 is zero)
    idx = np.nonzero(host.reshape(1) if x.ndim == 0 else host)
    if as_tuple:
        return tuple(creation.tensor(i.astype(np.int64), device=x._storage.device) for i in idx)
    cols = idx[:x.ndim] if x.ndim else ()
    stacked = np.stack(cols, axis=1) if cols else np.zeros((len(idx[0]), 0), np.int64)
    return creation.tensor(stacked.astype(np.int64), dtype=dtypes.int64, device=x._storage.device)


def where(condition: Tensor, input=_NO, other=_NO):
    """``where(condition, input, other)``: elementwise choice (elementwise.where, with its
    broadcasting and gradients); ``where(condition)``: ``nonzero(condition, as_tuple=True)``,
    a tuple of 1-D int64 tensors, one per dim (as PyTorch). Raises TypeError for one of
    input/other without the other."""
    if input is _NO and other is _NO:
        return nonzero(condition, as_tuple=True)
    if input is _NO or other is _NO:
        raise TypeError("where(): expected where(condition) or where(condition, input, "
                        "other), got only one of input and other")
    return ew.where(condition, input, other)


def argwhere(x: Tensor) -> Tensor:
    """``nonzero(x)``: the (N, ndim) int64 indices of the nonzero elements."""
    return nonzero(x)


# -- embedding and one_hot (the CNN layer set, issue 13) --------------------------------------
def embedding_rows(input: Tensor, weight: Tensor, padding_idx=None,
                   scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``: the lookup of PyTorch's F.embedding
    without its max_norm (scatters.embedding renormalises first, then calls this).

    Shapes:  input (*) int, weight (V, D) -> (*, D)
    Grad:    weight: the output gradient scatter-added into its rows (repeated indices add
             up); the row ``padding_idx`` gets no gradient; with ``scale_grad_by_freq`` the
             gradient of each position is divided by how often its index occurs in ``input``
             (PyTorch's embedding_dense_backward); differentiable again (create_graph).
    Raises:  IndexError for an index outside [0, V); NotImplementedError for ``sparse=True``
             (clgrad has no sparse tensors, so no sparse gradient).
    """
    if sparse:
        raise NotImplementedError("embedding: sparse=True asks for a sparse gradient, and "
                                  "clgrad has no sparse tensors; use sparse=False (a dense "
                                  "gradient of the same values)")
    padding_idx = embedding_weight("embedding", weight, padding_idx, ValueError)
    v = weight.shape[0]
    idx = _check_index("embedding", input.reshape(-1), v, 0, data=weight)
    if idx.numel() and int(idx.numpy().min()) < 0:
        raise IndexRangeError(f"embedding: index {int(idx.numpy().min())} is out of range "
                              f"[0, {v})")
    out = empty((idx.shape[0], weight.shape[1]), weight.dtype, weight._storage.device)
    iv = Tensor(idx._storage, out.shape, (idx._strides[0], 0), idx._offset)
    _gather_launch(weight, 0, iv, out)
    scatter = _gather_backward(tuple(weight.shape), 0, iv)
    if scale_grad_by_freq and idx.numel():  # 1 / count of each position's index
        host = idx.numpy()
        inv = 1.0 / np.bincount(host, minlength=v)[host]
        freq = creation.tensor(inv.reshape(-1, 1), dtype=_F32 if weight.dtype is _BF16 else
                               weight.dtype, device=weight._storage.device)

    def backward(g):
        if scale_grad_by_freq and idx.numel():
            g = ew.mul(ew.to(g, freq.dtype), freq)
        (gw,) = scatter(g)
        if gw.dtype is not weight.dtype:
            gw = ew.to(gw, weight.dtype)
        if padding_idx is not None:
            ew.fill_raw(gw[padding_idx], 0)
        return (gw,)

    def double(g, node):  # create_graph: backward's steps as recorded ops
        if scale_grad_by_freq and idx.numel():
            g = ew.mul(ew.to(g, freq.dtype), freq)
        gw = scatter_add_rec(tuple(weight.shape), 0, iv, g)
        if gw.dtype is not weight.dtype:
            gw = ew.to(gw, weight.dtype)
        if padding_idx is not None:  # the padding row gets no gradient
            keep = np.arange(v) != padding_idx
            gw = ew.where(creation.tensor(keep.reshape(-1, 1), device=gw._storage.device),
                          gw, ew._zeros_scalar(gw))
        return (gw,)
    out = record("embedding", out, (weight,), backward, saved=[idx], double=double)
    return out.view(tuple(input.shape) + (weight.shape[1],))


def embedding_weight(op: str, weight, padding_idx, error=RuntimeError):
    """Check that ``weight`` is a 2-D Tensor (RuntimeError otherwise) and ``padding_idx`` None
    or in [-V, V) (``error`` otherwise); returns padding_idx wrapped into [0, V)."""
    if not isinstance(weight, Tensor) or weight.ndim != 2:
        raise RuntimeError(f"{op}: expected a 2-D weight (num_embeddings, embedding_dim), "
                           f"got {getattr(weight, 'shape', type(weight).__name__)}")
    v = weight.shape[0]
    if padding_idx is not None and not -v <= padding_idx < v:
        raise error(f"{op}: expected padding_idx in [{-v}, {v}), got {padding_idx}")
    return None if padding_idx is None else padding_idx % v


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
             range; RuntimeError for mismatched shapes or dtypes, or tensors of two devices
    Kernels: kernels/index.cl :: scatter_add_dim (via scatter_add)
    """
    for name, t in (("input", x), ("index", index), ("source", source)):
        if not isinstance(t, Tensor):
            raise TypeError(f"index_add: expected {name} to be a Tensor, got "
                            f"{type(t).__name__}")
    if index.ndim > 1:
        raise IndexError(f"index_add: index is supposed to be a vector, got shape "
                         f"{tuple(index.shape)}")
    same_device("index_add", x, index, source)
    if source.dtype is not x.dtype:
        raise RuntimeError(f"index_add: self ({x.dtype}) and source ({source.dtype}) must have "
                           f"the same scalar type")
    if x.dtype is _BF16:  # alpha * source and the sums in float32, rounded once
        return ew.via_float32(index_add, x, dim, index, source, alpha)
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
