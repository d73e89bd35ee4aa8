"""The recording of captured steps (see clgrad/capture/__init__.py): ``CUDAGraph`` (its
capture: the hooks ``Device._capture`` calls for launches, allocations from the graph's private
memory pool, copies and fills; its replay half is clgrad/capture/replay.py), ``graph``,
``dynamic`` (by-value arguments recomputed per replay), ``paused``, ``CaptureError`` and the
refusals (``refuse_random``, ``_op_name``).
"""
from __future__ import annotations

import functools
import sys
import threading

import numpy as np
import pyopencl as cl
import pyopencl.tools

from clgrad.capture.replay import Replay
from clgrad.runtime import device as runtime

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "CaptureError", "dynamic", "paused",
           "is_capturing", "is_current_stream_capturing", "refuse_random"]

_ACTIVE = [None]  # the graph capturing now (one at a time per process)


class CaptureError(RuntimeError):
    """Something in a captured region that a replay could not redo (see clgrad.capture's
    docstring); the capture is abandoned."""


def is_capturing() -> bool:
    """True while the calling thread is capturing a graph."""
    g = _ACTIVE[0]
    return g is not None and g._thread == threading.get_ident()


def is_current_stream_capturing() -> bool:
    """``torch.cuda.is_current_stream_capturing()``: see ``is_capturing``."""
    return is_capturing()


def dynamic(fn):
    """The trailing by-value arguments of the next kernel launch, recomputed at each replay.

    ``fn(commit: bool) -> tuple`` of by-value kernel arguments (NumPy scalars, bytes). Eager:
    returns ``fn(True)``. Under capture: returns ``fn(False)`` (values for the record only;
    ``fn`` must then make no lasting change) and attaches ``fn`` to the next launch, whose last
    ``len(result)`` arguments are reset from ``fn(True)`` just before each replay enqueues it.
    A launch that does not end with exactly these objects (an op that skipped its launch)
    drops the attachment.
    """
    g = _ACTIVE[0]
    if g is None or g._thread != threading.get_ident():
        return fn(True)
    if g._run:  # a capture that also runs (compile's) commits, as an eager call does
        with paused():
            vals = tuple(fn(True))
    else:
        vals = tuple(fn(False))
    g._pending = (fn, vals)
    return vals


def refuse_random(what: str = ""):
    """Raise CaptureError for a host-side random draw inside a capture (called by
    ``clgrad.creation.seed_generator``)."""
    if is_capturing():
        op = what or _op_name()
        if _ACTIVE[0]._run:  # compile's capture runs eagerly on: it just stops recording
            _ACTIVE[0]._refuse(f"{op} draws random numbers on the host")
            return
        _ACTIVE[0]._abort()
        raise CaptureError(
            f"{op}: random numbers drawn on the host inside a captured region would be baked "
            f"into the graph and repeat on every replay; make random tensors outside the "
            f"captured region and copy them into static inputs (dropout is graph-safe: each "
            f"replay draws a new seed)")


class _PoolHandle:
    """A private memory pool several graphs may share (``graph_pool_handle()``)."""

    def __init__(self):
        self._pools: dict = {}

    def pool_for(self, dev):
        """This graph pool's memory pool on OpenCL device ``dev`` (made on first use)."""
        p = self._pools.get(id(dev))
        if p is None:
            p = self._pools[id(dev)] = cl.tools.MemoryPool(
                cl.tools.ImmediateAllocator(dev.queue))
        return p


def graph_pool_handle() -> _PoolHandle:
    """``torch.cuda.graph_pool_handle()``: a memory pool to pass as ``pool=`` to several
    captures, which then share their private memory (replay them in capture order)."""
    return _PoolHandle()


class CUDAGraph(Replay):
    """``torch.cuda.CUDAGraph``: a recorded sequence of kernel launches, copies and fills.

    Methods: ``capture_begin(pool=None, capture_error_mode=...)``, ``capture_end()``,
             ``replay()``, ``reset()``, ``pool()``; clgrad adds ``num_kernels`` and
             ``num_commands``.
    Raises:  CaptureError (see clgrad.capture's docstring); RuntimeError for replaying a graph
             that was not captured, or capturing while another capture runs
    Differences from PyTorch: works on every OpenCL device (CPU runtimes too); values passed
    through ``dynamic`` (learning rates, step counts, dropout seeds) are recomputed per replay,
    so optimizers need no ``capturable=True`` and LR schedulers work; optimizer state that a
    step would create (Adam's moments) is created eagerly outside the graph, so capturing the
    very first step is fine.
    """

    def __init__(self, keep_graph: bool = False):
        self._seq: list = []      # (ctypes args or None, callable), replayed in order
        self._cmds: list = []     # what was recorded: ("k"|"d"|"o", ...), see _plan
        self._cbufs: list = []    # command buffers of the plan (released by reset)
        self.replay_backend = None
        self._enq = None          # clEnqueueNDRangeKernel (ctypes) for the "ctypes" entries
        self._schedule: list = []  # "auto": the trial replays left, (backend, timed)
        self._trials = None        # "auto": backend -> _build's triple while trying
        self._times: dict = {}     # "auto": backend -> host seconds of its trial replays
        self._keep: list = []     # outside buffers and host arrays the commands use
        self._own: set = set()    # int_ptr of the blocks of the private pool
        self._dev = None
        self._pool_handle = None
        self._thread = None
        self._pending = None
        self._captured = False
        self._nkernels = 0
        self._dynamic = 0
        self._run = False         # compile's captures: run each command as it is recorded
        self._refused = None      # why such a capture stopped recording (it ran on eagerly)

    # -- capture --------------------------------------------------------------------------------
    def capture_begin(self, pool=None, capture_error_mode: str = "global"):
        """Start recording the calling thread's device work (see clgrad.capture's
        docstring)."""
        if _ACTIVE[0] is not None:
            raise RuntimeError("capture_begin: another graph is being captured; captures do "
                               "not nest")
        if self._captured:
            self.reset()
        if pool is not None and not isinstance(pool, _PoolHandle):
            raise TypeError(f"capture_begin: expected pool from graph_pool_handle() or "
                            f"CUDAGraph.pool(), got {type(pool).__name__}")
        self._pool_handle = pool or _PoolHandle()
        self._thread = threading.get_ident()
        self._pending = None
        self._refused = None
        _ACTIVE[0] = self
        runtime.Device._capture = self

    def capture_end(self):
        """Stop recording; the graph is ready to ``replay`` (its replay plan is made now)."""
        if _ACTIVE[0] is not self:
            raise RuntimeError("capture_end: this graph is not capturing")
        self._stop()
        self._plan()
        self._captured = True

    def _stop(self):
        _ACTIVE[0] = None
        runtime.Device._capture = None
        self._pending = None

    def _refuse(self, why: str):
        """A capture that also runs (``_run``) met something a replay could not redo: stop
        recording, keep running eagerly; ``compile`` then runs the function eagerly."""
        self._refused = why
        if _ACTIVE[0] is self:
            self._stop()

    def _abort(self):
        """End a capture that failed: nothing recorded is kept."""
        if _ACTIVE[0] is self:
            self._stop()
        self._seq, self._keep, self._cmds = [], [], []
        self._captured = False

    # -- replay ---------------------------------------------------------------------------------
    def replay(self):
        """Enqueue the recorded commands in order (asynchronously, as every launch)."""
        if not self._captured:
            raise RuntimeError("replay: the graph was not captured (capture_begin/capture_end "
                               "or `with clgrad.cuda.graph(g):` first)")
        if _ACTIVE[0] is not None:
            raise RuntimeError("replay: cannot replay a graph while a capture is running")
        dev = self._dev
        if dev is None:
            return
        self._replay(dev)

    def reset(self):
        """Forget the recorded commands and free the private pool's unused blocks."""
        if _ACTIVE[0] is self:
            self._stop()
        self._release_cbufs()
        self._seq, self._keep, self._own, self._cmds = [], [], set(), []
        self._schedule, self._trials, self._times = [], None, {}
        self.replay_backend = None
        self._captured = False
        self._nkernels = self._dynamic = 0
        if self._pool_handle is not None and self._dev is not None:
            self._pool_handle.pool_for(self._dev).free_held()
        self._dev = None

    def pool(self) -> _PoolHandle:
        """The graph's memory pool (pass as ``pool=`` to share it with another capture)."""
        if self._pool_handle is None:
            self._pool_handle = _PoolHandle()
        return self._pool_handle

    @property
    def num_kernels(self) -> int:
        """Kernel launches one replay enqueues (clgrad's addition)."""
        return self._nkernels

    @property
    def num_commands(self) -> int:
        """Commands one replay enqueues: kernels, copies and fills (clgrad's addition)."""
        return len(self._cmds)

    def __del__(self):
        if _ACTIVE[0] is self:
            self._stop()

    # -- hooks called by clgrad.runtime.Device ---------------------------------------------------
    def _mine(self, dev) -> bool:
        if self._thread != threading.get_ident():
            return False
        if self._dev is None:
            self._dev = dev
        elif dev is not self._dev:
            if self._run:
                self._refuse(f"{_op_name()} uses a second device ({dev.name!r})")
                return False
            self._abort()
            raise CaptureError(f"{_op_name()}: a captured region may use one device; it used "
                               f"{self._dev.name!r} and then {dev.name!r}")
        return True

    def _launch(self, dev, kernel, global_size, local_size, args) -> bool:
        if not self._mine(dev):
            return False
        if local_size is not None:
            global_size = [-(-g // l) * l for g, l in zip(global_size, local_size)]
        global_size = tuple(global_size)
        local_size = None if local_size is None else tuple(local_size)
        k = cl.Kernel(kernel.program, kernel.function_name)
        mem, val, other = [], [], []
        for i, a in enumerate(args):
            if isinstance(a, runtime._BY_VALUE):
                val += (i, a)
            elif isinstance(a, cl.MemoryObjectHolder):
                mem += (i, a)
                if a.int_ptr not in self._own:
                    self._keep.append(a)  # from outside the capture: keep it alive
            else:
                other.append((i, a))
                self._keep.append(a)
        try:
            for i, a in other:
                k.set_arg(i, a)
            if mem:
                k._set_arg_multi(tuple(mem))
            if val:
                k._set_arg_buf_multi(tuple(val))
        except cl.Error as e:  # a tensor of another device: as Device.launch says it
            dev._raise_foreign(k, e)
            raise
        pend, self._pending = self._pending, None
        if pend is not None and len(pend[1]) <= len(args) and all(
                a is b for a, b in zip(args[len(args) - len(pend[1]):], pend[1])):
            self._cmds.append(("d", k, global_size, local_size, pend[0],
                               len(args) - len(pend[1])))
            self._dynamic += 1
        else:
            self._cmds.append(("k", k, global_size, local_size))
        self._nkernels += 1
        if self._run:
            with dev._lock:
                runtime._enqueue(dev.queue, k, global_size, local_size, None, None, False,
                                 False)
                runtime._LAUNCHES[0] += 1  # counted as the eager launch it is
        return True

    def _alloc(self, dev, nbytes: int):
        if not self._mine(dev):
            return None
        nbytes = max(int(nbytes), 16)
        with dev._lock:
            if dev.allocated + nbytes > dev.total_memory:
                raise dev.out_of_memory(nbytes)
            try:
                buf = self._pool_handle.pool_for(dev).allocate(nbytes)
            except (cl.MemoryError, cl.RuntimeError, MemoryError):
                raise dev.out_of_memory(nbytes) from None
            dev.allocated += nbytes
        self._own.add(buf.int_ptr)
        return buf

    def _copy(self, dev, dst, src, kwargs) -> bool:
        if not self._mine(dev):
            return False
        if not isinstance(dst, cl.MemoryObjectHolder):
            op = _op_name()
            if self._run:  # the read happens (eagerly): the kernels before it have run
                self._refuse(f"{op} reads a tensor on the host")
                return False
            self._abort()
            raise CaptureError(
                f"{op}: reads a tensor on the host (a device-to-host copy) inside a captured "
                f"region; a replay cannot give the value back to Python. Read results after "
                f"replay() from the static outputs, outside the captured region")
        if isinstance(src, cl.MemoryObjectHolder):
            for b in (dst, src):
                if b.int_ptr not in self._own:
                    self._keep.append(b)
            held = src
        else:
            held = np.array(src, copy=True)  # a snapshot: the eager copy reads it now
            self._keep.append(held)
            if dst.int_ptr not in self._own:
                self._keep.append(dst)
        q = dev.queue
        self._record(dev, functools.partial(cl.enqueue_copy, q, dst, held, is_blocking=False,
                                            **kwargs))
        return True

    def _record(self, dev, op):
        self._cmds.append(("o", op))
        if self._run:
            with dev._lock:
                op()

    def _fill(self, dev, buffer, pattern, offset, size) -> bool:
        if not self._mine(dev):
            return False
        if buffer.int_ptr not in self._own:
            self._keep.append(buffer)
        pattern = np.array(pattern, copy=True)
        self._keep.append(pattern)
        self._record(dev, functools.partial(cl.enqueue_fill_buffer, dev.queue, buffer, pattern,
                                            offset, size))
        return True


class graph:
    """``with clgrad.cuda.graph(g, pool=None, stream=None, capture_error_mode=...):`` captures
    the block into ``g`` (a CUDAGraph). On an exception the capture is abandoned and the
    exception propagates. ``stream`` is accepted and ignored (one queue per device)."""

    def __init__(self, cuda_graph: CUDAGraph, pool=None, stream=None,
                 capture_error_mode: str = "global"):
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"graph: expected a CUDAGraph, got {type(cuda_graph).__name__}")
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        self.cuda_graph.capture_begin(pool=self.pool,
                                      capture_error_mode=self.capture_error_mode)
        return self.cuda_graph

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.cuda_graph._abort()
            return False
        self.cuda_graph.capture_end()
        return False


_NOT_OPS = frozenset(("__call__", "_call_impl", "_wrapped_call_impl", "forward", "wrapper",
                      "wrapped", "inner", "decorate_context"))


def _in_capture(mod: str) -> bool:
    """Whether module ``mod`` is clgrad.capture (the package or one of its modules)."""
    return mod == "clgrad.capture" or mod.startswith("clgrad.capture.")


def _op_name() -> str:
    """The outermost clgrad function on the stack below the first frame of user code: the op
    the user called (``item``, ``nonzero`` ...)."""
    f = sys._getframe(1)
    name = None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not (mod == "clgrad" or mod.startswith("clgrad.")):
            break
        code = f.f_code.co_name
        private = code.startswith("_") and not code.endswith("__")
        if mod != "clgrad.runtime" and not _in_capture(mod) and not code.startswith(
                "<") and code not in _NOT_OPS and not private:
            name = code
        f = f.f_back
    return name or "an op"


class paused:
    """``with paused():`` runs its block eagerly even inside a capture (optimizer state that
    must exist before the graph, made once, never replayed). A no-op outside a capture."""

    def __enter__(self):
        self._g = _ACTIVE[0] if is_capturing() else None
        if self._g is not None:
            _ACTIVE[0] = None
            runtime.Device._capture = None
        return self

    def __exit__(self, *exc):
        if self._g is not None:
            _ACTIVE[0] = self._g
            runtime.Device._capture = self._g
        return False
