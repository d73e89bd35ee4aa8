"""Layout math: shapes, strides (in elements) and offsets. Pure Python, no device, no autograd.

Each function takes and returns plain tuples so it can be tested against NumPy directly
(tests/test_layout.py). This is the one home of view geometry: narrow, select, basic indexing,
unsqueeze/squeeze, permute, expand, unfold, diagonal and as_strided map (shape, strides,
offset, args) to the view's (shape, strides, offset); clgrad/ops/views.py wraps them.
"""
from __future__ import annotations

import numbers

from clgrad.errors import IndexRangeError, ShapeError

__all__ = ["contiguous_strides", "broadcast_shapes", "collapse", "view_strides", "numel",
           "wrap_dim", "is_contiguous", "has_overlap", "extent", "cdiv", "narrow", "select",
           "basic_index", "unsqueeze", "squeeze", "permute", "expand", "unfold", "diagonal",
           "as_strided"]


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for integers, b > 0 (tile and work-group counts)."""
    return -(-a // b)


def numel(shape) -> int:
    """Number of elements of ``shape``."""
    n = 1
    for s in shape:
        n *= s
    return n


def contiguous_strides(shape) -> tuple:
    """Row-major strides (elements) of ``shape``."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def is_contiguous(shape, strides) -> bool:
    """True when ``strides`` are row-major for ``shape`` (size-1 dims may have any stride)."""
    acc = 1
    for s, st in zip(reversed(shape), reversed(strides)):
        if s == 0:
            return True
        if s != 1 and st != acc:
            return False
        acc *= s
    return True


def wrap_dim(dim, ndim: int, op: str = "dim") -> int:
    """A dim in ``[-ndim, ndim)`` as a non-negative index; a NumPy integer is taken as its
    int (as PyTorch takes it). Raises TypeError for another type (bool included), IndexError
    out of range (PyTorch's)."""
    if type(dim) is not int:
        if isinstance(dim, bool) or not (isinstance(dim, int) or (
                isinstance(dim, numbers.Integral) and type(dim).__module__ == "numpy")):
            raise TypeError(f"{op}: expected dim to be an int, got {type(dim).__name__}")
        dim = int(dim)
    lo, hi = (-max(ndim, 1), max(ndim, 1) - 1)
    if dim < lo or dim > hi:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of "
                         f"[{lo}, {hi}], but got {dim})")
    return dim + ndim if dim < 0 else dim


def wrap_dims(dims, ndim: int, op: str = "dim") -> tuple:
    """Each of ``dims`` (a sequence) wrapped by wrap_dim, in their order. Raises as wrap_dim,
    and RuntimeError for a dim named twice (``flip((1, -1))``, PyTorch's)."""
    dd = tuple(wrap_dim(d, ndim, op) for d in dims)
    if len(set(dd)) != len(dd):
        raise RuntimeError(f"{op}: dim {dd} appears multiple times in the list of dims")
    return dd


def broadcast_shapes(*shapes, op: str = "broadcast") -> tuple:
    """NumPy broadcasting of ``shapes``. Raises ShapeError (a ValueError and a RuntimeError)
    naming both shapes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s):
            j = ndim - len(s) + i
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                shown = " and ".join(str(tuple(x)) for x in shapes)
                raise ShapeError(f"{op}: shapes {shown} are not broadcastable (size {n} vs "
                                 f"{out[j]} at dim {j})")
    return tuple(out)


def collapse(shape, *stride_sets):
    """Merge adjacent dims that are contiguous with each other in every operand; drop size-1 dims.

    Returns ``(shape, [strides, ...])`` with at least one dim. Used before every launch so that
    contiguous tensors are indexed as 1-D and kernels stay within MAXD dims.
    """
    dims = [i for i, n in enumerate(shape) if n != 1]
    if not dims:
        return (1,), [(0,) for _ in stride_sets]
    new_shape = [shape[dims[0]]]
    new_strides = [[st[dims[0]]] for st in stride_sets]
    for d in dims[1:]:
        n = shape[d]
        if all(ns[-1] == st[d] * n for ns, st in zip(new_strides, stride_sets)):
            new_shape[-1] *= n
            for ns, st in zip(new_strides, stride_sets):
                ns[-1] = st[d]
        else:
            new_shape.append(n)
            for ns, st in zip(new_strides, stride_sets):
                ns.append(st[d])
    return tuple(new_shape), [tuple(ns) for ns in new_strides]


def view_strides(shape, strides, new_shape):
    """Strides for viewing (``shape``, ``strides``) as ``new_shape`` without a copy, else None.

    The rule is PyTorch's (``computeStride``): dims may be split or merged only within chunks
    that are contiguous with each other.
    """
    if numel(shape) == 0:
        return contiguous_strides(new_shape)
    if not shape:  # a 0-dim tensor: one element, as a 1-element dim of stride 1
        shape, strides = (1,), (1,)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1] if strides else 1
    tensor_numel, view_numel = 1, 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        if tensor_d == 0 or (shape[tensor_d - 1] != 1 and
                             strides[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel, view_numel = 1, 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def extent(shape, strides, offset):
    """(lowest, highest) element index a view touches; None for an empty view."""
    if numel(shape) == 0:
        return None
    lo = hi = offset
    for n, st in zip(shape, strides):
        if st > 0:
            hi += (n - 1) * st
        else:
            lo += (n - 1) * st
    return lo, hi


def has_overlap(shape, strides) -> bool:
    """True when two different indices of the view may address the same element.

    Exact for the common cases (a stride 0 on a dim of size > 1, or strides that nest like a
    permuted dense layout); conservative (True) when unsure.
    """
    dims = sorted(((abs(st), n) for n, st in zip(shape, strides) if n > 1), key=lambda t: t[0])
    if any(st == 0 for st, _ in dims):
        return True
    span = 1  # every dim must start beyond the reach of the dims below it
    for st, n in dims:
        if st < span:
            return True
        span = st * (n - 1) + span
    return False


# -- view geometry: (shape, strides, offset, args) -> (shape, strides, offset) ----------------
# clgrad/ops/views.py wraps these around a tensor (and adds the backward); errors name the op.
def narrow(shape, strides, offset, dim, start, length):
    """Elements ``start .. start+length-1`` of ``dim``; a negative ``start`` wraps."""
    d = wrap_dim(dim, len(shape), "narrow")
    size = shape[d]
    if not isinstance(start, int) or not isinstance(length, int):
        start, length = int(start), int(length)
    if start < 0:
        start += size
    if length < 0:
        raise IndexRangeError(f"narrow: expected length >= 0, got {length}")
    if start < 0 or start + length > size:
        raise IndexRangeError(f"narrow: start ({start}) + length ({length}) exceeds dimension "
                              f"size ({size}) of dim {d} (shape {tuple(shape)})")
    new = list(shape)
    new[d] = length
    return tuple(new), tuple(strides), offset + start * strides[d]


def select(shape, strides, offset, dim, index):
    """The slice at ``index`` of ``dim``, that dim removed."""
    d = wrap_dim(dim, len(shape), "select")
    if not shape:
        raise IndexError("select: cannot select from a 0-dim tensor")
    size = shape[d]
    i = int(index)
    if i < -size or i >= size:
        raise IndexRangeError(f"select: index {index} is out of bounds for dimension {d} with "
                              f"size {size}")
    i = i + size if i < 0 else i
    return (tuple(shape[:d]) + tuple(shape[d + 1:]), tuple(strides[:d]) + tuple(strides[d + 1:]),
            offset + i * strides[d])


def _is_int(k) -> bool:
    return isinstance(k, numbers.Integral) and not isinstance(k, bool)


def basic_index(shape, strides, offset, key):
    """``x[key]`` for ints, slices (any step), None and Ellipsis (NumPy's basic indexing)."""
    ndim = len(shape)
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > ndim:
        raise IndexError(f"getitem: too many indices for tensor of dimension {ndim} (got "
                         f"{consumed})")
    if n_ell == 0:
        key = key + (Ellipsis,)
    new_shape, new_strides, d = [], [], 0
    for k in key:
        if k is Ellipsis:
            for _ in range(ndim - consumed):
                new_shape.append(shape[d])
                new_strides.append(strides[d])
                d += 1
        elif k is None:
            new_shape.append(1)
            new_strides.append(0)  # fixed below
        elif isinstance(k, slice):
            for part in (k.start, k.stop, k.step):
                if part is not None and not _is_int(part):
                    raise TypeError(f"getitem: slice indices must be integers or None, got "
                                    f"{type(part).__name__}")
            step = 1 if k.step is None else int(k.step)
            if step == 0:
                raise ValueError("getitem: slice step cannot be zero")
            start, stop, step = slice(None if k.start is None else int(k.start),
                                      None if k.stop is None else int(k.stop),
                                      step).indices(shape[d])
            length = len(range(start, stop, step))
            if length > 0:
                offset += start * strides[d]
            new_shape.append(length)
            new_strides.append(strides[d] * step)
            d += 1
        elif _is_int(k):
            size = shape[d]
            i = int(k)
            if i < -size or i >= size:
                raise IndexRangeError(f"getitem: index {i} is out of bounds for dimension {d} "
                                      f"with size {size}")
            offset += (i + size if i < 0 else i) * strides[d]
            d += 1
        else:
            raise TypeError(f"getitem: expected int, slice, None, Ellipsis or an index tensor, "
                            f"got {type(k).__name__}")
    # A new axis (None) gets the stride unsqueeze gives it: the next dim's stride times size.
    for i in range(len(new_shape) - 1, -1, -1):
        if new_strides[i] == 0 and new_shape[i] == 1:
            new_strides[i] = (new_strides[i + 1] * new_shape[i + 1] if i + 1 < len(new_shape)
                              else 1)
    return tuple(new_shape), tuple(new_strides), offset


def unsqueeze(shape, strides, offset, dim):
    """A size-1 dim inserted at ``dim`` (in ``[-ndim-1, ndim]``), with PyTorch's stride."""
    d = wrap_dim(dim, len(shape) + 1, "unsqueeze")
    st = strides[d] * shape[d] if d < len(shape) else 1
    return (tuple(shape[:d]) + (1,) + tuple(shape[d:]),
            tuple(strides[:d]) + (st,) + tuple(strides[d:]), offset)


def squeeze(shape, strides, offset, dim=None):
    """Size-1 dims removed: all, one, or a tuple of dims (others are left as they are)."""
    if dim is None:
        dims = {i for i, s in enumerate(shape) if s == 1}
    else:
        dd = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = set(wrap_dims(dd, len(shape), "squeeze")) if shape else set()
        dims = {d for d in dims if shape[d] == 1}
    return (tuple(s for i, s in enumerate(shape) if i not in dims),
            tuple(s for i, s in enumerate(strides) if i not in dims), offset)


def permute(shape, strides, offset, dims):
    """Dims reordered: dim i of the result is dim ``dims[i]``."""
    ndim = len(shape)
    if len(dims) != ndim:
        raise RuntimeError(f"permute: number of dims don't match: input has {ndim} dims, got "
                           f"{len(dims)} ({tuple(dims)})")
    dims = tuple(wrap_dim(d, ndim, "permute") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"permute: repeated dim in {dims}")
    return tuple(shape[d] for d in dims), tuple(strides[d] for d in dims), offset


def expand(shape, strides, offset, sizes):
    """Size-1 dims (and new leading dims) broadcast to ``sizes`` with stride 0; -1 keeps a
    dim. Raises RuntimeError when a non-1 dim would change size."""
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({len(shape)})")
    new_shape, new_strides = [], []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing "
                                   f"dimension ({i})")
            new_shape.append(s)
            new_strides.append(0)
            continue
        n, st = shape[i - lead], strides[i - lead]
        if s == -1 or s == n:
            new_shape.append(n)
            new_strides.append(st)
        elif n == 1 and s >= 0:
            new_shape.append(s)
            new_strides.append(0)
        else:
            raise RuntimeError(f"expand: the expanded size of the tensor ({s}) must match the "
                               f"existing size ({n}) at non-singleton dimension {i}; target "
                               f"sizes {sizes}, tensor shape {tuple(shape)}")
    return tuple(new_shape), tuple(new_strides), offset


def unfold(shape, strides, offset, dimension, size, step):
    """All windows of ``size`` along ``dimension`` taken every ``step``, as a new last dim."""
    ndim = len(shape)
    d = wrap_dim(dimension, ndim, "unfold") if ndim else 0
    n = shape[d] if ndim else 1
    if size < 0 or size > n:
        raise RuntimeError(f"unfold: maximum size for tensor at dimension {d} is {n} but size "
                           f"is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold: step is {step} but must be > 0")
    st = strides[d] if ndim else 1
    new_shape, new_strides = list(shape), list(strides)
    if ndim:
        new_shape[d] = (n - size) // step + 1
        new_strides[d] = st * step
    return tuple(new_shape) + (size,), tuple(new_strides) + (st,), offset


def diagonal(shape, strides, offset, diag=0, dim1=0, dim2=1):
    """The diagonal ``diag`` of dims (dim1, dim2) as a new last dim."""
    ndim = len(shape)
    a = wrap_dim(dim1, ndim, "diagonal")
    b = wrap_dim(dim2, ndim, "diagonal")
    if a == b:
        raise RuntimeError(f"diagonal: dimensions cannot be identical {dim1}, {dim2}")
    if diag >= 0:
        n = max(min(shape[a], shape[b] - diag), 0)
        start = offset + (diag * strides[b] if n else 0)
    else:
        n = max(min(shape[a] + diag, shape[b]), 0)
        start = offset + (-diag * strides[a] if n else 0)
    keep = [i for i in range(ndim) if i not in (a, b)]
    return (tuple(shape[i] for i in keep) + (n,),
            tuple(strides[i] for i in keep) + (strides[a] + strides[b],), start)


def as_strided(storage_size, offset, size, stride, storage_offset=None):
    """The view (size, stride, storage_offset or ``offset``) of a storage of ``storage_size``
    elements. Raises RuntimeError when it would reach outside the storage."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided: mismatch in length of strides and shape ({len(stride)} "
                           f"vs {len(size)})")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: negative sizes or strides are not supported, got size "
                           f"{size} stride {stride}")
    off = offset if storage_offset is None else int(storage_offset)
    ext = extent(size, stride, off)
    if off < 0 or (ext is not None and ext[1] >= storage_size):
        raise RuntimeError(f"as_strided: setStorage: sizes {list(size)}, strides {list(stride)},"
                           f" storage offset {off} require a storage of at least "
                           f"{(ext[1] + 1) if ext else off} elements, but the storage has "
                           f"{storage_size}")
    return size, stride, off
