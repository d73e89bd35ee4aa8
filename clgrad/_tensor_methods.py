"""Tensor methods and operators: one-line delegations to clgrad.ops (PyTorch's names).

Imported by clgrad/__init__.py once the ops are loaded; clgrad/tensor.py imports nothing above
it, so this module is where Tensor meets the ops (the one import cycle left: the ops import
Tensor, and Tensor's methods call the ops).

Layout: the ops' methods, their generic in-place variants (``add_``, ``relu_``) and operators
(``__add__``, ``__radd__``, ``__iadd__``) are generated from the op table,
``clgrad/ops/registry.py`` (an op's row says which it has: nothing here names it); then
Tensor's own methods: ``backward``, printing, device methods, ``to``/``type`` and the other
conversions, the ``new_*`` constructors, the ``T``/``mT``/``data`` properties, and the in-place
variants with an argument order of their own (``scatter_``, ``index_add_`` ...). ``METHODS``
(generated) is every public method bound here; the argument check runs last over them (a
non-Tensor where a Tensor is required raises PyTorch's TypeError). To add an op's method: give
its registry row the METHOD face (``tests/test_registry.py`` checks every row).
"""
from __future__ import annotations

import numpy as np

from clgrad import _device, _legacy, _tensor_str, autograd, creation, dtypes
from clgrad._device import device as torch_device, resolve
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import inplace as ip
from clgrad.ops import registry
from clgrad.ops import scan as sc
from clgrad.ops import scatters as sx
from clgrad.ops import views as vw
from clgrad.ops._util import check_tensor_args as _check_tensor_args
from clgrad.ops._util import one_device as _one_device
from clgrad.ops._util import scalar_first
from clgrad.runtime import Device
from clgrad.tensor import _GRAD_ENABLED, Tensor

_TENSORS_OWN = frozenset(vars(Tensor))  # what clgrad/tensor.py defines (not bound here)


def _method(fn, name=None):
    setattr(Tensor, name or fn.__name__, fn)


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (see clgrad.autograd.backward).

    ``gradient`` may be omitted only for one-element tensors.
    """
    autograd.backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph,
                      inputs=inputs)


Tensor.backward = _backward
_GRAD_ENABLED[0] = autograd.is_grad_enabled  # numpy()'s requires-grad check (PyTorch's)
Tensor._regenerate_grad_fn = ip.regenerate_view_grad_fn  # the hook of requires_grad/grad_fn
Tensor.__repr__ = _tensor_str.tensor_repr  # PyTorch's layout (set_printoptions)
Tensor.__format__ = _tensor_str.tensor_format
Tensor.cuda, Tensor.cpu, Tensor.get_device = _device._cuda, _device._cpu, _device._get_device
Tensor.pin_memory, Tensor.is_pinned = _device._pin_memory, _device._is_pinned
Tensor.is_cuda = property(lambda self: self._storage.device.type == "cuda",
                          doc="True when the tensor is on an OpenCL GPU.")
Tensor.is_cpu = property(lambda self: self._storage.device.type == "cpu",
                         doc="True when the tensor is on an OpenCL CPU device.")
Tensor.is_meta = property(lambda self: self._storage.device.type == "meta",
                          doc="True for a tensor on the 'meta' device (no data; "
                              "clgrad/runtime/meta.py).")


def _to(self, *args, **kwargs):
    """``to(dtype)`` or ``to(device)`` or ``to(device, dtype)`` or ``to(other)``, each
    optionally followed by ``non_blocking`` and ``copy`` (positional or keyword); returns self
    when nothing changes, unless ``copy=True`` (then always a new tensor, as PyTorch).
    Moving between devices copies through the host; autograd records the copy (PyTorch's
    ToCopyBackward0), so gradients flow back to the source device."""
    dtype = kwargs.get("dtype")
    device = kwargs.get("device")
    flags = [a for a in args if isinstance(a, bool)]  # non_blocking, copy (PyTorch's order)
    args = [a for a in args if not isinstance(a, bool)]
    if len(flags) > 2:
        raise TypeError(f"to: expected at most two bool arguments (non_blocking, copy), got "
                        f"{len(flags)}")
    copy = kwargs.get("copy", flags[1] if len(flags) == 2 else False)
    for a in args:
        if isinstance(a, (dtypes.DType, type)) or (isinstance(a, str) and a in (
                "float32", "float64", "int32", "int64", "bool", "float16", "bfloat16", "uint8",
                "int8", "int16")):
            dtype = a
        elif isinstance(a, (Device, str, torch_device, int)):
            device = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a._storage.device
    dev = None if device is None else resolve(device)
    dt = None if dtype is None else dtypes.to_dtype(dtype)
    out = self
    if dev is not None and dt is not None and not _can_hold(self._storage.device, dt):
        out = ew.to_device(out, dev)  # e.g. to float64 from a device without cl_khr_fp64
    if dt is not None:
        out = ew.to(out, dt)
    if dev is not None:
        out = ew.to_device(out, dev)  # recorded: the gradient flows back
    if copy and out is self:
        out = ew.clone(self)
    return out


def _can_hold(dev, dt) -> bool:
    return not ((dt is dtypes.float64 and not dev.fp64) or (dt is dtypes.float16 and
                                                             not dev.fp16))


def _inplace_binary(fn, name):
    def method(self, other, *args, **kwargs):
        if args and not kwargs:  # add_(-lr, grad): PyTorch's deprecated order, warned
            other, *args = scalar_first(name, (other, *args))
        if not args and not kwargs and ip.scalar_inplace(name, self, other):
            return self  # self OP= number in one launch (see there)
        if args or kwargs:  # lerp_'s weight, addcmul_'s tensor2: inplace checks self, other
            _one_device(name, (self, other, *args), kwargs)
        return ip.inplace(name, self, lambda s, o: fn(s, o, *args, **kwargs), other)
    method.__name__ = name
    method.__doc__ = f"In-place ``{fn.__name__}``: writes the result into self; returns self."
    return method


def _inplace_unary(fn, name):
    def method(self, *args, **kwargs):
        if not args and not kwargs:  # relu_, exp_, tanh_ ...: one launch into self
            out = ip.output_inplace(name, self, fn)
            if out is not None:
                return out
        else:  # clamp_'s bounds
            _one_device(name, (self, *args), kwargs)
        return ip.inplace(name, self, lambda s: fn(s, *args, **kwargs))
    method.__name__ = name
    method.__doc__ = f"In-place ``{fn.__name__}``; returns self."
    return method


def _reflect(fn):
    def method(self, other):
        return fn(other, self)
    return method


# == and != (only: the arithmetic operators' own TypeError stays, so that `a + b` keeps its
# call budget, tests/test_op_calls.py; PyTorch turns that TypeError into NotImplemented too)
_BINARY_OPERATORS = frozenset({"eq", "ne"})
_OPERAND_TYPES = frozenset({int, float, bool, complex})


def _operand_ok(other) -> bool:
    """Whether ``==``/``!=`` take ``other``: a Tensor, a number (bool, NumPy scalars included)
    or a NumPy array. Anything else (None, a str, a list) makes them return NotImplemented, as
    PyTorch's do: Python then answers ``x == None`` with False and ``x != None`` with True (so
    ``x in [None]`` works)."""
    return type(other) in _OPERAND_TYPES or isinstance(other, Tensor) or \
        ew._is_num(other) or isinstance(other, (np.ndarray, np.generic))


def _operator(fn):
    """``fn`` as a binary operator: NotImplemented for operands it does not take."""
    def method(self, other):
        if not _operand_ok(other):
            return NotImplemented
        return fn(self, other)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    method.__wrapped__ = fn
    return method


# -- the ops' methods, in-place variants and operators: generated from clgrad/ops/registry.py -
for _name, _fn in registry.methods().items():
    _method(_fn, _name)
for _name, _fn, _kind in registry.inplace_variants():
    _method((_inplace_binary if _kind == registry.BINARY else _inplace_unary)(_fn, _name), _name)
for _name, _fn, _kind in registry.operators():
    if _kind == "op" and _name[2:-2] in _BINARY_OPERATORS:
        _method(_operator(_fn), _name)
    elif _kind == "op":  # unary (__neg__), __getitem__, __setitem__
        _method(_fn, _name)
    elif _kind == "reflected":
        _method(_reflect(_fn), _name)
    elif _kind == registry.ALIAS:  # x += y is x.add_(y): the in-place method itself
        _method(getattr(Tensor, _fn), _name)
    else:  # an in-place wrapper of its own, named after the operator (__iand__)
        _method(_inplace_binary(_fn, _name), _name)

# -- properties (views as attributes) ---------------------------------------------------------
Tensor.T = property(lambda self: vw.permute(self, *reversed(range(self.ndim))))
Tensor.mT = property(lambda self: vw.transpose(self, -2, -1))

# -- conversions ------------------------------------------------------------------------------
Tensor.to = _to
Tensor.is_xpu = property(lambda self: False, doc="False: clgrad has no Intel XPU tensors.")
Tensor.is_mps = property(lambda self: False, doc="False: clgrad has no Apple MPS tensors.")


def _assign_data(self, value):
    """``x.data = y`` (PyTorch): x keeps its identity (a Parameter stays registered, its
    optimizer state stays keyed on it) and takes y's values, shape and dtype. As in PyTorch, x
    then shares y's storage when y is a root tensor; a view y is copied first (clgrad's root
    tensors are contiguous and own their storage), so later writes to y do not show in x.

    Raises: TypeError if y is not a Tensor; RuntimeError if x is a view
    """
    if not isinstance(value, Tensor):
        raise TypeError(f"data: expected a Tensor to assign, got {type(value).__name__}")
    if self._base is not None:
        raise RuntimeError(f"data: cannot assign the .data of a view (shape {tuple(self.shape)})"
                           "; assign to the tensor it views")
    if value._base is not None or not value.is_contiguous() or value._offset:
        value = ew.contiguous(value.detach(), force_copy=True)
    self._set_data(value)


def _get_data(self):
    """``x.data``: an alias of x outside the graph, like ``detach()`` but with a version
    counter of its own (PyTorch), shared with its views and detach()es: writes through it
    are not seen by autograd's checks of x (nor by x._version), so ``x.data.mul_(2)`` after
    x was saved lets backward run on the new values."""
    t = self.detach()
    t._vc = [0]
    if t._base is not None:  # detach() of a view: its fresh root alias shares the counter
        t._base._vc = t._vc
    return t


Tensor.data = property(_get_data, _assign_data,
                       doc="The tensor's values outside the graph (an alias with a version "
                           "counter of its own); assignable, see _assign_data.")


def _fill_diagonal_(self, fill_value, wrap: bool = False):
    """Fill the main diagonal of self (2-D, or n-D with all sizes equal: the elements
    ``[i, i, ..., i]``) with ``fill_value``, in place (PyTorch's). ``wrap``: for a tall 2-D
    matrix (rows > columns + 1), the diagonal starts again every ``columns + 1`` rows, as in
    NumPy's fill_diagonal. Returns self.

    Raises:  RuntimeError for fewer than 2 dimensions, or n-D (n > 2) of unequal sizes
    """
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = self.shape[0], self.shape[1]
    if self.dim() > 2 and any(s != height for s in self.shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    size = min(height, width)
    stride = sum(self.stride())
    offset = self.storage_offset()
    self.as_strided((size,), (stride,), offset).fill_(fill_value)
    if wrap and self.dim() == 2 and height > width + 1:
        step = width + 1
        wrap_size = (self.numel() + step - 1) // step - size
        self.as_strided((wrap_size,), (stride,),
                        offset + self.stride(0) * (width + 1)).fill_(fill_value)
    return self


Tensor.fill_diagonal_ = _fill_diagonal_


def _new(fill):
    def method(self, *size, dtype=None, device=None, requires_grad=False):
        shape = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
        out = creation.full(tuple(shape), fill, dtype=dtype or self.dtype,
                            device=device or self._storage.device)
        return out.requires_grad_(True) if requires_grad else out
    method.__doc__ = f"A new tensor of ``size`` filled with {fill}, of self's dtype and device."
    return method


def _new_full(self, size, fill_value, dtype=None, device=None):
    """A new tensor of ``size`` filled with ``fill_value``, of self's dtype and device."""
    return creation.full(tuple(size), fill_value, dtype=dtype or self.dtype,
                         device=device or self._storage.device)


def _new_tensor(self, data, dtype=None, device=None):
    """A copy of ``data`` as a tensor of self's dtype and device (unless given)."""
    return creation.tensor(data, dtype=dtype or self.dtype, device=device or self._storage.device)


Tensor.new_zeros = _new(0)
Tensor.new_ones = _new(1)
Tensor.new_empty = _new(0)
Tensor.new_full = _new_full
Tensor.new_tensor = _new_tensor
Tensor.type_as = lambda self, other: ew.to(self, other.dtype)
Tensor.float = lambda self: ew.to(self, dtypes.float32)
Tensor.double = lambda self: ew.to(self, dtypes.float64)
Tensor.long = lambda self: ew.to(self, dtypes.int64)
Tensor.int = lambda self: ew.to(self, dtypes.int32)
Tensor.bool = lambda self: ew.to(self, dtypes.bool_)
Tensor.half = lambda self: ew.to(self, dtypes.float16)

Tensor.bfloat16 = lambda self: ew.to(self, dtypes.bfloat16)
Tensor.byte = lambda self: ew.to(self, dtypes.uint8)
Tensor.char = lambda self: ew.to(self, dtypes.int8)
Tensor.short = lambda self: ew.to(self, dtypes.int16)


def _deepcopy(self, memo):
    """``copy.deepcopy`` (so ``copy.deepcopy(model)`` works, as in PyTorch): a tensor of the
    same type, shape, strides and offset over a copy of the storage (copied once per deepcopy
    call, so views of one storage stay views of one new storage), with requires_grad and a
    deep copy of ``.grad``.

    Raises:  RuntimeError for a tensor that is not a graph leaf (PyTorch's rule)
    """
    import copy
    if id(self) in memo:
        return memo[id(self)]
    if self._grad_fn is not None:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                           "the deepcopy protocol at the moment")
    st = memo.get(id(self._storage))
    if st is None:
        whole = Tensor(self._storage, (self._storage.size,), (1,), 0)
        if self.is_meta:  # nothing to copy: a new storage without data
            st = Tensor._empty(whole.shape, self.dtype, self._storage.device)._storage
        else:
            with autograd.no_grad():
                st = ew.contiguous(whole, force_copy=True)._storage
        memo[id(self._storage)] = st
        copy._keep_alive(self._storage, memo)  # its id must not be reused during this copy
    base = copy.deepcopy(self._base, memo) if self._base is not None else None
    new = type(self).__new__(type(self))
    Tensor.__init__(new, st, self._shape, self._strides, self._offset, base=base)
    if self.requires_grad:
        new.requires_grad_(True)
    if self._grad is not None:
        new._grad = copy.deepcopy(self._grad, memo)
    memo[id(self)] = new
    return new


Tensor.__deepcopy__ = _deepcopy


# -- type() ----------------------------------------------------------------------------------
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
               "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor"}


def _type(self, dtype=None, non_blocking=False):
    """``type()``: PyTorch's type string of the dtype, 'torch.FloatTensor' ... (always the
    CPU spelling: clgrad has no separate CUDA tensor types). ``type(dtype)``,
    ``type('torch.LongTensor')`` (also 'torch.cuda.*') or ``type(clgrad.LongTensor)`` (a
    legacy type, also ``clgrad.cuda.*``): ``to(dtype)``, on self's device (as the strings).

    Raises:  ValueError for anything else, Python's ``float``/``int`` included (PyTorch's
             "invalid type: 'float'")"""
    if dtype is None:
        return "torch." + _TYPE_NAMES[self.dtype.name]
    if isinstance(dtype, _legacy._LegacyType):
        dtype = dtype.dtype
    elif not isinstance(dtype, (dtypes.DType, str)):
        name = getattr(dtype, "__name__", repr(dtype))
        raise ValueError(f"invalid type: {name!r}; type() takes a clgrad dtype, a legacy "
                         f"type (clgrad.FloatTensor) or its name ('torch.FloatTensor')")
    if isinstance(dtype, str) and dtype.startswith("torch."):
        names = {v: k for k, v in _TYPE_NAMES.items()}
        key = dtype.rsplit(".", 1)[-1]
        if key not in names:
            raise TypeError(f"type: expected a tensor type name like 'torch.FloatTensor', got "
                            f"{dtype!r}")
        dtype = names[key]
    return ew.to(self, dtype)


Tensor.type = _type

# -- in-place variants of an argument order of their own (the generic ones: from the table) --
Tensor.scatter_ = lambda self, dim, index, src=None, value=None, reduce=None: ip.inplace(
    "scatter_", self, lambda s, i, v: ix.scatter(s, dim, i, v, reduce=reduce), index,
    value if src is None else src)
Tensor.scatter_add_ = lambda self, dim, index, src: ip.inplace(
    "scatter_add_", self, lambda s, i, v: ix.scatter_add(s, dim, i, v), index, src)
Tensor.masked_fill_ = lambda self, mask, value: ip.inplace(
    "masked_fill_", self, lambda s, m, v: ew.masked_fill(s, m, v), mask, value)
Tensor.cumsum_ = lambda self, dim: ip.inplace("cumsum_", self, lambda s: sc.cumsum(s, dim))
Tensor.cumprod_ = lambda self, dim, *, dtype=None: ip.inplace(
    "cumprod_", self, lambda s: sc.cumprod(s, dim, dtype=dtype))


def _index_add_(self, dim, index, source, alpha=1):
    """In-place ``index_add``: ``self.select(dim, index[i]) += alpha * source.select(dim, i)``;
    returns self (autograd as for other in-place writes)."""
    return ip.inplace("index_add_", self,
                      lambda s, src: ix.index_add(s, dim, index, src, alpha=alpha), source)


Tensor.index_add_ = _index_add_


def _resize_(self, *sizes):
    """Give self the shape ``sizes`` in place (PyTorch's legacy ``resize_``), contiguous from
    its storage offset: the storage is kept when it is large enough (its elements keep their
    values and any alias sees them), else replaced by a larger one holding the old elements
    first; new elements are uninitialised. Returns self.

    Raises:  RuntimeError for a tensor that requires grad (as PyTorch) or a view (clgrad cannot
             resize a view's storage); ValueError for a negative size
    """
    from clgrad import layout
    from clgrad.ops._util import bump_version, copy_raw
    shape = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"resize_: expected non-negative sizes, got {shape}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if self._base is not None:
        raise RuntimeError("resize_: resizing a view is not supported; resize the tensor it "
                           "views, or use reshape()/new_empty()")
    n = layout.numel(shape)
    if self._offset + n <= self._storage.size:
        from clgrad.tensor import Size
        self._shape, self._strides = Size(shape), tuple(layout.contiguous_strides(shape))
    else:
        new = creation.empty(shape, dtype=self.dtype, device=self.device)
        keep = min(n, self._storage.size - self._offset)
        if keep:
            copy_raw(Tensor(new._storage, (keep,), (1,), 0),
                     Tensor(self._storage, (keep,), (1,), self._offset))
        self._set_data(new)
    bump_version(self)
    return self


Tensor.resize_ = _resize_
Tensor.resize_as_ = lambda self, other: _resize_(self, tuple(other.shape))


# -- in-place variants of the misc-api ops (their own argument orders) ------------------------
def _scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place ``scatter_reduce``; returns self."""
    return ip.inplace("scatter_reduce_", self, lambda s, v: sx.scatter_reduce(
        s, dim, index, v, reduce, include_self=include_self), src)


Tensor.scatter_reduce_ = _scatter_reduce_
Tensor.index_copy_ = lambda self, dim, index, source: ip.inplace(
    "index_copy_", self, lambda s, v: sx.index_copy(s, dim, index, v), source)
Tensor.masked_scatter_ = lambda self, mask, source: ip.inplace(
    "masked_scatter_", self, lambda s, m, v: sx.masked_scatter(s, m, v), mask, source)


# -- small queries and identities of real tensors ---------------------------------------------
Tensor.nelement = lambda self: self.numel()
Tensor.ndimension = lambda self: self.ndim
Tensor.nbytes = property(lambda self: self.numel() * self.dtype.itemsize,
                         doc="The bytes of the elements (numel() * element size).")
Tensor.itemsize = property(lambda self: self.dtype.itemsize, doc="Bytes per element.")
Tensor.is_conj = lambda self: False  # no complex dtypes: nothing is ever conjugated lazily
Tensor.is_neg = lambda self: False
Tensor.resolve_conj = lambda self: self  # PyTorch returns self for real tensors
Tensor.resolve_neg = lambda self: self
Tensor.conj = lambda self: self


def _legacy_new(self, *args, device=None):
    """``x.new(...)``, PyTorch's legacy constructor of self's dtype and device: sizes ->
    uninitialised, a sequence -> a copy cast to self's dtype, nothing -> shape (0,), a Tensor
    of self's dtype -> an alias."""
    return _legacy._construct("new", self.dtype, args,
                              self._storage.device if device is None else device)


Tensor.new = _legacy_new


def _metadata_inplace(name, view_fn, keeps_contiguous):
    """``x.t_()``, ``x.unsqueeze_(d)`` ...: self takes the layout of ``view_fn(self)``.

    clgrad allows it where no graph can see the change: self does not require grad (a leaf
    that does, under no_grad, as PyTorch). A root tensor must stay contiguous at offset 0
    (clgrad's invariant: its views and kernels rely on it), so the transposing forms take
    views only; squeeze_/unsqueeze_ keep a root contiguous and take both.
    Raises RuntimeError otherwise, naming the reason and the out-of-place form."""
    def method(self, *args):
        if self.requires_grad and (self.grad_fn is not None or autograd.is_grad_enabled()):
            raise RuntimeError(
                f"{name}: changing the shape of a tensor that requires grad in place is not "
                f"supported in clgrad (its graph Node would describe the old layout); use "
                f"x = x.{name[:-1]}(...) instead")
        new = view_fn(self.detach(), *args)
        if self._base is None and not keeps_contiguous and not new.is_contiguous():
            raise RuntimeError(
                f"{name}: clgrad's root tensors keep a contiguous layout (their views and "
                f"kernels rely on it), so a transposing in-place form applies to views only; "
                f"use x = x.{name[:-1]}(...) instead")
        self._shape, self._strides, self._offset = new._shape, new._strides, new._offset
        return self
    method.__name__ = name
    method.__doc__ = f"In-place ``{name[:-1]}``: self takes the new layout; returns self."
    return method


Tensor.transpose_ = _metadata_inplace("transpose_", vw.transpose, False)
Tensor.swapaxes_ = _metadata_inplace("swapaxes_", vw.transpose, False)
Tensor.swapdims_ = _metadata_inplace("swapdims_", vw.transpose, False)
Tensor.t_ = _metadata_inplace("t_", vw.t, False)
Tensor.squeeze_ = _metadata_inplace("squeeze_", vw.squeeze, True)
Tensor.unsqueeze_ = _metadata_inplace("unsqueeze_", vw.unsqueeze, True)


# -- autograd ---------------------------------------------------------------------------------
Tensor.register_hook = autograd.register_hook
Tensor.register_post_accumulate_grad_hook = autograd.register_post_accumulate_grad_hook


# -- the methods bound here (sorted), then, last, the argument check --------------------------
__all__: list = []  # nothing to import from here: the methods live on Tensor
METHODS = sorted(k for k in vars(Tensor) if not k.startswith("_") and k not in _TENSORS_OWN)

_check_tensor_args({k: getattr(Tensor, k) for k in METHODS}, __name__, method_of=Tensor,
                   torch_names=registry.torch_names())
