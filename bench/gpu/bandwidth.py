"""Device-time bandwidth of the memory-bound kernels (issue 35's target: batch norm, pooling and
elementwise kernels at >= 80 % of the measured copy bandwidth), from OpenCL profiling events.

    CLGRAD_DEVICE=gpu python bench/gpu/bandwidth.py

The device's queue is replaced by one with CL_QUEUE_PROFILING_ENABLE and the runtime's enqueue
is wrapped to keep each launch's event (as bench/gpu/kernel_profile.py): an op's device time is
the sum of its kernels' end - start, the best of 5 calls (host time, launches and gaps between
kernels are not in it). Bytes: what the op must read and write at least (a + b: 3 tensors;
batch norm training forward: x twice (statistics, then normalise) and y once; backward: gy and
x twice, gx once; max pooling: its int64 indices too). Reference: the driver's buffer copy
(clEnqueueCopyBuffer) of 256 MiB and clgrad's own copy kernel (``clone``), both counted as read
+ write.
"""
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl

import clgrad
import clgrad.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import events  # noqa: E402  (sets CLGRAD_ENQUEUE=pyopencl: the profiling queue's events)


def main():
    dev = clgrad.default_device()
    rec = events.Recorder(dev)

    def device_ms(fn, reps=5):
        best = float("inf")
        fn()
        clgrad.synchronize()
        for _ in range(reps):
            rec.clear()
            fn()
            clgrad.synchronize()
            best = min(best, rec.ms())
        return best

    rng = np.random.default_rng(0)
    n = 1 << 26  # 64 Mi floats, 256 MiB: far beyond the L2
    a = clgrad.from_numpy(rng.standard_normal(n, dtype=np.float32))
    b = clgrad.from_numpy(rng.standard_normal(n, dtype=np.float32))
    nb = 4 * n
    src = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, nb)
    dst = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, nb)
    ev = cl.enqueue_copy(dev.queue, dst, src)
    ev.wait()
    best = float("inf")
    for _ in range(5):
        ev = cl.enqueue_copy(dev.queue, dst, src)
        ev.wait()
        best = min(best, (ev.profile.end - ev.profile.start) * 1e-6)
    ref = 2 * nb / best / 1e6
    rows = [("driver copy (clEnqueueCopyBuffer)", best, 2 * nb)]
    x4 = clgrad.from_numpy(rng.standard_normal((128, 128, 32, 32), dtype=np.float32))
    g4 = clgrad.from_numpy(rng.standard_normal((128, 128, 32, 32), dtype=np.float32))
    e4 = 4 * x4.numel()
    w, bb = clgrad.ones(128), clgrad.zeros(128)
    rm, rv = clgrad.zeros(128), clgrad.ones(128)
    xp = clgrad.from_numpy(rng.standard_normal((128, 64, 64, 64), dtype=np.float32))
    ep = 4 * xp.numel()
    xr = x4.detach().requires_grad_()

    def bn_fwd():
        return F.batch_norm(x4, rm, rv, w, bb, training=True)

    def bn_fwd_bwd():
        y = F.batch_norm(xr, rm, rv, w, bb, training=True)
        y.backward(g4)
        xr.grad = None

    def pool_bwd():
        xq = xp.detach().requires_grad_()
        F.max_pool2d(xq, 2).backward(gp)
    gp = clgrad.from_numpy(rng.standard_normal((128, 64, 32, 32), dtype=np.float32))
    # DenseNet's concatenation (4 inputs along the channels) and a strided copy (NHWC view
    # made contiguous): the kernels that index through shape divisions (common.h's off1)
    cats = [clgrad.from_numpy(rng.standard_normal((128, 32, 32, 32), dtype=np.float32))
            for _ in range(4)]
    ec = 4 * sum(t.numel() for t in cats)
    xn = x4.permute(0, 2, 3, 1)
    cases = [
        ("clone (copy kernel)", lambda: a.clone(), 2 * nb),
        ("a + b", lambda: a + b, 3 * nb),
        ("a * 2", lambda: a * 2, 2 * nb),
        ("relu", lambda: F.relu(a), 2 * nb),
        ("sum", lambda: a.sum(), nb),
        ("batch_norm fwd (128,128,32,32)", bn_fwd, 3 * e4),
        ("batch_norm fwd+bwd (128,128,32,32)", bn_fwd_bwd, 3 * e4 + 4 * e4),
        # max: x read, the output and its int64 indices (PyTorch's too) written
        ("max_pool2d 2x2 fwd (128,64,64,64)", lambda: F.max_pool2d(xp, 2), ep + 3 * ep // 4),
        ("avg_pool2d 2x2 fwd (128,64,64,64)", lambda: F.avg_pool2d(xp, 2), ep + ep // 4),
        # backward: gy and the indices read, gx written
        ("max_pool2d 2x2 fwd+bwd", pool_bwd, (ep + 3 * ep // 4) + (3 * ep // 4 + ep)),
        ("cat dim 1 of 4 x (128,32,32,32)", lambda: clgrad.cat(cats, 1), 2 * ec),
        ("permute(0,2,3,1).contiguous() (128,128,32,32)", lambda: xn.contiguous(), 2 * e4),
    ]
    for name, fn, nbytes in cases:
        rows.append((name, device_ms(fn), nbytes))
    rec.stop()
    print(f"{dev}: bandwidth from device time (profiling events); 100 % = driver copy "
          f"{ref:.0f} GB/s")
    print("| op | device ms | GB/s | % of copy |\n|---|---:|---:|---:|")
    for name, ms, nbytes in rows:
        gbs = nbytes / ms / 1e6
        print(f"| {name} | {ms:.3f} | {gbs:.0f} | {gbs / ref:.0%} |")


if __name__ == "__main__":
    sys.exit(main())
