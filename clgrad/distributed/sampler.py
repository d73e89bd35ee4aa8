"""DistributedSampler: each rank's share of a dataset's indices, PyTorch's partition rule."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["DistributedSampler"]


class DistributedSampler:
    """Yields the indices of ``dataset`` that rank ``rank`` of ``num_replicas`` visits.

    Rule (PyTorch's torch.utils.data.DistributedSampler): the epoch's order (a permutation
    when ``shuffle``, else 0..n-1) is padded to ``num_samples * num_replicas`` indices by
    repeating it from the start, or with ``drop_last`` truncated to that length; rank r takes
    every num_replicas-th index from position r. ``num_samples`` is ceil(n / R), or with
    ``drop_last`` and n % R != 0, ceil((n - R) / R). Every rank must use the same ``seed`` and
    call ``set_epoch(e)`` before each epoch, so all ranks draw the same permutation.

    Difference from PyTorch: the permutation is ``numpy.random.default_rng(seed +
    epoch).permutation(n)``, not ``torch.randperm`` with a torch.Generator (that needs
    torch's RNG), so the shuffled order differs from PyTorch's; the partition, the padding,
    ``len`` and ``set_epoch`` behave the same. Without shuffling the indices are identical.

    Args:    dataset: anything with ``__len__``; num_replicas, rank: default from the
             process group (clgrad.distributed); shuffle, seed, drop_last as PyTorch
    Raises:  ValueError for a rank outside [0, num_replicas - 1] or num_replicas < 1;
             RuntimeError / ValueError when the group is needed but not initialised
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        from clgrad.distributed import process_group as dist
        if num_replicas is None:
            num_replicas = dist.get_world_size()
        if rank is None:
            rank = dist.get_rank()
        if not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"DistributedSampler: expected num_replicas >= 1, got "
                             f"{num_replicas!r}")
        if not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: Invalid rank {rank}, rank should be in the "
                             f"interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        n = len(dataset)
        if self.drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(n)
        else:
            order = np.arange(n)
        if self.drop_last:
            order = order[:self.total_size]
        elif self.total_size > n:  # pad by wrapping round to the start (as often as needed)
            order = np.resize(order, self.total_size)
        return iter(order[self.rank:self.total_size:self.num_replicas].tolist())

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch: int):
        """Use permutation ``seed + epoch`` from now on (call it at the start of each epoch)."""
        self.epoch = int(epoch)
