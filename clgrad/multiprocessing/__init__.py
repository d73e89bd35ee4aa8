"""``torch.multiprocessing``: Python's multiprocessing with clgrad tensors that travel between
processes by shared memory, and ``spawn``.

Every name of Python's ``multiprocessing`` is here (``Process``, ``Queue``, ``Pool``,
``set_start_method``, ``get_context`` ...), as in PyTorch. Importing clgrad registers a
reduction for Tensor and Parameter with multiprocessing's pickler (reductions.py): a tensor
given to a spawned Process as an argument, or put on a Queue / Pipe, is moved into shared
memory first (``share_memory_``, in place, as PyTorch does for CPU tensors) and the receiver
maps the same memory, so writes in either process are seen by the other (Hogwild training:
``model.share_memory()``, then processes that each train the same parameters).

Start methods: ``spawn`` (what PyTorch's examples use: ``mp.set_start_method('spawn')``) and
``forkserver`` give the child fresh OpenCL state, and the tensors map the shared memory there.
``fork`` (Linux's default) is refused once the parent has used OpenCL: a forked child inherits
the parent's OpenCL runtime, which does not survive fork. Shared tensors would be shared (their
memory is mapped MAP_SHARED), but Intel's CPU runtime compiling a kernel in the forked child
crashed it (SIGSEGV in the runtime's compiler), with the inherited context and with a fresh
one alike; only kernels already in pyopencl's binary cache ran. clgrad's DataLoader seals its
forked workers for the same reason. So in such a child every OpenCL entry point raises
``OpenCLInForkedProcess`` saying to use ``set_start_method('spawn')``; a forked child that
does not touch clgrad tensors runs as usual.

A process's queued kernels are waited for when it exits (a child's last in-place writes to
shared tensors are not lost: kernels run asynchronously, PyTorch's CPU ops do not).

Only tensors on CPU devices can be shared: a GPU buffer cannot be mapped by another process
(OpenCL has no inter-process memory handles, unlike CUDA's IPC), so sending one raises
RuntimeError; move it to 'cpu' (or send ``t.numpy()``) first. A non-leaf tensor that requires
grad raises too (autograd does not cross processes, PyTorch's rule); send ``t.detach()``.
Gradients are not sent (``.grad`` stays in the process that made it). Python's plain
``pickle`` (a file, joblib) copies the elements instead of sharing them (Tensor.__reduce_ex__
in clgrad/tensor.py), as do Tensor subclasses other than Parameter on a Queue.

Sharing strategies: only 'file_descriptor' (the descriptor of the shared memory is passed
to the receiver; nothing is left in /dev/shm), as PyTorch's default on Linux.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
from multiprocessing import *  # noqa: F401,F403  (PyTorch re-exports every name too)
from multiprocessing import util as _util

from clgrad.multiprocessing import reductions
from clgrad.multiprocessing.spawn import (ProcessContext, ProcessExitedException,
                                          ProcessRaisedException, spawn, start_processes)

__all__ = list(multiprocessing.__all__) + [
    "spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
    "ProcessExitedException", "get_sharing_strategy", "set_sharing_strategy",
    "get_all_sharing_strategies", "OpenCLInForkedProcess"]

reductions.init_reductions()


class OpenCLInForkedProcess(RuntimeError):
    """clgrad used OpenCL in a process forked after its parent had used OpenCL."""


def _synchronize_all():
    """Wait for the queued kernels of every device this process made (at its exit)."""
    from clgrad.runtime import discovery
    for dev in list(discovery._DEVICES.values()):
        dev.synchronize()


def _at_fork_in_child():
    """Right after os.fork, in the child: note whether the parent had made OpenCL contexts."""
    from clgrad.runtime import discovery
    _INHERITED[0] = bool(discovery._DEVICES)


def _after_fork(_):
    """In a child started by multiprocessing (any start method; it clears the finalizers
    first): wait for the kernels at exit; refuse OpenCL if forked from a parent that had used
    it."""
    from clgrad.utils.data.worker import seal_opencl
    if not _INHERITED[0]:
        _util.Finalize(None, _synchronize_all, exitpriority=100)
    else:  # the parent's contexts, which do not survive fork
        seal_opencl(lambda: OpenCLInForkedProcess(
            f"process {os.getpid()} was started with the 'fork' start method after its parent "
            f"used OpenCL, and OpenCL contexts do not survive fork; call "
            f"clgrad.multiprocessing.set_start_method('spawn', force=True) (as PyTorch's "
            f"Hogwild example does) or use get_context('spawn')"))


class _Hook:  # register_after_fork keeps its objects weakly
    pass


_HOOK = _Hook()
_INHERITED = [False]  # True in a process forked while its parent had OpenCL contexts
os.register_at_fork(after_in_child=_at_fork_in_child)
_util.register_after_fork(_HOOK, _after_fork)
_util.Finalize(None, _synchronize_all, exitpriority=100)

_STRATEGIES = {"file_descriptor"}


def get_all_sharing_strategies() -> set:
    """The sharing strategies clgrad supports: {'file_descriptor'}."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """'file_descriptor' (the only one)."""
    return "file_descriptor"


def set_sharing_strategy(new_strategy: str):
    """Accepts 'file_descriptor' (the only strategy).

    Raises:  ValueError for any other (PyTorch's 'file_system' keeps named files in /dev/shm
             and a manager process to remove them, which clgrad does not have)"""
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"set_sharing_strategy: expected one of {sorted(_STRATEGIES)}, got "
                         f"{new_strategy!r} (clgrad passes file descriptors only)")
