"""PyTorch's checkpoint format (``torch.save``'s zip), written and read without torch and
without running code from the file.

File layout (as torch >= 1.6 writes it; ``torch.load(path, weights_only=True)`` reads ours):
    <stem>/data.pkl            pickle protocol 2 of the object; a tensor is
                               torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
                               requires_grad, OrderedDict()) (an nn.Parameter:
                               torch._utils._rebuild_parameter(tensor, requires_grad,
                               OrderedDict())), a storage a persistent id
                               ('storage', torch.<Type>Storage, key, location, numel)
    <stem>/data/<key>          the raw storage bytes, little-endian, each aligned to 64 bytes
    <stem>/byteorder           "little";  <stem>/version  "3"
    <stem>/.format_version     "1";       <stem>/.storage_alignment  "64"

Writing: any picklable object (as torch.save): dicts, lists, tuples, numbers, str, bytes, and
objects pickled by reference to their class, such as whole clgrad Modules and Optimizers.
Tensors keep requires_grad. Tensors that share a clgrad storage share one storage record
with their offsets and strides (stride 0 of an expanded tensor included), as in PyTorch; a
layout PyTorch cannot rebuild from a storage (a negative stride, as ``x[::-1]``) is written as
a contiguous copy of that tensor. NumPy arrays and scalars are pickled as NumPy pickles them
(as torch.save does: they load back as arrays and scalars, never as Tensors; PyTorch's
``weights_only=True`` load refuses them, as it refuses those torch.save writes); clgrad
dtypes and devices as torch's. Storage types are torch's for each dtype (float32:
torch.FloatStorage, ...); a bfloat16 tensor's is torch.BFloat16Storage, its records the 2-byte
little-endian bfloat16 elements, bit-exact (NaN payloads included), as torch.save writes them.
Writing is atomic (clgrad/io/checkpoint.py's temporary file + fsync + rename).

Reading: a restricted unpickler (never Python's default one) resolves only the globals in
``_allowed()``: the ones that rebuild tensors, parameters, storages, dtypes, devices and
containers, and NumPy's array rebuilders (PyTorch's ``weights_only=True`` set), plus those a
user allowed with ``clgrad.serialization.add_safe_globals`` / ``safe_globals``. With
``weights_only=False`` (which, as in PyTorch >= 2.6, must be asked for), clgrad's own
nn.Module, Optimizer and LR scheduler classes are allowed too; the user's own classes still
only when added as safe globals. Any other global raises ``UnpicklingError`` (a subclass of
both pickle.UnpicklingError and ValueError) naming it and how to allow it, before anything
is called. Objects come back shared as pickled (pickle's memo); the unpickler is iterative,
so deep or self-containing containers load as such. The pickle is read twice: once to count
the tensors of each storage (nothing is built), once to build them: a storage used by one
dense tensor becomes that tensor (a compact copy of the part it covers), a storage shared by
several tensors or viewed with overlapping strides (``expand``) is uploaded once, at its own
size, and the tensors are views of it. Storage records must hold exactly the bytes the pickle
declares (a record that inflates beyond that is refused before it is read). Every malformed
file raises ValueError naming the file. Storage dtypes: float16, bfloat16, float32, float64,
int64, int32, int16, int8, uint8 and bool load as such, whether the persistent id names a
storage class (torch.BFloat16Storage, ...) or a torch dtype (torch.bfloat16, ...); bfloat16
elements load bit-exact (a big-endian file's byte-swapped, as float16's); complex raises
TypeError. The legacy pre-1.6 (non-zip) format and TorchScript archives raise ValueError
saying so.
"""
from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
from pathlib import Path

import numpy as np

from clgrad import creation
from clgrad import dtypes
from clgrad import runtime
from clgrad._device import device as torch_device
from clgrad.nn.module import Parameter
from clgrad.ops import views
from clgrad.tensor import Size, Tensor
from clgrad import layout
from clgrad.errors import DeviceError

__all__ = ["save", "to_bytes", "load", "is_torch_file"]

_ALIGN = 64
_STORAGES = {  # PyTorch storage class name -> clgrad dtype name (None: no counterpart)
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "UntypedStorage": "uint8",
    "ComplexFloatStorage": None, "ComplexDoubleStorage": None,
}
_STORAGE_OF = {v: k for k, v in _STORAGES.items() if v and k != "UntypedStorage"}
_TORCH_DTYPES = {  # torch.<name> dtype objects a pickle may name -> clgrad dtype name
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "int64": "int64",
    "long": "int64", "int32": "int32", "int": "int32", "bool": "bool", "int16": "int16",
    "short": "int16", "int8": "int8", "uint8": "uint8",
}
_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c


def is_torch_file(head: bytes) -> bool:
    """True when the first bytes look like a zip archive or a legacy torch pickle."""
    return head[:4] == b"PK\x03\x04" or head[:2] == b"\x80\x02"



# ---------------------------------------------------------------------------- writing

def save(obj, path):
    """Write ``obj`` to ``path`` in PyTorch's zip format (see the module doc), atomically.

    Args:    obj: any picklable object; tensors, NumPy arrays and scalars are written as the
             module doc says (a state_dict, a whole Module, an Optimizer, a dict of them)
    Raises:  TypeError naming the key path of a value that cannot be pickled (a lambda);
             ValueError for objects nested deeper than Python's recursion
             limit allows; FileNotFoundError if the folder does not exist; OSError from the
             file system (an old file is kept)
    """
    from clgrad.io.checkpoint import _atomic_write

    path = Path(path)
    _atomic_write(path, to_bytes(obj, path.stem or "archive"))


def to_bytes(obj, stem="archive") -> bytes:
    """The bytes of a torch zip checkpoint of ``obj`` whose records lie under ``stem/``."""
    # id(clgrad Storage or host copy) -> (key, host array of the stored elements (bfloat16:
    # its uint16 bits), the object, the clgrad dtype)
    storages = {}
    buf = io.BytesIO()
    try:
        _Writer(buf, storages).dump(obj)
    except RecursionError:
        raise ValueError("save: expected objects nested less deeply than Python's recursion "
                         "limit allows, got deeper ones") from None
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise TypeError(f"save: cannot save the value at key {_where(obj)!r}: {e}") from None
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        _record(zf, f"{stem}/data.pkl", buf.getvalue())
        _record(zf, f"{stem}/.format_version", b"1")
        _record(zf, f"{stem}/.storage_alignment", b"64")
        _record(zf, f"{stem}/byteorder", b"little")
        for key, arr, _, _ in storages.values():
            _record(zf, f"{stem}/data/{key}", arr.astype(arr.dtype.newbyteorder("<")).tobytes())
        _record(zf, f"{stem}/version", b"3\n")
    return out.getvalue()


def _where(obj, keys=(), depth=0):
    """The key path (``a.b.0``) of the first value inside ``obj`` that cannot be saved."""
    if depth < 50 and isinstance(obj, (dict, list, tuple)):
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for k, v in items:
            found = _where(v, keys + (k,), depth + 1)
            if found is not None:
                return found
        return None if keys else "<root>"
    try:
        _Writer(io.BytesIO(), {}).dump(obj)
    except Exception:  # noqa: BLE001 - any failure to pickle marks the value
        return ".".join(str(k) for k in keys) or "<root>"
    return None


class _Global:
    """A global the pickle names by (module, name) without importing it (torch is not needed)."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce wants a callable; never called here
        raise TypeError(f"{self.module}.{self.name} is only a name in a pickle")


_REBUILD = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_ORDERED = _Global("collections", "OrderedDict")
_TORCH_DEVICE = _Global("torch", "device")
_TORCH_SIZE = _Global("torch", "Size")


class _TensorRef:
    """The storage key, offset, size and stride of a Parameter's data (pickled as a tensor)."""

    def __init__(self, key, offset, shape, strides):
        self.key, self.offset, self.shape, self.strides = key, offset, shape, strides


class _Writer(pickle._Pickler):
    """The pure-Python pickler, writing _Global as GLOBAL opcodes, tensors as torch.save's
    reductions and storages as persistent ids (protocol 2, as torch.save)."""

    def __init__(self, f, storages):
        super().__init__(f, protocol=2)
        self.storages = storages

    def save(self, obj, save_persistent_id=True):
        """Pickle ``obj``: _Global as a GLOBAL opcode, tensors and Parameters as torch.save's
        _rebuild_tensor_v2 / _rebuild_parameter reductions (each tensor once: later references
        are memo gets, as in torch.save), clgrad dtypes, devices and Sizes as torch's, anything
        else as pickle does.
        """
        if isinstance(obj, _Global):
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
            return
        if isinstance(obj, Tensor):
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            ref, requires_grad = self._ref(obj)
            if isinstance(obj, Parameter):
                self.save_reduce(_REBUILD_PARAMETER, (ref, requires_grad, _EmptyOrdered()),
                                 obj=obj)
            else:
                self.save_reduce(_REBUILD, self._args(ref, requires_grad), obj=obj)
            return
        if isinstance(obj, _TensorRef):  # the data of a Parameter
            self.save_reduce(_REBUILD, self._args(obj, False))
            return
        if isinstance(obj, _EmptyOrdered):
            self.save_reduce(_ORDERED, ())
            return
        if isinstance(obj, dtypes.DType) and obj.name in _TORCH_DTYPES:
            self.save(_Global("torch", obj.name))
            return
        if isinstance(obj, torch_device):
            self.save_reduce(_TORCH_DEVICE, (str(obj),))
            return
        if isinstance(obj, Size):  # torch.Size((2, 3)), as torch.save writes a shape
            self.save_reduce(_TORCH_SIZE, (tuple(obj),), obj=obj)
            return
        super().save(obj, save_persistent_id)

    @staticmethod
    def _args(ref, requires_grad):
        return (_StorageId(ref.key), ref.offset, ref.shape, ref.strides, requires_grad,
                _EmptyOrdered())

    def _ref(self, value):
        """(_TensorRef, requires_grad) of a Tensor; its storage is registered."""
        st, shape = value._storage, tuple(value.shape)
        strides, offset = tuple(value.stride()), value.storage_offset()
        if _representable(shape, strides, offset, st.size):
            key = self._add(st, None, st.dtype)
        else:  # a layout torch cannot rebuild from a storage: save a compact copy
            a = np.ascontiguousarray(value.detach()._host_bits()).reshape(-1)
            key, offset = self._add(a, a, value.dtype), 0
            strides = layout.contiguous_strides(shape)
        return _TensorRef(key, offset, shape, tuple(strides)), bool(value.requires_grad)

    def _add(self, owner, host, dtype):
        """The record key of storage ``owner`` (a clgrad Storage, or ``host`` itself: the
        stored elements) of clgrad dtype ``dtype``."""
        entry = self.storages.get(id(owner))
        if entry is None:
            if host is None:
                host = Tensor(owner, (owner.size,), (1,), 0)._host_bits()
            entry = self.storages[id(owner)] = (str(len(self.storages)), host, owner, dtype)
        return entry[0]

    def persistent_id(self, obj):
        """('storage', torch.<Type>Storage, key, 'cpu', numel) for a storage reference (the form
        torch.load expects), None for every other object.
        """
        if not isinstance(obj, _StorageId):
            return None
        arr, dtype = next((a, d) for k, a, _, d in self.storages.values() if k == obj.key)
        return ("storage", _Global("torch", _STORAGE_OF[dtype.name]), obj.key, "cpu",
                int(arr.size))


def _representable(shape, strides, offset, size):
    """True when torch can rebuild the layout from the storage: offset and strides >= 0 and
    every element inside the storage's ``size`` elements."""
    if offset < 0 or any(d < 0 for d in strides):
        return False
    if not all(shape):
        return offset <= size
    return offset + sum((s - 1) * d for s, d in zip(shape, strides)) < size


class _StorageId:
    def __init__(self, key):
        self.key = key


class _EmptyOrdered:
    """An empty OrderedDict (the backward hooks of _rebuild_tensor_v2)."""


def _record(zf, name, data):
    """One stored zip record whose data starts on a 64-byte boundary (as torch aligns them)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    start = zf.fp.tell() + 30 + len(name.encode()) + 4  # local header + "FB" extra header
    pad = -start % _ALIGN
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    zf.writestr(info, data)


# ---------------------------------------------------------------------------- reading

class UnpicklingError(pickle.UnpicklingError, ValueError):
    """A pickle global that clgrad.load refuses (or a malformed pickle); both a
    pickle.UnpicklingError (as PyTorch raises) and a ValueError (a malformed file)."""


class _LoadError(ValueError):
    """A malformed file, already described with its path."""


class _DtypeError(TypeError):
    """A storage dtype clgrad has no counterpart of (already described with its path)."""


def load(path, data: bytes, map_location=None, weights_only=True):
    """The object in torch file ``path`` (its bytes ``data``); see the module doc.

    map_location: None (clgrad's default device), a device or spec ("cpu", "cuda:1", ...),
             a dict from saved location tags ("cuda:0", "cpu") to devices (unlisted tags: the
             default device), or a callable ``f(storage, location)`` returning a device, a
             spec, the storage itself (= "cpu", as PyTorch's ``lambda s, loc: s``) or
             ``storage.cuda(i)`` / ``storage.cpu()``
    weights_only: True: only tensors, containers and the safe globals; False: clgrad's own
             nn/optim classes too (see the module doc)
    Raises:  UnpicklingError (a pickle.UnpicklingError and a ValueError) naming a disallowed
             global; ValueError naming the path for a malformed, legacy or TorchScript file;
             TypeError for an unsupported dtype
    """
    if data[:2] == b"\x80\x02" and not data.startswith(b"PK"):
        raise ValueError(f"load: {path}: this is PyTorch's legacy (pre-1.6, non-zip) format, "
                         f"which clgrad does not read; re-save it with torch.save in torch >= "
                         f"1.6 (the default format since then)")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        names = zf.namelist()
        pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pkl:
            what = ("a TorchScript archive (torch.jit.save); save a state_dict with torch.save "
                    "instead") if any(n.endswith("/constants.pkl") for n in names) else \
                "a zip file without <name>/data.pkl"
            raise _LoadError(f"load: {path}: expected a torch.save checkpoint, got {what}")
        prefix = pkl[0][:-len("data.pkl")]
        order = zf.read(prefix + "byteorder").decode().strip() \
            if prefix + "byteorder" in names else "little"
        if order not in ("little", "big"):
            raise _LoadError(f"load: {path}: expected byteorder 'little' or 'big', got "
                             f"{order!r}")
        pickled = zf.read(pkl[0])
        records = _Records(zf, prefix, order, path, map_location)
        table = _table(weights_only)
        _Reader(pickled, records, table, weights_only, count=True).load()
        return _Reader(pickled, records, table, weights_only, count=False).load()
    except (_LoadError, _DtypeError, DeviceError):
        raise
    except pickle.UnpicklingError as e:
        raise UnpicklingError(f"load: {path}: {e}") from None
    except Exception as e:  # noqa: BLE001 - garbled files raise many kinds of errors
        raise ValueError(f"load: {path}: expected a valid PyTorch checkpoint, got {e!r}") \
            from None


def _codecs_encode(text, encoding="utf-8"):
    """Protocol-2 pickles spell bytes as _codecs.encode(str, 'latin1'); only that is allowed."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("expected _codecs.encode(str, 'latin1') for bytes")
    return text.encode("latin1")


_PARAMETER = object()
_TENSOR = object()


class _Method:
    """A table entry that the reader resolves to its own method (which differs per pass)."""

    def __init__(self, name):
        self.name = name


def _allowed():
    """The weights_only=True globals: (module, name) -> object."""
    from clgrad._unpickle import numpy_globals
    table = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "Counter"): collections.Counter,  # MultiStepLR's milestones (torch's)
        ("torch._utils", "_rebuild_tensor_v2"): _Method("_rebuild_tensor_v2"),
        ("torch._utils", "_rebuild_parameter"): _Method("_rebuild_parameter"),
        ("torch._utils", "_rebuild_parameter_with_state"): _Method("_rebuild_parameter"),
        ("torch._tensor", "_rebuild_from_type_v2"): _Method("_rebuild_from_type_v2"),
        ("torch.nn.parameter", "Parameter"): _PARAMETER,
        ("torch", "Tensor"): _TENSOR,
        ("torch", "Size"): Size,
        ("torch", "device"): torch_device,
        ("_codecs", "encode"): _codecs_encode,
    }
    for builtins in ("builtins", "__builtin__"):  # protocol 2 spells builtins __builtin__
        table.update({(builtins, "set"): set, (builtins, "frozenset"): frozenset,
                      (builtins, "bytearray"): bytearray})
    for name in _STORAGES:
        table[("torch", name)] = ("storage", name)
    for name, ours in _TORCH_DTYPES.items():
        table[("torch", name)] = dtypes.to_dtype(ours)
    table.update(numpy_globals())
    return table


_BASE_TABLE = {}
# the user's allowed globals: (module, qualified name) -> the object; filled and emptied by
# clgrad.serialization's add_safe_globals / safe_globals / clear_safe_globals
_SAFE_GLOBALS: dict = {}


def _table(weights_only):
    """The allowed globals of one load: the weights_only set, the user's safe globals, and
    with weights_only=False the builtin types, defaultdict / Counter / deque (optimizer and
    scheduler state) and clgrad's dtype / device constructors."""
    if not _BASE_TABLE:
        _BASE_TABLE.update(_allowed())
    table = dict(_BASE_TABLE)
    if not weights_only:
        import builtins
        table.update({(b, n): getattr(builtins, n) for b in ("builtins", "__builtin__")
                      for n in ("dict", "list", "tuple", "int", "float", "str", "bool",
                                "complex", "slice", "range")})
        for name in ("defaultdict", "Counter", "deque"):  # optimizer / scheduler state
            table[("collections", name)] = getattr(collections, name)
        table[("clgrad.dtypes", "to_dtype")] = dtypes.to_dtype
        table[("clgrad._device", "device")] = torch_device
    table.update(_SAFE_GLOBALS)
    return table


def _clgrad_class(module, name):
    """The clgrad nn/optim class ``module.name`` (of an imported module), or None."""
    import sys
    if not module.startswith(("clgrad.nn", "clgrad.optim")):
        return None
    mod = sys.modules.get(module)
    obj = getattr(mod, name, None) if mod is not None and "." not in name else None
    from clgrad.nn.module import Module
    from clgrad.optim.lr_scheduler import LRScheduler
    from clgrad.optim.optimizer import Optimizer, _Required
    if isinstance(obj, type) and issubclass(obj, (Module, Optimizer, LRScheduler, _Required)):
        return obj
    return None


class _Stub:
    """What a class or function of the file stands for while the first pass counts tensors
    (no user or clgrad code runs then)."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        """Ignore (a stub list of the counting pass)."""
        pass

    def extend(self, values):
        """Ignore (a stub list of the counting pass)."""
        pass


class _Records:
    """The storages of one archive: declared dtype and size, location, device, how many
    tensors use each, and their host bytes and device tensor once read."""

    def __init__(self, zf, prefix, order, path, map_location):
        self.zf, self.prefix, self.order, self.path = zf, prefix, order, path
        self.map_location, self.by_key = map_location, {}

    def get(self, pid):
        """The _Storage of a ('storage', type, key, location, numel) persistent id, its record
        checked against the declared size (nothing is read yet)."""
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise _LoadError(f"load: {self.path}: expected a ('storage', type, key, location, "
                             f"numel) persistent id, got {pid!r:.80}")
        _, kind, key, location, numel = pid
        if isinstance(key, str) and key in self.by_key:
            return self.by_key[key]
        if isinstance(kind, tuple) and kind[0] == "storage":
            name = _STORAGES[kind[1]]
            if name is None:
                raise _DtypeError(f"load: {self.path}: storage type torch.{kind[1]} has no "
                                  f"clgrad dtype (complex is not supported); convert it in "
                                  f"PyTorch first (e.g. .real or torch.view_as_real)")
            cdtype = dtypes.to_dtype(name)
        elif isinstance(kind, dtypes.DType):
            cdtype = kind
        else:
            raise _LoadError(f"load: {self.path}: expected a storage type, got {kind!r:.80}")
        if not isinstance(numel, int) or isinstance(numel, bool) or numel < 0 or \
                not isinstance(key, str) or not isinstance(location, str):
            raise _LoadError(f"load: {self.path}: expected a str key and location and an "
                             f"element count >= 0 in a storage id, got {pid!r:.80}")
        dtype = np.dtype(cdtype.np)
        record = f"{self.prefix}data/{key}"
        try:
            info = self.zf.getinfo(record)
        except KeyError:
            raise _LoadError(f"load: {self.path}: expected the record {record}, "
                             f"got no such record") from None
        nbytes = numel * dtype.itemsize
        if info.file_size != nbytes:
            raise _LoadError(f"load: {self.path}: storage {key} holds "
                             f"{info.file_size // dtype.itemsize} elements "
                             f"({info.file_size} bytes), expected {numel} ({nbytes} bytes)")
        st = self.by_key[key] = _Storage(self, record, cdtype, numel, location)
        return st

    def device(self, location):
        """The clgrad device of a storage saved at ``location`` (map_location applied)."""
        from clgrad._device import resolve
        m = self.map_location
        if callable(m) and not isinstance(m, (str, torch_device)):
            host = _HostStorage(location)
            m = m(host, location)
            if m is host:
                m = "cpu"
            if not isinstance(m, (str, int, torch_device, runtime.Device, type(None))):
                raise _DtypeError(f"load: map_location callable: expected it to return the "
                                  f"storage, a device or a device string, got "
                                  f"{type(m).__name__}")
        elif isinstance(m, dict):
            m = m.get(location)
        return resolve(m)


class _Storage:
    """One storage record: dtype, element count, location, uses; bytes read on demand.
    ``cdtype`` is the clgrad dtype, ``dtype`` the NumPy dtype of its stored elements
    (bfloat16: uint16, its bits, byte-swapped as float16 in a big-endian file)."""

    def __init__(self, records, record, cdtype, numel, location):
        self.records, self.record, self.numel = records, record, numel
        self.cdtype, self.dtype = cdtype, np.dtype(cdtype.np)
        self.location, self.uses, self.tensor, self._array, self.device = (location, 0, None,
                                                                           None, None)

    def array(self):
        """The storage's elements as a native-order NumPy array (read once)."""
        if self._array is None:
            nbytes = self.numel * self.dtype.itemsize
            with self.records.zf.open(self.record) as f:
                raw = f.read(nbytes + 1)
            if len(raw) != nbytes:
                raise _LoadError(f"load: {self.records.path}: record {self.record} holds "
                                 f"{len(raw)} bytes, expected {nbytes}")
            dt = self.dtype.newbyteorder("<" if self.records.order == "little" else ">")
            self._array = np.frombuffer(raw, dt, self.numel).astype(
                self.dtype.newbyteorder("="))
        return self._array


class _HostStorage:
    """What a map_location callable receives: ``storage.cuda(i)``/``.cpu()`` name a device."""

    def __init__(self, location):
        self.location = location

    def cuda(self, device=None, non_blocking=False):
        """The clgrad device 'cuda' (or 'cuda:i'): ``storage.cuda(i)`` in a map_location."""
        return torch_device("cuda", device) if isinstance(device, int) else \
            torch_device(device or "cuda")

    def cpu(self):
        """The clgrad device 'cpu'."""
        return torch_device("cpu")

    def to(self, device, *args, **kwargs):
        """``clgrad.device(device)``."""
        return torch_device(device)


class _Pending:
    """A tensor of the counting pass (its storage)."""

    def __init__(self, storage):
        self.storage = storage


class _Reader(pickle._Unpickler):
    """The restricted unpickler of one pass: ``count=True`` checks the layouts and counts the
    tensors of each storage (globals outside the weights_only set are _Stub then);
    ``count=False`` builds the object."""

    def __init__(self, data, records, table, weights_only, count):
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self.records, self.table, self.weights_only, self.count = (records, table,
                                                                   weights_only, count)

    def find_class(self, module, name):
        """Resolve only the allowed globals (see the module doc); any other raises
        UnpicklingError naming it and how to allow it, before anything runs."""
        obj = self.table.get((module, name))
        if obj is None and not self.weights_only:
            obj = _clgrad_class(module, name)
        if obj is None:
            how = (f"if you trust this file, pass weights_only=False (clgrad's own nn/optim "
                   f"classes are then allowed) and allow your own classes with "
                   f"clgrad.serialization.add_safe_globals([{name}]) or the "
                   f"clgrad.serialization.safe_globals([{name}]) context manager"
                   if self.weights_only else
                   f"clgrad.load never runs code from a pickle (even with "
                   f"weights_only=False); if you trust this file, allow {module}.{name} with "
                   f"clgrad.serialization.add_safe_globals([{name}]) or the "
                   f"clgrad.serialization.safe_globals([{name}]) context manager")
            if module.split(".")[0] == "torch":
                how = (f"this file holds a PyTorch object ({module}.{name}, e.g. a whole "
                       f"torch.nn module saved with torch.save(model)), which clgrad cannot "
                       f"rebuild; in PyTorch save model.state_dict() instead and load it into "
                       f"the clgrad model with load_state_dict")
            raise UnpicklingError(f"refusing to load the global {module}.{name}"
                                  f"{' (weights_only=True)' if self.weights_only else ''}: "
                                  f"{how}")
        if isinstance(obj, _Method):
            return getattr(self, obj.name)
        if self.count and (module, name) not in _BASE_TABLE:
            return _Stub
        return obj

    def persistent_load(self, pid):
        """The _Storage a ('storage', type, key, location, numel) id names."""
        st = self.records.get(pid)
        if st.device is None:
            st.device = self.records.device(st.location)
        return st

    # torch._utils / torch._tensor rebuilders, resolved per pass

    def _rebuild_tensor_v2(self, storage, offset, size, stride, requires_grad, hooks,
                           metadata=None):
        if not isinstance(storage, _Storage):
            raise _LoadError(f"load: {self.records.path}: expected a storage in "
                             f"_rebuild_tensor_v2, got {type(storage).__name__}")
        size = tuple(size) if isinstance(size, (tuple, list)) else None
        stride = tuple(stride) if isinstance(stride, (tuple, list)) else None
        if size is None or stride is None or len(size) != len(stride) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0
                for v in size + stride + (offset,)):
            raise _LoadError(f"load: {self.records.path}: expected sizes, strides and an "
                             f"offset of integers >= 0 in a tensor, got another layout")
        if offset > storage.numel or all(size) and offset + sum(
                (s - 1) * d for s, d in zip(size, stride)) >= storage.numel:
            raise _LoadError(f"load: {self.records.path}: a tensor of size {size}, stride "
                             f"{stride} and offset {offset} reaches past its storage of "
                             f"{storage.numel} elements")
        if self.count:
            storage.uses += 1
            return _Pending(storage)
        return self._tensor(storage, offset, size, stride, bool(requires_grad))

    def _rebuild_parameter(self, data, requires_grad, hooks, state=None):
        if not isinstance(data, (_Pending, Tensor)):
            raise _LoadError(f"load: {self.records.path}: expected a tensor inside "
                             f"_rebuild_parameter, got {type(data).__name__}")
        if self.count:
            return data
        return Parameter(data.detach(), requires_grad=bool(requires_grad))

    def _rebuild_from_type_v2(self, func, new_type, args, state):
        if not callable(func) or not isinstance(args, tuple):
            raise _LoadError(f"load: {self.records.path}: expected a rebuild function and "
                             f"arguments in _rebuild_from_type_v2")
        out = func(*args)
        if not self.count and new_type is _PARAMETER and isinstance(out, Tensor) and \
                not isinstance(out, Parameter):
            return Parameter(out.detach(), requires_grad=out.requires_grad)
        return out

    def _tensor(self, st, offset, size, stride, requires_grad):
        """The clgrad Tensor of one layout over storage ``st`` (see the module doc)."""
        n = int(np.prod(size, dtype=np.int64)) if size else 1
        span = 1 + sum((s - 1) * d for s, d in zip(size, stride)) if all(size) else 0
        if st.uses > 1 or n > span:  # shared or overlapping: views of the whole storage
            if st.tensor is None:
                st.tensor = _upload(st.array(), st.cdtype, st.device)
            t = views.as_strided(st.tensor, size, stride, offset)
        else:
            arr = st.array()
            view = np.lib.stride_tricks.as_strided(
                arr[offset:], size, tuple(d * arr.itemsize for d in stride))
            t = _upload(np.ascontiguousarray(view) if view.ndim else np.array(view),
                        st.cdtype, st.device)
        return t.requires_grad_(True) if requires_grad else t


def _upload(arr, dtype, device):
    """A clgrad Tensor of dtype ``dtype`` whose stored elements are host array ``arr``'s
    (bfloat16: ``arr`` holds its uint16 bits, kept bit-exact)."""
    return creation._upload(arr, dtype, creation._device(device), bits=True)
