"""The float32 error of conv2d's weight and bias gradients with Winograd F(3x3, 2x2) and
F(3x3, 4x4) (clgrad/ops/conv/winograd.py) and the implicit GEMM, against float64 NumPy, on
the module doc's ResNet-like layers: C = O channels on H x W maps, padding 1, batch 2, N(0, 1)
input and output gradient, He-initialised weights. Prints max|dW - dW64| / max|dW64| (and the
bias gradient's) per layer and algorithm, the table of winograd.py's module doc.

    python bench/conv_winograd_error.py [--layers 16x28,64x28,...]
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import clgrad  # noqa: E402
from clgrad import backends  # noqa: E402
from clgrad.ops.conv import conv2d  # noqa: E402

LAYERS = ((16, 28), (64, 28), (64, 56), (128, 28), (256, 14), (512, 7))
ALGOS = ("winograd:2", "winograd:4", "implicit")


def ref_wgrad(x, gy):
    """float64 dW (padding 1, stride 1) as one tensordot per tap."""
    h, w = x.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    gw = np.zeros((gy.shape[1], x.shape[1], 3, 3))
    for i in range(3):
        for j in range(3):
            gw[:, :, i, j] = np.tensordot(gy, xp[:, :, i:i + h, j:j + w],
                                          axes=([0, 2, 3], [0, 2, 3]))
    return gw


def rel(a, r):
    return float(np.abs(a - r).max() / np.abs(r).max())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default=",".join(f"{c}x{h}" for c, h in LAYERS))
    args = ap.parse_args()
    print(f"device: {clgrad.default_device().name}; max|d - d64| / max|d64|, weight / bias")
    print(f"  {'C x H x W':14s}" + "".join(f"{a:>22s}" for a in ALGOS))
    for spec in args.layers.split(","):
        c, h = map(int, spec.split("x"))
        rng = np.random.default_rng(0)
        xn = rng.standard_normal((2, c, h, h))
        wn = rng.standard_normal((c, c, 3, 3)) * np.sqrt(2 / (9 * c))
        bn = rng.standard_normal(c) * 0.1
        gn = rng.standard_normal((2, c, h, h))
        ref, refb = ref_wgrad(xn, gn), gn.sum((0, 2, 3))
        line = f"  {c} x {h} x {h}".ljust(16)
        for algo in ALGOS:
            backends.conv_algorithm = algo
            w = clgrad.tensor(wn, dtype=clgrad.float32, requires_grad=True)
            b = clgrad.tensor(bn, dtype=clgrad.float32, requires_grad=True)
            y = conv2d(clgrad.tensor(xn, dtype=clgrad.float32), w, b, padding=1)
            y.backward(clgrad.tensor(gn, dtype=clgrad.float32))
            assert backends.last_conv_algorithms["grad_weight"] == algo
            line += f"{rel(w.grad.numpy(), ref):11.1e} /{rel(b.grad.numpy(), refb):8.1e}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
