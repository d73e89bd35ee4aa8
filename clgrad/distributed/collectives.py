"""torch.distributed's collectives on MPI (mpi4py), host-staged (the group: process_group.py).

Launch K processes with the MPI launcher (``mpiexec -n K python script.py``); each calls
``init_process_group("mpi")`` and gets its rank and the world size from MPI. Every collective
reads its tensors (any strided view, step slices included) into a contiguous host array, runs
the MPI operation on that array and writes the result back through the same views with
clgrad's in-place write (``copy_`` semantics under ``no_grad``: the storage version is bumped,
so a saved tensor changed by a collective still raises at backward; collectives are not
recorded by autograd, as in PyTorch).

Checks. Each collective first exchanges (collective, dtype, shape, arguments, local error) with
every rank, so a mismatch -- different shapes, dtypes, a different ``src`` or ``op``, an error
on one rank only -- raises the same clear error on every rank instead of hanging or reading
garbage. Waits time out as process_group.py says (message, then ``MPI_Abort``).

Differences from PyTorch (deliberate): ``ReduceOp.AVG`` needs a floating tensor (PyTorch's
NCCL divides integers silently); bool tensors reduce as logical OR (SUM, MAX) and AND
(PRODUCT, MIN); MAX/MIN propagate NaN; only the default group exists (``group=None`` or
``group.WORLD``); ``float16`` is reduced in float32 on the host and rounded once.
"""
from __future__ import annotations

import numpy as np

from clgrad import dtypes
from clgrad.distributed.process_group import (ReduceOp, Work, _begin, _comm, _Keep, _mpi,
                                              _run, _wait)

__all__ = ["barrier", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "reduce", "reduce_scatter", "reduce_scatter_tensor", "gather", "scatter", "send",
           "recv", "isend", "irecv"]

_MAXDIM = 8

_MAXDIM = 8


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank has entered the barrier."""
    comm = _begin("barrier", group)
    return _run("barrier", comm.Ibarrier(), None, async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the ranks with ``op``; every rank gets the result in place.

    Shapes:  any (0-d included), the same on every rank; any strided view without overlap
    Dtypes:  float16/32/64, int32, int64, bool (AVG: floating only); the same on every rank
    Raises:  TypeError / ValueError / RuntimeError on every rank when any rank's arguments are
             bad or differ
    """
    comm = _begin("all_reduce", group)
    _agree(comm, "all_reduce", [tensor], lambda: _check_reduce("all_reduce", tensor, op),
           {"op": op}, writes=[tensor])
    send = _host(tensor)
    recv = np.empty_like(send)
    req = _Keep(comm.Iallreduce(send, recv, _mpi_op(op, send.dtype)), send, recv)
    return _run("all_reduce", req, lambda: _write(tensor, _finish_avg(recv, op, comm)),
                async_op, [tensor])


def broadcast(tensor, src, group=None, async_op=False):
    """Copy ``tensor`` of rank ``src`` into ``tensor`` on every rank (in place)."""
    comm = _begin("broadcast", group)
    _agree(comm, "broadcast", [tensor], lambda: _check_rank("broadcast", src, comm, "src"),
           {"src": src}, writes=[tensor])
    buf = _host(tensor)
    req = _Keep(comm.Ibcast(buf, root=src), buf)
    mine = comm.Get_rank() == src
    return _run("broadcast", req, None if mine else lambda: _write(tensor, buf), async_op,
                [tensor])


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` = ``tensor`` of rank r, on every rank; the list holds world_size
    tensors of ``tensor``'s shape and dtype (any views)."""
    comm = _begin("all_gather", group)
    _agree(comm, "all_gather", [tensor],
           lambda: _check_list("all_gather", tensor_list, tensor, comm), writes=tensor_list)
    send = _host(tensor)
    recv = np.empty((comm.Get_size(),) + send.shape, send.dtype)
    req = _Keep(comm.Iallgather(send, recv), send, recv)
    return _run("all_gather", req, lambda: [_write(t, recv[r]) for r, t in
                                            enumerate(tensor_list)], async_op, tensor_list)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` (world_size * numel elements: the inputs concatenated along dim 0 or
    stacked) = the ranks' ``input_tensor`` in rank order."""
    comm = _begin("all_gather_into_tensor", group)
    _agree(comm, "all_gather_into_tensor", [input_tensor, output_tensor],
           lambda: _check_flat("all_gather_into_tensor", output_tensor, input_tensor,
                               comm.Get_size(), "output_tensor"), writes=[output_tensor])
    send = _host(input_tensor)
    recv = np.empty(comm.Get_size() * send.size, send.dtype)
    req = _Keep(comm.Iallgather(send, recv), send, recv)
    return _run("all_gather_into_tensor", req, lambda: _write(output_tensor, recv), async_op,
                [output_tensor])


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over the ranks into ``tensor`` of rank ``dst`` (others unchanged)."""
    comm = _begin("reduce", group)

    def check():
        _check_reduce("reduce", tensor, op)
        _check_rank("reduce", dst, comm, "dst")
    _agree(comm, "reduce", [tensor], check, {"op": op, "dst": dst}, writes=[tensor])
    send = _host(tensor)
    recv = np.empty_like(send)
    req = _Keep(comm.Ireduce(send, recv, _mpi_op(op, send.dtype), root=dst), send, recv)
    mine = comm.Get_rank() == dst
    return _run("reduce", req, (lambda: _write(tensor, _finish_avg(recv, op, comm))) if mine
                else None, async_op, [tensor])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` on rank r = the reduction over ranks of ``input_list[r]``."""
    comm = _begin("reduce_scatter", group)

    def check():
        _check_reduce("reduce_scatter", output, op)
        _check_list("reduce_scatter", input_list, output, comm)
    _agree(comm, "reduce_scatter", [output], check, {"op": op}, writes=[output])
    send = np.stack([_host(t) for t in input_list])
    recv = np.empty(send.shape[1:], send.dtype)
    req = _Keep(comm.Ireduce_scatter_block(send, recv, _mpi_op(op, send.dtype)), send, recv)
    return _run("reduce_scatter", req, lambda: _write(output, _finish_avg(recv, op, comm)),
                async_op, [output])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` on rank r = the reduction over ranks of the r-th of world_size equal
    chunks of the flattened ``input`` (world_size * output.numel() elements)."""
    comm = _begin("reduce_scatter_tensor", group)

    def check():
        _check_reduce("reduce_scatter_tensor", output, op)
        _check_flat("reduce_scatter_tensor", input, output, comm.Get_size(), "input")
    _agree(comm, "reduce_scatter_tensor", [output, input], check, {"op": op},
           writes=[output])
    send = _host(input).reshape(-1)
    recv = np.empty(output.numel(), send.dtype)
    req = _Keep(comm.Ireduce_scatter_block(send, recv, _mpi_op(op, send.dtype)), send, recv)
    return _run("reduce_scatter_tensor", req,
                lambda: _write(output, _finish_avg(recv, op, comm)), async_op, [output])


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """``gather_list[r]`` on rank ``dst`` = ``tensor`` of rank r; other ranks pass None."""
    comm = _begin("gather", group)
    mine = comm.Get_rank() == dst
    _agree(comm, "gather", [tensor], lambda: _check_rooted(
        "gather", dst, "dst", gather_list, "gather_list", tensor, comm), {"dst": dst},
        writes=gather_list if mine else ())
    send = _host(tensor)
    recv = np.empty((comm.Get_size(),) + send.shape, send.dtype) if mine else None
    req = _Keep(comm.Igather(send, recv, root=dst), send, recv)
    return _run("gather", req, (lambda: [_write(t, recv[r]) for r, t in enumerate(gather_list)])
                if mine else None, async_op, gather_list or [])


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """``tensor`` on rank r = ``scatter_list[r]`` of rank ``src``; other ranks pass None."""
    comm = _begin("scatter", group)
    mine = comm.Get_rank() == src
    _agree(comm, "scatter", [tensor], lambda: _check_rooted(
        "scatter", src, "src", scatter_list, "scatter_list", tensor, comm), {"src": src},
        writes=[tensor])
    recv = np.empty(tuple(tensor.shape), _wire(tensor.dtype))
    send = np.stack([_host(t) for t in scatter_list]) if mine else None
    req = _Keep(comm.Iscatter(send, recv, root=src), send, recv)
    return _run("scatter", req, lambda: _write(tensor, recv), async_op, [tensor])


def send(tensor, dst, group=None, tag=0):
    """Send ``tensor`` to rank ``dst`` (blocks until it is sent)."""
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0) -> int:
    """Receive into ``tensor`` from rank ``src`` (None: any rank); returns the sender's rank.
    Raises RuntimeError when the message's dtype or shape differs from ``tensor``'s."""
    work = irecv(tensor, src, group, tag)
    work.wait()
    return work.source


def isend(tensor, dst, group=None, tag=0) -> Work:
    """Start sending ``tensor`` (a header with dtype and shape, then the data) to ``dst``."""
    comm = _begin("send", group)
    _check_tensor("send", tensor)
    _check_rank("send", dst, comm, "dst")
    data = _host(tensor)
    head = _meta_vector(0, tensor, ())
    reqs = [_Keep(comm.Isend(head, dst, tag=2 * tag), head),
            _Keep(comm.Isend(data, dst, tag=2 * tag + 1), data)]
    return Work("send", reqs, outputs=[tensor])


def irecv(tensor, src=None, group=None, tag=0) -> Work:
    """Start receiving into ``tensor`` (returns at once); the header is checked when it
    arrives, and wait() raises RuntimeError when its dtype or shape differs."""
    comm = _begin("recv", group)
    _check_tensor("recv", tensor, write=True)
    if src is not None:
        _check_rank("recv", src, comm, "src")
    buf = np.empty(tuple(tensor.shape), _wire(tensor.dtype))
    req = _Recv(comm, _meta_vector(0, tensor, ()), buf, src, tag)
    work = Work("recv", [req], lambda: _write(tensor, buf), [tensor])
    req.work = work
    return work


class _Recv:
    """A request in two steps: the header, then the data (posted once the header came)."""

    def __init__(self, comm, want, buf, src, tag):
        self.MPI = _mpi("recv")
        self.comm, self.want, self.buf, self.tag = comm, want, buf, tag
        self.head = np.empty(_META_LEN, np.int64)
        self.status = self.MPI.Status()
        self.head_req = comm.Irecv(self.head, self.MPI.ANY_SOURCE if src is None else src,
                                   tag=2 * tag)
        self.data_req = None

    def Test(self):  # noqa: N802  (the mpi4py name _wait calls)
        """True when the data arrived (mpi4py's Request.Test name); posts the data receive once the
        header came. Raises RuntimeError when the sender's tensor (shape, dtype) differs from the
        expected one, after draining its data so the sender does not hang.
        """
        if self.data_req is None:
            if not self.head_req.Test(self.status):
                return False
            sender = self.work.source = self.status.Get_source()
            data_tag = 2 * self.tag + 1
            if not np.array_equal(self.head, self.want):  # take the data: the sender must
                self.comm.Probe(sender, data_tag, self.status)  # not hang
                self.comm.Recv(np.empty(self.status.Get_count(self.MPI.BYTE), np.uint8),
                               sender, tag=data_tag)
                raise RuntimeError(f"recv: expected a {_describe(self.want)} tensor, got a "
                                   f"{_describe(self.head)} one from rank {sender}")
            self.data_req = self.comm.Irecv(self.buf, sender, tag=data_tag)
        return self.data_req.Test()


_DTYPE_CODE = {"bool": 1, "int32": 2, "int64": 3, "float16": 4, "float32": 5, "float64": 6}
_META_LEN = 4 + _MAXDIM + 2  # dtype, ndim, numel, error flag, dims, two arguments


def _meta_vector(error, t, extra):
    v = np.full(_META_LEN, -1, np.int64)
    v[3] = error
    if t is not None and hasattr(t, "dtype") and hasattr(t, "shape"):
        shape = tuple(t.shape)
        v[0] = _DTYPE_CODE.get(getattr(t.dtype, "name", ""), 0)
        v[1], v[2] = len(shape), int(np.prod(shape, dtype=np.int64))
        v[4:4 + min(len(shape), _MAXDIM)] = shape[:_MAXDIM]
    v[4 + _MAXDIM:4 + _MAXDIM + len(extra)] = extra
    return v


def _describe(v):
    names = {c: n for n, c in _DTYPE_CODE.items()}
    return f"{names.get(int(v[0]), '?')} {tuple(int(d) for d in v[4:4 + min(int(v[1]), 8)])}"


def _agree(comm, op, tensors, check, args=None, writes=()):
    """Check locally, then compare (dtype, shape, ``args``, error) of ``tensors`` across
    ranks; raise the same error on every rank when any rank failed or any differs."""
    args = args or {}
    extra = [_code(v) for v in args.values()]
    error = None
    try:
        for t in tensors:
            _check_tensor(op, t)
        for t in writes:
            _check_tensor(op, t, write=True)
        check()
    except (TypeError, ValueError, RuntimeError, IndexError) as e:
        error = e
    mine = np.concatenate([_meta_vector(error is not None, t, extra) for t in tensors])
    everyone = np.empty((comm.Get_size(), mine.size), np.int64)
    _wait(comm.Iallgather(mine, everyone), op)
    failed = [r for r in range(comm.Get_size()) if everyone[r, 3::_META_LEN].any()]
    if failed:
        messages = comm.allgather(None if error is None else f"{type(error).__name__}: {error}")
        if error is not None:
            raise error
        raise RuntimeError(f"{op}: rank {failed[0]} failed: {messages[failed[0]]}")
    bad = [r for r in range(comm.Get_size()) if not np.array_equal(everyone[r], everyone[0])]
    if bad:
        rows = everyone.reshape(comm.Get_size(), len(tensors), _META_LEN)
        what = "; ".join(f"rank {r}: " + ", ".join(_describe(m) for m in rows[r]) +
                         "".join(f" {k}={_uncode(k, int(c))}" for k, c in
                                 zip(args, rows[r][0][4 + _MAXDIM:])) for r in (0, bad[0]))
        raise ValueError(f"{op}: expected the same dtype, shape and arguments on every rank, "
                         f"got {what}")


def _check_tensor(op, t, write=False):
    from clgrad import layout
    from clgrad.tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: expected a clgrad Tensor, got {type(t).__name__}")
    if t.ndim > _MAXDIM:
        raise ValueError(f"{op}: expected a tensor of at most {_MAXDIM} dims, got {t.ndim}")
    if write and t.numel() > 1 and layout.has_overlap(t.shape, t.stride()):
        raise RuntimeError(f"{op}: expected an output whose elements do not overlap, got shape "
                           f"{tuple(t.shape)} strides {t.stride()}; clone() it first")


def _check_reduce(op, t, rop):
    if not isinstance(rop, ReduceOp):
        raise ValueError(f"{op}: expected a ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got {rop!r}")
    if rop is ReduceOp.AVG and not t.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point tensor for ReduceOp.AVG, got "
                        f"{t.dtype}; use SUM and divide")


def _check_rank(op, r, comm, name):
    if not isinstance(r, (int, np.integer)) or isinstance(r, bool) or \
            not 0 <= r < comm.Get_size():
        raise ValueError(f"{op}: expected {name} in [0, {comm.Get_size() - 1}], got {r!r}")


def _check_list(op, tensors, like, comm, name="tensor_list"):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != comm.Get_size():
        n = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"{op}: expected {name} to hold world_size={comm.Get_size()} tensors, "
                         f"got {n}")
    for i, t in enumerate(tensors):
        _check_tensor(op, t, write=True)
        if tuple(t.shape) != tuple(like.shape) or t.dtype is not like.dtype:
            raise ValueError(f"{op}: expected {name}[{i}] of shape {tuple(like.shape)} and "
                             f"dtype {like.dtype}, got {tuple(t.shape)} {t.dtype}")


def _check_rooted(op, root, root_name, tensors, list_name, like, comm):
    """gather/scatter: a valid root; the list of world_size tensors on the root, None
    elsewhere (PyTorch's rule)."""
    _check_rank(op, root, comm, root_name)
    if comm.Get_rank() == root:
        _check_list(op, tensors, like, comm, list_name)
    elif tensors:
        raise ValueError(f"{op}: expected {list_name}=None on rank {comm.Get_rank()} (not "
                         f"the {root_name} rank {root}), got a list")


def _check_flat(op, big, small, size, name):
    if big.numel() != size * small.numel() or big.dtype is not small.dtype:
        raise ValueError(f"{op}: expected {name} of world_size * {small.numel()} = "
                         f"{size * small.numel()} elements of {small.dtype}, got "
                         f"{big.numel()} of {big.dtype} (shape {tuple(big.shape)})")


def _code(v):
    """An argument as an int64 for the cross-rank comparison (-2: not a valid value)."""
    if isinstance(v, ReduceOp):
        return v.value
    return int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else -2


def _uncode(name, c):
    return ReduceOp(c).name if name == "op" and c >= 0 else "invalid" if c == -2 else c


def _wire(dtype):
    """The host dtype a clgrad dtype travels as (float16 and bfloat16 as float32: MPI has
    neither)."""
    return np.dtype(np.float32) if dtype.name in ("float16", "bfloat16") else dtype.np


def _host(t):
    """A contiguous host copy of the view ``t`` in its wire dtype."""
    a = t.detach()._values()
    return np.ascontiguousarray(a, dtype=_wire(t.dtype))


def _finish_avg(recv, op, comm):
    if op is ReduceOp.AVG:
        recv /= comm.Get_size()
    return recv


def _write(t, values):
    """Write host ``values`` through the view ``t`` (no autograd record; version bumped)."""
    from clgrad.autograd import no_grad
    from clgrad.creation import tensor
    from clgrad.ops.inplace import write_into
    values = np.asarray(values).reshape(tuple(t.shape))
    if t.is_contiguous():  # straight into the buffer at the view's offset
        if values.size:
            t._storage.device.copy(t._storage.buffer, dtypes.to_storage(values, t.dtype),
                                   dst_offset=t._offset * t.dtype.itemsize)
        t._storage.version += 1
        return
    with no_grad():
        write_into(t, tensor(values, dtype=t.dtype, device=t._storage.device))


_MPI_OPS: dict = {}


def _mpi_op(op, np_dtype):
    MPI = _mpi("reduce")
    if np_dtype.kind == "b":
        return MPI.LOR if op in (ReduceOp.SUM, ReduceOp.MAX) else MPI.LAND
    if op in (ReduceOp.MAX, ReduceOp.MIN) and np_dtype.kind == "f":  # NaN in, NaN out
        if op not in _MPI_OPS:
            fn = np.maximum if op is ReduceOp.MAX else np.minimum

            def combine(inbuf, inoutbuf, datatype, fn=fn):
                dt = np.dtype(datatype.typestr)
                a, b = np.frombuffer(inbuf, dt), np.frombuffer(inoutbuf, dt)
                fn(a, b, out=b)
            _MPI_OPS[op] = MPI.Op.Create(combine, commute=True)
        return _MPI_OPS[op]
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MAX: MPI.MAX, ReduceOp.MIN: MPI.MIN}[op]


def _broadcast_coalesced(tensors, src=0):
    """Broadcast many tensors from ``src`` in one MPI call per dtype (DDP's parameters and
    buffers); the ranks must pass the same list (DDP checks that at construction)."""
    comm = _comm("broadcast")
    by_dtype: dict = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype.name, []).append(t)
    for group_ in by_dtype.values():
        flat = _flat_host(group_)
        _wait(comm.Ibcast(flat, root=src), "broadcast")
        if comm.Get_rank() != src:
            _unflat_host(flat, group_)


def _flat_host(tensors):
    """The tensors (one dtype, one device, any views) concatenated on the device and read
    to the host in one transfer: a 1-d NumPy array."""
    from clgrad.ops.index import cat
    return cat([t.detach().reshape(-1) for t in tensors]).numpy()


def _unflat_host(values, tensors, skip=()):
    """Write consecutive pieces of host ``values`` into ``tensors`` (one upload, then one
    device copy per tensor, each bumping its version); indices in ``skip`` are left alone."""
    from clgrad.creation import tensor
    from clgrad.ops._util import copy_raw
    flat = tensor(values, dtype=tensors[0].dtype, device=tensors[0]._storage.device)
    at = 0
    for i, t in enumerate(tensors):
        if i not in skip:
            copy_raw(t, flat.narrow(0, at, t.numel()).view(t.shape))
            t._storage.version += 1
        at += t.numel()
