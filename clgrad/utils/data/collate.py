"""default_collate / default_convert (PyTorch's semantics) and host-side batches for workers.

In the main process a collated array becomes a clgrad Tensor (one upload per field). In a
forked worker process (no OpenCL there, see dataloader.py) it becomes a ``HostArray``, a NumPy
array the main process uploads when the batch arrives.

Host dtypes: bool, int32, int64, float16, float32 and float64 stay; other integer dtypes
(uint8, int8, int16, uint32, ...) become int64 (clgrad has no narrower integer dtypes yet;
PyTorch would keep them); Python ints become int64 and Python floats float64 (as PyTorch);
anything else (complex, str and object arrays) is a TypeError.
"""
from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from clgrad import creation
from clgrad.ops.index import stack
from clgrad.tensor import Tensor

__all__ = ["default_collate", "default_convert", "HostArray", "upload", "host_array"]

_KEPT = (np.bool_, np.int32, np.int64, np.float16, np.float32, np.float64)
_STATE = {"host": False}  # True in a forked worker: arrays stay on the host


class HostArray(np.ndarray):
    """A NumPy array that the main process turns into a clgrad Tensor when a batch arrives."""


def default_collate(batch):
    """Stack a list of samples into a batch, recursively, as ``torch.utils.data.default_collate``.

    Rules:   Tensors -> ``clgrad.stack`` (B, *S); NumPy arrays -> one Tensor (B, *S); Python
             floats -> float64 (B,), ints -> int64 (B,), bools -> bool (B,), NumPy scalars ->
             their dtype (B,); str/bytes -> the list as is; dicts -> a dict of collated values;
             namedtuples -> the same namedtuple of collated fields; tuples -> a list of collated
             fields (as PyTorch); other sequences -> the same type when it can be built
    Raises:  RuntimeError if sequences in the batch differ in length; TypeError for a type it
             cannot collate or a dtype clgrad has no counterpart of
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch))
    if isinstance(elem, np.ndarray) or (isinstance(elem, np.generic) and elem.dtype.kind in "biuf"):
        if elem.dtype.kind in "USO":
            raise TypeError(f"default_collate: expected arrays of numbers, got dtype {elem.dtype}")
        return _leaf(np.stack([np.asarray(b) for b in batch]))
    if isinstance(elem, bool):
        return _leaf(np.array(batch, dtype=np.bool_))
    if isinstance(elem, numbers.Integral):
        return _leaf(np.array(batch, dtype=np.int64))
    if isinstance(elem, numbers.Real):
        return _leaf(np.array(batch, dtype=np.float64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return type(elem)({k: default_collate([d[k] for d in batch]) for k in elem})
        except TypeError:  # a mapping type that cannot be built from a dict
            return {k: default_collate([d[k] for d in batch]) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise RuntimeError("default_collate: expected each element in list of batch to be "
                               "of equal size")
        fields = [default_collate(list(s)) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return fields
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    raise TypeError(f"default_collate: expected a batch of Tensors, NumPy arrays, numbers, "
                    f"dicts or lists; found {type(elem).__name__}")


def default_convert(data):
    """Convert one sample without batching (``batch_size=None``), as PyTorch's default_convert.

    NumPy arrays (of numbers) and 0-d NumPy numbers become Tensors; dicts, namedtuples, tuples
    and lists are converted element by element; Tensors, Python numbers, strings and anything
    else stay as they are.
    """
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        return _leaf(data)
    if isinstance(data, np.generic) and data.dtype.kind in "biuf":
        return _leaf(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return type(data)({k: default_convert(v) for k, v in data.items()}) \
            if type(data) is dict else {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # as PyTorch
    if isinstance(data, list):
        return [default_convert(d) for d in data]
    return data


def upload(data):
    """Replace the HostArrays of a batch from a worker by Tensors (in the main process)."""
    if isinstance(data, HostArray):
        return creation.from_numpy(contiguous(data.view(np.ndarray)))
    if isinstance(data, dict):
        return type(data)((k, upload(v)) for k, v in data.items())
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(upload(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(upload(d) for d in data)
    return data


def host_array(value, what):
    """A host NumPy array of a clgrad dtype for a Tensor, array or scalar (see module doc)."""
    if isinstance(value, Tensor):
        if value.dtype.name == "bfloat16":
            raise TypeError(f"{what}: bfloat16 data cannot be kept on the host (NumPy has no "
                            f"bfloat16); keep the data float32 and convert each batch "
                            f"(x.bfloat16()), or train under autocast")
        value = value.detach().numpy()
    a = np.asarray(value)
    if a.dtype.type in _KEPT:
        return a
    if np.issubdtype(a.dtype, np.integer):
        return a.astype(np.int64)
    raise TypeError(f"{what}: expected bool, integer or float data, got dtype {a.dtype}")


def _leaf(a):
    """A Tensor of host array ``a`` (main process), or a HostArray (forked worker)."""
    a = contiguous(host_array(a, "default_collate"))
    return a.view(HostArray) if _STATE["host"] else creation.from_numpy(a)


def contiguous(a):
    """``a`` as a C-contiguous array, 0-d kept 0-d (np.ascontiguousarray makes it 1-d)."""
    return a if a.flags.c_contiguous else np.array(a, order="C")
