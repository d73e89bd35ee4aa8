"""Captured kernel sequences: record a region's kernels once, replay them with no Python per op
(PyTorch's CUDA graphs, ``torch.cuda.graph``; tinygrad's TinyJit).

Capture. Between ``CUDAGraph.capture_begin()`` and ``capture_end()`` (or inside ``with
clgrad.cuda.graph(g):``) every op runs its Python as usual (checks, shapes, autograd), but
nothing reaches the device: clgrad/runtime/device.py: ``Device.launch``, ``alloc``, ``copy`` and
``fill`` hand their work to the capturing graph (the hook is ``Device._capture``). A launch is
recorded as a kernel object of its own (a clone of the cached one) with its arguments set
once; a host-to-device copy as a copy of a snapshot of the host array; a fill as a fill. As in
PyTorch, the capture runs nothing: the first ``replay()`` does the work once.

Memory. Allocations during capture come from the graph's private memory pool (PyTorch's
graph pool): a tensor freed during capture gives its block back to that pool only, where a
later allocation of the same capture may reuse it, exactly as the eager run would; the pool
holds every block until ``reset()``. Buffers from outside the capture that a recorded kernel
uses (parameters, static inputs) are kept alive by the graph. Replays allocate nothing.

Replay. ``replay()`` enqueues the recorded commands in order on the device's in-order queue
(asynchronously: reading a result waits for it). Same kernels, same arguments, same order:
a replay gives bit for bit what the eager region gives on the same data. How the kernels are
enqueued (``CUDAGraph.replay_backend``): "pyopencl" (pyopencl's enqueue, one Event object per
kernel), "ctypes" (clEnqueueNDRangeKernel through ctypes with a NULL event, arguments prepared
at capture end: clgrad/runtime/native.py) or "command_buffer" (``cl_khr_command_buffer`` where
the device offers it: each run of kernels between a copy, a fill or a kernel with per-replay
arguments is recorded into one command buffer at capture end and enqueued by one call).
``CLGRAD_REPLAY`` forces one; by default ("auto") the ways that work on the device (checked
once per device on a tiny kernel, ``replay_backends(device)``) are tried on the graph itself:
after one warm-up replay, the next replays take turns (3 each), and the way with the least
host time per replay is kept (pyopencl unless another takes < 90% of its time);
``replay_backend`` is None until then. Every way enqueues the same kernels with the same
arguments in the same order: the results are the same bits.

Values that change between replays. Some kernel arguments are Python values that an eager
step recomputes every time: the learning rate and Adam's bias corrections (from the step
count), SGD's first-step flag, dropout's seed. Ops pass those through ``dynamic(fn)``:
``fn(commit)`` returns the trailing by-value arguments of the next launch; eagerly it is called
once with commit=True; under capture once with commit=False (placeholders, no side effect), and
then once per replay with commit=True, just before that kernel is enqueued. So a replay draws
dropout seeds from clgrad's generator in the order the eager step would, counts Adam's steps,
and reads ``group['lr']`` as an LR scheduler left it.

``compile(fn, mode="reduce-overhead")`` captures differently: its capture runs each command
as it records it (``CUDAGraph._run``), so the capture call is an eager call, and what a
graph capture refuses (below) only stops the recording there: the call carries on eagerly
and ``fn`` runs once (see ``compile`` for its guards on Python state).

Refused, at capture time, with ``CaptureError`` naming the op: reading a tensor on the host
(``item``, ``tolist``, ``numpy``, printing, ``nonzero``, ``unique``, ``masked_select``, ``bool``
of a tensor, BatchNorm with ``momentum=None`` ...), host-side random draws
(``randn``/``rand``/``normal_``/``nn.init`` ...: they would be baked in and repeat), work on a
second device, or a capture inside a capture. Inside a capture the class-index losses
(``cross_entropy``, ``nll_loss``) skip their host-side target range check; an out-of-range
target then gives a NaN loss and gradient instead of an IndexError.

Threads: only the thread that began the capture records; other threads' work on the device
runs eagerly, as usual.
"""
from __future__ import annotations

import functools
import itertools
import operator
import sys
import threading
import time
import types
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.tools

from clgrad.runtime import device as runtime
from clgrad.runtime import discovery as _discovery

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "CaptureError", "dynamic", "paused",
           "is_capturing", "is_current_stream_capturing", "compile", "make_graphed_callables",
           "replay_backends", "REPLAY_BACKENDS"]

REPLAY_BACKENDS = ("pyopencl", "ctypes", "command_buffer")

_ACTIVE = [None]  # the graph capturing now (one at a time per process)


class CaptureError(RuntimeError):
    """Something in a captured region that a replay could not redo (see the module docstring);
    the capture is abandoned."""


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


class CUDAGraph:
    """``torch.cuda.CUDAGraph``: a recorded sequence of kernel launches, copies and fills.

    Methods: ``capture_begin(pool=None, capture_error_mode=...)``, ``capture_end()``,
             ``replay()``, ``reset()``, ``pool()``; clgrad adds ``num_kernels`` and
             ``num_commands``.
    Raises:  CaptureError (see the module docstring); RuntimeError for replaying a graph that
             was not captured, or capturing while another capture runs
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
        """Start recording the calling thread's device work (see the module docstring)."""
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

    def _plan(self, backend: str | None = None):
        """Turn the recorded commands into the replay sequence for ``backend`` (default:
        CLGRAD_REPLAY, else "auto": the first replays try each way that works on the device,
        see the module docstring)."""
        self._release_cbufs()
        self._schedule, self._trials, self._times = [], None, {}
        if self._dev is None:
            self._seq, self.replay_backend = [], None
            return
        if backend is None:
            from clgrad.settings import getenv
            backend = getenv("CLGRAD_REPLAY")
            if backend == "auto":
                works = [b for b in REPLAY_BACKENDS
                         if replay_backends(self._dev)["correct"].get(b)] or ["pyopencl"]
                if len(works) > 1 and self._nkernels >= 2:
                    self._trials = {b: self._build(b) for b in works}
                    self._seq, self._enq, _ = self._trials[works[0]]
                    self._cbufs = [cb for t in self._trials.values() for cb in t[2]]
                    self._schedule = [(works[0], False)] + [
                        (b, True) for _ in range(_TRIAL_ROUNDS) for b in works]
                    self._times = {b: [] for b in works}
                    self.replay_backend = None
                    return
                backend = works[0]
        self._seq, self._enq, self._cbufs = self._build(backend)
        self.replay_backend = backend

    def _choose(self):
        """After the trial replays: keep the way with the least host time per replay (the
        command buffers of the others are released)."""
        best = _fastest({b: sorted(t)[len(t) // 2] for b, t in self._times.items()})
        self._seq, self._enq, self._cbufs = self._trials[best]
        for b, (_, _, cbufs) in self._trials.items():
            if b != best:
                for cb in cbufs:
                    cb.release()
        self._trials, self.replay_backend = None, best

    def _build(self, backend: str) -> tuple:
        """(replay sequence, ctypes enqueue function, command buffers it made) of the recorded
        commands for ``backend``."""
        if backend not in REPLAY_BACKENDS:
            raise ValueError(f"CUDAGraph: expected CLGRAD_REPLAY in {REPLAY_BACKENDS} or "
                             f"'auto', got {backend!r}")
        from clgrad.runtime import native
        if backend != "pyopencl" and native.enqueue_fn() is None:
            raise RuntimeError(f"CUDAGraph: replay backend {backend!r} needs the OpenCL ICD "
                               f"loader through ctypes, which was not found")
        if backend == "command_buffer":
            ok, why = native.command_buffer_support(self._dev.cl_device)
            if not ok:
                raise RuntimeError(f"CUDAGraph: replay backend 'command_buffer': {why}")
        seq, cb, cbufs = [], None, []
        enq = native.enqueue_fn()
        for c in self._cmds:
            kind, q = c[0], self._dev.queue
            if kind == "k" and backend == "command_buffer":
                if cb is None:
                    cb = native.CommandBuffer(q)
                    cbufs.append(cb)
                    seq.append((None, cb.enqueue))
                cb.add(c[1], c[2], c[3])
                continue
            if cb is not None:
                cb.finalize()
                cb = None
            if kind == "k":
                k, g, l = c[1:]
                if backend == "pyopencl":
                    seq.append((None, functools.partial(runtime._enqueue, q, k, g, l, None,
                                                        None, False, False)))
                else:
                    seq.append((native.kernel_args(q, k, g, l), None))
            elif kind == "d":
                seq.append((None, _dynamic_op(q, *c[1:], native_enq=None if
                                              backend == "pyopencl" else enq)))
            else:
                seq.append((None, c[1]))
        if cb is not None:
            cb.finalize()
        return seq, enq, cbufs

    def _release_cbufs(self):
        for cb in self._cbufs:
            cb.release()
        self._cbufs = []

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
        trial = None
        if self._schedule:  # "auto": one of the first replays, trying one way
            trial = self._schedule.pop(0)
            self._seq, self._enq, _ = self._trials[trial[0]]
            t0 = time.perf_counter()
        enq = self._enq
        with dev._lock:
            for a, op in self._seq:
                if a is None:
                    op()
                elif enq(*a):
                    self._failed(a)
            runtime._LAUNCHES[0] += self._nkernels
        if trial is not None:
            if trial[1]:
                self._times[trial[0]].append(time.perf_counter() - t0)
            if not self._schedule:
                self._choose()

    def _failed(self, args):
        from clgrad.runtime import native
        code = self._enq(*args)  # once more, for the status (0: a transient failure)
        if code:
            raise native.NativeError("replay: clEnqueueNDRangeKernel", code)

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
        for i, a in other:
            k.set_arg(i, a)
        if mem:
            k._set_arg_multi(tuple(mem))
        if val:
            k._set_arg_buf_multi(tuple(val))
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


def _dynamic_op(q, k, g, l, fn, start, native_enq=None):
    """A replay step for a kernel whose trailing arguments ``fn(True)`` recomputes: they are
    set, then the kernel is enqueued (through ``native_enq`` when given, else pyopencl)."""
    if native_enq is None:
        def enqueue():
            runtime._enqueue(q, k, g, l, None, None, False, False)
    else:
        from clgrad.runtime import native
        a = native.kernel_args(q, k, g, l)

        def enqueue():
            code = native_enq(*a)
            if code:
                raise native.NativeError("replay: clEnqueueNDRangeKernel", code)

    def op():
        k._set_arg_buf_multi(tuple(x for i, v in enumerate(fn(True)) for x in (start + i, v)))
        enqueue()
    return op


_BACKENDS: dict = {}  # id(Device) -> replay_backends' answer
_TRIAL_ROUNDS = 3     # "auto": timed trial replays per way
_MARGIN = 0.9         # another way must take < 90% of pyopencl's host time to be chosen


def _fastest(host: dict) -> str:
    """The way of ``host`` (backend -> host seconds) to keep: the fastest, unless pyopencl
    is among them and the fastest is not at least 1 - _MARGIN faster (within the noise: keep
    the proven way)."""
    best = min(host, key=host.get)
    if best != "pyopencl" and "pyopencl" in host and host[best] > _MARGIN * host["pyopencl"]:
        return "pyopencl"
    return best


_PROBE_SRC = "__kernel void clgrad_replay_probe(__global float* x) { x[get_global_id(0)] += 1.0f; }"


def replay_backends(dev=None, kernels: int = 32, repeats: int = 9) -> dict:
    """Which ways of replaying work on ``dev`` (a clgrad Device; default: the default
    device), checked once per device and cached (graphs in "auto" mode try the working ways
    on themselves, see the module docstring): {"best": name, "us_per_kernel": {name: µs}, "correct":
    {name: bool}, "command_buffer": (available, reason)}. Each way enqueues ``kernels``
    launches of a tiny kernel (x += 1 on 16 floats), ``repeats`` times, the ways interleaved;
    the host time of the enqueues (median) per kernel is ``us_per_kernel``. A way counts only
    if two runs of it alone give the right sum and raise nothing. "best" is the fastest correct
    way, if it is at least 10% faster than "pyopencl" (else, and when nothing else works,
    "pyopencl"). Costs a few ms, once per device and process."""
    import numpy as np

    from clgrad.runtime import native
    if dev is None:
        from clgrad.runtime import default_device
        dev = default_device()
    got = _BACKENDS.get(id(dev))
    if got is not None and got["device"] is dev:
        return got
    q = dev.queue
    with dev._lock:
        with warnings.catch_warnings():  # a runtime's build log is no news here
            warnings.simplefilter("ignore", cl.CompilerWarning)
            prg = cl.Program(dev.context, _PROBE_SRC).build()
        buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 64)
        ks = []
        for _ in range(kernels):
            k = cl.Kernel(prg, "clgrad_replay_probe")
            k.set_arg(0, buf)
            ks.append(k)
        cb_ok = native.command_buffer_support(dev.cl_device)
        enq = native.enqueue_fn()
        runs, correct, cbufs = {}, {}, []

        def pyopencl_run():
            for k in ks:
                runtime._enqueue(q, k, (16,), None, None, None, False, False)
        runs["pyopencl"] = pyopencl_run
        if enq is not None:
            args = [native.kernel_args(q, k, (16,), None) for k in ks]

            def ctypes_run():
                for a in args:
                    if enq(*a):
                        raise native.NativeError("clEnqueueNDRangeKernel", enq(*a))
            runs["ctypes"] = ctypes_run
            if cb_ok[0]:
                try:
                    cbuf = native.CommandBuffer(q)
                    cbufs.append(cbuf)
                    for k in ks:
                        cbuf.add(k, (16,), None)
                    cbuf.finalize()
                    runs["command_buffer"] = cbuf.enqueue
                except (native.NativeError, RuntimeError):
                    correct["command_buffer"] = False
        out = np.empty(16, np.float32)
        for name, run in list(runs.items()):  # each alone, twice: right result, no error
            try:
                cl.enqueue_fill_buffer(q, buf, np.float32(0), 0, 64)
                run()
                run()
                cl.enqueue_copy(q, out, buf)
                correct[name] = bool((out == 2 * kernels).all())
            except (native.NativeError, cl.Error, RuntimeError):
                correct[name] = False
            if not correct[name]:
                del runs[name]
        ts = {name: [] for name in runs}
        for _ in range(repeats):  # interleaved, so that a noisy moment hits every way
            for name, run in runs.items():
                q.finish()
                t0 = time.perf_counter()
                run()
                ts[name].append(time.perf_counter() - t0)
        q.finish()
        for cbuf in cbufs:
            cbuf.release()
        us = {n: sorted(t)[len(t) // 2] * 1e6 / kernels for n, t in ts.items()}
    ok = {n: t for n, t in us.items() if correct.get(n)}
    best = _fastest(ok) if ok else "pyopencl"
    got = _BACKENDS[id(dev)] = {"device": dev, "best": best, "us_per_kernel": us,
                                "correct": correct, "command_buffer": cb_ok}
    return got


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
        if mod not in ("clgrad.runtime", "clgrad.capture") and not code.startswith(
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


# -- torch.compile(mode="reduce-overhead") ---------------------------------------------------------
RECOMPILE_LIMIT = 8  # captures kept per signature (torch._dynamo.config.recompile_limit)


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",  # noqa: A001
            mode=None, options=None, disable: bool = False):
    """``torch.compile``. ``mode="reduce-overhead"`` returns a callable that replays captured
    kernels (see the module docstring); any other mode (None, "default", "max-autotune" ...)
    returns ``model`` unchanged (clgrad has no graph compiler: it runs eagerly). Usable as
    ``compile(fn, ...)`` or as a decorator ``@compile(mode=...)``.

    The replaying callable keys its captures on a signature: grad mode, the default device,
    the keyword names, and the arguments, walked through lists, tuples (named too) and dicts:
    per tensor its shape, dtype, device and requires_grad, per other value its type and value
    (``f(x, 2)``, ``f(x, 2.0)`` and ``f(x, True)`` are three signatures), and which tensor
    arguments share memory (the same tensor twice shares one captured input; distinct tensors
    sharing a storage run eagerly). Per signature the first call runs ``fn`` eagerly (a
    warm-up: optimizer state, built kernels); the second runs it eagerly while recording its
    kernels (a capture); later calls copy the tensor arguments into the captured inputs and
    replay. ``fn``'s Python body runs exactly once per call that is not a replay, and a
    replay runs none of it.

    Guards. A capture also records the Python state ``fn`` can read, and a replay happens only
    when all of it is as it was before the capture; otherwise the call captures again
    (PyTorch's recompile), up to ``RECOMPILE_LIMIT`` (8) captures per signature, each kept
    with its guards (so ``model.train()``/``model.eval()`` switch between two captures); past
    the limit the call runs eagerly, with one warning (PyTorch's recompile-limit warning).
    Guarded, found by walking ``fn`` (the globals and closure cells its code reads — only the
    closure cells for clgrad's own functions — recursively into the functions, bound methods,
    ``functools.partial`` objects, compiled callables, containers and objects they hold, the
    methods of user classes) and the non-tensor arguments:
      - each global and closure variable read: numbers, bools, strings, bytes, None and
        tuples of them by type and value, anything else by identity; the plain attributes a
        function reads from a Python module held in a global (``config.scale``);
      - every ``nn.Module`` reached, and its submodules: ``training``, every plain attribute
        (``p``, ``momentum``, ``eps``, ``scale`` ...) by type and value, every other public
        attribute (``self.act = torch.relu``), parameter, buffer and submodule by identity,
        each parameter's ``requires_grad``, the keys of its forward/backward hook dicts;
      - every optimizer reached: the ``param_groups`` list, each group and its parameters
        (identity), every hyperparameter but ``lr`` by type and value (``lr`` is read again
        at every replay, so LR schedulers work), the ``state`` dict and each parameter's
        state dict (identity), its plain attributes;
      - parameters (of modules and optimizers), buffers and tensors reached: their storage
        (``p.data = ...`` and ``Module.to`` swap it in place); ``requires_grad``; their
        ``.grad``: the very tensor where the capture accumulated into it, else whether it
        was None;
      - lists, dicts and sets reached: their items (plain values by type and value, others
        by identity); other objects reached (a config object): their attributes as a
        module's; user classes: their plain class attributes.
      - NumPy arrays reached, up to 1 MiB: their shape, dtype and values (a host array an op
        reads is copied to the device, and a capture keeps that copy).
    Python state the guards do not see (an attribute read through ``getattr`` with a computed
    name, an object more than six references away from ``fn``, a library object other than
    a module, optimizer or LR scheduler, the values of a larger NumPy array, which is
    guarded by identity only) is baked into a capture.
    Cost per replayed call: one getter per module tree, function and optimizer (C-level maps
    over their dicts): about 1 µs per module, measured on a busy 2-core CPU.

    Refused (the call ran eagerly; this signature then always runs eagerly, with one
    warning naming the reason): a host read (``.item()``, ``print``, a data-dependent
    ``if``), host-side random draws, a second device — the call carries on eagerly from
    there, so ``fn`` still runs once; a change ``fn`` makes to guarded Python state or to an
    LR scheduler it reaches (``scheduler.step()``, ``list.append``, ``self.count += 1``, a
    changed ``lr``, an optimizer's new state), named in the warning, on two capture calls in
    a row (a replay would not make it again; the first such call counts as a warm-up, since
    the first step after a change may set things up once: the state of a new parameter
    group); an output that has a backward graph (the replayed kernels cannot feed autograd);
    a gradient accumulated into a tensor argument (a replay would write into the first
    call's argument).

    Results. Each call returns fresh output tensors (a copy of the captured outputs, one copy
    launch each: an earlier call's results are never overwritten), detached; an output that
    is a tensor argument is that argument, one that views an argument is a copy, and one
    made outside the capture (a parameter) is that tensor. In-place changes ``fn`` makes to
    a tensor argument reach the caller's tensor (also when ``fn`` raises during a capture);
    a ``.grad`` the capture set is set again to the same tensor, which the replay refilled.
    Tensors ``fn`` reaches other than through its arguments (parameters, buffers, optimizer
    state) are used in place, as in CUDA graphs. A compiled callable called while another
    capture runs (a compiled model inside a compiled step) runs its function as part of that
    capture.
    Raises:  whatever ``fn`` raises; nothing of its own (a refusal runs eagerly).
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if disable or mode != "reduce-overhead":
        return model
    return _Replayed(model)


_LIB = [None, None]  # Tensor, no_grad (imported on first use: capture.py sits below them)


def _lib():
    if _LIB[0] is None:
        from clgrad.autograd import no_grad
        from clgrad.tensor import Tensor
        _LIB[0], _LIB[1] = Tensor, no_grad
    return _LIB


class _Replayed:
    """The callable ``compile(fn, mode="reduce-overhead")`` returns (see ``compile``)."""

    def __init__(self, fn):
        self._fn = fn
        self._entries: dict = {}  # signature -> [_Entry] (most recently used first) | why eager
        self._warned = False
        self._limit_warned = False
        self._strict = False      # make_graphed_callables: a refusal raises
        self._retried: set = set()  # signatures whose last capture changed Python state
        self._stats = {"eager": 0, "captures": 0, "replays": 0}
        functools.update_wrapper(self, fn, updated=())

    def _key(self, args, kwargs) -> tuple:
        """(signature, the tensor arguments in walk order). The signature has grad mode, the
        default device, the arguments' signatures and, when tensor arguments share memory,
        which do (the same tensor twice, or views of one storage)."""
        from clgrad.autograd import is_grad_enabled
        tensors: list = []
        sig = _sig((args, kwargs), tensors, _lib()[0])
        alias = None
        if len(tensors) > 1:
            st = [id(a._storage) for a in tensors]
            if len(set(st)) != len(st):
                ids = list(map(id, tensors))
                alias = tuple((st.index(x), ids.index(i)) for x, i in zip(st, ids))
        return (is_grad_enabled(), id(_discovery._DEFAULT[0]), alias, sig), tensors

    def __call__(self, *args, **kwargs):
        if is_capturing():  # inside another capture (a compiled model in a compiled step)
            return self._fn(*args, **kwargs)
        try:
            key, tensors = self._key(args, kwargs)
            e = self._entries.get(key)
        except TypeError:  # an unhashable argument: no signature to replay by
            return self._eager("an argument is not hashable", args, kwargs)
        if e is None:  # the warm-up
            self._entries[key] = []
            self._stats["eager"] += 1
            return self._fn(*args, **kwargs)
        if type(e) is str:
            return self._eager(e, args, kwargs)
        for i, ent in enumerate(e):
            if ent.guards.hold():
                if i:
                    e.insert(0, e.pop(i))
                self._stats["replays"] += 1
                return ent.run(tensors)
        if len(e) >= RECOMPILE_LIMIT:
            if not self._limit_warned:
                self._limit_warned = True
                why = e[0].guards.failed()
                warnings.warn(f"compile(mode='reduce-overhead'): {self._name()} hit the "
                              f"recompile limit ({RECOMPILE_LIMIT}, torch._dynamo's "
                              f"config.recompile_limit): the guards of all its captures of "
                              f"this signature failed (last: {why}); it runs eagerly until "
                              f"one holds again", stacklevel=2)
            self._stats["eager"] += 1
            return self._fn(*args, **kwargs)
        return self._capture(key, e, args, kwargs, tensors)

    def _capture(self, key, entries, args, kwargs, tensors):
        from clgrad.autograd import is_grad_enabled
        if _ACTIVE[0] is not None:  # another thread is capturing: this call runs eagerly
            self._stats["eager"] += 1
            return self._fn(*args, **kwargs)
        no_grad = _lib()[1]
        guards = _Guards(self._fn, (args, kwargs))
        pre = guards.snapshot()
        pre_grads = [p._grad for p in guards.params]
        statics, made = [], {}
        for a in tensors:  # the same tensor twice: one static input
            s = made.get(id(a))
            if s is None:
                if a.requires_grad and is_grad_enabled():
                    s = a.clone()  # linked to ``a``: a refused call's autograd reaches it
                else:
                    with no_grad():
                        s = a.detach().clone().requires_grad_(a.requires_grad)
                made[id(a)] = s
            statics.append(s)
        if len(made) != len({id(a._storage) for a in tensors}):
            why = ("tensor arguments share memory (views of one tensor): a replay would copy "
                   "them into separate inputs")
            self._entries[key] = why
            return self._eager(why, args, kwargs)
        versions = [s._storage.version for s in statics]
        arg_grads = [(a._grad, a._grad._storage.version) if a._grad is not None else None
                     for a in tensors]
        sargs, skw = _rebuild((args, kwargs), iter(statics), _lib()[0])
        self._stats["captures"] += 1
        g = CUDAGraph()
        g._run = True
        g.capture_begin()
        try:
            out = self._fn(*sargs, **skw)
        except BaseException:
            if _ACTIVE[0] is g:
                g._stop()
            g._abort()
            _write_back(statics, tensors, versions)
            raise
        if _ACTIVE[0] is g:
            g._stop()
        back = _write_back(statics, tensors, versions)
        why = g._refused
        if why is None:
            why = guards.changed(pre)
            if why is not None and key not in self._retried:
                # the first call after a change of state may set things up once (an
                # optimizer's state of a new parameter): this call counts as a warm-up
                self._retried.add(key)
                g._abort()
                return _map(out, lambda t: _arg_of(t, statics, tensors))
        if why is None and any(
                a._grad is not None and (ag is None or a._grad is not ag[0] or
                                         a._grad._storage.version != ag[1])
                for a, ag in zip(tensors, arg_grads)):
            why = ("it accumulates a gradient into a tensor argument (a replay would write "
                   "into the first call's tensor)")
        if why is None and any(isinstance(t, _lib()[0]) and t.grad_fn is not None and
                               t.grad_fn.backward_fn is not None for t in _leaves(out)):
            why = "an output has a backward graph (replayed kernels cannot feed autograd)"
        if why is not None:
            g._abort()
            self._entries[key] = why
            self._refused(why)
            return _map(out, lambda t: _arg_of(t, statics, tensors))
        self._retried.discard(key)
        g._plan()
        g._captured = True
        guards.expect(pre)
        guards.expect_grads(pre_grads)
        ent = _Entry(guards, g, statics, back, out, tensors,
                     [(p, p._grad) for p, p0 in zip(guards.params, pre_grads)
                      if p._grad is not p0])
        entries.insert(0, ent)
        return ent.outputs(tensors)

    def __getattr__(self, name):  # a compiled Module keeps its attributes (parameters ...)
        if name.startswith("__") or name in ("_fn", "_entries", "_warned", "_limit_warned",
                                             "_strict", "_stats", "_retried"):
            raise AttributeError(name)
        return getattr(self._fn, name)

    def _name(self) -> str:
        return getattr(self._fn, "__name__", type(self._fn).__name__)

    def _refused(self, why):
        if self._strict:
            raise NotImplementedError(f"make_graphed_callables: cannot graph this callable: "
                                      f"{why}")
        self._stats["eager"] += 1
        self._warn(why, 5)

    def _warn(self, why, stacklevel=4):
        if not self._warned:
            self._warned = True
            warnings.warn(f"compile(mode='reduce-overhead'): running {self._name()} eagerly: "
                          f"{why}", stacklevel=stacklevel)

    def _eager(self, why, args, kwargs):
        if self._strict:
            raise NotImplementedError(f"make_graphed_callables: cannot graph this callable: "
                                      f"{why}")
        self._warn(why)
        self._stats["eager"] += 1
        return self._fn(*args, **kwargs)


class _Out:
    """How a call gets one output of a capture: "clone" (a fresh copy of the captured
    output), "arg" (the caller's tensor argument ``v``), "same" (``v`` itself)."""
    __slots__ = ("kind", "v")

    def __init__(self, kind, v):
        self.kind, self.v = kind, v


class _Entry:
    """One capture of a signature: its guards, graph, static inputs, the indices of the
    arguments it changes in place (``back``), its outputs and the ``.grad`` attributes it
    set."""

    def __init__(self, guards, g, statics, back, out, tensors, grads):
        self.guards, self.graph, self.statics, self.back, self.grads = (
            guards, g, statics, back, grads)
        Tensor = _lib()[0]
        index = {id(s): i for i, s in enumerate(statics)}
        inputs = {id(s._storage) for s in statics}

        def plan(t):
            if not isinstance(t, Tensor):
                return _Out("same", t)
            if id(t) in index:
                return _Out("arg", index[id(t)])
            buf = t._storage.buffer
            if getattr(buf, "int_ptr", None) in g._own or id(t._storage) in inputs:
                return _Out("clone", t.detach())  # made by the graph, or a view of an input
            return _Out("same", t)
        self.outs = _map(out, plan)

    def outputs(self, tensors):
        no_grad = _lib()[1]

        def get(o):
            if o.kind == "clone":
                return o.v.clone()
            return tensors[o.v] if o.kind == "arg" else o.v
        with no_grad():
            return _map(self.outs, get)

    def run(self, tensors):
        with _lib()[1]():
            for s, a in zip(self.statics, tensors):
                s.copy_(a)
            self.graph.replay()
            for i in self.back:
                tensors[i].copy_(self.statics[i])
        for p, gr in self.grads:
            p._grad = gr
        return self.outputs(tensors)


def _write_back(statics, tensors, versions) -> list:
    """Copy the static inputs a capture call changed in place into the caller's tensors;
    returns their indices."""
    back = [i for i, (s, v) in enumerate(zip(statics, versions)) if s._storage.version != v]
    if back:
        with _lib()[1]():
            for i in back:
                tensors[i].copy_(statics[i])
    return back


def _arg_of(t, statics, tensors):
    for s, a in zip(statics, tensors):
        if t is s:
            return a
    return t


def _sig(a, tensors, Tensor):
    """The signature of an argument (see ``compile``); appends its tensors to ``tensors``."""
    if isinstance(a, Tensor):
        tensors.append(a)
        return ("T", a._shape, a.dtype, id(a._storage.device), a._requires_grad)
    t = type(a)
    if t is tuple or t is list or (isinstance(a, tuple) and hasattr(a, "_fields")):
        return (t, tuple([_sig(x, tensors, Tensor) for x in a]))
    if t is dict:
        return (t, tuple([(k, _sig(v, tensors, Tensor)) for k, v in a.items()]))
    return ("V", t, a)


def _rebuild(a, statics, Tensor):
    """``a`` with its tensors replaced by the next ones of the iterator ``statics``."""
    if isinstance(a, Tensor):
        return next(statics)
    t = type(a)
    if t is tuple or t is list:
        return t([_rebuild(x, statics, Tensor) for x in a])
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return t(*[_rebuild(x, statics, Tensor) for x in a])
    if t is dict:
        return {k: _rebuild(v, statics, Tensor) for k, v in a.items()}
    return a


def _leaves(x):
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from _leaves(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _leaves(y)
    else:
        yield x


def _map(x, f):
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_map(y, f) for y in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_map(y, f) for y in x)
    if isinstance(x, dict):
        return {k: _map(v, f) for k, v in x.items()}
    return f(x)


# -- guards -------------------------------------------------------------------------------------
_PLAIN = frozenset((int, float, bool, str, bytes, complex, type(None)))
_LIBS = frozenset(("clgrad", "numpy", "pyopencl", "torch", "builtins", "functools", "math",
                   "operator", "typing", "collections", "abc"))
_MISSING = ("<missing>",)
_DEPTH = 6
GUARD = 0      # a guard, and a change the body makes is refused
GUARD_ONLY = 1  # a guard only (whether a parameter's .grad is None)
EFFECT = 2     # not a guard, but a change the body makes is refused (lr, schedulers)


def _plain(v) -> bool:
    t = type(v)
    return t in _PLAIN or (t is tuple and all(type(x) in _PLAIN for x in v))


def _rep(v):
    """A guard's view of a value: type and value for plain values, else its identity."""
    t = type(v)
    if t in _PLAIN:
        return t, v
    if t is tuple and all(type(x) in _PLAIN for x in v):
        return t, v, tuple(map(type, v))
    return None, id(v)


_ARRAY_BYTES = 1 << 20  # NumPy arrays up to this size are guarded by value


def _array_rep(a):
    return a.shape, a.dtype.str, a.tobytes()


def _from_lib(obj) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return mod.split(".")[0] in _LIBS


def _code_names(code, out: set):
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)


def _cell(c):
    try:
        return _rep(c.cell_contents)
    except ValueError:  # an empty cell
        return _MISSING


class _Guards:
    """The Python state a capture of ``fn`` depends on (see ``compile``): a list of
    (name, getter, kind, keys) items; ``snapshot()`` reads them all (and the fast getters),
    ``changed(pre)`` names what differs since, ``failed()`` compares the guards with the
    values they had at the capture: per call only the fast getters run (one per module
    tree, per function's globals ..., through C-level maps); the items name what failed."""

    def __init__(self, fn, args):
        self._items: list = []
        self._fast: list = []  # the getters ``failed`` runs per call (guards only)
        self._pre = self._expected = None
        self._refs: list = []  # keeps what guards compare by identity alive (ids stay unique)
        self._seen: set = set()
        self.params: list = []
        self._pids: set = set()
        self._visit(fn, getattr(fn, "__qualname__", type(fn).__name__), 0)
        Tensor = _lib()[0]
        for x in _leaves(args):
            if not isinstance(x, Tensor):
                self._visit(x, "an argument", 1)
        if self.params:
            ps = tuple(self.params)
            self._refs.extend(p._storage for p in ps)
            self._add("the requires_grad or the storage (p.data = ..., Module.to) of the "
                      "parameters and tensors reached",
                      lambda: (tuple(map(_RG, ps)), tuple(map(id, map(_STORAGE, ps)))))

    def _add(self, name, getter, kind=GUARD, keys=None, fast=True):
        """An item; ``fast``: its getter also runs per call (else a merged getter does)."""
        self._items.append((name, getter, kind, keys))
        if fast and kind != EFFECT:
            self._fast.append(getter)

    def expect_grads(self, pre_grads: list):
        """After ``expect``: guard the parameters' ``.grad`` as the capture used them: the
        very tensor where the capture kept it (its kernels accumulate into that one), else
        whether it was None (a None .grad was made by the capture; a tensor was replaced)."""
        same = [(p, g0) for p, g0 in zip(self.params, pre_grads)
                if g0 is not None and p._grad is g0]
        kept = {id(p) for p, _ in same}
        other = [(p, g0) for p, g0 in zip(self.params, pre_grads) if id(p) not in kept]
        ps_s, ps_o = tuple(p for p, _ in same), tuple(p for p, _ in other)
        nones = (None,) * len(ps_o)
        self._refs.extend(g0 for _, g0 in same)

        def get():
            return (tuple(map(id, map(_GRAD, ps_s))),
                    tuple(map(operator.is_, map(_GRAD, ps_o), nones)))
        want = (tuple(id(g0) for _, g0 in same), tuple(g0 is None for _, g0 in other))
        self._items.append(("the parameters' .grad (which tensor, or whether None)", get,
                            GUARD_ONLY, None))
        self._pre.append(want)
        self._fast.append(get)
        self._expected.append(want)

    def snapshot(self) -> tuple:
        """(every item's value, every fast getter's value) now."""
        return [it[1]() for it in self._items], [f() for f in self._fast]

    def expect(self, pre: tuple):
        """Replays need the guards as they were at ``pre``, the snapshot before the capture
        (a parameter's .grad may be None before each call and set during it)."""
        self._pre, self._expected = pre

    def hold(self) -> bool:
        """Whether every guard holds (the per-call check)."""
        try:
            return [f() for f in self._fast] == self._expected
        except Exception:  # noqa: BLE001  (a guarded attribute deleted, a dict changed size)
            return False

    def failed(self):
        """None when every guard holds, else the name of one that failed."""
        if self.hold():
            return None
        try:
            now = [it[1]() for it in self._items]
        except Exception:  # noqa: BLE001
            return "a guarded attribute or container changed shape"
        for (name, _, kind, _), a, b in zip(self._items, now, self._pre):
            if kind != EFFECT and a != b:
                return name + " changed"
        return "a guard changed"

    def changed(self, pre: list):
        """What the body changed (guarded state, LR schedulers, learning rates), as a reason
        for refusing the capture, or None."""
        post = self.snapshot()[0]
        what = []
        for (name, _, kind, keys), a, b in zip(self._items, pre[0], post):
            if kind == GUARD_ONLY or a == b:
                continue
            if keys is not None and a[0] != b[0]:
                name += " (" + ", ".join(
                    k for k, x, y in zip(keys, a[0], b[0]) if x != y or type(x) is not type(y)
                ) + ")"
            what.append(name)
        if not what:
            return None
        return ("it changes Python state that a replay would not change again: "
                + "; ".join(dict.fromkeys(what)) + " (do this outside the compiled function)")

    # -- the walk -----------------------------------------------------------------------------
    def _visit(self, obj, name, depth):
        t = type(obj)
        if t in _PLAIN or depth > _DEPTH or id(obj) in self._seen:
            return
        if isinstance(obj, type):  # a class used as a namespace (``Config.scale``)
            return None if _from_lib(obj) else self._class(obj, name, depth)
        self._seen.add(id(obj))
        self._refs.append(obj)
        if isinstance(obj, _lib()[0]):
            self._param(obj)  # requires_grad and .grad guarded as a parameter's
            return
        if isinstance(obj, (types.ModuleType, types.BuiltinFunctionType)):
            return
        if isinstance(obj, np.ndarray):  # its values reach kernels through host copies
            if obj.nbytes <= _ARRAY_BYTES and obj.dtype != object:
                self._add(f"NumPy array {name!r}", functools.partial(_array_rep, obj))
            return
        if isinstance(obj, _Replayed):
            return self._visit(obj._fn, name, depth)
        if isinstance(obj, types.FunctionType):
            return self._function(obj, depth)
        if isinstance(obj, types.MethodType):
            self._visit(obj.__self__, name, depth)
            return self._visit(obj.__func__, name, depth)
        if isinstance(obj, functools.partial):
            for x in (obj.func, *obj.args, *obj.keywords.values()):
                self._visit(x, name, depth + 1)
            return
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict) and "_modules" in d and "_parameters" in d and "training" in d:
            return self._module(obj, name, depth)
        if isinstance(d, dict) and "param_groups" in d and "state" in d:
            return self._optimizer(obj, name, depth)
        if isinstance(d, dict) and "optimizer" in d and "last_epoch" in d:
            keys = [k for k, v in d.items() if _plain(v)]
            self._add(f"LR scheduler {name!r} ({t.__name__})",
                      _attrs_getter(d, keys), EFFECT, keys)
            return self._visit(d["optimizer"], f"{name}.optimizer", depth + 1)
        if t in (list, dict, set):
            return self._container(obj, name, depth)
        if t is tuple:
            for x in obj:
                self._visit(x, name, depth + 1)
            return
        if isinstance(d, dict) and not _from_lib(t):
            self._object(obj, d, name, depth)

    def _function(self, fn, depth):
        names: set = set()
        _code_names(fn.__code__, names)
        g, q = fn.__globals__, fn.__qualname__
        # a library's function (clgrad.train's step): its closure only, not its globals
        present = () if _from_lib(fn) else tuple(n for n in sorted(names) if n in g)
        if present:
            self._fast.append(lambda: tuple(map(_rep, map(g.get, present))))
        for n in present:
            v = g[n]
            self._refs.append(v)
            self._add(f"global {n!r} read by {q}",
                      lambda g=g, n=n: _rep(g.get(n, _MISSING)), fast=False)
            if isinstance(v, types.ModuleType):
                for a in sorted(names):
                    if _plain(getattr(v, a, None)) and hasattr(v, a):
                        self._add(f"{n}.{a} read by {q}", lambda v=v, a=a: _rep(
                            getattr(v, a, _MISSING)))
            else:
                self._visit(v, n, depth + 1)
        cells = fn.__closure__ or ()
        if cells:
            self._fast.append(lambda: tuple(map(_cell, cells)))
        for n, c in zip(fn.__code__.co_freevars, cells):
            self._add(f"closure variable {n!r} of {q}", functools.partial(_cell, c), fast=False)
            try:
                v = c.cell_contents
            except ValueError:
                continue
            self._refs.append(v)
            self._visit(v, n, depth + 1)

    def _module(self, root, name, depth):
        stack, tree = [(name, root)], []
        while stack:
            path, m = stack.pop()
            if m is not root:
                if id(m) in self._seen:
                    continue
                self._seen.add(id(m))
                self._refs.append(m)
            d = m.__dict__
            P, B, M = d["_parameters"], d["_buffers"], d["_modules"]
            keys = [k for k, v in d.items() if _plain(v)]
            okeys = [k for k, v in d.items() if not k.startswith("_") and not _plain(v)]
            hooks = [v for k, v in d.items() if k.startswith("_") and isinstance(v, dict)
                     and k.endswith("hooks") and ("forward" in k or "backward" in k)]
            self._refs.extend((*P.values(), *B.values(), *M.values(), *(d[k] for k in okeys)))
            self._refs.extend(b._storage for b in B.values() if b is not None)
            self._add(f"module {path!r} ({type(m).__name__})",
                      _module_getter(d, keys, okeys, P, B, M, hooks), GUARD, keys, fast=False)
            tree.append((d, keys, okeys, P, B, M, hooks))
            for p in P.values():
                self._param(p)
            self._class(type(m), path, depth)
            for k, v in d.items():
                if not _plain(v) and not k.startswith("_"):
                    self._visit(v, f"{path}.{k}", depth + 1)
            for k, c in M.items():
                if c is not None:
                    stack.append((f"{path}.{k}", c))
        self._fast.append(_tree_getter(tree))

    def _param(self, p):
        if p is not None and id(p) not in self._pids:
            self._pids.add(id(p))
            self.params.append(p)

    def _optimizer(self, opt, name, depth):
        d = opt.__dict__
        keys = [k for k, v in d.items() if _plain(v)]
        self._refs.extend((d["state"], *d["state"].values(), *d["param_groups"]))

        igs = [operator.itemgetter(*[k for k in g if k not in _DYNAMIC], "params")
               for g in d["param_groups"]]

        def get(opt=opt):  # the hyperparameters (but lr) of each group by value and type
            pg, st = opt.param_groups, opt.state
            v = tuple(map(operator.call, igs, pg))
            return (id(pg), tuple(map(id, pg)), tuple(map(len, pg)),
                    tuple([tuple(map(id, x[-1])) for x in v]), [x[:-1] for x in v],
                    [tuple(map(type, x)) for x in v], id(st), tuple(map(id, st)),
                    tuple(map(id, st.values())))
        label = f"optimizer {name!r} ({type(opt).__name__})"
        self._add(f"{label} param_groups or state", get)
        self._add(f"{label} attributes", _attrs_getter(d, keys), GUARD, keys)
        self._add(f"{label} learning rate", lambda opt=opt: tuple(
            _rep(g.get("lr")) for g in opt.param_groups), EFFECT)
        for g in d["param_groups"]:
            for p in g["params"]:
                self._refs.append(p)
                self._param(p)

    def _container(self, c, name, depth):
        items = list(c.items()) if isinstance(c, dict) else list(c)
        self._refs.extend(items)
        if isinstance(c, dict):
            get = functools.partial(lambda c: tuple((k, _rep(v)) for k, v in c.items()), c)
        elif isinstance(c, set):
            get = functools.partial(lambda c: frozenset(map(_rep, c)), c)
        else:
            get = functools.partial(lambda c: tuple(map(_rep, c)), c)
        self._add(f"{type(c).__name__} {name!r}", get)
        for x in (c.values() if isinstance(c, dict) else c):
            self._visit(x, name, depth + 1)

    def _object(self, obj, d, name, depth):
        keys = [k for k, v in d.items() if _plain(v)]
        okeys = [k for k, v in d.items() if not _plain(v)]
        if keys:
            self._add(f"{type(obj).__name__} {name!r}", _attrs_getter(d, keys), GUARD, keys)
        if okeys:
            self._refs.extend(d[k] for k in okeys)
            ig = operator.itemgetter(*okeys, *okeys[:1])
            self._add(f"{type(obj).__name__} {name!r} (attributes that are objects)",
                      lambda: tuple(map(id, ig(d))))
        self._class(type(obj), name, depth)
        for k in okeys:
            self._visit(d[k], f"{name}.{k}", depth + 1)

    def _class(self, t, name, depth):
        """The plain class attributes (guarded) and the methods (walked) of a user class."""
        for cls in t.__mro__:
            if _from_lib(cls) or cls is object or id(cls) in self._seen:
                continue
            self._seen.add(id(cls))
            d = vars(cls)
            keys = [k for k, v in d.items() if not k.startswith("__") and _plain(v)]
            if keys:
                self._add(f"class {cls.__qualname__}", _attrs_getter(d, keys), GUARD, keys)
            for v in d.values():
                v = v.fget if isinstance(v, property) else v
                if isinstance(v, (types.FunctionType, staticmethod, classmethod)):
                    self._visit(getattr(v, "__func__", v), name, depth + 1)


_DYNAMIC = frozenset(("params", "lr"))  # param group entries not guarded (lr: read per replay)


def _attrs_getter(d, keys):
    """A getter of the values and types of ``d[k]`` for ``keys`` (KeyError once one is gone)."""
    if not keys:
        return tuple
    ig = operator.itemgetter(*keys, *keys[:1])  # at least two keys: itemgetter gives a tuple

    def get():
        v = ig(d)
        return v, tuple(map(type, v))
    return get


def _module_getter(d, keys, okeys, P, B, M, hooks):
    """A module's guard: its plain attributes (values and types), the identity of its other
    public attributes, parameters, buffers and submodules, the parameters' requires_grad,
    its hook keys (``_tree_getter`` reads these of a whole tree per call)."""
    return _tree_getter([(d, keys, okeys, P, B, M, hooks)])


def _tree_getter(tree):
    """``_module_getter`` of every module of a tree (``(d, keys, P, B, M, hooks)`` each) at
    once: the per-call guard of a model."""
    call, chain, values = operator.call, itertools.chain.from_iterable, dict.values
    none = lambda d: ()  # noqa: E731
    igs = [operator.itemgetter(*t[1], *t[1][:1]) if t[1] else none for t in tree]
    ogs = [operator.itemgetter(*t[2], *t[2][:1]) if t[2] else none for t in tree]
    ds, Ps, Bs, Ms = ([t[i] for t in tree] for i in (0, 3, 4, 5))
    hooks = [h for t in tree for h in t[6]]
    rg = (lambda p: p is not None and p._requires_grad) if any(
        p is None for P in Ps for p in P.values()) else _RG
    sto = (lambda b: b is not None and b._storage) if any(
        b is None for B in Bs for b in B.values()) else _STORAGE

    def get():
        v = tuple(map(call, igs, ds))
        return (v, tuple(map(type, chain(v))), tuple(map(id, chain(map(call, ogs, ds)))),
                tuple(map(len, Ps)), tuple(map(len, Bs)), tuple(map(len, Ms)),
                tuple(map(id, chain(map(values, Ps)))), tuple(map(id, chain(map(values, Bs)))),
                tuple(map(id, chain(map(values, Ms)))), tuple(map(rg, chain(map(values, Ps)))),
                tuple(map(id, map(sto, chain(map(values, Bs))))), tuple(map(tuple, hooks)))
    return get


_RG = operator.attrgetter("_requires_grad")
_STORAGE = operator.attrgetter("_storage")
_GRAD = operator.attrgetter("_grad")


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool=None):
    """``torch.cuda.make_graphed_callables``, for callables whose outputs are not
    differentiated afterwards (inference, or a whole training step): each callable is run
    ``num_warmup_iters`` times on its sample arguments, then captured; the returned callable
    behaves as ``compile(fn, mode="reduce-overhead")`` after its warm-up (guards, fresh
    outputs per call, in-place changes of arguments written back: see ``compile``).
    A tuple of callables gives a tuple.
    Raises:  NotImplementedError when the capture is refused (see ``compile``: an output with
             a backward graph, for which PyTorch graphs the backward pass separately, a host
             read, a Python side effect ...), at capture or at a later re-capture.
    """
    single = not isinstance(callables, tuple)
    fns = (callables,) if single else callables
    samples = (sample_args,) if single else sample_args
    out = []
    for fn, sample in zip(fns, samples):
        sample = sample if isinstance(sample, tuple) else (sample,)
        for _ in range(num_warmup_iters):
            fn(*sample)
        r = _Replayed(fn)
        r._strict = True
        r._entries[r._key(sample, {})[0]] = []
        r(*sample)
        out.append(r)
    return out[0] if single else tuple(out)
