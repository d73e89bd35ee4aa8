"""DataLoader with PyTorch's arguments and semantics, worker processes included.

Workers (``num_workers > 0``, clgrad/utils/data/worker.py) are real processes, started with
``multiprocessing_context`` ('fork' by default where the OS has it, as PyTorch on Linux; else
the platform's default).

* Forked workers never touch OpenCL: OpenCL contexts and queues do not survive fork. They
  index the dataset and collate on the host; ``default_collate`` and TensorDataset give
  HostArrays (NumPy) there, which the main process uploads when a batch arrives (one upload per
  field). Every OpenCL entry point raises in a forked worker. If the dataset or collate_fn of
  a map-style dataset makes clgrad Tensors there anyway, the loader warns once and loads the
  rest of that epoch's batches in the main process (the same batches in the same order); an
  IterableDataset raises instead. For such datasets pass ``multiprocessing_context='spawn'``.
* Spawned (or forkserver) workers import clgrad afresh and may use OpenCL (their own context
  on their default device); their Tensors travel back as host arrays and are uploaded by the
  main process. The dataset must be picklable, and the program needs the usual
  ``if __name__ == "__main__":`` guard.

Seeds: each ``iter()`` draws a base seed from ``generator`` (or clgrad's global generator);
worker k seeds Python's ``random`` and clgrad's generator with base_seed + k, and NumPy's global
generator with a state mixed from (base_seed, k) (as PyTorch >= 1.9: NumPy-based augmentation
differs between workers and epochs, and repeats under ``clgrad.manual_seed``), before
``worker_init_fn(k)``.
``pin_memory`` and ``pin_memory_device`` are accepted and do nothing (there is no pinned host
memory on this path: batches are uploaded from NumPy arrays).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from clgrad.utils.data.collate import default_collate, default_convert
from clgrad.utils.data.dataset import IterableDataset
from clgrad.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler
from clgrad.utils.data.worker import (Fetcher, WorkerInfo, WorkerPool, draw_seed, fetch_iter,
                                      get_worker_info)

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]


class DataLoader:
    """Iterate a dataset in batches, as ``torch.utils.data.DataLoader``.

    Args:    dataset: map-style (``__getitem__``/``__len__``) or an IterableDataset
             batch_size: samples per batch (default 1); None: no batching, each sample goes
                 through ``default_convert`` (or collate_fn)
             shuffle: a new random order every epoch (RandomSampler with ``generator``)
             sampler / batch_sampler: indices / lists of indices to visit (batch_sampler
                 excludes batch_size, shuffle, sampler and drop_last)
             collate_fn: list of samples -> batch (default ``default_collate``)
             drop_last: skip the last, shorter batch
             num_workers, multiprocessing_context, worker_init_fn, prefetch_factor (batches
                 in flight per worker, default 2), persistent_workers (keep the workers across
                 epochs), timeout (seconds to wait for a batch, 0 = forever): module doc
             generator: a clgrad.Generator for the shuffle order and worker seeds
             pin_memory, pin_memory_device: accepted, no effect (module doc)
             in_order: False yields worker batches as they arrive
    Returns: per batch what collate_fn returns; with default_collate and samples that are
             tuples, a list of Tensors (B, *S), as PyTorch
    Raises:  ValueError for conflicting or out-of-range arguments (the messages of PyTorch);
             RuntimeError if a worker dies or times out; a worker's exception is re-raised in
             the main process with the worker's traceback in the message
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        _check_args(batch_size, num_workers, timeout, prefetch_factor, persistent_workers)
        self.dataset, self.num_workers = dataset, int(num_workers)
        self.timeout, self.worker_init_fn = timeout, worker_init_fn
        self.prefetch_factor = 2 if prefetch_factor is None and num_workers else prefetch_factor
        self.pin_memory, self.pin_memory_device = bool(pin_memory), pin_memory_device
        self.persistent_workers, self.in_order = persistent_workers, in_order
        self.multiprocessing_context, self.generator = multiprocessing_context, generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                which = "sampler" if sampler is not None else "batch_sampler"
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"{which} option, but got {which}={sampler or batch_sampler}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, bool(drop_last))
        self.batch_size, self.drop_last = batch_size, bool(drop_last)
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self._auto_collation = batch_sampler is not None or (self._iterable and
                                                             batch_size is not None)
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._pool = None  # persistent workers

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)  # TypeError when the dataset has no length, as PyTorch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        return len(self.batch_sampler if self._auto_collation else self.sampler)

    def __iter__(self):
        base_seed = draw_seed(self.generator)  # drawn every epoch, workers or not (as PyTorch)
        if self.num_workers == 0:
            return fetch_iter(self._index_iter(), Fetcher(self))
        if self.persistent_workers:
            if self._pool is None or not self._pool._finalizer.alive:  # none yet, or stopped
                self._pool = WorkerPool(self, base_seed)
            else:
                self._pool.new_epoch()
            return self._pool.epoch(self._index_iter())
        pool = WorkerPool(self, base_seed)
        return pool.epoch(self._index_iter(), close=True)

    def _index_iter(self):
        if self._iterable:
            return itertools.repeat(None)
        return iter(self.batch_sampler if self._auto_collation else self.sampler)

    def __del__(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.close()


def _check_args(batch_size, num_workers, timeout, prefetch_factor, persistent_workers):
    if batch_size is not None and (not isinstance(batch_size, (int, np.integer))
                                   or isinstance(batch_size, bool) or batch_size < 1):
        raise ValueError(f"batch_size should be a positive integer value or None, but got "
                         f"batch_size={batch_size!r}")
    if not isinstance(num_workers, int) or num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                         "disable multiprocessing.")
    if not isinstance(timeout, (int, float)) or timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing. "
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and (not isinstance(prefetch_factor, int)
                                        or prefetch_factor < 1):
        raise ValueError(f"prefetch_factor option should be a positive int, got "
                         f"{prefetch_factor!r}")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
