"""The default process group on MPI (mpi4py): joining, rank and size, waits, work handles.

``init_process_group`` duplicates ``MPI.COMM_WORLD`` (mpi4py is imported only there, so
importing clgrad.distributed needs no MPI). Every wait polls MPI's ``Test`` until the group's
``timeout``; past it the rank prints which operation timed out and calls ``MPI_Abort``, which
ends every rank of the job: a rank that died or runs different code never hangs the others
forever. The collectives themselves live in collectives.py.
"""
from __future__ import annotations

import datetime
import enum
import os
import sys
import time

__all__ = ["ReduceOp", "Work", "group", "is_available", "is_mpi_available", "is_initialized",
           "init_process_group", "destroy_process_group", "get_rank", "get_world_size",
           "get_backend", "launched_world_size", "local_rank", "default_pg_timeout"]

default_pg_timeout = datetime.timedelta(minutes=30)  # PyTorch's default
_INSTALL = "pip install 'clgrad[distributed]' (mpi4py and the mpich wheel)"


class ReduceOp(enum.Enum):
    """How ``all_reduce``/``reduce``/``reduce_scatter`` combine the ranks' values."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4


class group:  # noqa: N801  (PyTorch's name: dist.group.WORLD)
    """``group.WORLD``: the default group, the only one clgrad has."""

    WORLD = "WORLD"


class _State:
    comm = None          # a duplicate of MPI.COMM_WORLD
    timeout = 1800.0     # seconds
    local_rank = 0
    local_size = 1


def is_available() -> bool:
    """True when mpi4py and an MPI library can be imported."""
    try:
        from mpi4py import MPI  # noqa: F401
    except (ImportError, RuntimeError, OSError):
        return False
    return True


is_mpi_available = is_available


def is_initialized() -> bool:
    """True between ``init_process_group`` and ``destroy_process_group``."""
    return _State.comm is not None


def launched_world_size() -> int:
    """The number of processes of the MPI job that started this one, from the launcher's
    environment (MPICH/Hydra and Intel MPI ``PMI_SIZE``, Open MPI ``OMPI_COMM_WORLD_SIZE``,
    MVAPICH ``MV2_COMM_WORLD_SIZE``); 0 when not started by an MPI launcher. Needs no MPI
    import (clgrad's own helper, used by the training CLI)."""
    for var in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"):
        v = os.environ.get(var, "")
        if v.isdigit():
            return int(v)
    return 0


def local_rank() -> int:
    """This process's index among the ranks on its host (0 when not initialised)."""
    return _State.local_rank


def init_process_group(backend=None, init_method=None, timeout=None, world_size: int = -1,
                       rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None):
    """Join the MPI job as the default process group.

    backend:     None or "mpi" (the only backend)
    init_method: None, "env://" or "mpi://"; rank and size always come from MPI. ``RANK`` and
                 ``WORLD_SIZE`` from the environment, and ``rank``/``world_size`` when given,
                 must agree with MPI's (ValueError otherwise).
    timeout:     a timedelta or seconds (default 30 minutes): how long any wait may take
    device_id:   the OpenCL device of this process (a Device or spec, see clgrad.devices()).
                 Default: ``CLGRAD_DEVICE`` when set, else GPU number (local rank mod number
                 of GPUs), else the CPU device -- several ranks may share one device.
                 Call this before creating tensors: it sets clgrad's default device.
    Raises:      RuntimeError when mpi4py/MPI is missing (names the package) or the group is
                 already initialised; ValueError for another backend, init_method or a rank or
                 size that disagrees with MPI.
    """
    if is_initialized():
        raise RuntimeError("init_process_group: trying to initialize the default process group "
                           "twice!")
    if backend is not None and str(backend).lower() != "mpi":
        raise ValueError(f"init_process_group: expected backend 'mpi', got {backend!r}; clgrad "
                         f"runs its collectives on MPI only")
    if init_method not in (None, "env://", "mpi://"):
        raise ValueError(f"init_process_group: expected init_method None, 'env://' or "
                         f"'mpi://', got {init_method!r}; the MPI launcher (mpiexec) sets up "
                         f"the processes")
    if store is not None:
        raise ValueError("init_process_group: expected store=None, got a store; MPI needs none")
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else \
        default_pg_timeout.total_seconds() if timeout is None else float(timeout)
    if not seconds > 0:
        raise ValueError(f"init_process_group: expected a positive timeout, got {timeout!r}")
    MPI = _mpi("init_process_group")
    world = MPI.COMM_WORLD
    size, me = world.Get_size(), world.Get_rank()
    checks = [("rank", rank, me), ("world_size", world_size, size)]
    for var, what, mpi_value in (("RANK", "rank", me), ("WORLD_SIZE", "world_size", size)):
        if os.environ.get(var, "").strip():
            checks.append((f"environment variable {var}", int(os.environ[var]), mpi_value))
    for what, given, mpi_value in checks:
        if given != -1 and given != mpi_value:
            raise ValueError(f"init_process_group: {what} is {given} but MPI says {mpi_value} "
                             f"(rank {me} of {size}); launch with mpiexec -n K and let MPI "
                             f"number the processes")
    comm = world.Dup()
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    _State.local_rank, _State.local_size = node.Get_rank(), node.Get_size()
    node.Free()
    _State.comm, _State.timeout = comm, seconds
    _choose_device(device_id)


def destroy_process_group(group=None):
    """Leave the process group (MPI itself is finalised when the process exits)."""
    _check_group(group, "destroy_process_group")
    comm = _comm("destroy_process_group")
    _State.comm = None
    comm.Free()


def get_rank(group=None) -> int:
    """This process's rank, 0 .. world_size - 1."""
    _check_group(group, "get_rank")
    return _comm("get_rank").Get_rank()


def get_world_size(group=None) -> int:
    """The number of processes."""
    _check_group(group, "get_world_size")
    return _comm("get_world_size").Get_size()


def get_backend(group=None) -> str:
    """``"mpi"``."""
    _check_group(group, "get_backend")
    _comm("get_backend")
    return "mpi"


class Work:
    """The handle of an ``async_op=True`` collective: ``wait()`` blocks until it is done and
    its results are written; ``is_completed()`` polls (and writes the results when done)."""

    def __init__(self, op: str, requests, finish=None, outputs=()):
        self._op, self._requests, self._finish, self._outputs = op, list(requests), finish, \
            list(outputs)
        self._done = False
        self.source = -1  # recv: the sender's rank

    def _complete(self):
        if not self._done:
            self._done = True
            if self._finish is not None:
                self._finish()

    def is_completed(self) -> bool:
        """True when the operation has finished (its outputs are then written)."""
        if not self._done and all(r.Test() for r in self._requests):
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        """Block until done (MPI_Abort past ``timeout`` or the group's timeout); True."""
        if not self._done:
            seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) \
                else timeout
            for r in self._requests:
                _wait(r, self._op, seconds)
            self._complete()
        return True

    def is_success(self) -> bool:
        """True once completed (failures abort the job)."""
        return self._done

    def result(self) -> list:
        """The output tensors."""
        return self._outputs


def _mpi(op):
    try:
        from mpi4py import MPI
    except (ImportError, RuntimeError, OSError) as e:
        raise RuntimeError(f"{op}: the 'mpi' backend needs mpi4py and an MPI library; install "
                           f"them with {_INSTALL} ({type(e).__name__}: {e})") from None
    return MPI


def _comm(op):
    if _State.comm is None:
        raise ValueError(f"{op}: Default process group has not been initialized, please make "
                         f"sure to call init_process_group.")
    return _State.comm


def _check_group(g, op):
    if g is not None and g != group.WORLD:
        raise ValueError(f"{op}: expected group=None or group.WORLD, got {g!r}; clgrad has only "
                         f"the default process group")


def _begin(op, g):
    _check_group(g, op)
    return _comm(op)


def _choose_device(device_id):
    from clgrad import runtime, settings
    if device_id is not None:
        runtime.set_default_device(device_id)
    elif not settings.getenv("CLGRAD_DEVICE"):
        gpus = [r["index"] for r in runtime.devices("gpu")]
        runtime.set_default_device(gpus[_State.local_rank % len(gpus)] if gpus else "cpu")


def _wait(req, op, seconds=None):
    """Poll ``req`` until done; past the timeout, say so and abort the whole MPI job."""
    limit = _State.timeout if seconds is None else float(seconds)
    start = time.monotonic()
    pause = 0.0
    while not req.Test():
        waited = time.monotonic() - start
        if waited > limit:
            _abort(op, limit)
        if waited > 1e-3:  # spin for 1 ms, then back off (ranks may share CPU cores)
            pause = min(2.5e-4, pause + 1e-5)
            time.sleep(pause)


def _abort(op, limit):
    comm = _State.comm
    rank, size = comm.Get_rank(), comm.Get_size()
    print(f"clgrad.distributed: {op} on rank {rank} of {size} did not complete within "
          f"{limit:g} s (the process group's timeout): another rank died, hangs, or called a "
          f"different collective; aborting every rank (MPI_Abort)", file=sys.stderr, flush=True)
    comm.Abort(124)


class _Keep:
    """An MPI request and the host buffers it reads and writes: mpi4py keeps no reference to
    the buffers of a nonblocking collective, so they must live until the request is done."""

    __slots__ = ("req", "buffers")

    def __init__(self, req, *buffers):
        self.req, self.buffers = req, buffers

    def Test(self):  # noqa: N802  (the mpi4py name _wait calls)
        """True when the MPI request is done (then the host buffers are released)."""
        done = self.req.Test()
        if done:
            self.buffers = ()
        return done


def _run(op, req, finish, async_op, outputs=()):
    work = Work(op, [req], finish, outputs)
    if async_op:
        return work
    work.wait()
    return None
