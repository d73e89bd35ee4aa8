"""The float32 error of conv2d's weight and bias gradients with Winograd F(3x3, 2x2) and
F(3x3, 4x4) (clgrad/ops/conv/winograd.py) and the implicit GEMMs ('implicit': the device
kind's kernels; igemm_gpu), against float64 NumPy, on the module doc's ResNet-like layers:
C = O channels on H x W maps, padding 1, batch 2, N(0, 1) input and output gradient,
He-initialised weights; then F(5x5, 2x2) on AlexNet's conv2 (96 -> 256 channels, groups 2,
27 x 27, padding 2). Prints max|dW - dW64| / max|dW64| (and the bias gradient's) per layer and
algorithm, the tables of winograd.py's module doc. Any device (CLGRAD_DEVICE=gpu: a GPU's).

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
ALGOS = ("winograd:2", "winograd:4", "implicit", "igemm_gpu")


def ref_wgrad(x, gy, k=3, groups=1):
    """float64 dW (padding k // 2, stride 1) as one tensordot per tap and group."""
    h, w = x.shape[2:]
    p, cg, og = k // 2, x.shape[1] // groups, gy.shape[1] // groups
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    gw = np.zeros((gy.shape[1], cg, k, k))
    for g in range(groups):
        for i in range(k):
            for j in range(k):
                gw[g * og:(g + 1) * og, :, i, j] = np.tensordot(
                    gy[:, g * og:(g + 1) * og], xp[:, g * cg:(g + 1) * cg, i:i + h, j:j + w],
                    axes=([0, 2, 3], [0, 2, 3]))
    return gw


def errors(algos, c, h, o, k, groups):
    """The line of one layer: per algorithm the weight / bias gradient's error."""
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((2, c, h, h))
    wn = rng.standard_normal((o, c // groups, k, k)) * np.sqrt(2 / (k * k * c // groups))
    bn = rng.standard_normal(o) * 0.1
    gn = rng.standard_normal((2, o, h, h))
    ref, refb = ref_wgrad(xn, gn, k, groups), gn.sum((0, 2, 3))
    line = ""
    for algo in algos:
        backends.conv_algorithm = algo
        w = clgrad.tensor(wn, dtype=clgrad.float32, requires_grad=True)
        b = clgrad.tensor(bn, dtype=clgrad.float32, requires_grad=True)
        y = conv2d(clgrad.tensor(xn, dtype=clgrad.float32), w, b, padding=k // 2,
                   groups=groups)
        y.backward(clgrad.tensor(gn, dtype=clgrad.float32))
        assert backends.last_conv_algorithms["grad_weight"] == algo
        line += f"{rel(w.grad.numpy(), ref):11.1e} /{rel(b.grad.numpy(), refb):8.1e}"
    return line


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
        print(f"  {c} x {h} x {h}".ljust(16) + errors(ALGOS, c, h, c, 3, 1), flush=True)
    algos = ("winograd:2", "implicit", "igemm_gpu")
    print(f"\n  {'5 x 5':14s}" + "".join(f"{a:>22s}" for a in algos))
    print("  conv2 27 x 27 " + errors(algos, 96, 27, 256, 5, 2), flush=True)


if __name__ == "__main__":
    main()
