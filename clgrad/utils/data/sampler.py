"""Samplers: which dataset indices a DataLoader visits, in which order (PyTorch's semantics).

Random samplers draw from ``generator`` (a clgrad.Generator) when given; without one, each
``iter()`` seeds a fresh NumPy generator from clgrad's global generator, so two runs after
``clgrad.manual_seed(s)`` visit the same orders (the orders differ from PyTorch's: the bit
generator is NumPy's PCG64, not PyTorch's Mersenne Twister).
"""
from __future__ import annotations

import math

import numpy as np

from clgrad._generator import default_rng_for

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


class Sampler:
    """Base class: subclasses define ``__iter__`` (indices) and, where known, ``__len__``.
    ``Sampler[int]`` is accepted in annotations and base-class lists, as in PyTorch."""

    def __class_getitem__(cls, item):
        return cls

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__}: expected __iter__ to be defined")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the dataset's indices.

    Args:    replacement: draw num_samples indices independently (with repeats) instead of a
                 permutation; num_samples: how many (default len(data_source); without
                 replacement more than the length gives whole permutations back to back, as
                 PyTorch); generator: a clgrad.Generator or None (module doc)
    Raises:  ValueError for num_samples <= 0 or not an int; TypeError for replacement not bool
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: expected replacement to be a bool, got "
                            f"{replacement!r}")
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        n = self.num_samples
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n <= 0:
            raise ValueError(f"RandomSampler: expected num_samples to be a positive int, "
                             f"got {n!r}")

    @property
    def num_samples(self):
        """Samples per epoch: ``num_samples`` if given, else len(data_source)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, want = len(self.data_source), self.num_samples
        rng = default_rng_for(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=want).tolist()
            return
        for _ in range(want // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[:want % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new one every ``iter()``)."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        for i in default_rng_for(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices in 0..len(weights)-1, index i with probability w_i / sum(w).

    Args:    weights: a sequence or Tensor of non-negative numbers (need not sum to 1);
             replacement: without it each index appears at most once (num_samples <= the
             number of non-zero weights); generator: as RandomSampler
    Raises:  ValueError for num_samples <= 0, negative/NaN weights, weights that are not 1-d,
             or more samples without replacement than positive weights
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, (int, np.integer)) or isinstance(num_samples, bool) \
                or num_samples <= 0:
            raise ValueError(f"WeightedRandomSampler: expected num_samples to be a positive "
                             f"int, got {num_samples!r}")
        if not isinstance(replacement, bool):
            raise TypeError(f"WeightedRandomSampler: expected replacement to be a bool, got "
                            f"{replacement!r}")
        if hasattr(weights, "detach"):  # a Tensor (one that requires grad too, as PyTorch)
            weights = weights.detach().numpy()
        w = np.asarray(weights, np.float64)
        if w.ndim != 1 or not np.all(w >= 0) or not w.sum() > 0:
            raise ValueError(f"WeightedRandomSampler: expected a 1-d sequence of non-negative "
                             f"weights with a positive sum, got shape {w.shape}")
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError(f"WeightedRandomSampler: expected num_samples <= "
                             f"{np.count_nonzero(w)} (the positive weights) without "
                             f"replacement, got {num_samples}")
        self.weights, self.num_samples = w, int(num_samples)
        self.replacement, self.generator = replacement, generator

    def __iter__(self):
        rng = default_rng_for(self.generator)
        p = self.weights / self.weights.sum()
        yield from rng.choice(len(p), size=self.num_samples, replace=self.replacement,
                              p=p).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from ``sampler`` (the last shorter unless drop_last).

    Raises:  ValueError for batch_size not a positive int; TypeError for drop_last not bool
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) \
                or batch_size <= 0:
            raise ValueError(f"BatchSampler: expected batch_size to be a positive int, got "
                             f"{batch_size!r}")
        if not isinstance(drop_last, bool):
            raise TypeError(f"BatchSampler: expected drop_last to be a bool, got {drop_last!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, int(batch_size), drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
