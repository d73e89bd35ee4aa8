"""Device time of training batch norm (forward + backward) on the GPU per split setting:
clgrad/ops/norm.py's BN_SPLIT_FILL (work-groups per channel: ceil(FILL x compute units / C))
and BN_SPLIT_WG (their size; 0: 1024), at the zoo's batch-128 shapes of at least 2^16 elements
per channel (the split ones), from OpenCL profiling events (as bench/gpu/bandwidth.py).

    CLGRAD_DEVICE=gpu python bench/gpu/bn_split.py

Prints per shape the device time (best of 5) of each setting and GB/s at 7 tensor passes
(forward: x twice, y; backward: gy, x twice, gx), and checks each setting's output and
gradient against the first setting's (float32 sums in other orders: 1e-4 of the largest).
"""
import sys
from pathlib import Path

import numpy as np

import clgrad
import clgrad.nn.functional as F
from clgrad.ops import norm

sys.path.insert(0, str(Path(__file__).resolve().parent))
import events  # noqa: E402  (sets CLGRAD_ENQUEUE=pyopencl: the profiling queue's events)

SETTINGS = [(2, 0), (4, 0), (4, 256), (8, 256), (16, 256), (8, 512)]
SHAPES = [(128, 24, 32, 32), (128, 48, 32, 32), (128, 64, 32, 32), (128, 96, 32, 32),
          (128, 128, 32, 32), (128, 256, 32, 32)]


def main():
    dev = clgrad.default_device()
    rec = events.Recorder(dev)
    rng = np.random.default_rng(0)
    print(f"{dev}: batch norm fwd+bwd device ms (GB/s at 7 passes) per (FILL, WG)")
    print("| shape | " + " | ".join(f"{f},{w or 1024}" for f, w in SETTINGS) + " |")
    print("|---|" + "---:|" * len(SETTINGS))
    bad = 0
    for shape in SHAPES:
        c = shape[1]
        x = clgrad.from_numpy(rng.standard_normal(shape, dtype=np.float32)).requires_grad_()
        g = clgrad.from_numpy(rng.standard_normal(shape, dtype=np.float32))
        w = clgrad.ones(c).requires_grad_()
        b = clgrad.zeros(c).requires_grad_()
        rm, rv = clgrad.zeros(c), clgrad.ones(c)
        cells, ref = [], None
        for fill, wg in SETTINGS:
            norm.BN_SPLIT_FILL, norm.BN_SPLIT_WG = fill, wg

            def step():
                x.grad = w.grad = b.grad = None
                y = F.batch_norm(x, rm, rv, w, b, training=True)
                y.backward(g)
                return y
            y = step()
            got = (y.detach().numpy(), x.grad.numpy(), w.grad.numpy())
            if ref is None:
                ref = got
            elif not all(np.allclose(a, r, rtol=1e-4, atol=1e-4 * np.abs(r).max())
                         for a, r in zip(got, ref)):  # float32 sums in other orders
                bad += 1
            best = float("inf")
            for _ in range(5):
                clgrad.synchronize()
                rec.clear()
                step()
                clgrad.synchronize()
                best = min(best, rec.ms())
            gbs = 7 * 4 * x.numel() / best / 1e6
            cells.append(f"{best:.3f} ({gbs:.0f})")
        print(f"| {shape} | " + " | ".join(cells) + " |")
    rec.stop()
    print(f"settings disagreeing with the first: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
