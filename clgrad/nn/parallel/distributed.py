"""DistributedDataParallel: one model replica per process, gradients averaged in backward.

Construction checks that every rank holds the same parameters (names, shapes, dtypes) and
broadcasts parameters and buffers from rank 0. Parameters are grouped into buckets in reverse
registration order (roughly the order backward produces their gradients): the first bucket
holds up to 1 MiB, the others up to ``bucket_cap_mb`` (PyTorch's rule). Each parameter has a
post-accumulate-grad hook (clgrad/autograd/); when the last gradient of a bucket is final,
the bucket is copied to the host and its ``MPI_Iallreduce`` starts while backward goes on
(buckets start in the same order on every rank). When the last bucket has started, backward
waits for all of them and writes the averages into each ``param.grad``.

Buffers (BatchNorm running statistics) are broadcast from rank 0 at the start of a forward
when ``broadcast_buffers`` and the previous forward ran with grad mode on outside
``no_sync()`` (PyTorch's rule), so each rank's replica normalises with its own batch
statistics and rank 0's running statistics win.

Differences from PyTorch: gradients are staged through host memory (clgrad has no device
transport); ``device_ids`` is accepted for compatibility and ignored (each process's device is
chosen by ``init_process_group``); no ``static_graph``, comm hooks or ``join``.
"""
from __future__ import annotations

import contextlib
import time
import weakref
import zlib

import numpy as np

from clgrad import autograd
from clgrad.distributed import collectives as coll
from clgrad.distributed import process_group as dist
from clgrad.nn.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1 << 20  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES


class DistributedDataParallel(Module):
    """Wrap ``module`` so that ``backward()`` leaves the rank-averaged gradient in each
    parameter's ``.grad`` (every rank then takes the same optimizer step).

    Args:    module: the model, identical on every rank (checked); device_ids, output_device,
             dim: accepted, ignored; broadcast_buffers: sync buffers from rank 0 at forward;
             bucket_cap_mb: bucket size in MiB; find_unused_parameters: walk the output's
             graph at each forward so parameters it does not reach count as ready (their
             gradient is averaged with zeros where another rank used them, and left alone
             where no rank did)
    Attrs:   ``module`` (the wrapped model; ``state_dict`` keys get the prefix ``module.``, as
             PyTorch); ``bucket_sizes`` (elements per bucket); ``comm_stats`` of the last
             synced backward: ``bytes`` all-reduced, ``seconds`` spent reading buckets to
             the host, starting and waiting for the all-reduces and writing back (not the
             wait for queued backward kernels), ``wait_seconds`` (the part spent waiting
             for the all-reduces: mostly for the slowest rank), ``launched_after`` (how many
             gradients were ready when each bucket started)
    Raises:  ValueError when the process group is not initialised or ranks differ in their
             parameters; RuntimeError at a forward when the previous backward did not produce
             every parameter's gradient and ``find_unused_parameters`` is False
    """

    def __init__(self, module: Module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=25,
                 find_unused_parameters: bool = False, **kwargs):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected a clgrad.nn.Module, got "
                            f"{type(module).__name__}")
        if kwargs:
            raise TypeError(f"DistributedDataParallel: unsupported arguments "
                            f"{sorted(kwargs)}")
        if not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: expected bucket_cap_mb > 0, got "
                             f"{bucket_cap_mb!r}")
        self.module = module
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self._world = dist.get_world_size(process_group)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        _check_same_everywhere(named, list(module.named_buffers()))
        with autograd.no_grad():
            coll._broadcast_coalesced([p for _, p in module.named_parameters()] +
                                      list(module.buffers()))
        self._params = [p for _, p in named]
        self._buckets = _make_buckets(self._params, int(bucket_cap_mb * 2 ** 20))
        self.bucket_sizes = [sum(self._params[i].numel() for i in b) for b in self._buckets]
        self._bucket_of = {id(self._params[i]): k for k, b in enumerate(self._buckets)
                           for i in b}
        hook = _weak_hook(weakref.ref(self))  # the parameters must not keep the wrapper alive
        self._handles = [p.register_post_accumulate_grad_hook(hook) for p in self._params]
        self._syncing = False  # a synced backward is expected (set by forward)
        self._ready: list = []
        self._next = 0
        self._inflight: list = []
        self._used = None
        self.comm_stats = {"bytes": 0, "seconds": 0.0, "wait_seconds": 0.0,
                           "launched_after": []}

    # -- forward ------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        """Run the wrapped module; arms gradient averaging for the next backward.

        Broadcasts buffers from rank 0 first when ``broadcast_buffers`` and the previous forward
        ran with grad mode on outside no_sync(). Returns the module's output unchanged.
        Raises:  RuntimeError when the previous iteration's reduction did not finish (a parameter
                 unused in the loss without ``find_unused_parameters=True``), PyTorch's message
        """
        if self._syncing and any(self._ready):
            raise RuntimeError(
                "DistributedDataParallel: Expected to have finished reduction in the prior "
                "iteration before starting a new one. This error indicates that your module "
                "has parameters that were not used in producing loss; pass "
                "find_unused_parameters=True to DistributedDataParallel, or make sure all "
                "forward outputs take part in the loss")
        if self.require_forward_param_sync and self.broadcast_buffers:
            buffers = list(self.module.buffers())
            if buffers:
                with autograd.no_grad():
                    coll._broadcast_coalesced(buffers)
        out = self.module(*inputs, **kwargs)
        grad_on = autograd.is_grad_enabled()
        self.require_forward_param_sync = grad_on and self.require_backward_grad_sync
        self._syncing = grad_on and self.require_backward_grad_sync and bool(self._params)
        if self._syncing:
            self._ready = [0] * len(self._buckets)
            self._next, self._inflight, self._used = 0, [], None
            self.comm_stats = {"bytes": 0, "seconds": 0.0, "wait_seconds": 0.0,
                               "launched_after": []}
            if self.find_unused_parameters:
                self._mark_unused(out)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Inside: forwards and backwards accumulate local gradients without communicating;
        the first synced backward after it averages the accumulated ``.grad``."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    # -- backward (hooks) ---------------------------------------------------------------------
    def _grad_ready(self, p):
        if not self._syncing:
            return
        k = self._bucket_of[id(p)]
        self._ready[k] += 1
        for req, _, _ in self._inflight:  # drive MPI's progress engine
            req.Test()
        while self._next < len(self._buckets) and \
                self._ready[self._next] == len(self._buckets[self._next]):
            self._launch(self._next)
            self._next += 1
        if self._next == len(self._buckets):
            self._finish()

    def _mark_unused(self, out):
        reached = _leaves_reached(out)
        self._used = np.array([id(p) in reached for p in self._params], np.uint8)
        for p, used in zip(self._params, self._used):
            if not used:
                self._ready[self._bucket_of[id(p)]] += 1

    def _launch(self, k):
        from clgrad.creation import zeros
        comm = dist._comm("DistributedDataParallel")
        params = [self._params[i] for i in self._buckets[k]]
        grads = [zeros(p.shape, dtype=p.dtype, device=p.device) if p.grad is None else p.grad
                 for p in params]
        params[0].device.synchronize()  # the read below waits for it anyway: time the rest
        start = time.perf_counter()
        send = coll._flat_host(grads)  # one device->host read per bucket
        recv = np.empty_like(send)
        req = dist._Keep(comm.Iallreduce(send, recv, coll._mpi_op(dist.ReduceOp.SUM,
                                                                   send.dtype)), send, recv)
        self._inflight.append((req, recv, k))
        self.comm_stats["bytes"] += send.nbytes
        self.comm_stats["launched_after"].append(sum(self._ready))
        self.comm_stats["seconds"] += time.perf_counter() - start

    def _finish(self):
        from clgrad.creation import zeros
        start = time.perf_counter()
        self._syncing = False
        used = None
        if self._used is not None:  # which parameters some rank used
            used = np.empty_like(self._used)
            comm = dist._comm("DistributedDataParallel")
            dist._wait(comm.Iallreduce(self._used, used, coll._mpi_op(dist.ReduceOp.MAX,
                                                                      np.dtype(np.uint8))),
                       "DistributedDataParallel backward")
        for req, recv, k in self._inflight:
            waited = time.perf_counter()
            dist._wait(req, "DistributedDataParallel backward")
            self.comm_stats["wait_seconds"] += time.perf_counter() - waited
            recv /= self._world
            idx = self._buckets[k]
            # a parameter no rank produced a gradient for keeps its .grad as it is
            skip = {j for j, i in enumerate(idx) if used is not None and not used[i]}
            for j, i in enumerate(idx):
                p = self._params[i]
                if j not in skip and p.grad is None:
                    p.grad = zeros(p.shape, dtype=p.dtype, device=p.device)
            coll._unflat_host(recv, [self._params[i].grad if j not in skip else self._params[i]
                                     for j, i in enumerate(idx)], skip)
        self._inflight = []
        self._next = 0
        self.comm_stats["seconds"] += time.perf_counter() - start

    def extra_repr(self) -> str:
        """'world_size=W, buckets=[elements per bucket]' (clgrad's own repr)."""
        return f"world_size={self._world}, buckets={self.bucket_sizes}"


def _weak_hook(ref):
    def hook(p):
        ddp = ref()
        if ddp is not None:
            ddp._grad_ready(p)
    return hook


def _make_buckets(params, cap_bytes):
    """Indices of ``params`` in reverse order, cut into buckets of one dtype each: the first
    up to 1 MiB, the others up to ``cap_bytes`` (a parameter never splits)."""
    buckets, current, size, limit = [], [], 0, min(_FIRST_BUCKET_BYTES, cap_bytes)
    for i in reversed(range(len(params))):
        p = params[i]
        nbytes = p.numel() * p.dtype.itemsize
        if current and (size + nbytes > limit or params[current[0]].dtype is not p.dtype):
            buckets.append(current)
            current, size, limit = [], 0, cap_bytes
        current.append(i)
        size += nbytes
    if current:
        buckets.append(current)
    return buckets


def _check_same_everywhere(named_params, named_buffers):
    entries = [("p", n, tuple(p.shape), p.dtype.name) for n, p in named_params] + \
        [("b", n, tuple(b.shape), b.dtype.name) for n, b in named_buffers]
    comm = dist._comm("DistributedDataParallel")
    digest = np.array([zlib.crc32(repr(entries).encode())], np.int64)
    everyone = np.empty(comm.Get_size(), np.int64)
    dist._wait(comm.Iallgather(digest, everyone), "DistributedDataParallel")
    if (everyone != everyone[0]).any():
        lists = comm.allgather(entries)
        r = int(np.nonzero(everyone != everyone[0])[0][0])
        diff = next(((a, b) for a, b in zip(lists[0], lists[r]) if a != b),
                    (f"{len(lists[0])} entries", f"{len(lists[r])} entries"))
        raise ValueError(f"DistributedDataParallel: expected the same parameters and buffers "
                         f"(name, shape, dtype) on every rank, got rank 0: {diff[0]} vs rank "
                         f"{r}: {diff[1]}")


def _leaves_reached(out):
    """ids of the leaf tensors the graph of ``out`` (tensors in nested lists/tuples/dicts)
    reaches."""
    from clgrad.tensor import Tensor
    stack, seen, leaves = [out], set(), set()
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            if x.grad_fn is None:
                leaves.add(id(x))
            else:
                stack.append(x.grad_fn)
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, autograd.Node) and id(x) not in seen:
            seen.add(id(x))
            for e in x.next:
                if isinstance(e, Tensor):
                    leaves.add(id(e))
                elif e is not None:
                    stack.append(e)
    return leaves
