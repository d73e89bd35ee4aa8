"""The replay backends of captured steps (see clgrad/capture/__init__.py): how a graph's
recorded commands are enqueued (``REPLAY_BACKENDS``: pyopencl's enqueue, ctypes'
clEnqueueNDRangeKernel with prepared arguments, ``cl_khr_command_buffer``), ``Replay`` (the
replay half of ``CUDAGraph``: the replay sequence per backend made at capture end, the "auto"
trial of the ways that work, the enqueue of a replay) and ``replay_backends`` (which ways work
on a device, checked once per device).
"""
from __future__ import annotations

import functools
import time
import warnings

import pyopencl as cl

from clgrad.runtime import device as runtime

__all__ = ["Replay", "replay_backends", "REPLAY_BACKENDS"]

REPLAY_BACKENDS = ("pyopencl", "ctypes", "command_buffer")


class Replay:
    """The replay half of ``CUDAGraph`` (clgrad/capture/record.py), over the commands its
    capture recorded (``_cmds``) on its device (``_dev``)."""

    def _plan(self, backend: str | None = None):
        """Turn the recorded commands into the replay sequence for ``backend`` (default:
        CLGRAD_REPLAY, else "auto": the first replays try each way that works on the device,
        see clgrad.capture's docstring)."""
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

    def _replay(self, dev):
        """Enqueue the recorded commands on ``dev`` (``CUDAGraph.replay``, after its checks)."""
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
    """Which ways of replaying work on ``dev`` (a clgrad Device; default: the default device),
    checked once per device and cached (graphs in "auto" mode try the working ways on
    themselves, see clgrad.capture's docstring): {"best": name, "us_per_kernel": {name: µs},
    "correct": {name: bool}, "command_buffer": (available, reason)}. Each way enqueues
    ``kernels`` launches of a tiny kernel (x += 1 on 16 floats), ``repeats`` times, the ways
    interleaved; the host time of the enqueues (median) per kernel is ``us_per_kernel``. A way
    counts only if two runs of it alone give the right sum and raise nothing. "best" is the
    fastest correct way, if it is at least 10% faster than "pyopencl" (else, and when nothing
    else works, "pyopencl"). Costs a few ms, once per device and process."""
    import numpy as np

    from clgrad.runtime import native
    if dev is None:
        from clgrad.runtime import default_device
        dev = default_device()
    got = _BACKENDS.get(id(dev))
    if got is not None and got["device"] is dev:
        return got
    q = dev.queue
    from clgrad._probe import settle_cache_lock
    settle_cache_lock()  # a dead process's pyopencl cache lock: Device._build says why
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
