"""Launch plans: one type for every op family's cached launches (issue 34).

A ``Plan`` is one kernel launch with everything but its buffers fixed: the kernel object,
the global and local sizes, the by-value arguments already packed (``(index, value, ...)``) and
the argument positions of the buffers (and of by-value arguments given per call, such as a
scale or a raw scalar operand). ``plan.run(dev, *buffers)`` binds the buffers and enqueues
(``Device.launch_split``: one ``_set_arg_multi``, one ``_set_arg_buf_multi``, the enqueue).

Plans are kept in the device's ``plans`` (``Device.keep_plan``) under a key made by one
function, ``key(tag, parts, params)``, from what the kernel reads: per tensor its shape,
strides, storage offset and dtype; per raw argument its type (the value is bound per call);
the op's parameters (file, kernel, defines, flags, tuning constants); and
``settings.epoch()``, the settings' change counter (clgrad/settings.py), so a changed setting
or a changed layout can never reuse a plan made for another (a key missing a dependency would
be a silently wrong answer). The device is the dict the plan lives in.
"""
from __future__ import annotations

from clgrad.settings import _EPOCH

__all__ = ["Plan", "key", "cached"]


class Plan:
    """One launch, all but its buffers fixed.

    ``kernel``: a ``cl.Kernel``; ``gsize``/``lsize``: global and local sizes (tuples; the
    global size is rounded up to the local size here; ``lsize`` None: the runtime picks);
    ``val``: the fixed by-value arguments as a flat tuple ``(index, value, ...)``;
    ``mem_at``: the argument indices of the buffers ``run`` binds, in order; ``val_at``: the
    indices of by-value arguments ``run_with`` binds per call; ``data``: anything the op keeps
    with the plan (the family's own facts, e.g. the dtype of a result)."""

    __slots__ = ("kernel", "gsize", "lsize", "val", "mem", "vals", "data")

    def __init__(self, kernel, gsize, lsize, val=(), mem_at=(), val_at=(), data=None):
        gsize = tuple(gsize)
        if lsize is not None:
            lsize = tuple(lsize)
            gsize = tuple(-(-g // lc) * lc for g, lc in zip(gsize, lsize))
        self.kernel, self.gsize, self.lsize, self.val, self.data = kernel, gsize, lsize, \
            tuple(val), data
        self.mem = _template(mem_at)
        self.vals = _template(val_at)

    def run(self, dev, *buffers):
        """Bind ``buffers`` (one per ``mem_at`` index, in order) and enqueue on ``dev``."""
        mem = self.mem[:]
        mem[1::2] = buffers
        dev.launch_split(self.kernel, self.gsize, self.lsize, tuple(mem), self.val)

    def run_with(self, dev, buffers, values):
        """``run`` with the per-call by-value arguments ``values`` (one per ``val_at`` index,
        in order: NumPy scalars or bytes of the kernel's argument sizes)."""
        mem = self.mem[:]
        mem[1::2] = buffers
        val = self.vals[:]
        val[1::2] = values
        dev.launch_split(self.kernel, self.gsize, self.lsize, tuple(mem),
                         self.val + tuple(val))

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
        try:
            k += (t._shape, t._strides, t._offset, t._storage.dtype)
        except AttributeError:
            k.append(None if t is None else type(t))
    k += params
    return tuple(k)


def cached(dev, k, make):
    """The plan kept under key ``k`` in ``dev.plans``, made by ``make()`` (and kept) on a miss.
    ``make`` may return None (a layout the family cannot plan): that is kept too."""
    plan = dev.plans.get(k, _MISS)
    if plan is _MISS:
        plan = dev.keep_plan(k, make())
    return plan


_MISS = object()
