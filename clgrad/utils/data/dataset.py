"""Datasets with PyTorch's semantics: map-style (``ds[i]``, ``len(ds)``) and iterable.

``TensorDataset`` keeps host NumPy copies of its tensors and returns clgrad Tensors per index
(in a forked DataLoader worker it returns HostArrays, see collate.py); the DataLoader batches a
TensorDataset (and Subsets of one) by fancy indexing the host arrays, one upload per field.
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings

import numpy as np

from clgrad import creation
from clgrad.tensor import Tensor
from clgrad._generator import default_rng_for
from clgrad.utils.data.collate import _STATE, HostArray, contiguous, host_array

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "StackDataset", "ChainDataset", "random_split"]


class Dataset:
    """A map-style dataset: subclasses define ``__getitem__(i)`` and (for most samplers)
    ``__len__``. ``a + b`` is ``ConcatDataset([a, b])``. ``Dataset[T]`` is accepted in type
    annotations and base-class lists, as PyTorch's generic Dataset."""

    def __class_getitem__(cls, item):
        return cls

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__}: expected __getitem__ to be defined")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``. With DataLoader workers each worker
    iterates its own copy; split the work with ``get_worker_info()`` (else samples repeat)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__}: expected __iter__ to be defined")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are rows of equally long tensors: ``ds[i] == (t0[i], t1[i], ...)``.

    Args:    *tensors: clgrad Tensors or array-likes, each of shape (N, ...), same N for all
    Storage: host NumPy copies (``.arrays``, dtypes as collate.py's doc says); Tensors are
             downloaded once here. NumPy inputs already of a clgrad dtype are kept without a
             copy, so do not mutate them. ``.tensors`` gives the fields as clgrad Tensors.
    Returns: ``ds[i]`` a tuple of Tensors (0-d for per-sample scalars such as labels); a slice,
             list, array or Tensor of indices gives stacked Tensors, as PyTorch
    Raises:  ValueError if no tensors are given, one is 0-d, or their lengths differ;
             TypeError if a dtype has no clgrad counterpart; IndexError for an index out of range
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: expected at least one tensor, got none")
        arrays = tuple(host_array(t, f"TensorDataset: tensor {k}") for k, t in enumerate(tensors))
        for k, a in enumerate(arrays):
            if a.ndim == 0:
                raise ValueError(f"TensorDataset: expected tensors of shape (N, ...), "
                                 f"got a 0-d tensor at position {k}")
            if len(a) != len(arrays[0]):
                raise ValueError(f"TensorDataset: expected every tensor to have {len(arrays[0])} "
                                 f"rows (as tensor 0), got {len(a)} for tensor {k}")
        self.arrays = arrays
        self._tensors = None

    @property
    def tensors(self):
        """The fields as clgrad Tensors (uploaded once, on first use)."""
        if self._tensors is None:
            self._tensors = tuple(creation.from_numpy(np.ascontiguousarray(a))
                                  for a in self.arrays)
        return self._tensors

    def __getitem__(self, index):
        return tuple(_wrap(f) for f in self._host_batch(_host_index(index, len(self))))

    def __len__(self):
        return len(self.arrays[0])

    def _host_batch(self, indices):
        """The host arrays of the given indices, one per field (the DataLoader's fast path)."""
        return [a[indices] for a in self.arrays]

    def __getstate__(self):  # workers get the host arrays, never device tensors
        return {"arrays": self.arrays, **{k: v for k, v in self.__dict__.items()
                                          if k not in ("arrays", "_tensors")}}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._tensors = None

    def __repr__(self):
        fields = ", ".join(f"{a.dtype.name}{tuple(a.shape)}" for a in self.arrays)
        return f"{type(self).__name__}({fields})"


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``: ``Subset(ds, idx)[k] == ds[idx[k]]``."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, (list, tuple)):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)

    def _host_batch(self, indices):
        return fast_batch(self.dataset, np.asarray(self.indices)[indices])


class ConcatDataset(Dataset):
    """The samples of several map-style datasets, one after the other.

    Raises:  ValueError for an empty list; TypeError for an IterableDataset member
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: expected a non-empty list of datasets, got none")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset: expected map-style datasets, got an "
                                "IterableDataset (use ChainDataset)")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        n = len(self)
        if index < 0:
            if -index > n:
                raise ValueError(f"ConcatDataset: absolute value of index {index} should not "
                                 f"exceed dataset length {n}")
            index += n
        k = bisect.bisect_right(self.cumulative_sizes, index)
        if k == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {index} is out of range for {n} samples")
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][index - start]


class StackDataset(Dataset):
    """Samples of several datasets of one length side by side: ``StackDataset(a, b)[i]`` is
    ``(a[i], b[i])``, ``StackDataset(x=a, y=b)[i]`` is ``{'x': a[i], 'y': b[i]}`` (PyTorch's
    torch.utils.data.StackDataset). ``__getitems__`` batches through the datasets' own
    ``__getitems__`` where they have one.

    Raises:  ValueError (PyTorch's messages) for no dataset, both positional and keyword
             datasets, datasets of different lengths, or a nested ``__getitems__`` returning
             the wrong number of samples
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        datasets = list(args or kwargs.values())
        self._length = len(datasets[0])
        if any(self._length != len(d) for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args or kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list):
        named = isinstance(self.datasets, dict)
        columns = {}
        for k, d in (self.datasets.items() if named else enumerate(self.datasets)):
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected "
                                     f"{len(indices)}, got {len(items)}")
                columns[k] = list(items)
            else:
                columns[k] = [d[i] for i in indices]
        if named:
            return [{k: col[j] for k, col in columns.items()} for j in range(len(indices))]
        return [tuple(col[j] for col in columns.values()) for j in range(len(indices))]

    def __len__(self):
        return self._length


class ChainDataset(IterableDataset):
    """The samples of several iterable datasets, one stream after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping Subsets of the given lengths, in random order.

    Args:    lengths: ints summing to len(dataset), or fractions summing to 1 (each gets
             floor(n * f) samples, and the remainder goes one by one to the first splits
             round-robin, as PyTorch); generator: a clgrad.Generator or None (the global
             generator then decides, so ``clgrad.manual_seed`` makes it reproducible)
    Raises:  ValueError if the lengths do not sum to len(dataset) (or fractions to 1)
    """
    n = len(dataset)
    lengths = list(lengths)
    if lengths and math.isclose(sum(lengths), 1) and sum(lengths) <= 1 and n != 1:
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, c in enumerate(counts):
            if c == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0; this "
                              f"might result in an empty dataset", stacklevel=2)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"random_split: expected lengths summing to the dataset's length "
                         f"{n} (or fractions summing to 1), got {lengths}")
    order = default_rng_for(generator).permutation(n).tolist()
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, order[start:start + length]))
        start += length
    return out


# ---------------------------------------------------------------------------- private helpers

def _host_index(index, n):
    """A NumPy-usable index (int, slice or int array) for ``index``, bounds-checked."""
    if isinstance(index, Tensor):
        index = index.numpy()
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
        if not -n <= index < n:
            raise IndexError(f"TensorDataset: index {index} is out of range for {n} samples")
        return int(index)
    if isinstance(index, slice):
        return index
    a = np.asarray(index)
    if a.dtype.kind not in "iub" or a.ndim > 1:
        raise TypeError(f"TensorDataset: expected an int, slice or 1-d sequence of ints/bools "
                        f"as index, got {type(index).__name__}")
    if a.dtype.kind != "b" and a.size and not (-n <= a.min() and a.max() < n):
        raise IndexError(f"TensorDataset: indices must be in range for {n} samples, "
                         f"got {a.min()}..{a.max()}")
    return a


def _wrap(a):
    a = contiguous(np.asarray(a))
    return a.view(HostArray) if _STATE["host"] else creation.from_numpy(a)


def fast_batch(ds, indices):
    """Host arrays (one per field) of a batch when ``ds`` is a TensorDataset or a Subset of
    one whose ``__getitem__`` is not overridden, else None (then samples are collated)."""
    for cls in (TensorDataset, Subset):
        if isinstance(ds, cls) and type(ds).__getitem__ is cls.__getitem__:
            return ds._host_batch(indices)
    return None
