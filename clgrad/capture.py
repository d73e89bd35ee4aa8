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

``compile(fn, mode="reduce-overhead")`` (clgrad/_compile.py, above the ops: its guards and
replays hold Tensors) captures differently: its capture runs each command
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
import sys
import threading
import time
import warnings

import numpy as np
import pyopencl as cl
import pyopencl.tools

from clgrad.runtime import device as runtime

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "CaptureError", "dynamic", "paused",
           "is_capturing", "is_current_stream_capturing", "replay_backends", "REPLAY_BACKENDS"]

REPLAY_BACKENDS = ("pyopencl", "ctypes", "command_buffer")
# captures compile keeps per signature (torch._dynamo.config.recompile_limit); read at each call
# by clgrad/_compile.py, which also binds ``compile`` and ``make_graphed_callables`` here
RECOMPILE_LIMIT = 8
# signatures compile keeps per compiled callable (torch._dynamo.config.cache_size_limit)
SIGNATURE_LIMIT = 8

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
