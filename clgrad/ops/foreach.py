"""Multi-tensor (foreach) launches: one kernel launch over up to MULTI contiguous tensors
(kernels/optim.cl's *_multi kernels: the optimizers' updates, and GradScaler's unscale and
inf check), PyTorch's multi_tensor_apply in OpenCL. A launch is a Plan (ops/plan.py) per
structural key of its tensors; a step binds only the buffers and the trailing scalars.
"""
from __future__ import annotations

import numpy as np

from clgrad import capture as _capture
from clgrad.ops._util import LOCAL, defines_for
from clgrad.ops.plan import Plan, key as plan_key

MULTI = 8  # parameters per launch of the *_multi kernels (kernels/optim.cl)


def multi_chunks(items, key, size: int = MULTI):
    """``items`` grouped by ``key(item)`` (first-seen order), in lists of at most ``size``."""
    groups: dict = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    for same in groups.values():
        for i in range(0, len(same), size):
            yield same[i:i + size]


def launch_multi(name: str, slots: list, tail_of) -> list:
    """The launches of ``kernels/optim.cl :: name`` (a *_multi kernel) over the parameters of
    ``slots``, up to MULTI per launch; returns the indices of the slots they do not take
    (``multi_ok`` fails: the caller's one-launch-per-parameter path).

    ``slots``: per parameter the tuple ``(p, grad, *state)`` of the kernel's slot, tensors of
    p's shape, dtype and device; the grad is read, p and every state tensor written (their
    versions bumped). (unscale_multi's slot is (gradient, flag): the gradient written, the
    flag a 0-dim float32 tensor the kernel sets.) ``tail_of(indices, dtype)`` ->
    ``tail(commit)``: the trailing by-value arguments of the launch of ``slots[i] for i in
    indices`` (passed through clgrad.capture.dynamic; called once with commit False when a
    launch is planned). Unused slots of a launch repeat the first slot's buffers with 0
    elements.

    The launches are Plans (clgrad/ops/plan.py) kept in the device's ``plans`` under
    ``plan.key`` of every tensor of ``slots`` (what ``multi_ok``, the chunks, the element
    counts and the offsets depend on): a step binds only the buffers and the tail. Slots on
    several devices are launched per device.
    """
    dev = slots[0][0]._storage.device
    flat: list = []
    for s in slots:  # (loops, not comprehensions: no Python frame per step)
        if s[0]._storage.device is not dev:
            return _launch_multi_devices(name, slots, tail_of)
        flat += s
    k = plan_key(("optim.cl", name), flat, (len(slots[0]),))
    got = dev.plans.get(k)
    if got is None:
        got = dev.keep_plan(k, _plan_multi(dev, name, slots, tail_of))
    launches, rest = got
    for pl, idx, dt in launches:
        bufs = []
        for i in pl.data:
            bufs.append(flat[i]._storage.buffer)
        pl.run_with(dev, bufs, _capture.dynamic(tail_of(idx, dt)))
        for i in idx:
            s = slots[i]
            s[0]._storage.version += 1
            for t in s[2:]:
                t._storage.version += 1
    return rest


def _plan_multi(dev, name: str, slots: list, tail_of) -> tuple:
    """``((Plan, slot indices, dtype), ...), rest``: launch_multi's launches over ``slots``
    (chunks of MULTI ``multi_ok`` slots of one dtype) and the indices of the other slots. A
    Plan's by-value arguments fixed: the element counts and the offsets; ``data``: per buffer
    argument its index in the flattened ``slots``."""
    width = len(slots[0])
    ok, rest = [], []
    for i, s in enumerate(slots):
        (ok if multi_ok(*s) else rest).append(i)
    launches = []
    for chunk in multi_chunks(ok, lambda i: slots[i][0].dtype):
        dt = slots[chunk[0]][0].dtype
        val, mem_at, data, total = [], [], [], 0
        for k in range(MULTI):
            i = chunk[k] if k < len(chunk) else chunk[0]
            n = slots[i][0].numel() if k < len(chunk) else 0
            total += -(-n // LOCAL) * LOCAL  # whole work-groups per slot (the kernels' SLOT_PICK)
            at = k * (1 + 2 * width)
            val += (at, np.int64(n))
            for j, t in enumerate(slots[i]):
                mem_at.append(at + 1 + 2 * j)
                data.append(i * width + j)
                val += (at + 2 + 2 * j, np.int64(t._offset))
        ntail = len(tail_of(tuple(chunk), dt)(False))
        end = MULTI * (1 + 2 * width)
        pl = Plan(dev.kernel("optim.cl", name, defines_for(dt)), (total,),
                  (LOCAL,), val, mem_at, range(end, end + ntail), data=tuple(data))
        launches.append((pl, tuple(chunk), dt))
    return tuple(launches), rest


def _launch_multi_devices(name: str, slots: list, tail_of) -> list:
    """launch_multi over slots of several devices: once per device."""
    by_dev: dict = {}
    for i, s in enumerate(slots):
        by_dev.setdefault(id(s[0]._storage.device), []).append(i)
    rest = []
    for idx in by_dev.values():
        sub = launch_multi(name, [slots[i] for i in idx],
                           lambda j, dt, idx=idx: tail_of(tuple(idx[x] for x in j), dt))
        rest += [idx[x] for x in sub]
    return rest


# On CPU devices, parameters of more elements than this take their own launch (the one-tensor
# kernels): PoCL's compiler does not vectorise the *_multi kernels (AlexNet's update: 337-377
# ms against 71-77 ms a step, one thread), and for large tensors a launch costs nothing.
MULTI_CPU_MAX = 1 << 16


def multi_ok(*tensors) -> bool:
    """True when every tensor is contiguous and not empty (what *_multi kernels index), and,
    on a CPU device, of at most MULTI_CPU_MAX elements."""
    return all(t.numel() > 0 and t.is_contiguous() and (
        t.numel() <= MULTI_CPU_MAX or t._storage.device.kind != "cpu") for t in tensors)
