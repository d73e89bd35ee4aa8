"""DataLoader worker processes: the loop each worker runs, the pool that feeds them index
batches and delivers their batches in order, and the fetcher both sides use.

See clgrad/utils/data/dataloader.py for what forked and spawned workers may do. Messages:
main -> worker ``(epoch, send_idx, index)`` (``send_idx`` None: a new epoch begins; None: exit);
worker -> main ``(epoch, send_idx, worker_id, pickled batch | _Exhausted | _WorkerError)``.
"""
from __future__ import annotations

import gc
import io
import itertools
import multiprocessing
import pickle
import queue
import random
import time
import traceback
import warnings
import weakref

import numpy as np

from clgrad import creation
from clgrad.runtime.device import FORKED_MESSAGE, ForkedDeviceError
from clgrad.tensor import Tensor
from clgrad.utils.data import collate as _collate
from clgrad.utils.data.collate import default_collate, upload
from clgrad.utils.data.dataset import fast_batch

__all__ = ["WorkerInfo", "get_worker_info", "Fetcher", "WorkerPool", "OpenCLInForkedWorker",
           "seal_opencl"]

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


# ---------------------------------------------------------------------------- fetching

class Fetcher:
    """Turns one index (or index list) into a batch; for an IterableDataset, the next batch."""

    def __init__(self, loader, dataset=None):
        self.dataset = loader.dataset if dataset is None else dataset
        self.collate_fn, self.auto = loader.collate_fn, loader._auto_collation
        self.batch_size, self.drop_last = loader.batch_size, loader.drop_last
        self.iterable = loader._iterable
        self._it = None

    def reset(self):
        """Forget the iterable dataset's iterator: the next call starts a new pass."""
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


def fetch_iter(indices, fetch):
    """Yield ``fetch(index)`` for each index until one raises StopIteration (dataset exhausted)."""
    for index in indices:
        try:
            batch = fetch(index)
        except StopIteration:
            return
        yield batch


def draw_seed(generator):
    """A seed in [0, 2**63) from ``generator`` (None: via clgrad's global generator)."""
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
        """Raise the worker's exception type with PyTorch's 'Caught X in DataLoader worker
        process N' message and the worker's traceback (RuntimeError if that type cannot be built
        from a message).
        """
        msg = (f"Caught {self.type.__name__} in DataLoader worker process {self.worker_id}.\n"
               f"Original {self.text}")
        try:
            err = self.type(msg)
        except Exception:  # noqa: BLE001  (any exception type may refuse the message)
            err = RuntimeError(msg)
        raise err


class OpenCLInForkedWorker(ForkedDeviceError):
    """clgrad tried to use OpenCL inside a forked DataLoader worker (see the module doc); a
    ForkedDeviceError, as any use of a parent's GPU device in a forked process."""


def _seal_opencl(worker_id):
    """In a forked worker: make every OpenCL entry point raise instead of using a dead context."""
    seal_opencl(lambda: OpenCLInForkedWorker(
        f"DataLoader worker {worker_id}: {FORKED_MESSAGE} (multiprocessing_context='spawn'): "
        f"the dataset or collate_fn used a clgrad Tensor (OpenCL), which a forked worker "
        f"process cannot do on any device: OpenCL contexts do not survive fork. Return NumPy "
        f"arrays or numbers from the dataset (the main process uploads each batch), or pass "
        f"multiprocessing_context='spawn' to the DataLoader"))


def seal_opencl(error):
    """In a forked process: make every OpenCL entry point raise ``error()`` (an exception)
    instead of using the parent's dead context (also clgrad.multiprocessing's forked
    processes)."""
    import pyopencl as cl

    from clgrad import runtime
    from clgrad.tensor import Tensor

    def refuse(*args, **kwargs):
        raise error()
    for name in ("launch", "launch_split", "alloc", "copy", "fill", "synchronize", "__init__"):
        setattr(runtime.Device, name, refuse)
    cl.enqueue_copy = refuse
    Tensor.numpy = refuse
    gc.freeze()  # the cyclic GC never frees (and so never releases) the parent's OpenCL objects


def _numpy_seed(base_seed: int, worker_id: int) -> np.ndarray:
    """The state NumPy's global generator starts from in worker ``worker_id``: 4 uint32 words
    mixed from both (SeedSequence), so that workers and epochs (a new base seed each) differ
    and neighbouring seeds (base_seed + k) do not give correlated streams."""
    return np.random.SeedSequence([worker_id, base_seed]).generate_state(4)


def _worker_loop(loader_state, worker_id, index_queue, result_queue, base_seed, forked):
    dataset, num_workers, worker_init_fn = loader_state["dataset"], loader_state["n"], \
        loader_state["init"]
    if forked:
        _seal_opencl(worker_id)
        _collate._STATE["host"] = True
    seed = base_seed + worker_id
    random.seed(seed)
    creation.manual_seed(seed)
    np.random.seed(_numpy_seed(base_seed, worker_id))
    _WORKER_INFO[0] = WorkerInfo(worker_id, num_workers, seed, dataset)
    fetch = Fetcher(loader_state["loader"], dataset)
    init_error = None
    if worker_init_fn is not None:
        try:
            worker_init_fn(worker_id)
        except Exception as e:  # noqa: BLE001  (re-raised in the parent)
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
            except Exception as e:  # noqa: BLE001  (re-raised in the parent)
                data = _WorkerError(worker_id, e, isinstance(e, OpenCLInForkedWorker))
        try:  # pickled here, so that a batch that cannot be pickled is an error, not a hang
            payload = _dumps(data)
        except Exception as e:  # noqa: BLE001  (re-raised in the parent)
            payload = _dumps(_WorkerError(worker_id, e, False))
        result_queue.put((epoch, send_idx, worker_id, payload))
        del data, payload


class _BatchPickler(pickle.Pickler):
    """Pickles a batch; its Tensors (made by spawned workers) travel as host arrays, which the
    main process uploads again (``upload``). Used for worker results only: it changes nothing
    about how multiprocessing pickles Tensors elsewhere."""

    def reducer_override(self, obj):
        """Tensors pickle as host NumPy arrays (rebuilt as HostArray); everything else as usual."""
        if isinstance(obj, Tensor):
            return _rebuild_host, (obj.detach().numpy(),)
        return NotImplemented


def _dumps(data) -> bytes:
    buf = io.BytesIO()
    _BatchPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(data)
    return buf.getvalue()


def _rebuild_host(a):
    return a.view(_collate.HostArray)


def _plain(index):
    """An index (list) from a sampler with any Tensors in it made host values (picklable)."""
    if isinstance(index, Tensor):
        return index.tolist()
    if isinstance(index, (list, tuple)):
        return [_plain(i) for i in index]
    return index


class WorkerPool:
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
        """Start a new epoch of persistent workers: each resets its fetcher (an iterable dataset
        restarts its iterator).
        """
        self.epoch_id += 1
        for q in self.index_queues:
            q.put((self.epoch_id, None, None))

    def close(self, now=False):
        """Stop the workers: ask them to exit, or (now) terminate them at once."""
        self._now[0] = now
        self._finalizer()

    def epoch(self, indices, close=False):
        """Yield one epoch's batches for ``indices`` (see _deliver); close the pool afterwards when
        ``close`` (persistent_workers=False).
        """
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
                self.index_queues[w].put((epoch, send_idx, _plain(index)))
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
        fetch = Fetcher(self.loader)
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
    """What a worker's Fetcher needs of the loader (picklable for spawned workers)."""

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
