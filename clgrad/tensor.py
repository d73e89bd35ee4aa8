"""Storage and Tensor: layout and bookkeeping only; the math lives in clgrad.ops.

A Storage is one OpenCL buffer with a dtype, an element count and a version counter that all
its views share. A Tensor is a Storage plus shape, strides and an element offset
(``storage_offset``). View ops change only those numbers (see clgrad/ops/views.py).
Both pickle (``pickle.dumps``, ``copy.copy``) in clgrad's own format: see Tensor.__reduce_ex__.
This module imports nothing above it: the methods and operators that compute (``add``,
``backward``, ``contiguous`` ...), ``repr``/``format`` (clgrad/_tensor_str.py) and ``cuda``/``cpu``
are bound by clgrad/_tensor_methods.py when clgrad is imported.

Invariant: a tensor with ``_base is None`` (a *root*) is contiguous at offset 0 and owns its
storage; every view keeps ``_base`` pointing at its root.
"""
from __future__ import annotations

import copyreg
import itertools
import pickle
import weakref

import numpy as np

from clgrad import dtypes, layout
from clgrad._device import of_runtime, resolve
from clgrad.errors import DeviceError
from clgrad.runtime import Device, default_device
from clgrad.runtime.shared import SharedHost

__all__ = ["Storage", "Tensor", "Size", "memory_allocated"]

_ALLOCATED = [0]
_PEAK = [0]  # the most _ALLOCATED has been since the start or reset_peak_memory_allocated


def memory_allocated() -> int:
    """Bytes of device memory held by live storages (all devices)."""
    return _ALLOCATED[0]


def max_memory_allocated() -> int:
    """The most bytes live storages held at once (all devices), since the process started or
    the last ``reset_peak_memory_allocated``."""
    return _PEAK[0]


def reset_peak_memory_allocated() -> None:
    """Restart ``max_memory_allocated`` from ``memory_allocated()``."""
    _PEAK[0] = _ALLOCATED[0]


class Size(tuple):
    """A shape: a tuple of ints, printed as ``clgrad.Size([2, 3])`` (PyTorch's torch.Size)."""

    def __repr__(self):
        return f"clgrad.Size({list(self)})"

    def numel(self) -> int:
        """Number of elements."""
        return layout.numel(self)


# shape -> (Size, contiguous strides, numel) of fresh results (Tensor._empty), so an op's
# output skips the int() conversions and stride math; keyed by the exact tuple of ints (a
# tuple equal to one of other types, e.g. of NumPy ints, hashes equal and gives the same
# geometry). Cleared when it grows past _CONTIG_MAX (programs with ever-changing shapes).
_CONTIG: dict = {}
_CONTIG_MAX = 4096
_new = object.__new__
_NO = object()            # Tensor(): no argument there (the legacy constructor's forms)
_LEGACY_INIT = [None]     # torch.Tensor(...)'s legacy forms, set by clgrad/_legacy.py
_GRAD_ENABLED = [lambda: True]  # autograd's is_grad_enabled, set by clgrad/_tensor_methods.py
_NUMPY_REQUIRES_GRAD = ("Can't call numpy() on Tensor that requires grad. Use "
                        "tensor.detach().numpy() instead.")  # PyTorch's message, word for word


def _contig_geometry(shape: tuple) -> tuple:
    """(Size, strides, numel) of a contiguous ``shape`` (a tuple of ints), cached."""
    geo = (Size(shape), layout.contiguous_strides(shape), layout.numel(shape))
    if len(_CONTIG) >= _CONTIG_MAX:
        _CONTIG.clear()
    _CONTIG[shape] = geo
    return geo


HOST_MIRROR_BYTES = 1 << 16  # the largest upload Storage.keep_host keeps on the host


class Storage:
    """One device buffer of ``size`` elements of ``dtype`` and a version counter.

    The version counts in-place writes into any view of the storage (caches key on it);
    autograd compares ``version - hidden`` with the version seen when a tensor was saved.
    ``hidden`` counts the writes made through tensors with a version counter of their own
    (``Tensor._vc``: ``.data`` and its views), which PyTorch does not show to the tensor.
    """

    __slots__ = ("buffer", "dtype", "size", "device", "version", "hidden", "nbytes", "host",
                 "shared", "pinned", "__weakref__")

    def __init__(self, size: int, dtype: dtypes.DType, device: Device):
        if dtype is dtypes.float64 and not device.fp64:
            raise TypeError(f"float64: the device {device.name!r} lacks cl_khr_fp64; use "
                            f"float32")
        if dtype is dtypes.float16 and not device.fp16:
            raise TypeError(f"float16: the device {device.name!r} lacks cl_khr_fp16; use "
                            f"float32")
        self.size = size if type(size) is int else int(size)
        self.dtype = dtype
        self.device = device
        self.version = 0
        self.hidden = 0  # writes counted on a tensor's own counter (Tensor._vc), not here
        self.host = None  # (version, values): see keep_host
        self.shared = None  # the SharedHost once shared between processes: see share_
        self.pinned = False  # made by Tensor.pin_memory (clgrad/_device.py)
        nbytes = self.size * dtype.itemsize
        if nbytes > device.max_alloc:  # one buffer past CL_DEVICE_MAX_MEM_ALLOC_SIZE
            raise device.out_of_memory(nbytes, f"a tensor of {self.size} {dtype.name} elements")
        self.buffer = device.alloc(nbytes)
        if self.buffer is None:  # the meta device (clgrad/runtime/meta.py): no memory
            nbytes = 0
        self.nbytes = nbytes  # set only once allocated: __del__ gives back what was counted
        held = _ALLOCATED[0] = _ALLOCATED[0] + nbytes
        if held > _PEAK[0]:
            _PEAK[0] = held

    def __del__(self):
        try:
            nbytes = self.nbytes
        except AttributeError:  # __init__ raised: nothing was counted
            return
        _ALLOCATED[0] -= nbytes
        self.device.free(nbytes)

    def keep_host(self, values: np.ndarray):
        """Keep a host copy of ``values`` (all of this storage's elements, just uploaded) for
        small integer storages (<= HOST_MIRROR_BYTES): class-index targets, whose range
        losses check on the host (clgrad/ops/loss.py) without reading the device, a read
        that waits for every kernel queued before it. Valid while the version is unchanged
        (every in-place write bumps it; copy_raw and fill_raw drop the copy too)."""
        if (not self.dtype.is_floating_point and values.size == self.size and
                values.nbytes <= HOST_MIRROR_BYTES):
            self.host = (self.version, np.array(values, dtype=self.dtype.np, copy=True))

    def host_values(self):
        """The host copy kept by keep_host, flat, or None when there is none or the storage
        was written since."""
        h = self.host
        return h[1].reshape(-1) if h is not None and h[0] == self.version else None

    def share_(self) -> Storage:
        """Move the elements into host memory other processes can map (a SharedHost of
        clgrad/runtime/shared.py), in place: every tensor viewing this storage keeps its values
        and now reads and writes the shared memory. No-op when already shared.
        Raises:  RuntimeError on a GPU device (see runtime/shared.py)"""
        if self.shared is None:
            shared = SharedHost(self.device, self.nbytes)
            if self.nbytes:
                self.device.copy(shared.host[:self.nbytes], self.buffer)  # into the mapping
            self.adopt(shared)
        return self

    def adopt(self, shared: SharedHost):
        """Use the buffer of ``shared`` (of at least ``nbytes``) from now on. The host copy
        (keep_host) is dropped: another process may write the memory without a version bump."""
        self.buffer, self.shared, self.host = shared.buffer, shared, None

    def write(self, offset: int, values: np.ndarray):
        """Copy the host array ``values`` (of this dtype) to elements ``offset ..`` (blocking;
        no version bump: callers that change what a tensor holds bump it themselves)."""
        self.device.copy(self.buffer, np.ascontiguousarray(values),
                         dst_offset=offset * self.dtype.itemsize)

    def __reduce_ex__(self, protocol):
        """Pickle: (_rebuild_storage, (dtype name, device, size, elements)), the elements
        little-endian and bit-exact (bfloat16 as its bits), read from the device once per
        pickle (pickle's memo: the tensors of one storage in one pickle share it again when
        loaded); protocol 5 passes them as a PickleBuffer (out-of-band where the pickler has
        a buffer_callback). No elements for the meta device."""
        data = None
        if self.buffer is not None:  # the meta device has no memory
            data = np.empty(self.size, self.dtype.np)
            if self.size:
                self.device.copy(data, self.buffer)
            data = data.astype(data.dtype.newbyteorder("<"), copy=False)
            data = pickle.PickleBuffer(data) if protocol >= 5 else data.tobytes()
        return (_rebuild_storage, (self.dtype.name, str(of_runtime(self.device)), self.size,
                                   data))


def autograd_version(t) -> int:
    """The version autograd saves and checks for ``t``: its storage's writes less those counted
    on an own counter (``Storage.hidden``), or that own counter (``t._vc``, ``.data``'s)."""
    vc = t._vc
    if vc is None:
        s = t._storage
        return s.version - s.hidden
    return vc[0]


class Tensor:
    """An n-dimensional array on an OpenCL device: storage + shape + strides + storage_offset.

    Construct with the factories (``clgrad.tensor``, ``zeros``, ``randn`` ...), not directly.
    Autograd attributes follow PyTorch: ``requires_grad``, ``grad``, ``grad_fn``, ``is_leaf``.
    """

    __slots__ = ("_storage", "_shape", "_strides", "_offset", "_requires_grad", "_grad",
                 "_grad_fn", "_base", "_rebase", "_rebase_seen", "_retains_grad",
                 "_post_acc_hooks", "_vc", "__weakref__")

    __array_priority__ = 1000  # ndarray OP Tensor defers to Tensor's reflected operators

    def __init__(self, storage: Storage = _NO, shape=_NO, strides=_NO, offset: int = _NO,
                 base=None, *more, device=None):
        if type(storage) is not Storage:  # torch.Tensor(2, 3), Tensor([1, 2]): clgrad/_legacy.py
            args = tuple(a for a in (storage, shape, strides, offset) if a is not _NO)
            _LEGACY_INIT[0](self, args + ((base,) if base is not None else ()) + more, device)
            return
        self._storage = storage
        self._shape = Size(map(int, shape))
        self._strides = tuple(map(int, strides))
        self._offset = 0 if offset is _NO else int(offset)
        self._requires_grad = False
        self._grad = None
        self._grad_fn = None
        self._base = base
        self._rebase = 0
        self._rebase_seen = base._rebase if base is not None else 0
        self._retains_grad = False
        self._post_acc_hooks = None
        self._vc = base._vc if base is not None else None  # a view shares its root's counter

    @classmethod
    def _empty(cls, shape, dtype, device=None) -> "Tensor":
        """A fresh contiguous root tensor of ``shape`` (ints, or anything ``int()`` takes)."""
        device = device or default_device()
        geo = _CONTIG.get(shape) if type(shape) is tuple or type(shape) is Size else None
        if geo is None:
            geo = _contig_geometry(tuple(int(s) for s in shape))
        size, strides, n = geo
        t = _new(cls)
        t._storage = Storage(n, dtype, device)
        t._shape, t._strides, t._offset = size, strides, 0
        t._requires_grad, t._grad, t._grad_fn, t._base = False, None, None, None
        t._rebase = t._rebase_seen = 0
        t._retains_grad, t._post_acc_hooks, t._vc = False, None, None
        return t

    # -- metadata -----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The shape, e.g. ``clgrad.Size([N, C, H, W])``."""
        return self._shape

    @property
    def dtype(self):
        """Element type (``clgrad.float32`` ...)."""
        return self._storage.dtype

    @property
    def device(self):
        """PyTorch's device of the tensor: a ``clgrad.device`` ('cpu', 'cpu:1', 'cuda:0' ...),
        equal and hash-equal to ``torch.device`` of the same type and index. The OpenCL
        device itself (a ``clgrad.runtime.Device``) is ``t.untyped_storage().device``, or
        ``t.device.opencl``."""
        rt = self._storage.device
        d = rt.__dict__.get("_torch_device")
        if d is None:
            d = of_runtime(rt)
        return d

    @property
    def ndim(self) -> int:
        """Number of dims."""
        return len(self._shape)

    def dim(self) -> int:
        """Number of dims."""
        return len(self._shape)

    def numel(self) -> int:
        """Number of elements."""
        return layout.numel(self._shape)

    def size(self, dim=None):
        """The shape, or the size of ``dim``."""
        if dim is None:
            return self._shape
        return self._shape[layout.wrap_dim(dim, self.ndim, "size")]

    def stride(self, dim=None):
        """Strides in elements (a tuple), or the stride of ``dim``."""
        if dim is None:
            return self._strides
        return self._strides[layout.wrap_dim(dim, self.ndim, "stride")]

    def storage_offset(self) -> int:
        """Offset of element [0, ..., 0] in the storage, in elements."""
        return self._offset

    def is_contiguous(self) -> bool:
        """True when the strides are row-major for the shape."""
        return layout.is_contiguous(self._shape, self._strides)

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def untyped_storage(self) -> Storage:
        """The Storage shared by this tensor and its views."""
        return self._storage

    def share_memory_(self) -> Tensor:
        """Move the storage into shared host memory (in place; no-op when shared), so that
        a child process given this tensor (clgrad.multiprocessing: a spawned Process's
        arguments, a Queue) reads and writes the same elements. Returns self.
        Raises:  RuntimeError for a tensor on a GPU device (OpenCL has no inter-process memory
                 handles; PyTorch shares CUDA tensors through CUDA IPC instead)"""
        self._storage.share_()
        return self

    def is_shared(self) -> bool:
        """True when the storage is in shared memory (``share_memory_``)."""
        return self._storage.shared is not None

    def data_ptr(self) -> int:
        """An int standing for the address of this tensor's first element, PyTorch's
        ``data_ptr`` identity: equal for tensors (views) that start at the same element of the
        same storage, ``offset * itemsize`` apart within one storage, different across live
        storages (each gets its own 2^40-byte range). NOT a host or device address: OpenCL
        buffers have none to show; do not pass it to ctypes or NumPy."""
        s = self._storage
        base = _PTR_BASES.get(s)
        if base is None:
            base = _PTR_BASES[s] = next(_PTR_COUNTER) << 40
        return base + self._offset * s.dtype.itemsize

    def data_ptr_key(self):
        """(id of storage, offset): equal for tensors that start at the same element."""
        return (id(self._storage), self._offset)

    def is_floating_point(self) -> bool:
        """True for float16/32/64."""
        return self.dtype.is_floating_point

    @property
    def _version(self) -> int:
        """The autograd version counter (PyTorch's ``_version``): in-place writes into this
        tensor or any tensor sharing its counter (views, ``detach()``); ``.data`` and its
        views count on a counter of their own (``_vc``)."""
        return autograd_version(self)

    # -- autograd attributes ------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """True when gradients flow to (a leaf) or through (a non-leaf) this tensor.

        A view of a tensor that was written in place since it was taken follows its root's
        new state (see grad_fn). Setting it: leaves only, floating point only (PyTorch).
        """
        base = self._base
        if base is not None and base._rebase != self._rebase_seen:
            self._regenerate_grad_fn()  # bound by _tensor_methods: ops/inplace.py
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        """Set the flag. Raises RuntimeError when turning it off on a non-leaf, or on for a
        non-floating tensor (PyTorch's rules)."""
        value = bool(value)
        if not value and self.grad_fn is not None:
            raise RuntimeError("requires_grad: you can only change requires_grad flags of leaf "
                               "variables; use .detach() for a copy outside the graph")
        if value and not self.dtype.is_floating_point:
            raise RuntimeError(f"requires_grad: only floating point tensors can require "
                               f"gradients, got {self.dtype}")
        self._requires_grad = value

    @property
    def grad_fn(self):
        """The Node that made this tensor (None for leaves and tensors outside the graph)."""
        base = self._base
        if base is not None and base._rebase != self._rebase_seen:
            self._regenerate_grad_fn()  # bound by _tensor_methods: ops/inplace.py
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        """True unless the tensor was made by a recorded op (PyTorch semantics)."""
        return self.grad_fn is None

    @property
    def grad(self):
        """The accumulated gradient (a dense tensor of this shape), or None."""
        return self._grad

    @grad.setter
    def grad(self, value):
        """Replace the gradient: None, or a Tensor of this shape on this tensor's device
        (TypeError / RuntimeError otherwise, as PyTorch)."""
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"grad: expected a Tensor or None, got {type(value).__name__}")
            if tuple(value.shape) != tuple(self.shape):
                raise RuntimeError(f"grad: expected shape {tuple(self.shape)}, got "
                                   f"{tuple(value.shape)}")
            if value._storage.device is not self._storage.device:
                raise RuntimeError(f"grad: attempting to assign a gradient on device "
                                   f"{value.device} to a tensor on device {self.device}. Please "
                                   f"ensure that the gradient and the tensor are on the same "
                                   f"device")
        self._grad = value

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place (see the property; RuntimeError when turning it off
        on a non-leaf or on for a non-float tensor). Returns self."""
        self.requires_grad = requires_grad
        return self

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward (a no-op on leaves). After
        an in-place write the tensor keeps retaining (its new grad_fn takes over)."""
        if not self.requires_grad:
            raise RuntimeError("retain_grad: can't retain_grad on Tensor that has "
                               "requires_grad=False")
        fn = self.grad_fn
        if fn is not None:
            import weakref
            fn.retained = weakref.ref(self)
            self._retains_grad = True

    @property
    def retains_grad(self) -> bool:
        """True after ``retain_grad()`` on a non-leaf."""
        return self._retains_grad

    def detach(self) -> "Tensor":
        """A tensor sharing this storage, layout and version counter, outside the graph
        (requires_grad False, a leaf). Writing into it never touches this tensor's graph, but
        a Node that saved this storage sees the version change (PyTorch). The detached view
        of a view hangs off a fresh root alias of the storage, so it has a graph of its own."""
        base = self._base
        if base is not None:
            base = Tensor(self._storage, base._shape, base._strides, base._offset)
            base._vc = self._vc
            return Tensor(self._storage, self._shape, self._strides, self._offset, base=base)
        t = _new(Tensor)  # a root's alias: its layout is already a Size and ints (no __init__)
        t._storage, t._shape, t._strides, t._offset = (self._storage, self._shape,
                                                       self._strides, self._offset)
        t._requires_grad, t._grad, t._grad_fn, t._base = False, None, None, None
        t._rebase = t._rebase_seen = 0
        t._retains_grad, t._post_acc_hooks, t._vc = False, None, self._vc
        return t

    def detach_(self) -> "Tensor":
        """Take this tensor out of the graph in place; it becomes a leaf. Raises RuntimeError
        for a view that requires grad (use detach(), as PyTorch)."""
        if self._base is not None and self.requires_grad:
            raise RuntimeError("detach_: can't detach views in-place; use detach() instead")
        self._grad_fn = None
        self._requires_grad = False
        return self

    def _set_data(self, new: "Tensor"):
        """Make this tensor hold ``new``'s storage and layout, keeping the object (Module.to;
        PyTorch's ``param.data = new``). ``new`` is a root: contiguous, its own storage."""
        self._storage, self._shape, self._strides, self._offset = (
            new._storage, new._shape, new._strides, new._offset)

    # -- host side ----------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A host copy as a NumPy array (blocks until the queue has produced the values).

        ``force=True`` skips the requires-grad check (PyTorch's ``force``, which detaches).
        Differs from PyTorch: always a copy, never a view of the tensor's memory (an OpenCL
        buffer is not host memory), with or without ``force``.
        Raises:  RuntimeError for a tensor that requires grad while grad mode is on (not under
                 ``no_grad()``, as PyTorch), unless ``force``; PyTorch's message, which says to
                 use ``tensor.detach().numpy()``; TypeError for bfloat16, which NumPy lacks
                 (as PyTorch; ``.float().numpy()``)"""
        if not force and self.requires_grad and _GRAD_ENABLED[0]():
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        if self._storage.dtype is dtypes.bfloat16:
            raise TypeError("numpy: Got unsupported ScalarType BFloat16 (NumPy has no "
                            "bfloat16); convert first: t.float().numpy()")
        return self._host_bits()

    def _host_bits(self) -> np.ndarray:
        """numpy()'s copy of the stored elements, any dtype (bfloat16: its uint16 bits)."""
        src = self
        if not (self.is_contiguous()):
            src = self.contiguous()
        out = np.empty(self._shape, dtype=self.dtype.np)
        if out.size:
            src._storage.device.copy(out, src._storage.buffer,
                                     src_offset=src._offset * self.dtype.itemsize)
        return out

    def _values(self) -> np.ndarray:
        """The values on the host: numpy()'s copy without its requires-grad check (clgrad's
        own reads: tolist, item, printing), and bfloat16's as float32 (exact)."""
        if self.dtype is dtypes.bfloat16:
            return dtypes.bf16_to_float32(self._host_bits())
        return self._host_bits()

    def tolist(self):
        """Nested Python lists (a number for 0-dim tensors)."""
        return self._values().tolist()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self.numel() != 1:
            raise RuntimeError(f"item: a Tensor with {self.numel()} elements cannot be converted "
                               f"to Scalar")
        return self._values().reshape(()).item()

    def _scalar_value(self):
        if self.numel() != 1:  # PyTorch's error for float()/int() (item() raises RuntimeError)
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self):
        """float(t) of a one-element tensor; ValueError for any other numel (PyTorch)."""
        return float(self._scalar_value())

    def __int__(self):
        """int(t) of a one-element tensor; ValueError for any other numel (PyTorch)."""
        return int(self._scalar_value())

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with {self.numel()} elements is "
                               f"ambiguous")
        return bool(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``/``np.array(t)``: ``numpy()``'s copy (its RuntimeError for a tensor
        that requires grad, as PyTorch), cast to ``dtype`` if given."""
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, protocol):
        """Pickle in clgrad's own format (``pickle.dumps``, ``copy.copy``, joblib).

        (_rebuild_tensor, (storage, offset, shape, strides, requires_grad, type)) and the
        attributes a subclass adds (``__dict__`` and its own slots), as PyTorch keeps them.

        The storage pickles itself (Storage.__reduce_ex__: all its elements, bit-exact, on the
        same device kind), once per pickle, so views pickled together come back as views of
        one new storage (PyTorch 2.13's pickle gives each its own copy; its torch.save and
        deepcopy share, as clgrad does here). ``requires_grad`` and the class (Parameter,
        Buffer, subclasses) are kept; ``.grad``, ``grad_fn`` and hooks are not (PyTorch's
        rules): a non-leaf that requires grad comes back a leaf that requires grad, as in
        PyTorch (``copy.deepcopy`` of it raises instead). ``copy.copy`` gives a tensor sharing
        the storage, as PyTorch's.
        Format: clgrad's own; PyTorch's unpickler cannot read it nor clgrad PyTorch's (use
        ``torch.save``/``torch.load`` to exchange tensors). Unpickling a tensor of a GPU where
        the process has none raises DeviceError (a RuntimeError). ``clgrad.load`` never
        accepts these globals (it runs no pickle code but its allow-list).
        """
        extra = getattr(self, "__dict__", None) or None
        slots = {k: getattr(self, k) for k in copyreg._slotnames(type(self))
                 if k not in _TENSOR_SLOTS and hasattr(self, k)}
        args = (self._storage, self._offset, tuple(self._shape), self._strides,
                bool(self.requires_grad), type(self))
        if extra is None and not slots:
            return (_rebuild_tensor, args)
        return (_rebuild_tensor, args, (extra, slots))


_TENSOR_SLOTS = frozenset(Tensor.__slots__)
_PTR_BASES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # storage -> data_ptr base
_PTR_COUNTER = itertools.count(1)


def _rebuild_storage(dtype_name: str, device: str, size: int, data) -> Storage:
    """The Storage that Storage.__reduce_ex__ described: ``size`` elements of ``dtype_name``
    on ``device`` ('cpu', 'cpu:1', 'cuda:0', 'meta'; 'cpu' is the default CPU device), from
    the little-endian bytes ``data`` (None on the meta device).
    Raises:  DeviceError (a RuntimeError) when this process has no such device"""
    dtype = dtypes.to_dtype(dtype_name)
    try:
        dev = resolve(device)
    except DeviceError as e:
        raise DeviceError(f"pickle: cannot unpickle a tensor that was on device {device!r}: "
                          f"{e}; move it to an available device (t.cpu()) before pickling"
                          ) from e
    st = Storage(size, dtype, dev)
    if data is not None and size:
        values = np.frombuffer(data, dtype.np.newbyteorder("<"), size)
        st.write(0, values.astype(dtype.np, copy=False))
    return st


def _rebuild_tensor(storage: Storage, offset: int, shape, strides, requires_grad: bool,
                    cls=Tensor) -> Tensor:
    """The tensor that Tensor.__reduce_ex__ described, over ``storage``: a root when it
    covers the whole storage contiguously, else a view of a fresh root over the storage (as
    ``detach()`` makes); ``requires_grad`` set on the leaf it is."""
    t = _new(cls)
    if offset == 0 and layout.numel(shape) == storage.size and \
            layout.is_contiguous(shape, strides):
        Tensor.__init__(t, storage, shape, strides, 0)
    else:
        root = Tensor(storage, (storage.size,), (1,), 0)
        Tensor.__init__(t, storage, shape, strides, offset, base=root)
    if requires_grad:
        t.requires_grad_(True)
    return t
