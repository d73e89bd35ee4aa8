"""Checkpoints: save and load nested state dicts as safetensors files, never pickle.

File layout (a valid safetensors file, readable by any safetensors tool):
    tensors   one entry per array leaf, named by its key path joined with "." ("model.fc.weight")
    metadata  {"clgrad": JSON {"version": 1, "tree": node, "crc32": {name: crc}}} where crc
              is the CRC-32 (zlib) of the tensor's little-endian C-order bytes, checked on load
              (files written before checksums existed have no "crc32" and load unchecked),
              and node is one of
                  {"dict": {key: node, ...}}     a dict (str keys, order kept, may be empty);
                                                a state_dict's ``_metadata`` ({module prefix:
                                                {"version": n, ...}}) is kept as a second
                                                entry "metadata" and loads back as the
                                                ``_metadata`` of an OrderedDict
                  {"intdict": {"0": node, ...}}  a dict with int keys (an optimizer's state,
                                                as PyTorch numbers it), written as decimal str
                  {"list": [node, ...]}          a list (tuples: {"tuple": [...]})
                  {"tensor": name, "kind": k}   k = "clgrad" (a Tensor) or "numpy" (an ndarray);
                                                a bfloat16 Tensor is safetensors dtype "BF16"
                                                (its 2-byte elements, bit-exact) and loads back
                                                as bfloat16;
                                                a Tensor with requires_grad=True also has
                                                "requires_grad": true (loads back requiring
                                                grad, as torch.load of a .pt; safetensors has no
                                                such field, so other readers ignore it)
                  {"value": v}                  int, float (incl. nan/inf), bool, str or None
The tree keeps the exact structure, so keys that contain "." round-trip unchanged. It nests
at most _MAX_DEPTH containers deep; deeper JSON is refused before it is parsed, so a crafted
file raises ValueError, never RecursionError.

Writes are atomic: the bytes go to a temporary file in the target's folder, which is flushed,
fsynced and renamed over the target (keeping the permission bits of a file it replaces, as an
in-place write would; a new file gets 0o666 less the umask); on any exception the temporary
file is removed and an existing checkpoint at the target is left as it was. The temporary file
is named ``.<name>.<12 hex digits>.tmp`` and is held under an exclusive advisory lock
(fcntl.flock, where the OS has it) while it is written. A save killed outright (SIGKILL, power
loss) leaves it behind; the next save to the same target removes such leftovers when no
process holds their lock (the kernel drops a dead process's locks) and they are older than
_STALE_SECONDS (which covers the instant between a writer creating its file and locking it,
and writers without locks). Other files are never touched.
"""

import json
import os
import re
import stat
import time
import uuid
import zlib
from collections import OrderedDict
from pathlib import Path

import numpy as np
import safetensors.numpy

from clgrad import dtypes
from clgrad.creation import _device, _upload, from_numpy
from clgrad.tensor import Tensor

__all__ = ["save", "load"]

_VERSION = 1
_CHUNK = 1 << 20  # bytes per write call
_MAX_DEPTH = 100  # nested dicts / lists / tuples in a checkpoint
_STALE_SECONDS = 60.0  # an unlocked temporary file older than this is a killed save's
_TMP_SUFFIX = re.compile(r"\.[0-9a-f]{12}\.tmp")


def save(obj, path):
    """Write `obj` to `path` atomically as a clgrad checkpoint (a safetensors file).

    Args:    obj: a dict with str keys, or int keys (each dict's keys all of one kind: an
                 optimizer's state_dict numbers its state with ints), whose values are
                 clgrad Tensors, NumPy arrays, ints,
                 floats, bools, str, None, NumPy scalars (stored as Python numbers), or
                 nested dicts / lists / tuples of these
             path: str or os.PathLike; its folder must exist; an existing file is replaced
    Dtypes:  arrays of bool, int8..int64, uint8..uint64, float16, float32, float64; Tensors of
             these clgrad has and bfloat16 (written as safetensors "BF16", bit-exact)
    Raises:  TypeError naming the key path for an unsupported value, key or array dtype;
             ValueError if two key paths join to the same tensor name, or for containers
             nested more than _MAX_DEPTH (100) deep; FileNotFoundError if
             the folder does not exist; OSError from the file system (the old file is kept)
    """
    if not isinstance(obj, dict):
        raise TypeError(f"save: expected a dict, got {type(obj).__name__}")
    arrays = {}
    tree = _encode(obj, (), arrays)
    crc = {name: _crc32(a) for name, (a, _, _) in arrays.items()}
    meta = {"clgrad": json.dumps({"version": _VERSION, "tree": tree, "crc32": crc})}
    data = safetensors.numpy.save({name: a for name, (a, _, _) in arrays.items()},
                                  metadata=meta)
    # safetensors.numpy has no bfloat16: its bits went as U16, retagged BF16 in the header
    data = _retag(data, {name: "BF16" for name, (_, _, bf16) in arrays.items() if bf16})
    _atomic_write(Path(path), data)


def load(path):
    """Read a checkpoint written by `save`.

    Returns: the saved structure; Tensors come back as clgrad Tensors (`clgrad.from_numpy`;
             "BF16" ones as bfloat16, bit-exact), NumPy arrays as NumPy arrays, tuples as
             tuples, other values as saved
    Raises:  FileNotFoundError if path does not exist; ValueError naming the path if the file
             is not a clgrad checkpoint (e.g. a plain safetensors file) or is corrupt: a bad
             header, metadata nested too deep, or a tensor whose bytes do not match the CRC-32
             saved with it (the message names the tensor)
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"load: expected a checkpoint file at {path}, got no such file")
    data = path.read_bytes()
    info = _read_info(data, path)
    # safetensors.numpy cannot read BF16: read those tensors' bits as U16 (retagged)
    bf16 = _tagged(data, "BF16")
    data = _retag(data, dict.fromkeys(bf16, "U16"))
    try:
        arrays = safetensors.numpy.load(data)
    except Exception as e:  # SafetensorError and friends: the data section is corrupt
        raise ValueError(f"load: {path}: expected valid safetensors data, got {e}") from e
    _verify(_saved_crc(info), arrays, path)
    try:
        return _decode(info["tree"], arrays, bf16)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"load: {path}: expected a consistent clgrad checkpoint, "
                         f"got a broken structure ({e!r})") from e


# ---------------------------------------------------------------------------- private helpers

_JSON_SCALARS = (bool, int, float, str, type(None))


def _crc32(a) -> int:
    """CRC-32 of an array's bytes (little-endian, C order: what safetensors stores)."""
    return zlib.crc32(a.reshape(-1).view(np.uint8)) if a.size else 0


def _saved_crc(info):
    """The saved {tensor name: CRC-32} of the parsed metadata, or None (older files)."""
    crc = info.get("crc32")
    if crc is not None and not (isinstance(crc, dict) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in crc.values())):
        raise ValueError("crc32 is not a map of tensor names to integers")
    return crc


def _verify(crc, arrays, path):
    if crc is None:
        return
    for name in sorted(set(crc) ^ set(arrays)):
        raise ValueError(f"load: {path}: tensor {name!r} is "
                         f"{'missing from the file' if name in crc else 'not in the checksums'}"
                         f"; the checkpoint is corrupt")
    for name, a in arrays.items():
        got = _crc32(a)
        if got != crc[name]:
            raise ValueError(f"load: {path}: tensor {name!r} is corrupt: its bytes have CRC-32 "
                             f"{got:#010x}, the checkpoint recorded {crc[name]:#010x} (the "
                             f"file was damaged after it was written)")


def _encode(value, keys, arrays):
    """The tree node for `value` at key path `keys`; array leaves are added to `arrays`."""
    where = ".".join(keys) or "<root>"
    if isinstance(value, (dict, list, tuple)) and len(keys) >= _MAX_DEPTH:
        raise ValueError(f"save: expected containers nested at most {_MAX_DEPTH} deep, got "
                         f"deeper ones at {where!r}")
    if isinstance(value, dict):
        ints = bool(value) and all(isinstance(k, (int, np.integer)) and
                                   not isinstance(k, (bool, np.bool_)) for k in value)
        nodes = {}
        for k, v in value.items():
            if ints:
                k = str(int(k))
            elif not isinstance(k, str):
                raise TypeError(f"save: expected str keys (or int keys only), got "
                                f"{type(k).__name__} key {k!r} in {where}")
            nodes[k] = _encode(v, keys + (k,), arrays)
        node = {"intdict" if ints else "dict": nodes}
        meta = getattr(value, "_metadata", None)
        if meta is not None:
            node["metadata"] = _encode_metadata(meta, where)
        return node
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [_encode(v, keys + (str(i),), arrays) for i, v in enumerate(value)]}
    if isinstance(value, Tensor):
        bf16 = value.dtype is dtypes.bfloat16
        node = _encode_array(value.detach()._host_bits(), "clgrad", keys, arrays, bf16)
        if value.requires_grad:
            node["requires_grad"] = True
        return node
    if isinstance(value, np.ndarray):
        return _encode_array(value, "numpy", keys, arrays)
    if isinstance(value, np.generic) and isinstance(value.item(), (bool, int, float)):
        value = value.item()
    if isinstance(value, _JSON_SCALARS):
        return {"value": value}
    raise TypeError(f"save: expected a Tensor, ndarray, number, bool, str, None, dict, list or "
                    f"tuple at key {where!r}, got {type(value).__name__}")


def _encode_metadata(meta, where):
    """A state_dict's ``_metadata`` as JSON: {prefix: {key: scalar}} (module versions)."""
    if not isinstance(meta, dict):
        raise TypeError(f"save: expected the _metadata of {where!r} to be a dict, got "
                        f"{type(meta).__name__}")
    out = {}
    for prefix, local in meta.items():
        if not isinstance(prefix, str) or not isinstance(local, dict) or not all(
                isinstance(k, str) and isinstance(v, _JSON_SCALARS) for k, v in local.items()):
            raise TypeError(f"save: expected the _metadata of {where!r} to map str module "
                            f"prefixes to dicts of str keys and numbers, bools, str or None, "
                            f"got {prefix!r}: {local!r}")
        out[prefix] = dict(local)
    return out


def _encode_array(a, kind, keys, arrays, bf16=False):
    """The tree node of array leaf ``a`` (bf16: a bfloat16 Tensor's uint16 bits)."""
    where = ".".join(keys)
    if a.dtype.kind not in "biuf" or a.dtype.itemsize > 8:
        raise TypeError(f"save: expected an array of bool, int or float (<= 64 bits) at key "
                        f"{where!r}, got dtype {a.dtype}")
    if where in arrays:
        raise ValueError(f"save: key paths {arrays[where][1]} and {keys} both name the tensor "
                         f"{where!r}; rename one of the keys")
    # safetensors wants dense little-endian bytes (np.ascontiguousarray would make 0-d 1-d).
    a = a.astype(a.dtype.newbyteorder("<"), order="C", copy=False)
    arrays[where] = (a, keys, bf16)
    return {"tensor": where, "kind": kind}


def _decode(node, arrays, bf16=frozenset()):
    if "tensor" in node:
        a = arrays[node["tensor"]]
        if node["tensor"] in bf16:
            if node["kind"] != "clgrad":
                raise ValueError(f"tensor {node['tensor']!r} is BF16, which NumPy lacks, "
                                 f"but is marked as an ndarray")
            t = _upload(a, dtypes.bfloat16, _device(None), bits=True)
        elif node["kind"] != "clgrad":
            return a
        else:
            t = from_numpy(a)
        return t.requires_grad_(True) if node.get("requires_grad") is True else t
    meta = node.get("metadata")
    (tag, body), = ((k, v) for k, v in node.items() if k != "metadata")
    if tag == "dict" and meta is not None:
        out = OrderedDict((k, _decode(v, arrays, bf16)) for k, v in body.items())
        out._metadata = OrderedDict((k, dict(v)) for k, v in meta.items())
        return out
    if tag == "dict":
        return {k: _decode(v, arrays, bf16) for k, v in body.items()}
    if tag == "intdict":
        return {int(k): _decode(v, arrays, bf16) for k, v in body.items()}
    if tag == "list":
        return [_decode(v, arrays, bf16) for v in body]
    if tag == "tuple":
        return tuple(_decode(v, arrays, bf16) for v in body)
    if tag == "value":
        return body
    raise ValueError(f"unknown node tag {tag!r}")


def _header(data):
    """The safetensors JSON header of ``data`` (checked by _read_info first)."""
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + n]), n


def _tagged(data, tag):
    """The names of the tensors whose safetensors dtype is ``tag`` ("BF16")."""
    header, _ = _header(data)
    return {name for name, v in header.items()
            if name != "__metadata__" and isinstance(v, dict) and v.get("dtype") == tag}


def _retag(data, tags):
    """``data`` with the header dtype of each tensor named in ``tags`` set to its value (the
    header is re-padded with spaces to 8 bytes, as safetensors pads it; the offsets, relative
    to the data section, stay valid)."""
    if not tags:
        return data
    header, n = _header(data)
    for name, tag in tags.items():
        header[name]["dtype"] = tag
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + n:]


def _read_info(data, path):
    """The clgrad metadata (version, structure tree, checksums) from the header of `data`."""
    n = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    if n < 2 or 8 + n > len(data):
        raise ValueError(f"load: {path}: expected a safetensors file (8-byte header length, "
                         f"JSON header), got {len(data)} bytes that do not form one")
    try:
        header = json.loads(_shallow(data[8:8 + n], 8))  # safetensors' header: 3 levels
        clgrad_meta = header.get("__metadata__", {}).get("clgrad")
    except (ValueError, AttributeError) as e:
        raise ValueError(f"load: {path}: expected a JSON safetensors header, got {e}") from e
    if clgrad_meta is None:
        raise ValueError(f"load: {path}: expected a clgrad checkpoint, got a safetensors file "
                         f"without clgrad metadata; read it with safetensors.numpy.load_file")
    try:  # a node is 2 JSON levels per container, plus {"tree": ...} and a leaf's own
        info = json.loads(_shallow(clgrad_meta, 2 * _MAX_DEPTH + 4))
        version, info["tree"] = info["version"], info["tree"]
        _saved_crc(info)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"load: {path}: expected clgrad metadata with a version and a tree, "
                         f"got {clgrad_meta[:80]!r} ({e})") from e
    if version != _VERSION:
        raise ValueError(f"load: {path}: expected checkpoint format version {_VERSION}, "
                         f"got {version!r}")
    return info


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _shallow(text, limit):
    """``text`` (JSON, str or bytes) if its arrays and objects nest at most ``limit`` deep;
    else ValueError, before any recursive parser sees it."""
    raw = text.encode() if isinstance(text, str) else bytes(text)
    b = np.frombuffer(_JSON_STRING.sub(b'""', raw), np.uint8)
    step = (np.isin(b, (0x5B, 0x7B)).astype(np.int64) - np.isin(b, (0x5D, 0x7D)))
    depth = int(np.cumsum(step).max()) if step.size else 0
    if depth > limit:
        raise ValueError(f"expected JSON nested at most {limit} deep, got {depth} levels")
    return text


def _atomic_write(path, data):
    """Write bytes to path via a fsynced temporary file in the same folder and os.replace."""
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"save: expected an existing folder for {path}, got no folder "
                                f"{folder}; create it first")
    _remove_stale_temps(path)
    tmp = folder / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    # os.open applies the umask to 0o666, so the checkpoint gets normal file permissions.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        _keep_mode(path, tmp)
        _lock(fd, blocking=True)  # held until the file is closed: "a save is writing this"
        with os.fdopen(fd, "wb") as f:
            view = memoryview(data)
            for start in range(0, len(view), _CHUNK):
                f.write(view[start:start + _CHUNK])
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(folder)


def _keep_mode(path, tmp):
    """Give ``tmp`` the permission bits of the existing file ``path`` (if there is one)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # no file yet (or unreadable): the umask's default stays
        return
    if stat.S_ISREG(mode):
        os.chmod(tmp, stat.S_IMODE(mode))


def _fsync_folder(folder):
    """Make the rename durable where the OS allows fsync on a directory (POSIX)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _lock(fd, blocking):
    """An exclusive advisory lock on ``fd``; True if taken (always True without fcntl).

    False when another process holds it, or when the file system has no locks (ENOLCK on
    some network mounts): then a writer goes on unlocked, and the cleanup keeps its files.
    """
    try:
        import fcntl
    except ImportError:  # Windows: an open file cannot be removed, which protects it instead
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError:
        return False
    return True


def _remove_stale_temps(path):
    """Remove ``.<path.name>.<12 hex>.tmp`` files in path's folder that no live save owns."""
    prefix = f".{path.name}"
    now = time.time()
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for e in entries:
        name = e.name
        if not (name.startswith(prefix) and _TMP_SUFFIX.fullmatch(name, len(prefix))):
            continue
        try:
            if not e.is_file(follow_symlinks=False) or \
                    now - e.stat(follow_symlinks=False).st_mtime < _STALE_SECONDS:
                continue
            fd = os.open(e.path, os.O_RDONLY)
        except OSError:
            continue
        try:
            if _lock(fd, blocking=False):  # no writer holds it: its writer is gone
                os.unlink(e.path)
        except OSError:
            pass
        finally:
            os.close(fd)
