"""Zero-copy view ops: each changes only shape, strides and storage_offset. The geometry of
each view is a pure function of clgrad/layout.py; this module wraps it around a tensor and adds
the backward.

Backward rules: slicing-like views (narrow, select, getitem, diagonal) write the gradient into
the matching view of a zero tensor of the input's shape; the pieces of a split/chunk/unbind
share one backward that writes all their gradients into one buffer; permutes permute back;
reshapes reshape back; expand sums; overlapping views (unfold, as_strided) scatter-add, so
elements reached twice collect both gradients.
"""
from __future__ import annotations

import numbers

import numpy as np

from clgrad import dtypes, layout
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops._util import empty, zeros
from clgrad.ops.inplace import _add_into, _at
from clgrad.ops.inplace import copy_slices, regenerate_view_grad_fn  # noqa: F401 (moved)
from clgrad.tensor import Tensor

__all__ = ["narrow", "select", "getitem", "view", "reshape", "permute", "transpose", "t",
           "expand", "unsqueeze", "squeeze", "flatten", "unflatten", "split", "chunk",
           "unbind", "unfold", "as_strided", "diagonal", "movedim", "copy_slices",
           "regenerate_view_grad_fn", "flip", "repeat"]


def _alias(x: Tensor, shape, strides, offset) -> Tensor:
    return Tensor(x._storage, shape, strides, offset,
                  base=x._base if x._base is not None else x)


def _scatter_back(x: Tensor, view_fn):
    """Backward of a non-overlapping view: g lands in view_fn(zeros of x's shape). Its
    ``double`` attribute is the same, recorded (create_graph): the scattered gradient's own
    backward is the view again."""
    shape = tuple(x.shape)  # the closure keeps the shape, not x (and so not x's buffer)

    def backward(g):
        z = zeros(shape, g.dtype, g._storage.device)
        ew.copy_raw(view_fn(z), g)
        return (z,)
    backward.double = lambda g, node: (record(f"{node.name}_backward", backward(g)[0], (g,),
                                              lambda gz: (view_fn(gz),), double=True),)
    return backward


def _view_op(name, x, shape, strides, offset, backward, double=True):
    """``x``'s alias of the given geometry, recorded as ``name`` with ``backward``; its
    ``double`` (create_graph): True (backward is made of recording ops: the reshapes,
    permutes and expand) unless backward carries its own (the scattering views)."""
    out = _alias(x, shape, strides, offset)
    return record(name, out, (x,), backward, double=getattr(backward, "double", double))


# -- slicing ----------------------------------------------------------------------------------
def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    """Elements ``start .. start+length-1`` of ``dim``: a view. Negative ``start`` wraps.

    Raises IndexError for a bad dim; IndexRangeError (an IndexError and a RuntimeError) when
    the range leaves the dim.
    """
    shape, strides, offset = layout.narrow(x._shape, x._strides, x._offset, dim, start, length)
    if x._base is None and not x._requires_grad:  # no Node can come of it (record's fast exit):
        return _alias(x, shape, strides, offset)   # no backward closure (cat's backward)
    return _view_op("narrow", x, shape, strides, offset,
                    _scatter_back(x, lambda z: narrow(z, dim, start, length)))


def select(x: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` of ``dim`` (that dim removed): a view."""
    shape, strides, offset = layout.select(x.shape, x._strides, x._offset, dim, index)
    return _view_op("select", x, shape, strides, offset,
                    _scatter_back(x, lambda z: select(z, dim, index)))


def _is_int_like(k) -> bool:
    if isinstance(k, bool):
        return False
    if isinstance(k, numbers.Integral):  # int, and NumPy's integer scalars
        return True
    return isinstance(k, Tensor) and k.ndim == 0 and not k.dtype.is_floating_point \
        and not k.dtype.is_bool


def _int_key(key):
    """key with 0-dim integer tensors (also inside slices) as ints, for layout.basic_index."""
    if isinstance(key, tuple):
        return tuple(_int_part(k) for k in key) if any(map(_has_tensor, key)) else key
    return _int_part(key) if _has_tensor(key) else key


def _has_tensor(k) -> bool:
    if isinstance(k, slice):
        return isinstance(k.start, Tensor) or isinstance(k.stop, Tensor) or \
            isinstance(k.step, Tensor)
    return isinstance(k, Tensor)


def _int_part(k):
    if isinstance(k, slice):
        return slice(_int_part(k.start), _int_part(k.stop), _int_part(k.step))
    return int(k) if isinstance(k, Tensor) and _is_int_like(k) else k


def _needs_advanced(key) -> bool:
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (list, tuple, range, bool, Tensor)) and not _is_int_like(k)
               for k in keys) or \
        any(type(k).__module__ == "numpy" and (getattr(k, "ndim", 0) > 0 or
                                             getattr(k, "dtype", None) == np.bool_)
        for k in keys)


def getitem(x: Tensor, key) -> Tensor:
    """``x[key]`` for a basic key: ints, slices (any step, negative too), None and Ellipsis
    give a view. ``x[key]`` itself is clgrad.ops.indexing.getitem, which sends keys with an
    integer or bool index tensor (or list) to advanced_getitem (a copy).

    Raises:  IndexError/TypeError/ValueError for an index out of range, too many indices, a
             zero slice step or an entry of another type (an index tensor included)."""
    shape, strides, offset = layout.basic_index(x.shape, x._strides, x._offset, _int_key(key))
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

    Raises RuntimeError when the strides do not allow it (use reshape) or the size differs;
    TypeError for ``view(dtype)`` (PyTorch's reinterpretation of the bits as another dtype:
    clgrad's storage has one dtype; ``.to(dtype)`` converts the values).
    """
    if len(shape) == 1 and isinstance(shape[0], dtypes.DType):
        raise TypeError(f"view: viewing the bits of a {x.dtype.name} tensor as {shape[0].name} "
                        f"(view(dtype)) is not supported in clgrad; .to({shape[0].name}) "
                        f"converts the values instead")
    shape = _infer_shape("view", _shape_args(shape), x.numel())
    strides = layout.view_strides(tuple(x.shape), x._strides, shape)
    if strides is None:
        raise RuntimeError(f"view: cannot view shape {tuple(x.shape)} with strides "
                           f"{x._strides} as {shape} without a copy; use .reshape()")
    in_shape = tuple(x.shape)
    return _view_op("view", x, shape, strides, x._offset, lambda g: (reshape(g, in_shape),))


def reshape(x: Tensor, *shape) -> Tensor:
    """A view when the strides allow (as ``view``), else a contiguous copy (PyTorch's rule)."""
    shape = _infer_shape("reshape", _shape_args(shape), layout.numel(x._shape))
    in_shape = tuple(x._shape)
    strides = layout.view_strides(in_shape, x._strides, shape)
    if strides is not None:  # view's result, its checks made here once
        return _view_op("view", x, shape, strides, x._offset,
                        lambda g: (reshape(g, in_shape),))
    return view(ew.contiguous(x), shape)


def flatten(x: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when possible)."""
    xs = x._shape  # (the slot: no property calls)
    nd = len(xs)
    if nd == 0:
        return reshape(x, 1)
    s = layout.wrap_dim(start_dim, nd, "flatten")
    e = layout.wrap_dim(end_dim, nd, "flatten")
    if s > e:
        raise RuntimeError(f"flatten: start_dim ({s}) cannot come after end_dim ({e})")
    return reshape(x, (*xs[:s], layout.numel(xs[s:e + 1]), *xs[e + 1:]))


def unflatten(x: Tensor, dim: int, sizes) -> Tensor:
    """Split ``dim`` into ``sizes`` (one may be -1): a view."""
    d = layout.wrap_dim(dim, x.ndim, "unflatten")
    sizes = _infer_shape("unflatten", tuple(sizes), x.shape[d])
    return view(x, x.shape[:d] + sizes + x.shape[d + 1:])


def unsqueeze(x: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim`` (in ``[-ndim-1, ndim]``): a view."""
    shape, strides, offset = layout.unsqueeze(x.shape, x._strides, x._offset, dim)
    in_shape = tuple(x.shape)
    return _view_op("unsqueeze", x, shape, strides, offset, lambda g: (reshape(g, in_shape),))


def squeeze(x: Tensor, dim=None) -> Tensor:
    """Remove size-1 dims (all, one, or a tuple of dims; others are left as they are)."""
    shape, strides, offset = layout.squeeze(x.shape, x._strides, x._offset, dim)
    in_shape = tuple(x.shape)
    return _view_op("squeeze", x, shape, strides, offset, lambda g: (reshape(g, in_shape),))


# -- permuting --------------------------------------------------------------------------------
def permute(x: Tensor, *dims) -> Tensor:
    """Reorder dims: a view. Raises RuntimeError for a repeated dim or a wrong count."""
    dims = _shape_args(dims)
    shape, strides, offset = layout.permute(x.shape, x._strides, x._offset, dims)
    inv = sorted(range(len(dims)), key=lambda i: dims[i] % len(dims))
    return _view_op("permute", x, shape, strides, offset, lambda g: (permute(g, *inv),))


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
    shape, strides, offset = layout.expand(x.shape, x._strides, x._offset, sizes)
    in_shape = tuple(x.shape)
    return _view_op("expand", x, shape, strides, offset, lambda g: (ew.sum_to(g, in_shape),))


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
    if len(sizes) == 1:
        return (narrow(x, d, 0, sizes[0]),)
    out, bounds, start = [], [], 0
    for s in sizes:
        out.append(_alias(x, *layout.narrow(x.shape, x._strides, x._offset, d, start, s)))
        bounds.append((start, s))
        start += s
    _record_pieces(x, tuple(out), "split",
                   lambda z, i: layout.narrow(z.shape, z._strides, z._offset, d, *bounds[i]))
    return tuple(out)


def _record_pieces(x: Tensor, pieces, name: str, geometry):
    """One backward for all the pieces of a split or an unbind (PyTorch's SplitBackward0 /
    UnbindBackward0, through the engine's multi-output Node): their gradients are copied into
    one buffer of x's shape, zeroed first only where a piece got none (one narrow or select
    per piece zero-filled x's whole shape for each piece, and the engine added them).
    ``geometry(z, i)``: (shape, strides, offset) of piece i in a tensor z of x's shape."""
    from clgrad.autograd import is_grad_enabled
    from clgrad.autograd.graph import Node, _edge
    if not is_grad_enabled():
        return
    edge = _edge(x)
    if edge is None:
        return
    shape = tuple(x.shape)  # the closure keeps geometry only, not x

    def backward(grads):  # one entry per piece, None where it got no gradient
        g0 = next(g for g in grads if g is not None)
        covered = all(g is not None for g in grads)
        z = (empty if covered else zeros)(shape, g0.dtype, g0._storage.device)
        for i, g in enumerate(grads):
            if g is not None and g.numel():
                ew.copy_raw(Tensor(z._storage, *geometry(z, i), base=z), g)
        return (z,)

    def double(grads, node):  # create_graph: z recorded, its backward the pieces again
        def pieces_of(gz):
            return tuple(None if g is None else Tensor(gz._storage, *geometry(gz, i))
                         for i, g in enumerate(grads))
        return (record(f"{name}_backward", backward(grads)[0], tuple(grads), pieces_of,
                       double=lambda gz, _: tuple(
                           None if g is None else _piece(gz, geometry, i)
                           for i, g in enumerate(grads))),)
    central = Node(name, (edge,), backward, (), ((shape, x._storage.dtype, x._storage.device),))
    central.n_outputs = len(pieces)
    central.double = double
    for slot, o in enumerate(pieces):  # one Node per piece routes its gradient to its slot
        node = Node(name, (central,), _pass, (), ((tuple(o.shape), o.dtype, o._storage.device),))
        node.slot = slot
        node.double = True
        o._requires_grad, o._grad_fn = True, node


def _pass(g):
    return (g,)


def _piece(z, geometry, i):
    """Piece ``i`` of ``z`` (``geometry(z, i)``) as a recorded view of it (create_graph), its
    backward the scatter into zeros, recorded again under create_graph (every order flows)."""
    shape, strides, offset = geometry(z, i)
    zshape = tuple(z.shape)

    def scattered(g, node):
        return (record("as_strided_backward", _scatter_piece(g.detach(), zshape, geometry, i),
                       (g,), lambda gz: (_piece(gz, geometry, i),), double=True),)
    return _view_op("as_strided", z, shape, strides, offset,
                    lambda g: (_scatter_piece(g, zshape, geometry, i),), double=scattered)


def _scatter_piece(g, shape, geometry, i):
    z = zeros(tuple(shape), g.dtype, g._storage.device)
    ew.copy_raw(Tensor(z._storage, *geometry(z, i)), g)
    return z


def chunk(x: Tensor, chunks: int, dim: int = 0):
    """``chunks`` views along ``dim`` of size ceil(size/chunks) (the last may be smaller).

    A dim of size 0 gives ``chunks`` empty views (ATen's chunk)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk: chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = layout.wrap_dim(dim, x.ndim, "chunk")
    size = x.shape[d]
    if size == 0:
        return split(x, [0] * chunks, d)
    step = max(layout.cdiv(size, chunks), 1)
    return split(x, step, d)


def unbind(x: Tensor, dim: int = 0):
    """A tuple of views, one per index of ``dim`` (that dim removed)."""
    d = layout.wrap_dim(dim, x.ndim, "unbind")
    n = x.shape[d]
    if n < 2:
        return tuple(select(x, d, i) for i in range(n))
    pieces = tuple(_alias(x, *layout.select(x.shape, x._strides, x._offset, d, i))
                   for i in range(n))
    _record_pieces(x, pieces, "unbind", lambda z, i: layout.select(z.shape, z._strides,
                                                                    z._offset, d, i))
    return pieces


# -- overlapping and raw views ----------------------------------------------------------------
def _scatter_add_back(x: Tensor, view_fn, overlap: bool):
    if not overlap:
        return _scatter_back(x, view_fn)
    shape = tuple(x.shape)

    def backward(g):
        z = zeros(shape, g.dtype, g._storage.device)
        _add_into(view_fn(z), g)
        return (z,)
    # create_graph: the scatter-added gradient recorded; its adjoint is the view again
    backward.double = lambda g, node: (record(f"{node.name}_backward", backward(g)[0], (g,),
                                              lambda gz: (view_fn(gz),), double=True),)
    return backward


def unfold(x: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """All windows of ``size`` along ``dimension`` taken every ``step``, as a new last dim."""
    shape, strides, offset = layout.unfold(x.shape, x._strides, x._offset, dimension, size,
                                           step)
    return _view_op("unfold", x, shape, strides, offset,
                    _scatter_add_back(x, lambda z: unfold(z, dimension, size, step),
                                      step < size))


def as_strided(x: Tensor, size, stride, storage_offset=None) -> Tensor:
    """A view with the given geometry in the storage's element coordinates (PyTorch).

    Raises RuntimeError when the view would reach outside the storage. Grad: scatter-added
    into the storage geometry, then read back through x's own layout, so elements reached by
    several view elements collect every gradient; differentiable again (create_graph: that
    recorded, its backward the same with the two geometries swapped).
    """
    size, stride, off = layout.as_strided(x._storage.size, x._offset, size, stride,
                                          storage_offset)
    overlap = layout.has_overlap(size, stride)
    x_geom = (tuple(x.shape), x._strides, x._offset)

    def backward(g):
        z = zeros(x._storage.size, g.dtype, g._storage.device)
        target = _at(z, (size, stride, off))
        (_add_into if overlap else ew.copy_raw)(target, g)
        return (ew.contiguous(_at(z, x_geom)),)
    n = x._storage.size
    return _view_op("as_strided", x, size, stride, off, backward,
                    double=lambda g, node: (_restrided(g, (size, stride, off), x_geom, n),))


def _restrided(g: Tensor, src, dst, n: int) -> Tensor:
    """``g`` (laid out as the geometry ``src`` in a storage of ``n`` elements) added into
    zeros of that storage and read back through the geometry ``dst`` (a new tensor),
    recorded (create_graph): linear in g, its backward the same with src and dst swapped
    (scatter-add and gather are each other's adjoints), so every order flows."""
    z = zeros(n, g.dtype, g._storage.device)
    (_add_into if layout.has_overlap(src[0], src[1]) else ew.copy_raw)(_at(z, src), g.detach())
    return record("as_strided_backward", ew.contiguous(_at(z, dst)), (g,),
                  lambda gg: (_restrided(gg, dst, src, n),), double=True)


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of dims (dim1, dim2) as a new last dim: a view."""
    shape, strides, start = layout.diagonal(x.shape, x._strides, x._offset, offset, dim1, dim2)
    return _view_op("diagonal", x, shape, strides, start,
                    _scatter_back(x, lambda z: diagonal(z, offset, dim1, dim2)))


def flip(x: Tensor, dims) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as PyTorch's flip).

    Built as a negative-stride view (zero-copy) that is then made contiguous, so the result
    never aliases ``x``. Grad: flipped back.
    """
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    key = [slice(None)] * x.ndim
    for d in layout.wrap_dims(dims, x.ndim, "flip"):
        if x.ndim:  # (a 0-dim x: dim 0 or -1 names no axis; a copy, as PyTorch's)
            key[d] = slice(None, None, -1)
    return ew.contiguous(getitem(x, tuple(key)), force_copy=True)


def _flip_method(self: Tensor, *dims, **kwargs) -> Tensor:
    """Tensor.flip: ``dims`` as separate ints (``x.flip(0, 1)``) or one tuple/list, as
    PyTorch's method takes both (torch.flip takes the sequence only)."""
    if kwargs or not dims:
        return flip(self, *dims, **kwargs)
    return flip(self, dims[0] if len(dims) == 1 else dims)


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
