"""Checkpoints: save and load nested state dicts as safetensors files, never pickle.

File layout (a valid safetensors file, readable by any safetensors tool):
    tensors   one entry per array leaf, named by its key path joined with "." ("model.fc.weight")
    metadata  {"clgrad": JSON {"version": 1, "tree": node}} where node is one of
                  {"dict": {key: node, ...}}     a dict (str keys, order kept, may be empty)
                  {"list": [node, ...]}          a list (tuples: {"tuple": [...]})
                  {"tensor": name, "kind": k}   k = "clgrad" (a Tensor) or "numpy" (an ndarray)
                  {"value": v}                  int, float (incl. nan/inf), bool, str or None
The tree keeps the exact structure, so keys that contain "." round-trip unchanged.

Writes are atomic: the bytes go to a temporary file in the target's folder, which is flushed,
fsynced and renamed over the target; on any exception the temporary file is removed and an
existing checkpoint at the target is left as it was.
"""

import json
import os
import uuid
from pathlib import Path

import numpy as np
import safetensors.numpy

from clgrad.creation import from_numpy
from clgrad.tensor import Tensor

__all__ = ["save", "load"]

_VERSION = 1
_CHUNK = 1 << 20  # bytes per write call


def save(obj, path):
    """Write `obj` to `path` atomically as a clgrad checkpoint (a safetensors file).

    Args:    obj: a dict with str keys whose values are clgrad Tensors, NumPy arrays, ints,
                 floats, bools, str, None, NumPy scalars (stored as Python numbers), or
                 nested dicts / lists / tuples of these
             path: str or os.PathLike; its folder must exist; an existing file is replaced
    Dtypes:  arrays of bool, int8..int64, uint8..uint64, float16, float32, float64
    Raises:  TypeError naming the key path for an unsupported value, key or array dtype;
             ValueError if two key paths join to the same tensor name; FileNotFoundError if
             the folder does not exist; OSError from the file system (the old file is kept)
    """
    if not isinstance(obj, dict):
        raise TypeError(f"save: expected a dict, got {type(obj).__name__}")
    arrays = {}
    tree = _encode(obj, (), arrays)
    meta = {"clgrad": json.dumps({"version": _VERSION, "tree": tree})}
    data = safetensors.numpy.save({name: a for name, (a, _) in arrays.items()}, metadata=meta)
    _atomic_write(Path(path), data)


def load(path):
    """Read a checkpoint written by `save`.

    Returns: the saved structure; Tensors come back as clgrad Tensors (`clgrad.from_numpy`),
             NumPy arrays as NumPy arrays, tuples as tuples, other values as saved
    Raises:  FileNotFoundError if path does not exist; ValueError naming the path if the file
             is not a clgrad checkpoint (e.g. a plain safetensors file) or is corrupt
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"load: expected a checkpoint file at {path}, got no such file")
    data = path.read_bytes()
    tree = _read_tree(data, path)
    try:
        arrays = safetensors.numpy.load(data)
    except Exception as e:  # SafetensorError and friends: the data section is corrupt
        raise ValueError(f"load: {path}: expected valid safetensors data, got {e}") from e
    try:
        return _decode(tree, arrays)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"load: {path}: expected a consistent clgrad checkpoint, "
                         f"got a broken structure ({e!r})") from e


# ---------------------------------------------------------------------------- private helpers

_JSON_SCALARS = (bool, int, float, str, type(None))


def _encode(value, keys, arrays):
    """The tree node for `value` at key path `keys`; array leaves are added to `arrays`."""
    where = ".".join(keys) or "<root>"
    if isinstance(value, dict):
        nodes = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"save: expected str keys, got {type(k).__name__} key {k!r} "
                                f"in {where}")
            nodes[k] = _encode(v, keys + (k,), arrays)
        return {"dict": nodes}
    if isinstance(value, (list, tuple)):
        kind = "list" if isinstance(value, list) else "tuple"
        return {kind: [_encode(v, keys + (str(i),), arrays) for i, v in enumerate(value)]}
    if isinstance(value, Tensor):
        return _encode_array(value.numpy(), "clgrad", keys, arrays)
    if isinstance(value, np.ndarray):
        return _encode_array(value, "numpy", keys, arrays)
    if isinstance(value, np.generic) and isinstance(value.item(), (bool, int, float)):
        value = value.item()
    if isinstance(value, _JSON_SCALARS):
        return {"value": value}
    raise TypeError(f"save: expected a Tensor, ndarray, number, bool, str, None, dict, list or "
                    f"tuple at key {where!r}, got {type(value).__name__}")


def _encode_array(a, kind, keys, arrays):
    where = ".".join(keys)
    if a.dtype.kind not in "biuf" or a.dtype.itemsize > 8:
        raise TypeError(f"save: expected an array of bool, int or float (<= 64 bits) at key "
                        f"{where!r}, got dtype {a.dtype}")
    if where in arrays:
        raise ValueError(f"save: key paths {arrays[where][1]} and {keys} both name the tensor "
                         f"{where!r}; rename one of the keys")
    # safetensors wants dense little-endian bytes (np.ascontiguousarray would make 0-d 1-d).
    a = a.astype(a.dtype.newbyteorder("<"), order="C", copy=False)
    arrays[where] = (a, keys)
    return {"tensor": where, "kind": kind}


def _decode(node, arrays):
    if "tensor" in node:
        a = arrays[node["tensor"]]
        return from_numpy(a) if node["kind"] == "clgrad" else a
    (tag, body), = node.items()
    if tag == "dict":
        return {k: _decode(v, arrays) for k, v in body.items()}
    if tag == "list":
        return [_decode(v, arrays) for v in body]
    if tag == "tuple":
        return tuple(_decode(v, arrays) for v in body)
    if tag == "value":
        return body
    raise ValueError(f"unknown node tag {tag!r}")


def _read_tree(data, path):
    """The clgrad structure tree from the safetensors header of `data`."""
    n = int.from_bytes(data[:8], "little") if len(data) >= 8 else -1
    if n < 2 or 8 + n > len(data):
        raise ValueError(f"load: {path}: expected a safetensors file (8-byte header length, "
                         f"JSON header), got {len(data)} bytes that do not form one")
    try:
        header = json.loads(data[8:8 + n])
        clgrad_meta = header.get("__metadata__", {}).get("clgrad")
    except (ValueError, AttributeError) as e:
        raise ValueError(f"load: {path}: expected a JSON safetensors header, got {e}") from e
    if clgrad_meta is None:
        raise ValueError(f"load: {path}: expected a clgrad checkpoint, got a safetensors file "
                         f"without clgrad metadata; read it with safetensors.numpy.load_file")
    try:
        info = json.loads(clgrad_meta)
        version, tree = info["version"], info["tree"]
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"load: {path}: expected clgrad metadata with a version and a tree, "
                         f"got {clgrad_meta[:80]!r}") from e
    if version != _VERSION:
        raise ValueError(f"load: {path}: expected checkpoint format version {_VERSION}, "
                         f"got {version!r}")
    return tree


def _atomic_write(path, data):
    """Write bytes to path via a fsynced temporary file in the same folder and os.replace."""
    folder = path.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"save: expected an existing folder for {path}, got no folder "
                                f"{folder}; create it first")
    tmp = folder / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    # os.open applies the umask to 0o666, so the checkpoint gets normal file permissions.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
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
