"""PyTorch's checkpoint format (``torch.save``'s zip), written and read without torch and
without running pickle code.

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
Tensors that share a clgrad storage (views) share one storage record, as in PyTorch. NumPy
arrays are written as tensors (they load back as clgrad Tensors); NumPy scalars as Python
numbers. Writing is atomic (clgrad/io/checkpoint.py's temporary file + rename).

Reading: a restricted unpickler resolves only the globals that rebuild tensors, parameters,
storages, dtypes, devices and containers (the list in ``_ALLOWED``, like PyTorch's own
``weights_only=True``) and NumPy's array rebuilders; any other global raises
pickle.UnpicklingError naming it, before anything could be called. Storage dtypes: float16,
float32, float64, int64, int32, int16, int8, uint8 and bool load as such; bfloat16 and
complex raise TypeError. The legacy pre-1.6 (non-zip) format and TorchScript
archives raise ValueError saying so.
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
from clgrad._unpickle import AllowlistUnpickler, numpy_globals
from clgrad.nn.module import Parameter
from clgrad.ops import views
from clgrad.tensor import Tensor
from clgrad import layout
from clgrad.errors import DeviceError

__all__ = ["save", "to_bytes", "load", "is_torch_file"]

_ALIGN = 64
_STORAGES = {  # PyTorch storage class name -> NumPy dtype
    "FloatStorage": "f4", "DoubleStorage": "f8", "HalfStorage": "f2", "LongStorage": "i8",
    "IntStorage": "i4", "ShortStorage": "i2", "CharStorage": "i1", "ByteStorage": "u1",
    "BoolStorage": "?", "UntypedStorage": "u1", "BFloat16Storage": None,
    "ComplexFloatStorage": None, "ComplexDoubleStorage": None,
}
_TORCH_DTYPES = {  # torch.<name> dtype objects a pickle may name -> clgrad dtype name
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "int64": "int64", "long": "int64",
    "int32": "int32", "int": "int32", "bool": "bool", "int16": "int16", "short": "int16",
    "int8": "int8", "uint8": "uint8",
}
_LEGACY_MAGIC = 0x1950a86a20f9469cfc6c


def is_torch_file(head: bytes) -> bool:
    """True when the first bytes look like a zip archive or a legacy torch pickle."""
    return head[:4] == b"PK\x03\x04" or head[:2] == b"\x80\x02"


# ---------------------------------------------------------------------------- writing

def save(obj, path):
    """Write ``obj`` to ``path`` in PyTorch's zip format (see the module doc), atomically.

    Args:    obj: Tensors, NumPy arrays and scalars, int, float, bool, str, bytes, None, and
             dicts (any such keys; OrderedDicts stay OrderedDicts) / lists / tuples of these
    Raises:  TypeError naming the key path for any other value; FileNotFoundError if the folder
             does not exist; OSError from the file system (an old file is kept)
    """
    from clgrad.io.checkpoint import _atomic_write

    path = Path(path)
    _atomic_write(path, to_bytes(obj, path.stem or "archive"))


def to_bytes(obj, stem="archive") -> bytes:
    """The bytes of a torch zip checkpoint of ``obj`` whose records lie under ``stem/``."""
    storages = {}  # id(clgrad Storage or ndarray) -> (key, host array)
    tree = _prepare(obj, (), storages)
    buf = io.BytesIO()
    _Writer(buf, storages).dump(tree)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        _record(zf, f"{stem}/data.pkl", buf.getvalue())
        _record(zf, f"{stem}/.format_version", b"1")
        _record(zf, f"{stem}/.storage_alignment", b"64")
        _record(zf, f"{stem}/byteorder", b"little")
        for key, arr in storages.values():
            _record(zf, f"{stem}/data/{key}", arr.astype(arr.dtype.newbyteorder("<")).tobytes())
        _record(zf, f"{stem}/version", b"3\n")
    return out.getvalue()


class _Global:
    """A global the pickle names by (module, name) without importing it (torch is not needed)."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce wants a callable; never called here
        raise TypeError(f"{self.module}.{self.name} is only a name in a pickle")


_REBUILD = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_ORDERED = _Global("collections", "OrderedDict")


class _TensorRef:
    def __init__(self, storage_id, offset, shape, strides, param=None):
        self.storage_id, self.offset, self.shape, self.strides = (storage_id, offset, shape,
                                                                   strides)
        self.param = param  # None, or requires_grad of an nn.Parameter


class _Writer(pickle._Pickler):
    """The pure-Python pickler, writing _Global as GLOBAL opcodes and storages as
    persistent ids (protocol 2, as torch.save)."""

    def __init__(self, f, storages):
        super().__init__(f, protocol=2)
        self.storages = storages

    def save(self, obj, save_persistent_id=True):
        """Pickle ``obj``: _Global as a GLOBAL opcode, tensors and Parameters as torch.save's
        _rebuild_tensor_v2 / _rebuild_parameter reductions, anything else as pickle does.
        """
        if isinstance(obj, _Global):
            memo = self.memo.get(id(obj))
            if memo is not None:
                self.write(self.get(memo[0]))
                return
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
            self.memoize(obj)
            return
        if isinstance(obj, _TensorRef) and obj.param is not None:  # an nn.Parameter
            plain = _TensorRef(obj.storage_id, obj.offset, obj.shape, obj.strides)
            self.save_reduce(_REBUILD_PARAMETER, (plain, obj.param, _EmptyOrdered()), obj=obj)
            return
        if isinstance(obj, _TensorRef):
            self.save_reduce(_REBUILD, (_StorageId(obj.storage_id), obj.offset, obj.shape,
                                        obj.strides, False, _EmptyOrdered()), obj=obj)
            return
        if isinstance(obj, _EmptyOrdered):
            self.save_reduce(_ORDERED, (), obj=obj)
            return
        super().save(obj, save_persistent_id)

    def persistent_id(self, obj):
        """('storage', torch.<Type>Storage, key, 'cpu', numel) for a storage reference (the form
        torch.load expects), None for every other object.
        """
        if not isinstance(obj, _StorageId):
            return None
        key, arr = self.storages[obj.storage_id]
        name = {v: k for k, v in _STORAGES.items() if v and k != "UntypedStorage"}[
            arr.dtype.str[1:] if arr.dtype.kind != "b" else "?"]
        return ("storage", _Global("torch", name), key, "cpu", int(arr.size))


class _StorageId:
    def __init__(self, storage_id):
        self.storage_id = storage_id


class _EmptyOrdered:
    """An empty OrderedDict (the backward hooks of _rebuild_tensor_v2)."""


def _prepare(value, keys, storages):
    """``value`` with Tensors/arrays replaced by _TensorRefs (storages collected)."""
    where = ".".join(str(k) for k in keys) or "<root>"
    if isinstance(value, dict):
        items = [(k, _prepare(v, keys + (k,), storages)) for k, v in value.items()]
        for k, _ in items:
            if not isinstance(k, (str, int, float, bool, type(None), tuple)):
                raise TypeError(f"save: expected str, number, None or tuple keys, got "
                                f"{type(k).__name__} key {k!r} in {where}")
        return collections.OrderedDict(items) if isinstance(value, collections.OrderedDict) \
            else dict(items)
    if isinstance(value, (list, tuple)):
        out = [_prepare(v, keys + (i,), storages) for i, v in enumerate(value)]
        return out if isinstance(value, list) else tuple(out)
    if isinstance(value, Tensor):
        st = value._storage
        if id(st) not in storages:
            whole = Tensor(st, (st.size,), (1,), 0).numpy()
            storages[id(st)] = (str(len(storages)), whole)
        param = value.requires_grad if isinstance(value, Parameter) else None
        return _TensorRef(id(st), value.storage_offset(), tuple(value.shape),
                          tuple(value.stride()), param)
    if isinstance(value, np.ndarray):
        if value.dtype.str[1:] not in ("f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "b1"):
            raise TypeError(f"save: expected an array of a PyTorch dtype at key {where!r}, "
                            f"got dtype {value.dtype}")
        a = np.ascontiguousarray(value).reshape(-1)
        storages[id(a)] = (str(len(storages)), a)
        return _TensorRef(id(a), 0, tuple(value.shape), layout.contiguous_strides(value.shape))
    if isinstance(value, np.generic) and isinstance(value.item(), (bool, int, float)):
        return value.item()
    if isinstance(value, (bool, int, float, str, bytes, type(None))):
        return value
    raise TypeError(f"save: expected a Tensor, ndarray, number, bool, str, bytes, None, dict, "
                    f"list or tuple at key {where!r}, got {type(value).__name__}")


def _record(zf, name, data):
    """One stored zip record whose data starts on a 64-byte boundary (as torch aligns them)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    start = zf.fp.tell() + 30 + len(name.encode()) + 4  # local header + "FB" extra header
    pad = -start % _ALIGN
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    zf.writestr(info, data)


# ---------------------------------------------------------------------------- reading

def load(path, data: bytes, map_location=None):
    """The object in torch file ``path`` (its bytes ``data``); see the module doc.

    map_location: None (clgrad's default device), a device or spec ("cpu", "cuda:1", ...),
             a dict from saved location tags ("cuda:0", "cpu") to devices (unlisted tags: the
             default device), or a callable ``f(storage, location)`` returning a device, a
             spec, the storage itself (= "cpu", as PyTorch's ``lambda s, loc: s``) or
             ``storage.cuda(i)`` / ``storage.cpu()``
    Raises:  pickle.UnpicklingError naming a disallowed global; ValueError naming the path for
             a malformed, legacy or TorchScript file; TypeError for an unsupported dtype
    """
    if data[:2] == b"\x80\x02" and not data.startswith(b"PK"):
        raise ValueError(f"load: {path}: this is PyTorch's legacy (pre-1.6, non-zip) format, "
                         f"which clgrad does not read; re-save it with torch.save in torch >= "
                         f"1.6 (the default format since then)")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        names = zf.namelist()
    except zipfile.BadZipFile as e:
        raise ValueError(f"load: {path}: expected a PyTorch zip checkpoint, got {e}") from e
    pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
    if not pkl:
        what = ("a TorchScript archive (torch.jit.save); save a state_dict with torch.save "
                "instead") if any(n.endswith("/constants.pkl") for n in names) else \
            "a zip file without <name>/data.pkl"
        raise ValueError(f"load: {path}: expected a torch.save checkpoint, got {what}")
    prefix = pkl[0][:-len("data.pkl")]
    order = zf.read(prefix + "byteorder").decode().strip() if prefix + "byteorder" in names \
        else "little"
    if order not in ("little", "big"):
        raise ValueError(f"load: {path}: expected byteorder 'little' or 'big', got {order!r}")
    reader = _Reader(io.BytesIO(zf.read(pkl[0])), zf, prefix, order, path, map_location)
    try:
        tree = reader.load()
    except pickle.UnpicklingError as e:
        raise pickle.UnpicklingError(f"load: {path}: {e}") from None
    except (TypeError, ValueError, DeviceError):
        raise
    except Exception as e:  # truncated or garbled pickles raise many kinds of errors
        raise ValueError(f"load: {path}: expected a valid data.pkl, got {e!r}") from e
    return reader.finish(tree)


class _Pending:
    """A tensor to build once every reference to its storage is known."""

    def __init__(self, storage, offset, size, stride, requires_grad, param=False):
        self.storage, self.offset = storage, int(offset)
        self.size, self.stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
        self.requires_grad, self.param = bool(requires_grad), param


class _Storage:
    """A storage's host bytes as a NumPy array, its saved location, and where it goes."""

    def __init__(self, array, location, device):
        self.array, self.location, self.device, self.uses, self.tensor = (array, location,
                                                                          device, 0, None)


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


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks, metadata=None):
    return _Pending(storage, offset, size, stride, requires_grad)


def _rebuild_parameter(data, requires_grad, hooks, state=None):
    if not isinstance(data, _Pending):
        raise pickle.UnpicklingError("expected a tensor inside _rebuild_parameter")
    data.requires_grad, data.param = bool(requires_grad), True
    return data


def _rebuild_from_type_v2(func, new_type, args, state):
    out = func(*args)
    if new_type is _PARAMETER and isinstance(out, _Pending):
        out.param = True
    return out


def _codecs_encode(text, encoding="utf-8"):
    """Protocol-2 pickles spell bytes as _codecs.encode(str, 'latin1'); only that is allowed."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("expected _codecs.encode(str, 'latin1') for bytes")
    return text.encode("latin1")


_PARAMETER = object()
_TENSOR = object()


def _allowed():
    table = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch.nn.parameter", "Parameter"): _PARAMETER,
        ("torch", "Tensor"): _TENSOR,
        ("torch", "Size"): tuple,
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


class _Reader(AllowlistUnpickler):
    """clgrad.load's reader: resolves only torch's tensor rebuilders, storage types and dtypes,
    OrderedDict, a few builtins and NumPy arrays (no code from the file is ever run, unlike
    torch.load(weights_only=False))."""

    def __init__(self, f, zf, prefix, order, path, map_location):
        super().__init__(f, encoding="utf-8")
        self.zf, self.prefix, self.order, self.path = zf, prefix, order, path
        self.map_location, self.storages = map_location, {}

    @classmethod
    def allowed(cls):
        """The table of _allowed()."""
        return _allowed()

    def refusal(self, module, name):
        """Why the global is refused: clgrad.load never runs code from a pickle."""
        return (f"refusing to load the global {module}.{name}: clgrad.load rebuilds only "
                f"tensors, storages and containers and never runs code from a pickle "
                f"(weights_only=False does not change that)")

    def persistent_load(self, pid):
        """The storage a ('storage', type, key, location, numel) id names, read once from the
        archive's data/<key> record.

        Raises:  pickle.UnpicklingError for another id; TypeError for a storage type without a
                 clgrad dtype (bfloat16, complex); ValueError for a missing or short record
        """
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"expected a ('storage', type, key, location, numel) "
                                         f"persistent id, got {pid!r:.80}")
        _, kind, key, location, numel = pid
        if isinstance(kind, tuple) and kind[0] == "storage":
            code = _STORAGES[kind[1]]
            if code is None:
                raise TypeError(f"load: {self.path}: storage type torch.{kind[1]} has no "
                                f"clgrad dtype (bfloat16 and complex are not supported); "
                                f"convert it in PyTorch first (e.g. .float())")
            dtype = np.dtype(code)
        elif isinstance(kind, dtypes.DType):
            dtype = np.dtype(kind.np)
        else:
            raise pickle.UnpicklingError(f"expected a storage type, got {kind!r:.80}")
        if key not in self.storages:
            record = f"{self.prefix}data/{key}"
            try:
                raw = self.zf.read(record)
            except KeyError:
                raise ValueError(f"load: {self.path}: expected the record {record}, "
                                 f"got no such record") from None
            dt = dtype.newbyteorder("<" if self.order == "little" else ">")
            n = len(raw) // dt.itemsize
            if n < int(numel) and kind != ("storage", "UntypedStorage"):
                raise ValueError(f"load: {self.path}: storage {key} holds {n} elements, "
                                 f"expected {numel}")
            arr = np.frombuffer(raw, dt, n).astype(dtype.newbyteorder("="))
            self.storages[key] = _Storage(arr, location, self._device(location))
        return self.storages[key]

    def _device(self, location):
        from clgrad._device import resolve
        m = self.map_location
        if callable(m) and not isinstance(m, (str, torch_device)):
            host = _HostStorage(location)
            m = m(host, location)
            if m is host:
                m = "cpu"
            if not isinstance(m, (str, int, torch_device, runtime.Device, type(None))):
                raise TypeError(f"load: map_location callable: expected it to return the "
                                f"storage, a device or a device string, got "
                                f"{type(m).__name__}")
        elif isinstance(m, dict):
            m = m.get(location)
        return resolve(m)

    def finish(self, tree):
        """Count storage uses, then replace every _Pending by its clgrad Tensor."""
        self._walk(tree, count=True)
        return self._walk(tree, count=False)

    def _walk(self, node, count):
        if isinstance(node, _Pending):
            if count:
                node.storage.uses += 1
                return node
            return self._tensor(node)
        if isinstance(node, dict):
            out = {k: self._walk(v, count) for k, v in node.items()}
            if count:
                return node
            if isinstance(node, collections.OrderedDict):
                new = collections.OrderedDict(out)
                new.__dict__.update(getattr(node, "__dict__", {}))  # _metadata of state dicts
                return new
            return type(node)(out) if type(node) is dict else out
        if isinstance(node, (list, tuple)):
            out = [self._walk(v, count) for v in node]
            return node if count else (out if isinstance(node, list) else tuple(out))
        return node

    def _tensor(self, p):
        st = p.storage
        arr = st.array
        need = p.offset + sum((s - 1) * d for s, d in zip(p.size, p.stride)) + 1 \
            if all(p.size) else 0
        if p.offset < 0 or any(d < 0 for d in p.stride) or need > arr.size:
            raise ValueError(f"load: {self.path}: a tensor of size {p.size}, stride "
                             f"{p.stride} and offset {p.offset} reaches past its storage of "
                             f"{arr.size} elements")
        if st.uses > 1:  # shared: one device storage, views of it (as PyTorch)
            if st.tensor is None:
                st.tensor = _upload(arr, st.device)
            t = views.as_strided(st.tensor, p.size, p.stride, p.offset)
        else:
            view = np.lib.stride_tricks.as_strided(
                arr[p.offset:], p.size, tuple(d * arr.itemsize for d in p.stride))
            t = _upload(np.ascontiguousarray(view) if view.ndim else np.array(view), st.device)
        if p.param:
            return Parameter(t, requires_grad=p.requires_grad)
        return t.requires_grad_(True) if p.requires_grad else t


def _upload(arr, device):
    """A clgrad Tensor of host array ``arr`` (its dtype kept; see the module doc)."""
    return creation.from_numpy(arr, device=device)
