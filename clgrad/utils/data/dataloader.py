"""DataLoader with PyTorch's arguments and semantics, worker processes included.

Workers (``num_workers > 0``) are real processes, started with ``multiprocessing_context``
('fork' by default where the OS has it, as PyTorch on Linux; else the platform's default).

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
worker k seeds Python's ``random`` and clgrad's generator with base_seed + k (as PyTorch; NumPy's
global generator is not seeded, as PyTorch) before ``worker_init_fn(k)``.
``pin_memory`` and ``pin_memory_device`` are accepted and do nothing (there is no pinned host
memory on this path: batches are uploaded from NumPy arrays).
"""
from __future__ import annotations

import gc
import itertools
import math
import multiprocessing
import pickle
import queue
import random
import time
import traceback
import warnings
import weakref

from multiprocessing.reduction import ForkingPickler

import numpy as np

import clgrad
from clgrad.utils.data import collate as _collate
from clgrad.utils.data.collate import default_collate, default_convert, upload
from clgrad.utils.data.dataset import IterableDataset, fast_batch
from clgrad.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "WorkerInfo"]

_POLL = 1.0  # seconds between checks that the workers are alive
_WORKER_INFO = [None]


class WorkerInfo:
    """``id``, ``num_workers``, ``seed`` and ``dataset`` (this worker's copy)."""

    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info():
    """The WorkerInfo inside a DataLoader worker process; None in the main process."""
    return _WORKER_INFO[0]


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
        base_seed = _draw_seed(self.generator)  # drawn every epoch, workers or not (as PyTorch)
        if self.num_workers == 0:
            return _fetch_iter(self._index_iter(), _Fetcher(self))
        if self.persistent_workers:
            if self._pool is None or not self._pool._finalizer.alive:  # none yet, or stopped
                self._pool = _WorkerPool(self, base_seed)
            else:
                self._pool.new_epoch()
            return self._pool.epoch(self._index_iter())
        pool = _WorkerPool(self, base_seed)
        return pool.epoch(self._index_iter(), close=True)

    def _index_iter(self):
        if self._iterable:
            return itertools.repeat(None)
        return iter(self.batch_sampler if self._auto_collation else self.sampler)

    def __del__(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.close()


# ---------------------------------------------------------------------------- fetching

class _Fetcher:
    """Turns one index (or index list) into a batch; for an IterableDataset, the next batch."""

    def __init__(self, loader, dataset=None):
        self.dataset = loader.dataset if dataset is None else dataset
        self.collate_fn, self.auto = loader.collate_fn, loader._auto_collation
        self.batch_size, self.drop_last = loader.batch_size, loader.drop_last
        self.iterable = loader._iterable
        self._it = None

    def reset(self):
        self._it = None

    def __call__(self, index):
        if self.iterable:
            if self._it is None:
                self._it = iter(self.dataset)
            if not self.auto:
                return self.collate_fn(next(self._it))
            samples = list(itertools.islice(self._it, self.batch_size))
            if not samples or (self.drop_last and len(samples) < self.batch_size):
                raise StopIteration
            return self.collate_fn(samples)
        if not self.auto:
            return self.collate_fn(self.dataset[index])
        if self.collate_fn is default_collate:
            fields = fast_batch(self.dataset, np.asarray(index, dtype=np.int64))
            if fields is not None:
                return [_collate._leaf(f) for f in fields]
        getitems = getattr(self.dataset, "__getitems__", None)
        samples = getitems(index) if getitems else [self.dataset[i] for i in index]
        return self.collate_fn(samples)


def _fetch_iter(indices, fetch):
    for index in indices:
        try:
            batch = fetch(index)
        except StopIteration:
            return
        yield batch


def _draw_seed(generator):
    from clgrad._generator import default_rng_for
    return int(default_rng_for(generator).integers(0, 2**63))


# ---------------------------------------------------------------------------- workers

class _Exhausted:
    """An iterable dataset's worker has no more batches this epoch."""


class _WorkerError:
    def __init__(self, worker_id, exc, opencl):
        self.type, self.worker_id, self.opencl = type(exc), worker_id, opencl
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))

    def reraise(self):
        msg = (f"Caught {self.type.__name__} in DataLoader worker process {self.worker_id}.\n"
               f"Original {self.text}")
        try:
            err = self.type(msg)
        except Exception:
            err = RuntimeError(msg)
        raise err


class OpenCLInForkedWorker(RuntimeError):
    """clgrad tried to use OpenCL inside a forked DataLoader worker (see the module doc)."""


def _seal_opencl(worker_id):
    """In a forked worker: make every OpenCL entry point raise instead of using a dead context."""
    import pyopencl as cl

    from clgrad import runtime
    from clgrad.tensor import Tensor

    def refuse(*args, **kwargs):
        raise OpenCLInForkedWorker(
            f"DataLoader worker {worker_id}: the dataset or collate_fn used a clgrad Tensor "
            f"(OpenCL), which a forked worker process cannot do: OpenCL contexts do not survive "
            f"fork. Return NumPy arrays or numbers from the dataset (the main process uploads "
            f"each batch), or pass multiprocessing_context='spawn' to the DataLoader")
    for name in ("launch", "alloc", "synchronize", "__init__"):
        setattr(runtime.Device, name, refuse)
    cl.enqueue_copy = refuse
    Tensor.numpy = refuse
    gc.freeze()  # the cyclic GC never frees (and so never releases) the parent's OpenCL objects


def _worker_loop(loader_state, worker_id, index_queue, result_queue, base_seed, forked):
    dataset, num_workers, worker_init_fn = loader_state["dataset"], loader_state["n"], \
        loader_state["init"]
    if forked:
        _seal_opencl(worker_id)
        _collate._STATE["host"] = True
    seed = base_seed + worker_id
    random.seed(seed)
    clgrad.manual_seed(seed)
    _WORKER_INFO[0] = WorkerInfo(worker_id, num_workers, seed, dataset)
    fetch = _Fetcher(loader_state["loader"], dataset)
    init_error = None
    if worker_init_fn is not None:
        try:
            worker_init_fn(worker_id)
        except Exception as e:
            init_error = _WorkerError(worker_id, e, isinstance(e, OpenCLInForkedWorker))
    while True:
        try:
            msg = index_queue.get(timeout=_POLL)
        except queue.Empty:
            if not multiprocessing.parent_process().is_alive():
                return
            continue
        if msg is None:
            return
        epoch, send_idx, index = msg
        if send_idx is None:  # a new epoch begins
            fetch.reset()
            continue
        if init_error is not None:
            data = init_error
        else:
            try:
                data = fetch(index)
            except StopIteration:
                data = _Exhausted()
            except Exception as e:
                data = _WorkerError(worker_id, e, isinstance(e, OpenCLInForkedWorker))
        try:  # pickled here, so that a batch that cannot be pickled is an error, not a hang
            payload = bytes(ForkingPickler.dumps(data))
        except Exception as e:
            payload = bytes(ForkingPickler.dumps(_WorkerError(worker_id, e, False)))
        result_queue.put((epoch, send_idx, worker_id, payload))
        del data, payload


def _reduce_tensor(t):
    """Tensors cross process boundaries as host arrays (uploaded again by the receiver)."""
    return _rebuild_host, (t.detach().numpy(),)


def _rebuild_host(a):
    return a.view(_collate.HostArray)


ForkingPickler.register(clgrad.Tensor, _reduce_tensor)


class _WorkerPool:
    """The worker processes of one loader, and one epoch's dispatch and in-order delivery."""

    def __init__(self, loader, base_seed):
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
        if ctx is None or isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self.forked = ctx.get_start_method() == "fork"
        self.loader, self.n = loader, loader.num_workers
        self.prefetch, self.timeout = loader.prefetch_factor, loader.timeout
        self.results = ctx.Queue()
        self.index_queues, self.workers = [], []
        state = {"dataset": loader.dataset, "n": self.n, "init": loader.worker_init_fn,
                 "loader": _LoaderSpec(loader)}
        with warnings.catch_warnings():
            # Python warns that fork() in a threaded process may deadlock the child; workers
            # touch neither OpenCL nor its threads' locks (see _seal_opencl).
            warnings.simplefilter("ignore", DeprecationWarning)
            for k in range(self.n):
                q = ctx.Queue()
                p = ctx.Process(target=_worker_loop, daemon=True,
                                args=(state, k, q, self.results, base_seed, self.forked))
                p.start()
                self.index_queues.append(q)
                self.workers.append(p)
        self.epoch_id, self._now = 0, [False]
        self._finalizer = weakref.finalize(self, _shutdown, self.workers, self.index_queues,
                                           self._now)

    def new_epoch(self):
        self.epoch_id += 1
        for q in self.index_queues:
            q.put((self.epoch_id, None, None))

    def close(self, now=False):
        """Stop the workers: ask them to exit, or (now) terminate them at once."""
        self._now[0] = now
        self._finalizer()

    def epoch(self, indices, close=False):
        try:
            yield from self._deliver(indices)
        finally:
            if close:
                self.close()

    def _deliver(self, indices):
        """Send index batches round-robin (prefetch_factor per worker in flight); yield the
        batches in sending order (or as they come with in_order=False)."""
        epoch, tasks, results = self.epoch_id, {}, {}  # send_idx -> (worker, index) / data
        active, cycle, source = list(range(self.n)), itertools.cycle(range(self.n)), iter(indices)
        send_idx = rcvd_idx = 0

        def dispatch():
            nonlocal send_idx
            while active and len(tasks) < self.prefetch * len(active):
                index = next(source, StopIteration)
                if index is StopIteration:
                    return
                w = next(cycle)
                while w not in active:
                    w = next(cycle)
                self.index_queues[w].put((epoch, send_idx, index))
                tasks[send_idx] = (w, index)
                send_idx += 1

        dispatch()
        while tasks:
            ready = rcvd_idx if rcvd_idx in results else (
                min(results) if results and not self.loader.in_order else None)
            if ready is None:
                ep, idx, w, data = self._get()
                if ep == epoch and idx in tasks:  # else: a result of an abandoned epoch
                    results[idx] = pickle.loads(data)
                continue
            data = results.pop(ready)
            w, _ = tasks.pop(ready)
            while rcvd_idx < send_idx and rcvd_idx not in tasks:
                rcvd_idx += 1
            if isinstance(data, _WorkerError):
                if data.opencl and not self.loader._iterable:
                    tasks[ready] = (w, _)
                    yield from self._in_process(tasks, source)
                    return
                self.close(now=True)
                data.reraise()
            if isinstance(data, _Exhausted):
                if w in active:  # its other batches in flight are _Exhausted as well
                    active.remove(w)
            else:
                yield upload(data)
            dispatch()

    def _in_process(self, tasks, source):
        """After a forked worker needed OpenCL: the remaining batches, in order, loaded here."""
        warnings.warn("DataLoader: the dataset or collate_fn makes clgrad Tensors, which forked "
                      "worker processes cannot do (OpenCL does not survive fork); loading the "
                      "remaining batches in the main process. Return NumPy arrays from the "
                      "dataset, or pass multiprocessing_context='spawn', for parallel loading",
                      RuntimeWarning, stacklevel=3)
        self.close(now=True)
        fetch = _Fetcher(self.loader)
        for k in sorted(tasks):
            yield fetch(tasks[k][1])
        for index in source:
            yield fetch(index)

    def _get(self):
        start = time.monotonic()
        while True:
            wait = _POLL if not self.timeout else min(_POLL, self.timeout)
            try:
                return self.results.get(timeout=wait)
            except queue.Empty:
                pass
            dead = [k for k, p in enumerate(self.workers) if not p.is_alive()]
            if dead:
                codes = [self.workers[k].exitcode for k in dead]
                self.close(now=True)
                raise RuntimeError(f"DataLoader worker (pid(s) "
                                   f"{', '.join(str(self.workers[k].pid) for k in dead)}) "
                                   f"exited unexpectedly with exit code(s) {codes}")
            if self.timeout and time.monotonic() - start >= self.timeout:
                self.close(now=True)
                raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds")


class _LoaderSpec:
    """What a worker's _Fetcher needs of the loader (picklable for spawned workers)."""

    def __init__(self, loader):
        self.collate_fn, self._auto_collation = loader.collate_fn, loader._auto_collation
        self.batch_size, self.drop_last = loader.batch_size, loader.drop_last
        self._iterable, self.dataset = loader._iterable, None


def _shutdown(workers, index_queues, now):
    for q in index_queues:
        try:
            q.put(None)
        except (OSError, ValueError):
            pass
    for p in workers:
        p.join(timeout=0 if now[0] else 5)
        if p.is_alive():
            p.terminate()
            p.join(timeout=1)
    for q in index_queues:
        q.cancel_join_thread()
        q.close()


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

