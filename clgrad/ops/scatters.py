"""Writes of one tensor's values into a copy of another at given places (PyTorch's names):
scatter_reduce, index_copy, masked_scatter, diagonal_scatter, select_scatter, slice_scatter,
put.

Composed of other families' ops: the ``*_scatter`` ops write ``src`` into a view of a clone
through ``inplace.write_into`` (its copy_slices Node gives the gradients: the clone's with the
region zeroed, src's the region's), index_copy is a scatter, masked_scatter a gather and a
where, put an index_copy / index_add of the flattened tensor. ``scatter_reduce`` computes its
reductions (prod, mean, amax, amin need a per-target combine no kernel has) on the host in
float64 or int64, and its backward by PyTorch's formulas.
"""
from __future__ import annotations

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import no_grad, record
from clgrad.autograd.function import delayed_error
from clgrad.autograd.graph import output_of
from clgrad.errors import IndexRangeError
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import inplace as ip
from clgrad.ops import linalg
from clgrad.ops import scan as sc
from clgrad.ops import views as vw
from clgrad.ops._util import same_device
from clgrad.tensor import Tensor

__all__ = ["scatter_reduce", "index_copy", "masked_scatter", "diagonal_scatter",
           "select_scatter", "slice_scatter", "put", "put_"]

_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of ``input`` where each target ``out[index[i][j]][j]`` (dim 0) combines, by
    ``reduce`` ('sum', 'prod', 'mean', 'amax', 'amin'), the src values scattered to it and,
    with ``include_self``, its own value (PyTorch's torch.scatter_reduce); targets no index
    names keep input's value.

    Shapes:  input (*S), index (*I) int64, src (*J) with I <= J everywhere and I <= S apart
             from dim -> (*S)
    Dtypes:  src of input's dtype; integer 'mean' rounds down (PyTorch's floor division)
    Grad:    input and src (PyTorch's formulas): sum as scatter_add; mean divided by the
             count; prod the product of the others (zeros handled); amax/amin split evenly
             among the values equal to the result (deliberately different from PyTorch
             2.13 with include_self=False: PyTorch also counts input's own value when it
             equals the result, so the src ties there get 1/(n+1) each and part of the
             gradient is lost; clgrad gives each 1/n, the derivative of what was
             computed). Differentiable again (create_graph: the
             same of recorded ops, PyTorch's scatter_reduce_backward; prod through
             scatter_reduce itself; as PyTorch's, src's gradient where two or more src zeros
             meet at one target raises RuntimeError when differentiated again)
    Raises:  ValueError for another reduce; RuntimeError / IndexError as scatter
    """
    if reduce not in _REDUCES:
        raise ValueError(f"scatter_reduce: expected reduce to be one of {_REDUCES}, got "
                         f"{reduce!r}")
    d = layout.wrap_dim(dim, input.ndim, "scatter_reduce")
    index = ix._scatter_checks("scatter_reduce", input, d, index, src)
    shape = tuple(input.shape)
    tgt = _targets(index, shape, d)  # flat target of each index position
    part = src.detach()[tuple(slice(0, n) for n in index.shape)]
    calc = np.float64 if input.dtype.is_floating_point else np.int64
    xs = input.detach().float().numpy() if input.dtype is dtypes.bfloat16 else \
        input.detach().numpy()
    ss = part.float().numpy() if part.dtype is dtypes.bfloat16 else part.numpy()
    xs, ss = xs.astype(calc).ravel(), ss.astype(calc).ravel()
    out, count = _reduce_host(reduce, xs, ss, tgt, include_self)
    res = creation.tensor(out.reshape(shape), dtype=input.dtype, device=input._storage.device)
    touched = np.zeros(xs.size, bool)
    touched[tgt] = True

    def backward(g):
        gh = g.detach().numpy().astype(np.float64).ravel()
        gx, gs = _grads_host(reduce, xs, ss, tgt, out, count, touched, include_self, gh)
        dev = g._storage.device
        gx = creation.tensor(gx.reshape(shape), dtype=g.dtype, device=dev)
        gsrc = np.zeros(tuple(src.shape))
        gsrc[tuple(slice(0, n) for n in index.shape)] = gs.reshape(tuple(index.shape))
        return gx, creation.tensor(gsrc, dtype=g.dtype, device=dev)
    y = (res._storage, res._shape, res._strides, res._offset,
         res._storage.version - res._storage.hidden)  # (no call)
    versions = (input._storage.version, src._storage.version)

    def double(g, node):  # create_graph: PyTorch's formulas of recorded ops
        if reduce == "prod" and versions != (input._storage.version, src._storage.version):
            raise RuntimeError("one of the variables needed for gradient computation has been "
                               "modified by an inplace operation: scatter_reduce's input or "
                               "src, read again by its create_graph gradient (prod)")
        host = (xs, ss, tgt, out, touched)
        return _grads_recorded(g, input, src, index, d, reduce, include_self,
                               output_of(node, y), host)
    return record("scatter_reduce", res, (input, src), backward, double=double)


def _targets(index: Tensor, shape, d) -> np.ndarray:
    """The flat offset in a contiguous tensor of ``shape`` of each index position's target."""
    ih = index.numpy().astype(np.int64)
    coords = list(np.indices(ih.shape, dtype=np.int64))
    if ih.ndim:
        coords[d] = ih
        return np.ravel_multi_index(tuple(c.ravel() for c in coords), shape)
    return ih.reshape(1) if len(shape) else np.zeros(1, np.int64)


def _reduce_host(reduce, xs, ss, tgt, include_self):
    """The reduction's values (float64 or int64) and, for mean, each target's count."""
    touched = np.zeros(xs.size, bool)
    touched[tgt] = True
    ident = {"sum": 0, "mean": 0, "prod": 1,
             "amax": -np.inf if xs.dtype.kind == "f" else np.iinfo(np.int64).min,
             "amin": np.inf if xs.dtype.kind == "f" else np.iinfo(np.int64).max}[reduce]
    out = xs.copy() if include_self else np.where(touched, ident, xs).astype(xs.dtype)
    ufunc = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.fmax,
             "amin": np.fmin}[reduce]
    if reduce in ("amax", "amin"):  # NaN wins (PyTorch's max/min propagate it)
        ufunc.at(out, tgt, ss)
        if xs.dtype.kind == "f":  # (integers have no NaN: NumPy refuses even an empty fill)
            nan = np.zeros(xs.size, bool)
            np.logical_or.at(nan, tgt, np.isnan(ss))
            nan |= include_self & np.isnan(xs)
            out[nan] = np.nan
        return out, None
    ufunc.at(out, tgt, ss)
    count = None
    if reduce == "mean":
        count = np.where(touched, 1 if include_self else 0, 1).astype(np.int64)
        np.add.at(count, tgt, 1)
        out = out / count if xs.dtype.kind == "f" else np.floor_divide(out, count)
    return out, count


def _grads_host(reduce, xs, ss, tgt, out, count, touched, include_self, g):
    """(grad of input, grad of the used src positions), PyTorch's scatter_reduce backward."""
    keep = include_self | ~touched  # input elements that took part in their result
    if reduce == "sum":
        return np.where(keep, g, 0.0), g[tgt]
    if reduce == "mean":
        share = g / count
        return np.where(keep, share, 0.0), share[tgt]
    if reduce == "prod":
        # the product of the others: out / value where value != 0, else recomputed
        zeros = np.zeros(xs.size, np.int64)
        np.add.at(zeros, tgt, ss == 0)
        zeros += keep & (xs == 0)
        nz = np.where(keep & (xs != 0), xs, 1.0).astype(np.float64)
        np.multiply.at(nz, tgt, np.where(ss != 0, ss, 1.0))  # product of the nonzero ones

        def others(v, t):
            z = zeros[t]
            return np.where(v != 0, np.where(z == 0, out[t] / np.where(v != 0, v, 1), 0.0),
                            np.where(z == 1, nz[t], 0.0))
        idx = np.arange(xs.size)
        return np.where(keep, g * others(xs, idx), 0.0), g[tgt] * others(ss, tgt)
    # amax / amin: evenly among the values equal to the result
    hit_x = keep & ((xs == out) | (np.isnan(xs) & np.isnan(out)))
    hit_s = (ss == out[tgt]) | (np.isnan(ss) & np.isnan(out[tgt]))
    n = hit_x.astype(np.float64)
    np.add.at(n, tgt, hit_s)
    share = g / np.maximum(n, 1)
    return np.where(hit_x, share, 0.0), np.where(hit_s, share[tgt], 0.0)


_PROD_ZEROS = ("scatter_reduce(): Double backward is unsupported for src when >1 zeros in src "
               "are scattered to the same position. This case is not supported.")


def _grads_recorded(g, input, src, index, d, reduce, include_self, res, host):
    """scatter_reduce's (grad of input, grad of src) of recorded ops (create_graph), PyTorch's
    scatter_reduce_backward: the masks and counts are the forward's (host values), prod's
    products of the others come of scatter_reduce itself (so every order flows)."""
    xs, ss, tgt, out, touched = host
    shape, dev = tuple(input.shape), g._storage.device
    keep = include_self | ~touched  # input elements that took part in their result

    def up(arr, shp=shape):  # a host mask or count on the device
        return creation.tensor(arr.reshape(shp), device=dev)
    ishape = tuple(index.shape)
    gx = gs = None
    if reduce in ("sum", "mean", "amax", "amin"):
        if reduce in ("sum", "mean"):
            hit_x, hit_s, n = keep, None, None
            if reduce == "mean":
                n = np.where(touched, 1 if include_self else 0, 1).astype(np.float64)
                np.add.at(n, tgt, 1)
        else:  # evenly among the values equal to the result (NaN equal to NaN)
            hit_x = keep & ((xs == out) | (np.isnan(xs) & np.isnan(out)))
            hit_s = (ss == out[tgt]) | (np.isnan(ss) & np.isnan(out[tgt]))
            n = hit_x.astype(np.float64)
            np.add.at(n, tgt, hit_s)
            n = np.maximum(n, 1)
        share = g if n is None else ew.div(g, up(n).to(g.dtype))
        if input.requires_grad:
            gx = ew.where(up(hit_x), share, 0.0)
        if src.requires_grad:
            gs = ix.gather(share, d, index)
            if hit_s is not None:
                gs = ew.where(up(hit_s, ishape), gs, 0.0)
    else:  # prod: the product of the others, zeros handled (masked to 1 where they are)
        if input.requires_grad:
            masked = ew.where(up(xs == 0), 1.0, input)
            others = scatter_reduce(masked, d, index, src, "prod", include_self=include_self)
            gx = ew.where(up(keep), ew.div(ew.mul(g, others), masked), 0.0)
        if src.requires_grad:
            part = src[tuple(slice(0, k) for k in ishape)]
            zeros = np.zeros(xs.size, np.int64)
            np.add.at(zeros, tgt, ss == 0)
            single = up((ss == 0) & (zeros[tgt] == 1), ishape)
            others = scatter_reduce(input, d, index, ew.where(single, 1.0, part), "prod",
                                    include_self=include_self)
            gs = ew.where(single, ix.gather(ew.mul(g, others), d, index),
                          ew.div(ix.gather(ew.mul(g, res), d, index),
                                 ew.where(up(ss == 0, ishape), 1.0, part)))
            if np.any(zeros > 1):  # PyTorch's DelayedError: no derivative of that
                gs = delayed_error(gs, _PROD_ZEROS)
    if gs is not None and ishape != tuple(src.shape):
        gs = ix._zero_extend(gs, tuple(src.shape))
    return gx, gs


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with ``source.select(dim, i)`` written at ``index[i]`` along
    ``dim`` (PyTorch's torch.index_copy; with repeated indices one write wins).

    Shapes:  input (*S), index (L,) or 0-dim, source (*S with S[dim] = L)
    Grad:    input: g with the written rows zeroed; source: g.index_select(dim, index)
    Raises:  IndexError for an index out of range or of more than 1 dim; RuntimeError for
             mismatched shapes or dtypes
    """
    if index.ndim > 1:
        raise IndexError(f"index_copy(): Index should have dimension 1 or 0 (got "
                         f"{index.ndim})")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_copy(): self and source expected to have the same dtype, "
                           f"but got (self) {input.dtype} and (source) {source.dtype}")
    xs = vw.reshape(input, 1) if input.ndim == 0 else input
    ss = vw.reshape(source, 1) if source.ndim == 0 else source
    d = layout.wrap_dim(dim, xs.ndim, "index_copy")
    index = vw.reshape(index, -1)
    if ss.ndim != xs.ndim or ss.shape[d] != index.shape[0] or any(
            a != b for i, (a, b) in enumerate(zip(ss.shape, xs.shape)) if i != d):
        raise RuntimeError(f"index_copy(): expected source of shape {tuple(xs.shape)} with "
                           f"{index.shape[0]} (the index's length) along dim {d}, got "
                           f"{tuple(source.shape)}")
    strides = [0] * xs.ndim
    strides[d] = index._strides[0]
    idx = Tensor(index._storage, ss.shape, strides, index._offset)
    out = ix.scatter(xs, d, idx, ss)
    return vw.reshape(out, ()) if input.ndim == 0 else out


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` where the elements ``mask`` marks (broadcast to input's shape) take
    ``source``'s elements in row-major order (PyTorch's torch.masked_scatter).

    Grad:    input: g where mask is False; source: g's masked elements, in order, at
             source's first positions (zeros after)
    Raises:  RuntimeError for a mask that is not bool, a source of another dtype or with
             fewer elements than the mask's True count
    """
    if not mask.dtype.is_bool:
        raise RuntimeError(f"masked_scatter_: expected BoolTensor for mask, got {mask.dtype}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes "
                           f"but got {input.dtype} and {source.dtype}")
    same_device("masked_scatter", input, mask, source)
    shape = layout.broadcast_shapes(input.shape, mask.shape, op="masked_scatter")
    x = vw.expand(input, shape) if tuple(shape) != tuple(input.shape) else input
    m = vw.reshape(ew.contiguous(vw.expand(mask, shape)), -1)
    pos = ew.sub(sc.cumsum(m, 0), 1)  # the source element of each True
    need = int(pos[-1].item()) + 1 if pos.numel() else 0
    if need > source.numel():
        raise RuntimeError(f"masked_scatter: expected source to have at least as many "
                           f"elements as the ones in mask ({need}), got {source.numel()}")
    if source.numel() == 0:
        return ew.clone(x)
    take = ix.gather(vw.reshape(source, -1), 0, ew.clamp(pos, min=0))
    return ew.where(vw.reshape(m, tuple(shape)), vw.reshape(take, tuple(shape)), x)


def _scatter_into(op: str, input: Tensor, src: Tensor, region) -> Tensor:
    """A clone of input with src written into ``region(clone)`` (a view): shapes must match;
    src is cast to input's dtype (PyTorch's)."""
    out = ew.clone(input)
    view = region(out)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = {list(view.shape)}")
    ip.write_into(view, src, op)
    return out


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written on ``input.diagonal(offset, dim1, dim2)``
    (PyTorch's torch.diagonal_scatter). Grad: input (g off the diagonal), src (g's
    diagonal)."""
    return _scatter_into("diagonal_scatter", input, src,
                         lambda t: vw.diagonal(t, offset, dim1, dim2))


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``input.select(dim, index)`` (PyTorch's
    torch.select_scatter). Grad: input and src."""
    return _scatter_into("select_scatter", input, src, lambda t: vw.select(t, dim, index))


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written at ``input[start:end:step]`` along ``dim``
    (PyTorch's torch.slice_scatter). Grad: input and src."""
    def region(t):
        d = layout.wrap_dim(dim, t.ndim, "slice_scatter")
        key = (slice(None),) * d + (slice(start, end, step),)
        return t[key]
    return _scatter_into("slice_scatter", input, src, region)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source``'s elements written (or added, ``accumulate``) at the
    flat positions ``index`` names, as if input were 1-D (PyTorch's torch.put); negative
    indices count from the end.

    Shapes:  index and source of one number of elements
    Grad:    input: g (zeroed at the written places unless accumulate); source: g at index
    Raises:  IndexError for an index out of range; RuntimeError for a source of another
             dtype or number of elements
    """
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put(): self and source expected to have the same dtype, but got "
                           f"{input.dtype} and {source.dtype}")
    if index.numel() != source.numel():
        raise RuntimeError(f"put(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, "
                           f"index.numel() = {index.numel()}")
    n = input.numel()
    flat_i = vw.reshape(index, -1)
    if flat_i.numel():
        host = flat_i.numpy()
        if host.min() < -n or host.max() >= n:
            bad = host.min() if host.min() < -n else host.max()
            raise IndexRangeError(f"put(): index {bad} out of range for tensor of size "
                                  f"{tuple(input.shape)} ({n} elements)")
        flat_i = ew.remainder(ew.to(flat_i, dtypes.int64), n) if host.min() < 0 else flat_i
    flat = vw.reshape(input, -1)
    src = vw.reshape(source, -1)
    out = ix.index_add(flat, 0, flat_i, src) if accumulate else index_copy(flat, 0, flat_i, src)
    return vw.reshape(out, tuple(input.shape))


def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place ``put``; returns input."""
    return ip.inplace("put_", input, lambda s, v: put(s, index, v, accumulate), source)


# -- embedding with max_norm, embedding_renorm_, embedding_bag -------------------------------
def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input`` (PyTorch's F.embedding).

    Shapes:  input (*) int, weight (V, D) -> (*, D)
    max_norm: first, under no_grad, every row that ``input`` names whose ``norm_type``-norm
             exceeds max_norm is scaled IN PLACE in ``weight`` by max_norm / (norm + 1e-7),
             each distinct row once (embedding_renorm_, PyTorch's F.embedding); the padding
             row too, as PyTorch's
    Grad:    weight: the output gradient scatter-added into its rows (repeated indices add
             up); the row ``padding_idx`` gets none; ``scale_grad_by_freq`` divides each
             position's gradient by the count of its index in ``input`` (index.embedding_rows)
    Raises:  IndexError for an index outside [0, V); ValueError for padding_idx outside
             [-V, V); NotImplementedError for ``sparse=True`` (clgrad has no sparse tensors)
    """
    if max_norm is not None and not sparse:  # (sparse raises below, before any write)
        same_device("embedding", weight, input)
        ix.embedding_weight("embedding", weight, padding_idx, ValueError)
        embedding_renorm_(weight, input, max_norm, norm_type)
    return ix.embedding_rows(input, weight, padding_idx, scale_grad_by_freq, sparse)


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> Tensor:
    """PyTorch's torch.embedding_renorm_: each distinct row r of ``input`` (V, D) named in
    ``indices`` whose ``norm_type``-norm exceeds ``max_norm`` is scaled in place by
    max_norm / (norm + 1e-7) (the scale in float64, as PyTorch's CPU kernel); a NaN norm
    leaves its row as it is (NaN > max_norm is false, as PyTorch). Not recorded by autograd
    (it runs under no_grad). Returns ``input``.

    Raises:  IndexError for an index outside [0, V); RuntimeError for a weight that is not 2-D
    """
    ix.embedding_weight("embedding_renorm_", input, None)
    v = input.shape[0]
    ids = ix._check_index("embedding_renorm_", indices.reshape(-1), v, 0, data=input)
    ids = np.unique(ids.numpy()) if ids.numel() else np.zeros(0, np.int64)
    if not ids.size:
        return input
    with no_grad():
        at = creation.tensor(ids, dtype=dtypes.int64, device=input.device)
        rows = ix.index_select(input, 0, at)
        norm = linalg.vector_norm(rows, norm_type, 1).double().numpy()
        big = norm > max_norm
        if not big.any():
            return input
        scale = np.where(big, max_norm / (np.where(big, norm, 0.0) + 1e-7), 1.0)
        sc = creation.tensor(scale.reshape(-1, 1), dtype=dtypes.float32 if input.dtype in
                             (dtypes.bfloat16, dtypes.float16) else input.dtype,
                             device=input.device)
        new = ew.to(ew.mul(rows, sc), input.dtype)
        ip.inplace("embedding_renorm_", input, lambda w: index_copy(w, 0, at, new))
    return input


_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The sum, mean or max of each bag of rows of ``weight`` (PyTorch's F.embedding_bag),
    without the (*, D) intermediate of embedding + reduce being kept per bag: the rows are
    gathered once (embedding), then index_add'ed into their bags ('sum', 'mean'); 'max'
    gathers each bag's maximum element (its index found on the host).

    Shapes:  input (B, L) int (B bags of L), or (n,) with offsets (B,) int (bag b starts at
             offsets[b]; with ``include_last_offset`` offsets is (B + 1,) and its last entry
             must be n, as PyTorch documents: CSR); weight (V, D) -> (B, D)
    Bags:    an empty bag gives zeros; indices equal to ``padding_idx`` are skipped (a mean
             divides by the bag's other entries); per_sample_weights (input's shape) scales
             each row ('sum' only)
    max_norm: every row ``input`` names (padding and all) whose norm_type-norm exceeds
             max_norm is rescaled in place first (embedding_renorm_, as PyTorch's F)
    Grad:    weight (and per_sample_weights); 'max': to the element picked (the first of
             tied maxima, as PyTorch's CPU kernel); ``scale_grad_by_freq`` divides by the
             count of each index in ``input``
    NaN:     'max' of a bag column holding a NaN is NaN (the first NaN is picked). PyTorch's
             CPU kernel keeps a NaN only where it comes first in the bag (a > comparison);
             clgrad propagates it wherever it is (never a silently finite maximum)
    Raises:  ValueError for shapes, mode, padding_idx and per_sample_weights' shape as
             PyTorch's F; NotImplementedError for per_sample_weights outside 'sum' and for
             sparse; RuntimeError for offsets[0] != 0, decreasing offsets, a last offset
             other than n with include_last_offset (PyTorch's CPU result then depends on the
             dtype) or an index outside [0, V) (host reads of input and offsets)
    """
    if weight.dtype in (dtypes.int64, dtypes.int32) and input.dtype.is_floating_point:
        weight, input = input, weight  # PyTorch's old argument order (it warns)
    same_device("embedding_bag", weight, input, offsets, per_sample_weights)
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)})"
                         f" is not None, then it must have the same shape as the input "
                         f"({tuple(input.shape)})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    v = weight.shape[0]
    if padding_idx is not None:
        if not -v <= padding_idx < v:
            raise ValueError("padding_idx must be within the number of embeddings")
        padding_idx %= v
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found "
                             f"offsets of type {type(offsets)}")
        starts = np.arange(input.shape[0], dtype=np.int64) * input.shape[1]
        include_last_offset = False
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = None
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    no_sparse(sparse)
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    idx = input.reshape(-1).numpy().astype(np.int64)
    if starts is None:
        starts = _bag_starts(offsets, idx.size, include_last_offset)
    if per_sample_weights is not None:
        per_sample_weights = per_sample_weights.reshape(-1)
    return _bags(weight, idx, starts, _MODES[mode], per_sample_weights, padding_idx,
                 scale_grad_by_freq)[0]


def _bag_starts(offsets: Tensor, n: int, include_last_offset: bool) -> np.ndarray:
    """The bags' first positions: ``offsets`` (its last entry dropped with
    include_last_offset), checked as PyTorch's: offsets[0] == 0, non-decreasing, <= n."""
    off = offsets.numpy().astype(np.int64)
    if off.size and off[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                           f"mini-batch has to start from position 0. However, got "
                           f"{off[0]}")
    if np.any(np.diff(off) < 0) or (off.size and off[-1] > n):
        raise RuntimeError(f"embedding_bag: expected offsets non-decreasing and at most the "
                           f"input's length {n}, got {off.tolist()}")
    if include_last_offset and off.size and off[-1] != n:
        raise RuntimeError(f"embedding_bag: include_last_offset=True expects the last offset "
                           f"to be the input's length {n} (CSR), got {off[-1]}; PyTorch's CPU "
                           f"result then depends on the dtype (float32 drops the trailing "
                           f"indices, float64 adds them to the last bag)")
    return off[:-1] if include_last_offset else off


def no_sparse(sparse: bool):
    """NotImplementedError for embedding_bag's sparse=True (checked before any write)."""
    if sparse:
        raise NotImplementedError("embedding_bag: sparse=True asks for a sparse gradient, and "
                                  "clgrad has no sparse tensors; use sparse=False")


def _bags(weight: Tensor, idx: np.ndarray, starts: np.ndarray, mode: int, psw, padding_idx,
          scale_grad_by_freq: bool):
    """The bag reduction behind F.embedding_bag and torch.embedding_bag: ``idx`` (n,) int64
    on the host, bag b = positions [starts[b], starts[b + 1]) (the last to n). Returns the
    output (B, D) and, as int64 host arrays, each position's bag (offset2bag), each bag's
    count of non-padding entries and (mode 2) the row each maximum came from (B, D)."""
    v, dev = weight.shape[0], weight.device
    bad = np.flatnonzero((idx < 0) | (idx >= v))
    if bad.size:
        raise IndexRangeError(f"Index {bad[0]} of input takes value {idx[bad[0]]} which is not "
                              f"in the valid range [0, {v})")
    nb = len(starts)
    bag = np.searchsorted(starts, np.arange(idx.size), side="right") - 1  # last bag starting
    keep = bag >= 0                                                       # at or before
    if padding_idx is not None:
        keep &= idx != padding_idx
    kept = np.flatnonzero(keep)
    sizes = np.bincount(bag[kept], minlength=nb).astype(np.int64)

    def long(a):
        return creation.tensor(np.ascontiguousarray(a, dtype=np.int64), dtype=dtypes.int64,
                               device=dev)
    if mode == 2:
        out, argmax = _bag_max(weight, idx[kept], bag[kept], nb)
        return out, bag, sizes, argmax
    if scale_grad_by_freq:  # the count over all of input (padding rows get no gradient)
        rows = ix.embedding_rows(long(idx), weight, scale_grad_by_freq=True)
        rows = ix.index_select(rows, 0, long(kept))
    else:
        rows = ix.embedding_rows(long(idx[kept]), weight)              # (K, D)
    if psw is not None:
        rows = ew.mul(rows, ix.index_select(psw, 0, long(kept)).unsqueeze(1))
    out = creation.zeros((nb, weight.shape[1]), dtype=weight.dtype, device=dev)
    out = ix.index_add(out, 0, long(bag[kept]), rows)
    if mode == 1:
        out = ew.div(out, creation.tensor(np.maximum(sizes, 1).reshape(-1, 1),
                                          dtype=weight.dtype, device=dev))
    return out, bag, sizes, None


def _bag_max(weight: Tensor, rows: np.ndarray, bags: np.ndarray, nb: int):
    """Each bag's column maxima: the row of each (found on the host: the first of tied
    maxima, the first NaN where the column has one) and the elements gathered from weight
    (so the gradient reaches exactly them); an empty bag gives 0 and row 0."""
    d = weight.shape[1]
    w = weight.detach()
    host = (w.float() if w.dtype is dtypes.bfloat16 else w).numpy()
    vals = host[rows].T                                                    # (D, K)
    pos = np.broadcast_to(np.arange(rows.size), vals.shape)
    nan = np.isnan(vals)
    order = np.lexsort((-pos, np.where(nan, 0, vals), nan,
                        np.broadcast_to(bags, vals.shape)), axis=-1)       # bag, NaN, value, -pos
    argmax = np.zeros((nb, d), np.int64)
    last = np.flatnonzero(np.append(np.diff(bags[order[0]]) != 0, True)) if vals.size else []
    for c in range(d if vals.size else 0):  # (bag is the first key: the groups are alike)
        win = order[c][last]                       # the winner: the last of each bag's group
        argmax[bags[win], c] = rows[win]
    flat = argmax * d + np.arange(d)
    dev = weight.device
    out = ix.index_select(weight.reshape(-1), 0, creation.tensor(
        flat.reshape(-1), dtype=dtypes.int64, device=dev)).reshape(nb, d)
    empty = np.bincount(bags, minlength=nb) == 0
    if empty.any():
        out = ew.where(creation.tensor(~empty.reshape(-1, 1), device=dev), out, 0.0)
    return out, argmax


__all__ += ["embedding", "embedding_renorm_", "embedding_bag"]
