"""Ops that move elements between tensors: cat, stack, index_select, gather, scatter_add,
advanced indexing and __setitem__.

Kernels: kernels/copy.cl (cat/stack copy each input into a narrow view of the output),
kernels/index.cl (gather_dim, scatter_add_dim, scatter_dim).
"""
from __future__ import annotations

import numpy as np

from clgrad import dtypes, layout
from clgrad.autograd import record
from clgrad.errors import IndexRangeError
from clgrad.ops import elementwise as ew
from clgrad.ops._util import defines_for, empty, launch_1d, same_device
from clgrad.tensor import Tensor

__all__ = ["cat", "stack", "index_select", "gather", "scatter_add", "advanced_getitem",
           "embedding", "one_hot", "setitem"]


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
    out = empty(shape, dt, ref.device)
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


def _check_index(op, idx: Tensor, size: int):
    if idx.dtype.is_floating_point or idx.dtype.is_bool:
        raise TypeError(f"{op}: expected an integer index tensor, got {idx.dtype}")
    if idx.numel():
        host = idx.numpy()
        lo, hi = int(host.min()), int(host.max())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise IndexRangeError(f"{op}: index {bad} is out of bounds for dimension with size "
                                  f"{size}")
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
        z = ew._zeros_scalar(g).expand(x_shape).contiguous(force_copy=True)
        _scatter_launch("scatter_add_dim", z, d, idx_view, ew.contiguous(g))
        return (z,)
    return backward


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """Rows of ``x`` along ``dim`` picked by the 1-D integer ``index`` (a copy).

    Grad: scatter-added back (repeated indices collect every gradient).
    """
    d = layout.wrap_dim(dim, x.ndim, "index_select")
    if index.ndim > 1:
        raise IndexError(f"index_select: index is supposed to be a vector, got shape "
                         f"{tuple(index.shape)}")
    index = _check_index("index_select", index.reshape(-1), x.shape[d])
    shape = list(x.shape)
    shape[d] = index.shape[0]
    out = empty(shape, x.dtype, x.device)
    istr = [0] * x.ndim
    istr[d] = index._strides[0]
    iv = Tensor(index._storage, shape, istr, index._offset)
    _gather_launch(x, d, iv, out)
    return record("index_select", out, (x,), _gather_backward(tuple(x.shape), d, iv),
                  saved=[index])


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """out[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (PyTorch's gather); index int64."""
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
    out = empty(index.shape, x.dtype, x.device)
    _gather_launch(x, d, index, out)
    return record("gather", out, (x,), _gather_backward(tuple(x.shape), d, index),
                  saved=[index])


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with ``src`` added at ``index`` along ``dim`` (PyTorch's scatter_add)."""
    d = layout.wrap_dim(dim, x.ndim, "scatter_add")
    index = _check_index("scatter_add", index, x.shape[d])
    out = ew.clone(x)
    with _no_grad():
        part = src[tuple(slice(0, n) for n in index.shape)]
        _scatter_launch("scatter_add_dim", out, d, index, ew.contiguous(part))

    def backward(g):
        return g, (gather(g, d, index) if src.requires_grad else None)
    return record("scatter_add", Tensor(out._storage, out.shape, out._strides, 0), (x, src),
                  backward, saved=[index])


def _no_grad():
    from clgrad.autograd import no_grad
    return no_grad()


def _split_key(x: Tensor, key):
    """(basic part, dim of the one advanced index, index tensor) or raise."""
    import clgrad
    keys = key if isinstance(key, tuple) else (key,)
    adv = [i for i, k in enumerate(keys) if isinstance(k, (list, Tensor, np.ndarray))
           and not (isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_bool)]
    if len(adv) != 1:
        raise IndexError(f"getitem: only one index tensor (or list) per indexing expression "
                         f"is supported, got {len(adv)}")
    pos = adv[0]
    k = keys[pos]
    if not isinstance(k, Tensor):
        k = clgrad.tensor(np.asarray(k), device=x.device)
    if any(kk is Ellipsis for kk in keys[:pos]) or any(kk is None for kk in keys[:pos]):
        raise IndexError("getitem: an index tensor after Ellipsis or None is not supported")
    return keys, pos, k


def advanced_getitem(x: Tensor, key) -> Tensor:
    """``x[..., idx, ...]`` with one integer or bool index tensor (a copy; PyTorch semantics
    for a single advanced index). A bool mask over the leading dims selects its True
    elements."""
    import clgrad
    keys, pos, k = _split_key(x, key)
    if k.dtype.is_bool:
        if pos != 0 or len(keys) != 1:
            raise IndexError("getitem: a bool mask index is supported alone (x[mask])")
        if tuple(k.shape) != tuple(x.shape[:k.ndim]):
            raise IndexError(f"getitem: The shape of the mask {tuple(k.shape)} does not match "
                             f"the shape of the indexed tensor {tuple(x.shape)}")
        flat_idx = np.flatnonzero(k.numpy())
        xf = x.reshape((-1,) + tuple(x.shape[k.ndim:]))
        return index_select(xf, 0, clgrad.tensor(flat_idx, dtype=dtypes.int64,
                                                 device=x.device))
    pre = x[keys[:pos]] if pos else x
    dim = sum(1 for kk in keys[:pos] if not isinstance(kk, int) or isinstance(kk, bool))
    picked = index_select(pre, dim, k.reshape(-1))
    if k.ndim != 1:
        picked = picked.reshape(picked.shape[:dim] + tuple(k.shape) + picked.shape[dim + 1:])
    rest = keys[pos + 1:]
    if rest:
        lead = (slice(None),) * (dim + k.ndim)
        picked = picked[lead + tuple(rest)]
    return picked


def setitem(x: Tensor, key, value):
    """``x[key] = value`` (a number, NumPy array or Tensor broadcast to the selection).

    Basic keys write through the view (autograd rebased as for copy_); a bool mask writes
    with where(); one integer index tensor along a dim scatters (duplicates: one wins).
    """
    import clgrad
    from clgrad.ops import views
    if not views._needs_advanced(key):
        target = views.getitem(x, key)
        if isinstance(value, Tensor):
            ew.copy_(target, value)
        elif isinstance(value, (int, float, bool)):
            ew.fill_(target, value)
        else:
            ew.copy_(target, clgrad.tensor(value, dtype=x.dtype, device=x.device))
        return
    keys, pos, k = _split_key(x, key)
    if not isinstance(value, Tensor):
        value = clgrad.tensor(value, dtype=x.dtype, device=x.device)
    if k.dtype.is_bool and pos == 0 and len(keys) == 1:
        if tuple(k.shape) != tuple(x.shape[:k.ndim]):
            raise IndexError(f"setitem: The shape of the mask {tuple(k.shape)} does not match "
                             f"the shape of the indexed tensor {tuple(x.shape)}")
        if value.numel() != 1:
            raise RuntimeError("setitem: with a bool mask only a scalar value is supported")
        mask = k.reshape(tuple(k.shape) + (1,) * (x.ndim - k.ndim))
        ew.write_into(x, ew.where(mask, ew.to(value.reshape(()), x.dtype), x), "setitem")
        return
    if len(keys) != 1 or k.ndim != 1:
        raise IndexError("setitem: an integer index tensor is supported as x[idx] = value "
                         "with a 1-D idx")
    idx = _check_index("setitem", k, x.shape[0])
    ew._check_inplace_target("setitem", x)
    root = x._base if x._base is not None else x
    from clgrad import autograd
    if autograd.is_grad_enabled() and (value.requires_grad or root.requires_grad):
        raise RuntimeError("setitem: writes through an index tensor are not differentiable "
                           "here; use index_select/cat to build the tensor instead")
    shape = (idx.shape[0],) + tuple(x.shape[1:])
    src = ew.contiguous(ew.to(value, x.dtype).expand(shape))
    istr = [idx._strides[0]] + [0] * (x.ndim - 1)
    iv = Tensor(idx._storage, shape, istr, idx._offset)
    _scatter_launch("scatter_dim", x, 0, iv, src)
    x._storage.version += 1


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
    out = empty((idx.shape[0], weight.shape[1]), weight.dtype, weight.device)
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
                arange(n, dtype=dtypes.int64, device=tensor.device))
    return ew.to(hit, dtypes.int64)
