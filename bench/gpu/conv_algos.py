"""Time every conv2d algorithm on the GPU benchmark shapes (fwd, fwd+bwd, ms), to choose 'auto'.

    CLGRAD_DEVICE=gpu python bench/gpu/conv_algos.py

Each forced algorithm's forward output and input gradient are compared with the first one's.
"""
import time

import numpy as np

import clgrad
import clgrad.nn.functional as F
from clgrad import backends

CASES = {  # name: (N, C, H, W, C_out, k, pad, groups)
    "S2 N=128": (128, 96, 27, 27, 256, 5, 2, 2),
    "S3 N=128 C=256 56x56": (128, 256, 56, 56, 256, 3, 1, 256),
    "S1 g=2": (64, 16, 28, 28, 32, 3, 1, 2),
}


def timed(fn, reps=5):
    fn()
    clgrad.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        clgrad.synchronize()
        ts.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(ts))


def main():
    print("device:", clgrad.default_device())
    for name, (n, c, h, w, o, k, pad, g) in CASES.items():
        x = clgrad.randn(n, c, h, w, requires_grad=True)
        wt = clgrad.randn(o, c // g, k, k, requires_grad=True)
        ref = None
        for algo in ("auto", "im2col", "implicit", "depthwise", "direct"):
            backends.conv_algorithm = algo
            fwd = timed(lambda: F.conv2d(x, wt, padding=pad, groups=g))
            ran = backends.last_conv_algorithm

            def step():
                x.grad = wt.grad = None
                F.conv2d(x, wt, padding=pad, groups=g).sum().backward()
            both = timed(step)
            got = (F.conv2d(x, wt, padding=pad, groups=g).detach().numpy()[:2],
                   x.grad.numpy()[:2])
            if ref is None:
                ref = got
            err = max(float(np.abs(a - b).max() / (np.abs(b).max() + 1e-30))
                      for a, b in zip(got, ref))
            print(f"{name:22s} {algo:9s} ran {ran:9s} {dict(backends.last_conv_algorithms)} "
                  f"fwd {fwd:8.2f} ms  fwd+bwd {both:8.2f} ms  rel err vs auto {err:.1e}")
    backends.conv_algorithm = "auto"


if __name__ == "__main__":
    main()
