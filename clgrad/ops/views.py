"""Zero-copy view ops: each changes only shape, strides and storage_offset.

Backward rules: slicing-like views (narrow, select, getitem, diagonal, split, unbind) write the
gradient into the matching view of a zero tensor of the input's shape; permutes permute back;
reshapes reshape back; expand sums; overlapping views (unfold, as_strided) scatter-add, so
elements reached twice collect both gradients.
"""
from __future__ import annotations

import numbers

import numpy as np

from clgrad import layout
from clgrad.autograd import record
from clgrad.errors import IndexRangeError
from clgrad.ops import elementwise as ew
from clgrad.ops._util import defines_for, launch_1d
from clgrad.tensor import Tensor

__all__ = ["narrow", "select", "getitem", "view", "reshape", "permute", "transpose", "t",
           "expand", "unsqueeze", "squeeze", "flatten", "unflatten", "split", "chunk",
           "unbind", "unfold", "as_strided", "diagonal", "movedim", "copy_slices",
           "regenerate_view_grad_fn", "flip", "repeat"]


def _alias(x: Tensor, shape, strides, offset) -> Tensor:
    return Tensor(x._storage, shape, strides, offset,
                  base=x._base if x._base is not None else x)


def _zeros(shape, like: Tensor) -> Tensor:
    import clgrad
    return clgrad.zeros(shape, dtype=like.dtype, device=like.device)


def _scatter_back(x: Tensor, view_fn):
    """Backward of a non-overlapping view: g lands in view_fn(zeros of x's shape)."""
    shape = tuple(x.shape)  # the closure keeps the shape, not x (and so not x's buffer)

    def backward(g):
        z = _zeros(shape, g)
        ew.copy_raw(view_fn(z), g)
        return (z,)
    return backward


def _add_into(dst: Tensor, g: Tensor):
    """dst[view] += g elementwise, correct when dst's view overlaps itself."""
    launch_1d("index.cl", "scatter_add", defines_for(g.dtype), dst, (g,))


def _view_op(name, x, shape, strides, offset, backward):
    out = _alias(x, shape, strides, offset)
    return record(name, out, (x,), backward)


# -- slicing ----------------------------------------------------------------------------------
def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """Elements ``start .. start+length-1`` of ``dim``: a view. Negative ``start`` wraps.

    Raises IndexError for a bad dim; IndexRangeError (an IndexError and a RuntimeError) when
    the range leaves the dim.
    """
    d = layout.wrap_dim(dim, x.ndim, "narrow")
    size = x.shape[d]
    if not isinstance(start, int) or not isinstance(length, int):
        start, length = int(start), int(length)
    if start < 0:
        start += size
    if length < 0:
        raise IndexRangeError(f"narrow: expected length >= 0, got {length}")
    if start < 0 or start + length > size:
        raise IndexRangeError(f"narrow: start ({start}) + length ({length}) exceeds dimension "
                              f"size ({size}) of dim {d} (shape {tuple(x.shape)})")
    shape = list(x.shape)
    shape[d] = length
    offset = x._offset + start * x._strides[d]
    return _view_op("narrow", x, shape, x._strides, offset,
                    _scatter_back(x, lambda z: narrow(z, d, start, length)))


def select(x: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` of ``dim`` (that dim removed): a view."""
    d = layout.wrap_dim(dim, x.ndim, "select")
    if x.ndim == 0:
        raise IndexError("select: cannot select from a 0-dim tensor")
    size = x.shape[d]
    i = int(index)
    if i < -size or i >= size:
        raise IndexRangeError(f"select: index {index} is out of bounds for dimension {d} with "
                              f"size {size}")
    i = i + size if i < 0 else i
    shape = x.shape[:d] + x.shape[d + 1:]
    strides = x._strides[:d] + x._strides[d + 1:]
    return _view_op("select", x, shape, strides, x._offset + i * x._strides[d],
                    _scatter_back(x, lambda z: select(z, d, i)))


def _is_int_like(k) -> bool:
    if isinstance(k, bool):
        return False
    if isinstance(k, numbers.Integral):  # int, and NumPy's integer scalars
        return True
    return isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating_point \
        and not k.dtype.is_bool


def _basic_index(x: Tensor, key):
    """(shape, strides, offset) of x[key] for ints, slices, None and Ellipsis."""
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("getitem: an index can only have a single ellipsis ('...')")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > x.ndim:
        raise IndexError(f"getitem: too many indices for tensor of dimension {x.ndim} (got "
                         f"{consumed})")
    if n_ell == 0:
        key = key + (Ellipsis,)
    shape, strides, offset, d = [], [], x._offset, 0
    for k in key:
        if k is Ellipsis:
            for _ in range(x.ndim - consumed):
                shape.append(x.shape[d])
                strides.append(x._strides[d])
                d += 1
        elif k is None:
            shape.append(1)
            strides.append(0)  # fixed below
        elif isinstance(k, slice):
            size = x.shape[d]
            for part in (k.start, k.stop, k.step):
                if part is not None and not _is_int_like(part):
                    raise TypeError(f"getitem: slice indices must be integers or None, got "
                                    f"{type(part).__name__}")
            step = 1 if k.step is None else int(k.step)
            if step == 0:
                raise ValueError("getitem: slice step cannot be zero")
            start, stop, step = slice(None if k.start is None else int(k.start),
                                      None if k.stop is None else int(k.stop),
                                      step).indices(size)
            length = len(range(start, stop, step))
            if length > 0:
                offset += start * x._strides[d]
            shape.append(length)
            strides.append(x._strides[d] * step)
            d += 1
        elif _is_int_like(k):
            size = x.shape[d]
            i = int(k)
            if i < -size or i >= size:
                raise IndexRangeError(f"getitem: index {i} is out of bounds for dimension {d} "
                                      f"with size {size}")
            offset += (i + size if i < 0 else i) * x._strides[d]
            d += 1
        else:
            raise TypeError(f"getitem: expected int, slice, None, Ellipsis or an index tensor, "
                            f"got {type(k).__name__}")
    # A new axis (None) gets the stride unsqueeze gives it: the next dim's stride times size.
    for i in range(len(shape) - 1, -1, -1):
        if strides[i] == 0 and shape[i] == 1:
            strides[i] = strides[i + 1] * shape[i + 1] if i + 1 < len(shape) else 1
    return shape, strides, offset


def _needs_advanced(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (list, tuple, range, bool, Tensor)) and not _is_int_like(k)
               for k in keys) or \
        any(type(k).__module__ == "numpy" and (getattr(k, "ndim", 0) > 0 or
                                             getattr(k, "dtype", None) == np.bool_)
        for k in keys)


def getitem(x: Tensor, key) -> Tensor:
    """``x[key]``. Ints, slices (any step, negative too), None and Ellipsis give a view; an
    integer or bool index tensor (or list) gives a copy (see clgrad.ops.index.index)."""
    if _needs_advanced(key):
        from clgrad.ops import index
        return index.advanced_getitem(x, key)
    shape, strides, offset = _basic_index(x, key)
    return _view_op("getitem", x, shape, strides, offset,
                    _scatter_back(x, lambda z: getitem(z, key)))


# -- reshaping --------------------------------------------------------------------------------
def _infer_shape(op, shape, n):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred, got shape {tuple(shape)}")
    for s in shape:
        if not isinstance(s, int) or (s < 0 and s != -1):
            raise RuntimeError(f"{op}: invalid shape dimension {s} in {tuple(shape)}")
    if neg:
        rest = layout.numel([s for s in shape if s != -1])
        if rest == 0 or n % rest:
            raise RuntimeError(f"{op}: shape {tuple(shape)} is invalid for input of size {n}")
        shape[neg[0]] = n // rest
    if layout.numel(shape) != n:
        raise RuntimeError(f"{op}: shape {tuple(shape)} is invalid for input of size {n}")
    return tuple(shape)


def _shape_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(int(s) for s in shape)


def view(x: Tensor, *shape) -> Tensor:
    """The same elements with a new shape, without a copy (PyTorch's stride rule).

    Raises RuntimeError when the strides do not allow it (use reshape) or the size differs.
    """
    shape = _infer_shape("view", _shape_args(shape), x.numel())
    strides = layout.view_strides(tuple(x.shape), x._strides, shape)
    if strides is None:
        raise RuntimeError(f"view: cannot view shape {tuple(x.shape)} with strides "
                           f"{x._strides} as {shape} without a copy; use .reshape()")
    in_shape = tuple(x.shape)
    return _view_op("view", x, shape, strides, x._offset, lambda g: (reshape(g, in_shape),))


def reshape(x: Tensor, *shape) -> Tensor:
    """A view when the strides allow (as ``view``), else a contiguous copy (PyTorch's rule)."""
    shape = _infer_shape("reshape", _shape_args(shape), x.numel())
    if layout.view_strides(tuple(x.shape), x._strides, shape) is not None:
        return view(x, shape)
    return view(ew.contiguous(x), shape)


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when possible)."""
    if x.ndim == 0:
        return reshape(x, 1)
    s = layout.wrap_dim(start_dim, x.ndim, "flatten")
    e = layout.wrap_dim(end_dim, x.ndim, "flatten")
    if s > e:
        raise RuntimeError(f"flatten: start_dim ({s}) cannot come after end_dim ({e})")
    shape = x.shape[:s] + (layout.numel(x.shape[s:e + 1]),) + x.shape[e + 1:]
    return reshape(x, shape)


def unflatten(x: Tensor, dim: int, sizes) -> Tensor:
    """Split ``dim`` into ``sizes`` (one may be -1): a view."""
    d = layout.wrap_dim(dim, x.ndim, "unflatten")
    sizes = _infer_shape("unflatten", tuple(sizes), x.shape[d])
    return view(x, x.shape[:d] + sizes + x.shape[d + 1:])


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim`` (in ``[-ndim-1, ndim]``): a view."""
    d = layout.wrap_dim(dim, x.ndim + 1, "unsqueeze")
    st = x._strides[d] * x.shape[d] if d < x.ndim else 1
    shape = x.shape[:d] + (1,) + x.shape[d:]
    strides = x._strides[:d] + (st,) + x._strides[d:]
    in_shape = tuple(x.shape)
    return _view_op("unsqueeze", x, shape, strides, x._offset,
                    lambda g: (reshape(g, in_shape),))


def squeeze(x: Tensor, dim=None) -> Tensor:
    """Remove size-1 dims (all, one, or a tuple of dims; others are left as they are)."""
    if dim is None:
        dims = {i for i, s in enumerate(x.shape) if s == 1}
    else:
        dd = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {layout.wrap_dim(d, x.ndim, "squeeze") for d in dd} if x.ndim else set()
        dims = {d for d in dims if x.shape[d] == 1}
    shape = tuple(s for i, s in enumerate(x.shape) if i not in dims)
    strides = tuple(s for i, s in enumerate(x._strides) if i not in dims)
    in_shape = tuple(x.shape)
    return _view_op("squeeze", x, shape, strides, x._offset, lambda g: (reshape(g, in_shape),))


# -- permuting --------------------------------------------------------------------------------
def permute(x: Tensor, *dims) -> Tensor:
    """Reorder dims: a view. Raises RuntimeError for a repeated dim or a wrong count."""
    dims = _shape_args(dims)
    if len(dims) != x.ndim:
        raise RuntimeError(f"permute: number of dims don't match: input has {x.ndim} dims, got "
                           f"{len(dims)} ({dims})")
    dims = tuple(layout.wrap_dim(d, x.ndim, "permute") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"permute: repeated dim in {dims}")
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    shape = tuple(x.shape[d] for d in dims)
    strides = tuple(x._strides[d] for d in dims)
    return _view_op("permute", x, shape, strides, x._offset,
                    lambda g: (permute(g, *inv),))


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims: a view."""
    if x.ndim == 0:
        return x
    a = layout.wrap_dim(dim0, x.ndim, "transpose")
    b = layout.wrap_dim(dim1, x.ndim, "transpose")
    dims = list(range(x.ndim))
    dims[a], dims[b] = dims[b], dims[a]
    return permute(x, *dims)


def t(x: Tensor) -> Tensor:
    """Transpose of a tensor of at most 2 dims."""
    if x.ndim > 2:
        raise RuntimeError(f"t: expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return transpose(x, 0, 1) if x.ndim == 2 else x


def movedim(x: Tensor, source, destination) -> Tensor:
    """Move dims ``source`` to positions ``destination`` (ints or sequences): a view."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst})")
    src = [layout.wrap_dim(d, x.ndim, "movedim") for d in src]
    dst = [layout.wrap_dim(d, x.ndim, "movedim") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in source {src} or destination {dst}")
    order = [None] * x.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(x.ndim) if d not in src)
    order = [o if o is not None else next(rest) for o in order]
    return permute(x, *order)


# -- broadcasting -----------------------------------------------------------------------------
def expand(x: Tensor, *sizes) -> Tensor:
    """Broadcast size-1 dims (and new leading dims) to ``sizes`` with stride 0; -1 keeps a dim.

    Raises RuntimeError when a non-1 dim would change size. Grad: summed back.
    """
    sizes = _shape_args(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({x.ndim})")
    lead = len(sizes) - x.ndim
    shape, strides = [], []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"expand: -1 is not allowed in a leading, non-existing "
                                   f"dimension ({i})")
            shape.append(s)
            strides.append(0)
            continue
        n, st = x.shape[i - lead], x._strides[i - lead]
        if s == -1 or s == n:
            shape.append(n)
            strides.append(st)
        elif n == 1 and s >= 0:
            shape.append(s)
            strides.append(0)
        else:
            raise RuntimeError(f"expand: the expanded size of the tensor ({s}) must match the "
                               f"existing size ({n}) at non-singleton dimension {i}; target "
                               f"sizes {sizes}, tensor shape {tuple(x.shape)}")
    in_shape = tuple(x.shape)
    return _view_op("expand", x, shape, strides, x._offset,
                    lambda g: (ew.sum_to(g, in_shape),))


# -- splitting --------------------------------------------------------------------------------
def split(x: Tensor, split_size_or_sections, dim: int = 0):
    """Views of consecutive pieces along ``dim``: equal pieces of an int size (the last may be
    smaller) or the given list of sizes (which must add up to the dim)."""
    d = layout.wrap_dim(dim, x.ndim, "split")
    size = x.shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and size > 0:
            raise RuntimeError(f"split: split_size must be positive, got {step}")
        sizes = [min(step, size - i) for i in range(0, size, step)] if size else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size or any(s < 0 for s in sizes):
            raise RuntimeError(f"split: split_with_sizes expects split_sizes to sum exactly to "
                               f"{size} (input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(x, d, start, s))
        start += s
    return tuple(out)


def chunk(x: Tensor, chunks: int, dim: int = 0):
    """``chunks`` views along ``dim`` of size ceil(size/chunks) (the last may be smaller)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk: chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = layout.wrap_dim(dim, x.ndim, "chunk")
    size = x.shape[d]
    step = max(-(-size // chunks), 1)
    return split(x, step, d)


def unbind(x: Tensor, dim: int = 0):
    """A tuple of views, one per index of ``dim`` (that dim removed)."""
    d = layout.wrap_dim(dim, x.ndim, "unbind")
    return tuple(select(x, d, i) for i in range(x.shape[d]))


# -- overlapping and raw views ----------------------------------------------------------------
def _scatter_add_back(x: Tensor, view_fn, overlap: bool):
    if not overlap:
        return _scatter_back(x, view_fn)
    shape = tuple(x.shape)

    def backward(g):
        z = _zeros(shape, g)
        _add_into(view_fn(z), g)
        return (z,)
    return backward


def unfold(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """All windows of ``size`` along ``dimension`` taken every ``step``, as a new last dim."""
    d = layout.wrap_dim(dimension, x.ndim, "unfold") if x.ndim else 0
    n = x.shape[d] if x.ndim else 1
    if size < 0 or size > n:
        raise RuntimeError(f"unfold: maximum size for tensor at dimension {d} is {n} but size "
                           f"is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold: step is {step} but must be > 0")
    st = x._strides[d] if x.ndim else 1
    shape = list(x.shape)
    strides = list(x._strides)
    if x.ndim:
        shape[d] = (n - size) // step + 1
        strides[d] = st * step
    shape.append(size)
    strides.append(st)
    return _view_op("unfold", x, shape, strides, x._offset,
                    _scatter_add_back(x, lambda z: unfold(z, d, size, step), step < size))


def as_strided(x: Tensor, size, stride, storage_offset=None) -> Tensor:
    """A view with the given geometry in the storage's element coordinates (PyTorch).

    Raises RuntimeError when the view would reach outside the storage. Grad: scatter-added
    into the storage geometry, then read back through x's own layout, so elements reached by
    several view elements collect every gradient.
    """
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided: mismatch in length of strides and shape ({len(stride)} "
                           f"vs {len(size)})")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: negative sizes or strides are not supported, got size "
                           f"{size} stride {stride}")
    off = x._offset if storage_offset is None else int(storage_offset)
    ext = layout.extent(size, stride, off)
    if off < 0 or (ext is not None and ext[1] >= x._storage.size):
        raise RuntimeError(f"as_strided: setStorage: sizes {list(size)}, strides {list(stride)},"
                           f" storage offset {off} require a storage of at least "
                           f"{(ext[1] + 1) if ext else off} elements, but the storage has "
                           f"{x._storage.size}")
    overlap = layout.has_overlap(size, stride)
    x_geom = (tuple(x.shape), x._strides, x._offset)

    def backward(g):
        import clgrad
        z = clgrad.zeros(x._storage.size, dtype=g.dtype, device=g.device)
        target = _at(z, (size, stride, off))
        (_add_into if overlap else ew.copy_raw)(target, g)
        return (ew.contiguous(_at(z, x_geom)),)
    return _view_op("as_strided", x, size, stride, off, backward)


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dims (dim1, dim2) as a new last dim: a view."""
    a = layout.wrap_dim(dim1, x.ndim, "diagonal")
    b = layout.wrap_dim(dim2, x.ndim, "diagonal")
    if a == b:
        raise RuntimeError(f"diagonal: dimensions cannot be identical {dim1}, {dim2}")
    if offset >= 0:
        n = max(min(x.shape[a], x.shape[b] - offset), 0)
        start = x._offset + (offset * x._strides[b] if n else 0)
    else:
        n = max(min(x.shape[a] + offset, x.shape[b]), 0)
        start = x._offset + (-offset * x._strides[a] if n else 0)
    keep = [i for i in range(x.ndim) if i not in (a, b)]
    shape = [x.shape[i] for i in keep] + [n]
    strides = [x._strides[i] for i in keep] + [x._strides[a] + x._strides[b]]
    return _view_op("diagonal", x, shape, strides, start,
                    _scatter_back(x, lambda z: diagonal(z, offset, a, b)))


# -- autograd through writes into views -------------------------------------------------------
# Gradients of a root and of its views meet in a buffer of the storage's size, each tensor read
# or written through its own (shape, strides, offset), so nothing here depends on the root's
# layout. The closures keep these geometries only, never the tensors.
def _geometry(t: Tensor):
    return tuple(t.shape), t._strides, t._offset


def _at(buf: Tensor, geometry) -> Tensor:
    """A view of the 1-D buffer ``buf`` with ``geometry`` (shape, strides, offset)."""
    return Tensor(buf._storage, *geometry, base=buf)


def _storage_buffer(size: int, covered: bool, like: Tensor) -> Tensor:
    """A 1-D buffer of ``size`` elements; zeroed unless the caller writes every element."""
    import clgrad
    make = clgrad.empty if covered else clgrad.zeros
    return make(size, dtype=like.dtype, device=like.device)


def copy_slices(root: Tensor, v: Tensor, value: Tensor):
    """Rebase ``root``'s graph after ``value`` (of v's shape) was written into ``v``: root
    itself or a view of it. Root's new grad_fn sends its gradient to the root as it was, with
    v's region zeroed, and v's region to ``value``. A retain_grad() on root moves along."""
    root_geom, v_geom = _geometry(root), _geometry(v)
    whole = v is root
    size = root._storage.size
    covered = root.numel() == size  # a root owning its storage covers every element

    def backward(g):  # keeps geometry only: holding root would be a reference cycle
        if whole:
            return None, g
        buf = _storage_buffer(size, covered, g)
        ew.copy_raw(_at(buf, root_geom), g)
        region = _at(buf, v_geom)
        g_value = ew.clone(region)
        ew.fill_raw(region, 0)
        return ew.contiguous(_at(buf, root_geom)), g_value
    old = root._grad_fn
    record("copy_" if whole else "copy_slices", root, (root, value), backward)
    root._rebase += 1
    if root._retains_grad and old is not None and old.retained is not None:
        old.retained, root._grad_fn.retained = None, old.retained


def regenerate_view_grad_fn(v: Tensor):
    """Give the view ``v`` a grad_fn from its root's current one (after the root was written
    in place): as_strided of the root, so its gradient is scattered (added, where v overlaps
    itself) into the root's geometry."""
    root = v._base
    v._rebase_seen = root._rebase
    v._grad_fn = None
    v._requires_grad = False
    root_geom, v_geom = _geometry(root), _geometry(v)
    overlap = layout.has_overlap(v_geom[0], v_geom[1])
    size = root._storage.size

    def backward(g):
        buf = _storage_buffer(size, False, g)
        (_add_into if overlap else ew.copy_raw)(_at(buf, v_geom), g)
        return (ew.contiguous(_at(buf, root_geom)),)
    from clgrad.autograd import enable_grad
    with enable_grad():  # the view's grad_fn must exist even if first asked for in no_grad
        record("as_strided", v, (root,), backward)


def flip(x: Tensor, dims) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as PyTorch's flip).

    Built as a negative-stride view (zero-copy) that is then made contiguous, so the result
    never aliases ``x``. Grad: flipped back.
    """
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    key = [slice(None)] * x.ndim
    for d in dims:
        key[layout.wrap_dim(d, x.ndim, "flip")] = slice(None, None, -1)
    return ew.contiguous(getitem(x, tuple(key)), force_copy=True)


def repeat(x: Tensor, *sizes) -> Tensor:
    """Tile ``x`` ``sizes[i]`` times along each dim (a copy; PyTorch's Tensor.repeat).

    Shapes: (*S) with len(sizes) >= len(S) -> (sizes[i] * S'[i]) with S left-padded by 1s.
    """
    sizes = _shape_args(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError(f"repeat: number of dimensions of repeat dims ({len(sizes)}) can not "
                           f"be smaller than number of dimensions of tensor ({x.ndim})")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"repeat: expected non-negative repeats, got {sizes}")
    src = reshape(x, (1,) * (len(sizes) - x.ndim) + tuple(x.shape))
    inter, target = [], []
    for r, n in zip(sizes, src.shape):
        inter += [1, n]
        target += [r, n]
    tiled = expand(reshape(src, inter), target)
    return reshape(ew.contiguous(tiled, force_copy=True),
                   tuple(r * n for r, n in zip(sizes, src.shape)))
