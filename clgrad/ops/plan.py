"""Launch plans: one type for every op family's cached launches (issue 34).

A ``Plan`` is one kernel launch with everything but its buffers fixed: the kernel object,
the global and local sizes, the by-value arguments already packed (``(index, value, ...)``) and
the argument positions of the buffers (and of by-value arguments given per call, such as a
scale or a raw scalar operand). A plan makes a kernel object of its own and sets the fixed
arguments there once; ``plan.run(dev, *buffers)`` binds the buffers and enqueues
(``Device.launch_split``: one ``_set_arg_multi``, the enqueue; ``run_with`` also one
``_set_arg_buf_multi`` of its per-call values).

Plans are kept in the device's ``plans`` (``Device.keep_plan``) under a key made by one
function, ``key(tag, parts, params)``, from what the kernel reads: per tensor its shape,
strides, storage offset and dtype; per raw argument its type (the value is bound per call);
the op's parameters (file, kernel, defines, flags, tuning constants); and
``settings.epoch()``, the settings' change counter (clgrad/settings.py), so a changed setting
or a changed layout can never reuse a plan made for another (a key missing a dependency would
be a silently wrong answer). The device is the dict the plan lives in.
"""
from __future__ import annotations

import threading

import pyopencl as cl

from clgrad.runtime.device import _LOCK, Device, arg_kind
from clgrad.settings import _EPOCH

__all__ = ["Plan", "key", "cached", "record_launches", "replay", "Recorded", "run_recorded"]


class Plan:
    """One launch, all but its buffers fixed.

    ``kernel``: a ``cl.Kernel`` (the plan makes a kernel object of its own from it and sets
    the fixed arguments there once: a call binds only its buffers and per-call values; None:
    a plan that launches nothing itself, its ``data`` says what to do); ``gsize``/``lsize``:
    global and local sizes (tuples; the global size is rounded up to the local size here;
    ``lsize`` None: the runtime picks); ``val``: the fixed by-value arguments as a flat tuple
    ``(index, value, ...)``; ``mem_at``: the argument indices of the buffers ``run`` binds, in
    order; ``val_at``: the indices of by-value arguments ``run_with`` binds per call;
    ``other``: ``(index, value, ...)`` of arguments set with ``Kernel.set_arg`` (local
    memory); ``data``: anything the op keeps with the plan (the family's own facts)."""

    __slots__ = ("kernel", "gsize", "lsize", "val", "mem", "vals", "other", "data")

    def __init__(self, kernel, gsize, lsize, val=(), mem_at=(), val_at=(), data=None,
                 other=()):
        gsize = tuple(gsize)
        if lsize is not None:
            lsize = tuple(lsize)
            gsize = tuple(-(-g // lc) * lc for g, lc in zip(gsize, lsize))
        val, other = tuple(val), tuple(other)
        if kernel is not None:  # a kernel object of its own, its fixed arguments set once
            with _LOCK:  # (the devices' lock: driver calls never interleave, see Device)
                kernel = cl.Kernel(kernel.program, kernel.function_name)
                if val:
                    kernel._set_arg_buf_multi(val)
                for j in range(0, len(other), 2):
                    kernel.set_arg(other[j], other[j + 1])
        self.kernel, self.gsize, self.lsize, self.val, self.data = kernel, gsize, lsize, val, \
            data
        self.mem = _template(mem_at)
        self.vals = _template(val_at)
        self.other = other

    def run(self, dev, *buffers):
        """Bind ``buffers`` (one per ``mem_at`` index, in order) and enqueue on ``dev``: the
        plan's kernel object holds its fixed arguments already (a capture gets them all:
        ``Device.launch_split``'s ``held``, which reads the capture hook once)."""
        mem = self.mem[:]
        mem[1::2] = buffers
        dev.launch_split(self.kernel, self.gsize, self.lsize, tuple(mem), (), (), self)

    def run_with(self, dev, buffers, values):
        """``run`` with the per-call by-value arguments ``values`` (one per ``val_at`` index,
        in order: NumPy scalars or bytes of the kernel's argument sizes)."""
        mem = self.mem[:]
        mem[1::2] = buffers
        val = self.vals[:]
        val[1::2] = values
        dev.launch_split(self.kernel, self.gsize, self.lsize, tuple(mem), tuple(val), (), self)

    def __repr__(self):
        return (f"Plan({getattr(self.kernel, 'function_name', self.kernel)!r}, "
                f"global={self.gsize}, local={self.lsize}, buffers at {self.mem[0::2]})")


def _template(at) -> list:
    """``[at[0], None, at[1], None, ...]``: index/argument pairs with the arguments empty."""
    t = [None] * (2 * len(at))
    t[0::2] = at
    return t


def key(tag, parts=(), params=()) -> tuple:
    """The structural key of a plan: ``(tag, settings epoch, *layouts, *params)``, where each
    of ``parts`` (the kernel's operands) gives ``(shape, strides, offset, dtype)`` when it is a
    tensor, ``None`` for None, and its type otherwise (a raw argument: bound per call).
    ``tag``: the family's word (its kernel file, or a name); ``params``: whatever else the
    launch depends on, hashable."""
    k = [tag, _EPOCH[0]]
    for t in parts:
        if type(t) is not _TENSOR:  # (a raw type seen before: no exception raised)
            raw = _RAW.get(type(t), _MISS)
            if raw is not _MISS:
                k.append(raw)
                continue
        try:
            k += (t._shape, t._strides, t._offset, t._storage.dtype)
        except AttributeError:
            k.append(_raw(type(t)))
    k += params
    return tuple(k)


def _raw(cls):
    """The key part of a raw argument of type ``cls`` (its type; None for None), kept in
    ``_RAW`` when no instance of ``cls`` can have a ``_shape``: a static (C) type, as the
    built-in numbers, bytes and NumPy's scalars and arrays, with no ``__dict__`` and no such
    attribute (a class written in Python may make one per instance: never kept). The next
    one costs a dict lookup, not a raised AttributeError (~0.5 us)."""
    part = None if cls is type(None) else cls
    if not cls.__flags__ & _HEAPTYPE and cls.__dictoffset__ == 0 and not hasattr(cls, "_shape"):
        _RAW[cls] = part
    return part


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time (class statements ...)


def cached(dev, k, make):
    """The plan kept under key ``k`` in ``dev.plans``, made by ``make()`` (and kept) on a miss.
    ``make`` may return None (a layout the family cannot plan): that is kept too."""
    plan = dev.plans.get(k, _MISS)
    if plan is _MISS:
        plan = dev.keep_plan(k, make())
    return plan


_MISS = object()
_RAW: dict = {}  # type -> its key part, for types of raw arguments (see _raw)
_TENSOR = None  # clgrad.Tensor, bound from above (ops/_util.py): key's common case, first


class _Recorder:
    """A device's capture hook (runtime/device.py's ``_capture``) while record_launches runs:
    it keeps the launches of its thread and lets every command run; a copy or fill, a launch
    from another thread, or an allocation (unless ``scratch``), spoils the recording. With
    ``scratch`` its thread's allocations are made here and kept (alive while recording, so no
    id is reused) with their sizes. Another thread's commands go on to the class's hook,
    ``Device._capture`` (a graph that thread may be capturing: this instance attribute hides
    it from the device's methods meanwhile)."""

    def __init__(self):
        self.thread = threading.get_ident()
        self.launches, self.clean = [], True
        self.scratch = None  # with scratch: [(buffer, nbytes)] of the run's allocations
        self.inner = False  # while _alloc itself allocates through the device

    def _launch(self, dev, kernel, gsize, lsize, args):
        if threading.get_ident() == self.thread:
            self.launches.append((kernel, gsize, lsize, args))
            return False
        self.clean = False
        outer = Device._capture
        return outer is not None and outer._launch(dev, kernel, gsize, lsize, args)

    def _other(self, what: str, dev, args, declined):
        """An allocation, copy or fill (``what``: the hook's method): it spoils the recording;
        another thread's goes on to ``Device._capture``; ``declined`` lets the device do it."""
        self.clean = False
        outer = Device._capture
        if outer is None or threading.get_ident() == self.thread:
            return declined
        return getattr(outer, what)(dev, *args)

    def _alloc(self, dev, nbytes):
        if self.scratch is None or threading.get_ident() != self.thread:
            return self._other("_alloc", dev, (nbytes,), None)
        if self.inner:
            return None  # the allocation below: the device's own
        self.inner = True
        try:
            buf = dev.alloc(nbytes)
        finally:
            self.inner = False
        self.scratch.append((buf, nbytes))
        return buf

    def _copy(self, dev, *args):
        return self._other("_copy", dev, args, False)

    def _fill(self, dev, *args):
        return self._other("_fill", dev, args, False)


class Recorded(list):
    """What record_launches gives: a list of ``(plan, roles)``, and ``scratch``: the sizes in
    bytes of the buffers the recorded run allocated for itself (workspaces), in order; role
    ``len(buffers) + j`` is the j-th of them, allocated afresh by each ``replay``."""

    __slots__ = ("scratch",)


def record_launches(dev, run, buffers, scratch=False):
    """Run ``run()`` (an op's launches on ``dev``) and return them as Plans: a ``Recorded``
    list of ``(plan, roles)``, where ``roles`` gives, per buffer argument of the plan, its
    index in ``buffers`` (the operands' and results' buffers; None entries are skipped), so
    that the next call binds ``plan.run(dev, *[its buffers[r] for r in roles])`` (``replay``
    does it). With ``scratch``, buffers that ``run`` allocates itself (workspaces that die
    with it) are allowed: roles past ``buffers`` name them, and ``replay`` allocates them
    again per call (their sizes in ``.scratch``). None when the launches cannot be replayed
    so: ``run`` allocated (without ``scratch``, or a buffer that outlives it), copied or
    filled (a bias fill), another
    thread launched meanwhile, a buffer argument is none of ``buffers`` or of the scratch, or
    two of ``buffers`` are one buffer, or a capture or another recording on ``dev`` is
    running (the other thread's launches then spoil it). ``run`` runs in any case."""
    rec = _Recorder()
    if scratch:
        rec.scratch = []
    with _LOCK:  # (one step: two threads' first calls must not both hook the device)
        busy = Device._capture is not None or "_capture" in dev.__dict__  # capturing, forked
        if not busy:                                                       # or recording
            dev._capture = rec
    if busy:
        run()
        return None
    held = dev.allocated
    try:
        run()
    finally:
        del dev._capture
    if rec.scratch and dev.allocated != held:
        return None  # a buffer it allocated outlives it (a result): no scratch
    ids = {}
    for i, b in enumerate(buffers):
        if b is not None:
            if id(b) in ids:
                return None
            ids[id(b)] = i
    if not rec.clean:
        return None
    for j, (b, _) in enumerate(rec.scratch or ()):  # (held by rec: ids not reused)
        ids[id(b)] = len(buffers) + j
    plans = Recorded()
    plans.scratch = tuple(n for _, n in rec.scratch or ())
    for kernel, gsize, lsize, args in rec.launches:
        val, other, mem_at, roles = [], [], [], []
        for i, a in enumerate(args):
            kind = arg_kind(a)
            if kind == 0:
                role = ids.get(id(a))
                if role is None:
                    return None
                mem_at.append(i)
                roles.append(role)
            else:
                (val if kind == 1 else other).extend((i, a))
        plans.append((Plan(kernel, gsize, lsize, val, mem_at, data=tuple(roles),
                           other=other), tuple(roles)))
    return plans


def replay(dev, plans: Recorded, buffers: tuple):
    """Run the launches of ``plans`` (from record_launches) on ``buffers`` (the same roles as
    when recorded), their scratch buffers allocated for this call and given back after (the
    in-order queue runs the launches before any later use of the memory)."""
    scratch = plans.scratch
    if scratch:
        buffers += tuple(map(dev.alloc, scratch))
    get = buffers.__getitem__
    for plan, roles in plans:
        plan.run(dev, *map(get, roles))
    if scratch:
        for n in scratch:
            dev.free(n)


def run_recorded(dev, k, run, buffers: tuple):
    """Run an op's launches ``run()`` on ``dev`` over ``buffers`` (as record_launches) by
    replaying those kept under key ``k``: recorded and kept on the first call (False kept
    where they cannot be replayed: ``run()`` each time then), run as they are while a graph
    is being captured (not recorded)."""
    plans = dev.plans.get(k)
    if plans:
        replay(dev, plans, buffers)
    elif plans is None and dev._capture is None:
        dev.keep_plan(k, record_launches(dev, run, buffers) or False)
    else:
        run()
