"""NumPy-style shape ops over the view, index and copy families (PyTorch's names): stacking
(hstack, vstack/row_stack, dstack, column_stack), splitting (hsplit, vsplit, dsplit),
atleast_1d/2d/3d, broadcast_to, swapaxes/swapdims, take, take_along_dim, index_fill, rot90,
fliplr/flipud, diag_embed, block_diag, cartesian_prod, combinations, tril_indices and
triu_indices. Each is composed of existing ops, so its gradient is theirs; the views
(broadcast_to, swapaxes, the splits, atleast_* of a tensor that already has the rank) share
the input's storage, as PyTorch's.

Formulas and errors: PyTorch's documentation of each op (torch.<name>) and its ATen messages.
Kernels: none of their own.
"""
from __future__ import annotations

import itertools

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import record
from clgrad.errors import IndexRangeError
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import views as vw
from clgrad.ops._util import _type_name, same_device, zeros
from clgrad.tensor import Size, Tensor

__all__ = ["tensor_split",
           "hstack", "vstack", "row_stack", "dstack", "column_stack", "hsplit", "vsplit",
           "dsplit", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_to", "swapaxes",
           "swapdims", "take", "take_along_dim", "index_fill", "index_fill_", "rot90", "fliplr",
           "flipud", "diag_embed", "block_diag", "cartesian_prod", "combinations",
           "tril_indices", "triu_indices"]


def _seq(op: str, tensors) -> tuple:
    """The Tensors of a ``tensors`` sequence argument, checked (PyTorch's TypeError)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {_type_name(tensors)}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{_type_name(t)}")
    return tuple(tensors)


def _nonempty(op: str, tensors) -> tuple:
    tensors = _seq(op, tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return tensors


# -- atleast_nd -------------------------------------------------------------------------------
def _atleast(op: str, fn, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return fn(tensors[0])
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    elif len(tensors) == 1:
        raise TypeError(f"{op}() received an invalid combination of arguments - got "
                        f"({_type_name(tensors[0])}), but expected one of:\n * (Tensor input)\n"
                        f" * (tuple of Tensors tensors)")
    return tuple(fn(t) for t in _seq(op, tensors))


def _at1(x: Tensor) -> Tensor:
    return vw.reshape(x, (1,)) if x.ndim == 0 else x


def _at2(x: Tensor) -> Tensor:
    if x.ndim == 0:
        return vw.reshape(x, (1, 1))
    return vw.unsqueeze(x, 0) if x.ndim == 1 else x


def _at3(x: Tensor) -> Tensor:
    if x.ndim == 0:
        return vw.reshape(x, (1, 1, 1))
    if x.ndim == 1:
        return vw.reshape(x, (1, x.shape[0], 1))
    return vw.unsqueeze(x, 2) if x.ndim == 2 else x


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim: a 0-dim tensor becomes shape (1,) (a view), others are
    returned as they are. One tensor in: one tensor out; several (or a list): a tuple.
    Raises TypeError for an argument that is not a Tensor."""
    return _atleast("atleast_1d", _at1, tensors)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims: () -> (1, 1), (n,) -> (1, n) (views); others as they
    are. One tensor in: one tensor out; several (or a list): a tuple."""
    return _atleast("atleast_2d", _at2, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: () -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) ->
    (m, n, 1) (views, NumPy's rule); others as they are. One tensor in: one tensor out;
    several (or a list): a tuple."""
    return _atleast("atleast_3d", _at3, tensors)


# -- stacking ---------------------------------------------------------------------------------
def hstack(tensors) -> Tensor:
    """Concatenate column-wise: ``cat`` along dim 0 for 1-D (and 0-D) tensors, else dim 1,
    after ``atleast_1d``. Dtype: the tensors' promoted type (cat's).
    Raises RuntimeError for an empty list or shapes that do not concatenate."""
    ts = [_at1(t) for t in _nonempty("hstack", tensors)]
    return ix.cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Concatenate row-wise: ``cat`` along dim 0 after ``atleast_2d`` ((n,) -> (1, n)).
    Raises RuntimeError for an empty list or shapes that do not concatenate."""
    return ix.cat([_at2(t) for t in _nonempty("vstack", tensors)], 0)


def row_stack(tensors) -> Tensor:
    """Alias of vstack (PyTorch's)."""
    return ix.cat([_at2(t) for t in _nonempty("row_stack", tensors)], 0)


def dstack(tensors) -> Tensor:
    """Concatenate depth-wise: ``cat`` along dim 2 after ``atleast_3d``.
    Raises RuntimeError for an empty list or shapes that do not concatenate."""
    return ix.cat([_at3(t) for t in _nonempty("dstack", tensors)], 2)


def column_stack(tensors) -> Tensor:
    """Stack as columns: 0-D and 1-D tensors become (n, 1) columns, then ``cat`` along dim 1
    (hstack of the reshaped tensors). Raises RuntimeError for an empty list."""
    ts = [vw.reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t
          for t in _nonempty("column_stack", tensors)]
    return ix.cat(ts, 1)


# -- splitting --------------------------------------------------------------------------------
def _split_at(op: str, x: Tensor, sections, dim: int, min_dims: int):
    if x.ndim < min_dims:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dims} dimension, "
                           f"but got a tensor with {x.ndim} dimensions!")
    size = x.shape[dim]
    if isinstance(sections, bool) or not isinstance(sections, (int, np.integer, list, tuple)):
        raise TypeError(f"{op}: expected indices_or_sections to be an int or a list of ints, "
                        f"got {type(sections).__name__}")
    if isinstance(sections, (int, np.integer)):
        n = int(sections)
        if n <= 0 or size % n:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the "
                               f"split_size {n}!")
        return vw.split(x, size // n, dim) if n > 1 else (vw.narrow(x, dim, 0, size),)
    # a negative index counts from the end, then each is clamped to the dim (tensor_split's,
    # i.e. Python slicing's: hsplit(x, [-2]) is x[:, :-2], x[:, -2:])
    bounds = [0] + [min(max(int(i) + size if int(i) < 0 else int(i), 0), size)
                    for i in sections] + [size]
    return tuple(vw.narrow(x, dim, a, max(b - a, 0)) for a, b in zip(bounds, bounds[1:]))


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0):
    """Split along ``dim`` into ``n`` views (an int: the first ``size % n`` get one more
    element, so any n >= 1 works) or at the given indices (a list, tuple or 1-D int64
    tensor: pieces ``[0:i0], [i0:i1], ..., [ik:]``, a negative index counted from the end,
    then clamped, as Python slicing). Views of ``input`` (PyTorch's torch.tensor_split).
    Raises RuntimeError for n < 1 or a 0-D input; TypeError for another kind of argument."""
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = layout.wrap_dim(dim, input.ndim, "tensor_split")
    size = input.shape[d]
    sec = indices_or_sections
    if isinstance(sec, Tensor):
        if sec.dtype is not dtypes.int64 or sec.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have "
                               f"dtype of long and be 0-D or 1-D, got {sec.dtype} with "
                               f"{sec.ndim} dims")
        sec = int(sec.item()) if sec.ndim == 0 else [int(v) for v in sec.tolist()]
    if isinstance(sec, bool) or not isinstance(sec, (int, np.integer, list, tuple)):
        raise TypeError(f"tensor_split: expected indices_or_sections to be an int, a list of "
                        f"ints or an int64 tensor, got {type(sec).__name__}")
    if isinstance(sec, (int, np.integer)):
        n = int(sec)
        if n < 1:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        bounds, at = [], 0
        for k in range(n - 1):
            at += q + (1 if k < r else 0)
            bounds.append(at)
        sec = bounds
    return _split_at("tensor_split", input, list(sec), d, 1)


def hsplit(input: Tensor, indices_or_sections):
    """Split along dim 1 (dim 0 for a 1-D tensor) into ``n`` equal views (an int, which must
    divide the dim) or at the given indices (a list: pieces ``[0:i0], [i0:i1], ..., [ik:]``,
    a negative index counted from the end, then clamped to the dim, as PyTorch's
    tensor_split). Views of ``input``.
    Raises RuntimeError for a 0-D input or an int that does not divide the dim."""
    return _split_at("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


def vsplit(input: Tensor, indices_or_sections):
    """Split along dim 0 (as hsplit); the input needs at least 2 dims."""
    return _split_at("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections):
    """Split along dim 2 (as hsplit); the input needs at least 3 dims."""
    return _split_at("dsplit", input, indices_or_sections, 2, 3)


# -- views ------------------------------------------------------------------------------------
def broadcast_to(input: Tensor, size) -> Tensor:
    """``input`` broadcast to ``size`` (-1 keeps a dim): a view with stride 0 along the
    broadcast dims (``expand``). Grad: summed back. Raises RuntimeError for a shape it does
    not broadcast to."""
    return vw.expand(input, tuple(size) if isinstance(size, (list, tuple)) else (size,))


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """Alias of transpose (NumPy's name): a view with the two dims swapped."""
    return vw.transpose(input, axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of transpose: a view with the two dims swapped."""
    return vw.transpose(input, dim0, dim1)


# -- gathers and fills ------------------------------------------------------------------------
def _long_index(op: str, index: Tensor, what: str = "index"):
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: Expected a long tensor for {what}, but got "
                           f"{dtypes.torch_name(index.dtype)}")


def take(input: Tensor, index: Tensor) -> Tensor:
    """``input`` read as 1-D at ``index`` (int64, any shape; negative indices count from the
    end): the result has index's shape and input's dtype. Grad: scatter-added back.
    Raises RuntimeError for a non-int64 index; IndexError (IndexRangeError) for an index
    outside [-numel, numel)."""
    _long_index("take()", index)
    n = input.numel()
    flat = vw.reshape(input, (n,))
    idx = vw.reshape(index, (index.numel(),))
    if idx.numel():
        idx = ew.where(ew.lt(idx, 0), ew.add(idx, n), idx)
    try:
        out = ix.gather(flat, 0, idx)
    except IndexRangeError as e:
        raise IndexRangeError(f"take: index out of range for a tensor of {n} elements "
                              f"({e})") from None
    return vw.reshape(out, tuple(index.shape))


def take_along_dim(input: Tensor, indices: Tensor, dim=None) -> Tensor:
    """Values of ``input`` at ``indices`` along ``dim`` (NumPy's take_along_axis): with dim
    None, ``input`` flattened and read at ``indices`` flattened; else input and indices are
    broadcast against each other in every dim but ``dim`` and ``gather``ed.
    Shapes: dim None -> (indices.numel(),); else the broadcast shape with indices' size at
    dim. Grad: scatter-added back (summed over the broadcast).
    Raises RuntimeError for a non-int64 indices or ranks that differ; IndexError for an index
    out of range (gather's: no negative indices)."""
    if indices.dtype is not dtypes.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{dtypes.torch_name(indices.dtype)}")
    if dim is None:
        return ix.gather(vw.reshape(input, (input.numel(),)), 0,
                         vw.reshape(indices, (indices.numel(),)))
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    d = layout.wrap_dim(dim, max(input.ndim, 1), "take_along_dim")
    a, b = list(input.shape), list(indices.shape)
    a[d] = b[d] = 1
    shape = list(layout.broadcast_shapes(a, b, op="take_along_dim"))
    ia, ib = list(shape), list(shape)
    ia[d], ib[d] = input.shape[d], indices.shape[d]
    return ix.gather(vw.expand(input, ia), d, vw.expand(indices, ib))


def _fill_value(op: str, x: Tensor, value):
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        return ew.to(value, x.dtype)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise TypeError(f"{op}: expected value to be a number or a 0-dim Tensor, got "
                        f"{type(value).__name__}")
    if not x.dtype.is_floating_point:
        value = bool(value) if x.dtype.is_bool else int(value)
    return creation.tensor(value, dtype=x.dtype, device=x.device)


def _index_mask(op: str, x: Tensor, dim: int, index: Tensor):
    """The bool mask (broadcastable to x) of the positions ``index`` names along ``dim``;
    index read on the host (its range check, negative indices wrapped, as PyTorch's)."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}: expected index to be a Tensor, got {type(index).__name__}")
    if index.dtype is not dtypes.int64:
        raise IndexError(f"{op}(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    d = layout.wrap_dim(dim, max(x.ndim, 1), op)
    size = x.shape[d] if x.ndim else 1
    idx = index.numpy().reshape(-1).astype(np.int64)
    bad = (idx < -size) | (idx >= size)
    if bad.any():
        raise IndexRangeError(f"index {int(idx[bad][0])} is out of bounds for dimension {d} "
                              f"with size {size}")
    host = np.zeros(size, dtype=bool)
    host[idx % size if size else idx] = True
    view = [1] * x.ndim
    if x.ndim:
        view[d] = size
    return creation.tensor(host.reshape(view), device=x.device)


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """A copy of ``input`` with the slices at ``index`` (int64, 0-D or 1-D; negative indices
    count from the end; repeats allowed) along ``dim`` set to ``value`` (a number, cast to
    input's dtype, or a 0-dim tensor). Grad: input (zero at the filled slices), a value
    tensor (the sum of the gradient over the filled slices).
    Raises IndexError for a non-int64 index or one out of range; RuntimeError for an index
    of 2+ dims or a value tensor of 1+ dims. The index is read on the host (its range)."""
    mask = _index_mask("index_fill", input, dim, index)
    return ew.where(mask, _fill_value("index_fill_", input, value), input)


def index_fill_(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """In-place index_fill: writes ``value`` into the slices of ``input`` at ``index`` along
    ``dim`` and returns ``input`` (its version bumped; recorded for autograd as copy_)."""
    mask = _index_mask("index_fill_", input, dim, index)
    return input.copy_(ew.where(mask, _fill_value("index_fill_", input, value), input))


# -- flips and rotations ----------------------------------------------------------------------
def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from the first towards the
    second dim; negative k: the other way): a copy (PyTorch's flip + transpose).
    Raises RuntimeError for dims not two distinct dims or an input of fewer than 2 dims."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0 = layout.wrap_dim(dims[0], input.ndim, "rot90")
    d1 = layout.wrap_dim(dims[1], input.ndim, "rot90")
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k = int(k) % 4
    if k == 1:
        return vw.transpose(vw.flip(input, d1), d0, d1)
    if k == 2:
        return vw.flip(input, (d0, d1))
    if k == 3:
        return vw.transpose(vw.flip(input, d0), d0, d1)
    return ew.clone(input)


def fliplr(input: Tensor) -> Tensor:
    """Flip dim 1 (left/right; a copy). Raises RuntimeError for fewer than 2 dims."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return vw.flip(input, 1)


def flipud(input: Tensor) -> Tensor:
    """Flip dim 0 (up/down; a copy). Raises RuntimeError for a 0-D input."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return vw.flip(input, 0)


# -- diagonals and blocks ---------------------------------------------------------------------
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Tensors whose diagonals (``offset``, in dims ``dim1``, ``dim2`` of the result) are
    ``input``'s last dim, zero elsewhere. Shapes: (*S, n) -> *S with two dims of size
    n + |offset| inserted at dim1 and dim2 (counted in the result's n+1 dims).
    Grad: the diagonal of the gradient. Raises RuntimeError for dim1 == dim2."""
    nd = input.ndim + 1
    d1 = layout.wrap_dim(dim1, nd, "diag_embed")
    d2 = layout.wrap_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    lead = iter(input.shape[:-1])
    m = (input.shape[-1] if input.ndim else 1) + abs(int(offset))
    shape = tuple(m if i in (d1, d2) else next(lead) for i in range(nd))
    src = input if input.ndim else vw.reshape(input, (1,))
    out = zeros(shape, input.dtype, input._storage.device)
    ew.copy_raw(vw.diagonal(out, offset, d1, d2), src)
    in_shape = tuple(input.shape)
    return record("diag_embed", out, (input,),  # (double: the backward is recorded views)
                  lambda g: (vw.reshape(vw.diagonal(g, offset, d1, d2), in_shape),),
                  double=True)


def block_diag(*tensors) -> Tensor:
    """The block-diagonal matrix of ``tensors`` (0-D: 1 x 1, 1-D (n,): 1 x n, 2-D as they
    are), zero elsewhere; dtype: their promoted type. No tensor: an empty (1, 0) float32
    matrix (PyTorch's). Grad: each block. Raises RuntimeError for a tensor of 3+ dims."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{_type_name(t)}")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
    if not tensors:
        return creation.zeros(1, 0)
    same_device("block_diag", *tensors)
    dt = dtypes.result_type(*tensors)
    mats = [vw.reshape(t, (1, -1)) if t.ndim < 2 else t for t in tensors]
    mats = [ew.to(t, dt) for t in mats]
    cols = sum(t.shape[1] for t in mats)
    dev = tensors[0]._storage.device
    rows, left = [], 0
    for t in mats:
        r, c = t.shape
        parts = [zeros((r, left), dt, dev), t, zeros((r, cols - left - c), dt, dev)]
        rows.append(ix.cat([p for p in parts if p.shape[1] or p is t], 1))
        left += c
    return ix.cat(rows, 0)


# -- products of index sets -------------------------------------------------------------------
def cartesian_prod(*tensors) -> Tensor:
    """The Cartesian product of 1-D tensors, as rows (itertools.product's order): shape
    (n1 * ... * nk, k); one tensor is returned as it is (PyTorch's). Grad: through the
    gathered copies. Raises RuntimeError for a tensor that is not 1-D."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    tensors = _seq("cartesian_prod", tensors)
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    same_device("cartesian_prod", *tensors)
    dt = dtypes.result_type(*tensors)
    shape = tuple(t.shape[0] for t in tensors)
    cols = []
    for i, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[i] = shape[i]
        cols.append(vw.reshape(vw.expand(vw.reshape(ew.to(t, dt), view), shape), (-1,)))
    return ix.stack(cols, 1)


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of a 1-D tensor's elements (itertools.combinations or
    combinations_with_replacement, in their order), as rows: shape (count, r); r = 0: an
    empty (0,) tensor (PyTorch's). Grad: scatter-added back to the elements.
    Raises RuntimeError for a tensor that is not 1-D or a negative r."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return creation.empty(0, dtype=input.dtype, device=input.device)
    gen = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(gen(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    sel = ix.index_select(input, 0, creation.tensor(idx.reshape(-1), device=input.device))
    return vw.reshape(sel, idx.shape)


def _tri_indices(op: str, row: int, col: int, offset: int, dtype, device, lower: bool):
    dtype = dtypes.int64 if dtype is None else dtypes.to_dtype(dtype)
    if dtype not in (dtypes.int64, dtypes.int32):
        raise NotImplementedError(f"{op}: \"{op}\" not implemented for "
                                  f"'{dtypes.torch_name(dtype)}' (expected int64 or int32)")
    for i, (name, v) in enumerate((("row", row), ("col", col), ("offset", offset))):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}(): argument '{name}' (position {i + 1}) must be int, not "
                            f"{_type_name(v)}")
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: expected row and col to be non-negative, got {row}, {col}")
    fn = np.tril_indices if lower else np.triu_indices
    rr, cc = fn(int(row), int(offset), int(col)) if row and col else ([], [])
    host = np.stack([np.asarray(rr, np.int64), np.asarray(cc, np.int64)]).reshape(2, -1)
    return creation.tensor(host, dtype=dtype, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (2, N) coordinates of the lower triangle (diagonal ``offset`` and below) of a
    ``row`` x ``col`` matrix, row by row: row indices then column indices. dtype int64
    (default) or int32. Raises NotImplementedError (a RuntimeError) for another dtype."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None) -> Tensor:
    """The (2, N) coordinates of the upper triangle (diagonal ``offset`` and above) of a
    ``row`` x ``col`` matrix, row by row. dtype int64 (default) or int32."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device, False)


# -- diag, diagflat, split_with_sizes, sum_to_size, ravel, broadcast_shapes -------------------
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """PyTorch's torch.diag: a 1-D input -> the square matrix with it on the ``diagonal``-th
    diagonal (zeros elsewhere); a 2-D input -> a copy of its ``diagonal``-th diagonal.
    Grad: input. Raises RuntimeError for other ranks."""
    if input.ndim == 1:
        return diag_embed(input, diagonal)
    if input.ndim == 2:
        return ew.clone(vw.diagonal(input, diagonal))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The square matrix with the flattened ``input`` on its ``offset``-th diagonal (PyTorch's
    torch.diagflat). Grad: input."""
    return diag_embed(vw.reshape(input, -1), offset)


def split_with_sizes(input: Tensor, split_sizes, dim: int = 0):
    """Views of consecutive pieces of the given sizes along ``dim`` (PyTorch's
    torch.split_with_sizes). Raises RuntimeError when the sizes do not add up to the dim's."""
    if isinstance(split_sizes, int) or not all(isinstance(s, (int, np.integer))
                                               for s in split_sizes):
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' must be a sequence of "
                        f"ints, got {split_sizes!r}")
    return vw.split(input, list(split_sizes), dim)


def sum_to_size(input: Tensor, *size) -> Tensor:
    """``input`` summed to ``size``, which must be expandable to input's shape (PyTorch's
    Tensor.sum_to_size). Grad: input. Raises RuntimeError for a size that is not."""
    shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    shape = tuple(int(s) for s in shape)
    full = tuple(input.shape)
    if len(shape) > len(full) or any(s not in (1, n) for s, n in zip(shape[::-1], full[::-1])):
        raise RuntimeError(f"sum_to_size: size {list(shape)} is not expandable to size "
                           f"{list(full)}")
    return ew.sum_to(input, shape)


def ravel(input: Tensor) -> Tensor:
    """``input`` flattened to 1-D: a view where the layout allows, else a copy (PyTorch's
    torch.ravel). Grad: input."""
    return vw.reshape(input, -1)


def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to (PyTorch's torch.broadcast_shapes;
    an int stands for a 1-D shape). Raises RuntimeError when they do not broadcast."""
    norm = [(int(s),) if isinstance(s, (int, np.integer)) else tuple(int(n) for n in s)
            for s in shapes]
    return Size(layout.broadcast_shapes(*norm, op="broadcast_shapes"))


__all__ += ["diag", "diagflat", "split_with_sizes", "sum_to_size", "ravel", "broadcast_shapes"]


def fill(input: Tensor, value) -> Tensor:
    """A tensor of input's shape, dtype and device filled with ``value`` (a number or a 0-dim
    tensor; PyTorch's functional torch.fill): ``masked_fill`` with an all-True mask.
    Grad: input zeros; a 0-dim tensor value: the sum of g (masked_fill's)."""
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with "
                           f"{value.ndim} dimensions.")
    everywhere = creation.ones((), dtype=dtypes.bool_, device=input._storage.device)
    return ew.masked_fill(input, everywhere, value)


__all__ += ["fill"]
