"""Host time of the parts of one eager kernel launch, µs per call (issue 34).

    CLGRAD_DEVICE=gpu python3 bench/gpu/launch_parts.py [--batch 200] [--rounds 40]

On the selected device (the default one; ``CLGRAD_TEST_AS_GPU=<platform substring>`` makes a
device pose as a GPU, as tests/conftest.py, for a run on a machine without one) it takes the
launch of ``c = a + b`` (1000 float32, the elementwise kernel's planned launch) and times
each part of issuing it again, alone: pyopencl's enqueue (a pyopencl Event made per launch,
and released), the ctypes ``clEnqueueNDRangeKernel`` with a NULL event (clgrad/runtime/
native.py: argument tuple prepared once; and with the size arrays made per call), setting the
buffer and by-value arguments (``_set_arg_multi`` / ``_set_arg_buf_multi``), the device's
lock, ``Device.launch_split`` and ``Device.launch`` (the eager paths), an allocation from the
pool (``Device.alloc`` + ``free``, the buffer dropped), a result Tensor (``Tensor._empty`` and
its release), and the whole op ``a + b``. Each part runs ``--batch`` calls between two clock
reads, the device synchronised between batches (untimed), the parts in turn within each
round; the table gives the median and the minimum over ``--rounds`` rounds. Each launching
part first runs once alone and its output is checked against float64 NumPy (a part that
launched nothing, or launched wrongly, fails the run).
Writes nothing but stdout (and ``$OUT/launch_parts.txt`` when OUT is set).
"""
import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
import numpy as np  # noqa: E402


def _pose_as_gpu():
    """CLGRAD_TEST_AS_GPU as tests/conftest.py reads it (before the first device query)."""
    which = os.environ.get("CLGRAD_TEST_AS_GPU", "").lower()
    if not which:
        return
    from clgrad.runtime import device as rt_device
    from clgrad.runtime import discovery as rt_discovery

    def as_gpu(d, kind=rt_device._kind_of):
        label = f"{d.platform.name} {d.platform.version}".lower()
        return "gpu" if which == "*" or which in label else kind(d)
    rt_device._kind_of = rt_discovery._kind_of = as_gpu


class _Keep:
    """A device capture hook that keeps the launches it sees and lets them run."""

    def __init__(self):
        self.launches = []

    def _launch(self, dev, kernel, gsize, lsize, args):
        self.launches.append((kernel, tuple(gsize), None if lsize is None else tuple(lsize),
                              args))
        return False

    def _alloc(self, dev, nbytes):
        return None

    def _copy(self, dev, *args):
        return False

    def _fill(self, dev, *args):
        return False


def timed(parts, batch, rounds, sync):
    """{name: [µs per call of each round]}: ``parts`` ({name: fn}, ``fn(n)`` makes n calls)
    timed in turn within every round (interleaved: a machine's load that drifts during the
    run weighs on every part alike), ``batch`` calls between two clock reads, the device
    synchronised between them."""
    per = {name: [] for name in parts}
    for fn in parts.values():
        fn(batch)
        sync()
    for _ in range(rounds):
        for name, fn in parts.items():
            t = time.perf_counter()
            fn(batch)
            per[name].append((time.perf_counter() - t) / batch * 1e6)
            sync()
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    _pose_as_gpu()
    import pyopencl as cl

    import clgrad
    from clgrad.runtime import device as rt_device
    from clgrad.runtime import native
    from clgrad.tensor import Tensor

    dev = clgrad.default_device()
    rng = np.random.default_rng(0)
    an = rng.standard_normal(1000, dtype=np.float32)
    bn = rng.standard_normal(1000, dtype=np.float32)
    a, b = clgrad.from_numpy(an), clgrad.from_numpy(bn)
    want = (an.astype(np.float64) + bn.astype(np.float64)).astype(np.float32)
    for _ in range(3):
        a + b  # noqa: B018  (builds the kernel, makes the plan)
    keep = _Keep()
    dev._capture = keep
    try:
        c = a + b
    finally:
        del dev._capture
    if len(keep.launches) != 1:
        raise SystemExit(f"a + b made {len(keep.launches)} launches, expected 1")
    kernel, gsize, lsize, kargs = keep.launches[0]
    kinds = [rt_device.arg_kind(x) for x in kargs]
    mem = tuple(v for i, x in enumerate(kargs) if kinds[i] == 0 for v in (i, x))
    val = tuple(v for i, x in enumerate(kargs) if kinds[i] == 1 for v in (i, x))
    if any(k == 2 for k in kinds):
        raise SystemExit("a + b's launch has arguments of a third kind")
    kernel.set_args(*kargs)  # (the kept kernel object: every argument set)
    q = dev.queue
    sync = dev.synchronize
    enqueue = rt_device._enqueue
    g, lo = list(gsize), lsize

    def check(what):
        sync()
        got = c.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=what)
        c.zero_()
        sync()

    parts, launching = {}, set()

    def row(name, fn, checks=True):
        parts[name] = fn
        if checks:
            launching.add(name)

    def pyopencl_enqueue(n):
        for _ in range(n):
            enqueue(q, kernel, g, lo, None, None, False, False)

    events = []

    def pyopencl_enqueue_kept(n):
        for _ in range(n):
            events.append(enqueue(q, kernel, g, lo, None, None, False, False))

    def release_events(n):
        del events[:n]

    enq = native.enqueue_fn()
    cargs = native.kernel_args(q, kernel, gsize, lsize) if enq is not None else None

    def ctypes_null_event(n):
        for _ in range(n):
            if enq(*cargs):
                raise RuntimeError("clEnqueueNDRangeKernel failed")

    qp, kp = ctypes.c_void_p(q.int_ptr), ctypes.c_void_p(kernel.int_ptr)
    size_t = ctypes.c_size_t

    def ctypes_sizes_per_call(n):
        for _ in range(n):
            gs = (size_t * len(g))(*g)
            ls = None if lo is None else (size_t * len(lo))(*lo)
            if enq(qp, kp, ctypes.c_uint(len(g)), None, gs, ls, ctypes.c_uint(0), None, None):
                raise RuntimeError("clEnqueueNDRangeKernel failed")

    def set_mem(n):
        for _ in range(n):
            kernel._set_arg_multi(mem)

    def set_val(n):
        for _ in range(n):
            kernel._set_arg_buf_multi(val)

    lock = dev._lock

    def take_lock(n):
        for _ in range(n):
            with lock:
                pass

    # The device's eager enqueue (CLGRAD_ENQUEUE, Device._native_enqueue) as each way sets it,
    # put in place per part below (no settings change while timing: plans stay cached).
    ways = {}
    for way in ("pyopencl", "ctypes"):
        os.environ["CLGRAD_ENQUEUE"] = way
        with dev._lock:
            dev._native_enqueue()
        ways[way] = dev._native
    os.environ.pop("CLGRAD_ENQUEUE")
    with dev._lock:
        dev._native_enqueue()
    for _ in range(3):
        a + b  # noqa: B018  (its plan again, for the settings' new epoch)

    def through(way, fn):
        def run(n):
            saved, dev._native = dev._native, ways[way]
            try:
                fn(n)
            finally:
                dev._native = saved
        return run

    def launch_split(n):
        for _ in range(n):
            dev.launch_split(kernel, gsize, lsize, mem, val)

    def launch(n):
        for _ in range(n):
            dev.launch(kernel, g, lo, *kargs)

    def alloc_free(n):
        for _ in range(n):
            dev.alloc(4000)
            dev.free(4000)

    f32 = clgrad.float32

    def result_tensor(n):
        for _ in range(n):
            Tensor._empty((1000,), f32, dev)

    def whole_op(n):
        for _ in range(n):
            a + b  # noqa: B018

    row("pyopencl enqueue (Event made and released)", pyopencl_enqueue)
    row("pyopencl enqueue, Event kept", pyopencl_enqueue_kept)
    row("  release of a kept Event", release_events, checks=False)
    if enq is not None:
        row("ctypes clEnqueueNDRangeKernel, NULL event, args cached", ctypes_null_event)
        row("ctypes clEnqueueNDRangeKernel, NULL event, sizes per call", ctypes_sizes_per_call)
    row("_set_arg_multi (buffers)", set_mem, checks=False)
    row("_set_arg_buf_multi (by-value)", set_val, checks=False)
    row("the device lock (with _LOCK)", take_lock, checks=False)
    native_ok = ways["ctypes"] is not None
    for way in ("pyopencl", "ctypes") if native_ok else ("pyopencl",):
        row(f"Device.launch_split (planned launches), {way}", through(way, launch_split))
        row(f"Device.launch (generic), {way}", through(way, launch))
    row("Device.alloc(4000) + free, buffer dropped", alloc_free, checks=False)
    row("result Tensor (Tensor._empty + release)", result_tensor, checks=False)
    for way in ("pyopencl", "ctypes") if native_ok else ("pyopencl",):
        row(f"a + b (the whole op, result dropped), {way}", through(way, whole_op),
            checks=False)
    for name in launching:  # each launching part alone: its launches write c
        c.zero_()
        sync()
        parts[name](1)
        check(name)
    per = timed(parts, args.batch, args.rounds, sync)
    rows = [(name, statistics.median(ts), min(ts)) for name, ts in per.items()]
    for way in ("pyopencl", "ctypes") if native_ok else ("pyopencl",):
        got = []
        through(way, lambda n: got.append(a + b))(1)
        sync()
        np.testing.assert_allclose(got[0].numpy(), want, rtol=1e-6, atol=0,
                                   err_msg=f"a + b, {way}")

    lines = [f"launch parts on {dev.name!r} [{dev.platform}] (kind {dev.kind}), "
             f"pyopencl {cl.VERSION_TEXT}, Python {sys.version.split()[0]}, "
             f"{args.rounds} rounds of {args.batch} calls"
             + ("" if native_ok else "; no ICD loader for ctypes: pyopencl rows only"),
             f"{'part':62} {'median µs':>10} {'min µs':>8}"]
    lines += [f"{name:62} {med:10.2f} {best:8.2f}" for name, med, best in rows]
    lines.append("checks against float64 NumPy: passed")
    text = "\n".join(lines)
    print(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"]).mkdir(parents=True, exist_ok=True)
        (Path(os.environ["OUT"]) / "launch_parts.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
