"""Tensor-core GEMM (kernels/matmul_mma_nv.cl) on the H200 against cuBLAS: float16 (float32 sums)
and float32 in TF32, with clgrad's FMA float32 kernel and cuBLAS float32 as the reference row.

    CLGRAD_DEVICE=gpu python bench/gpu/gemm_mma.py [--sizes 2048,4096,8192] [--reps 7]

Square C = A @ B, contiguous operands, plus the zoo's linear-layer shapes as (M, K, N) (a
batch of 128 through 512->10, and AlexNet's fc6/fc7 at batch 128, fc6's input and weight
gradients); "float32 split-K" forces matmul.gemm's split-K path on those shapes (its default
splits only GEMMs of at most SPLIT_MAX_M rows). Each row: clgrad's and
PyTorch CUDA's median time over --reps runs (one GEMM each, device synchronised around it;
both after 2 warm-up runs), TFLOP/s and the ratio; the error of each against float64 NumPy
(max |C - C64| / max |C64|, on the first size). PyTorch's TF32 switch
(torch.backends.cuda.matmul.allow_tf32) is set as clgrad's for each row. Prints a Markdown
table; exits 0 whatever the outcome.
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))


def timed(fn, sync, reps):
    for _ in range(2):
        fn()
    sync()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="2048,4096,8192")
    p.add_argument("--reps", type=int, default=7)
    args = p.parse_args()
    os.environ.setdefault("CLGRAD_DEVICE", "gpu")
    import clgrad
    import torch
    from clgrad.ops import matmul as mm
    dev = clgrad.zeros(1)._storage.device
    print(f"clgrad on {dev.name} [{dev.platform}], tensor cores: {mm.has_mma(dev)}; "
          f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    shapes = [(n, n, n) for n in map(int, args.sizes.split(","))]
    linear = [(128, 512, 10), (128, 9216, 4096), (128, 4096, 4096),
              (128, 4096, 9216), (4096, 128, 9216)]  # fc6's input and weight gradients
    shapes += linear
    rows = []
    cases = (("float16", False), ("float32 TF32", True), ("float32", False),
             ("float32 split-K", False))
    for label, tf32 in cases:
        dt = np.float16 if label == "float16" else np.float32
        clgrad.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for i, (m, k, n) in enumerate(linear if label.endswith("split-K") else shapes):
            rng = np.random.default_rng(0)
            a = rng.standard_normal((m, k)).astype(dt)
            b = rng.standard_normal((k, n)).astype(dt)
            ca, cb = clgrad.tensor(a, device="cuda"), clgrad.tensor(b, device="cuda")
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            if label.endswith("split-K"):  # the split path forced (matmul.gemm's split=True:
                out = clgrad.empty((m, n), device="cuda")  # its default takes it at <= 4 rows)
                ours = lambda: mm.gemm(out, ca, cb, split=True)  # noqa: E731
            else:
                ours = lambda: ca @ cb  # noqa: E731
            t_cl = timed(ours, clgrad.cuda.synchronize, args.reps)
            t_pt = timed(lambda: ta @ tb, torch.cuda.synchronize, args.reps)
            err = ""
            if i == 0 or m * n * k <= 2048 ** 3:
                want = a.astype(np.float64) @ b.astype(np.float64)
                scale = np.abs(want).max()
                e_cl = np.abs(ours().numpy().astype(np.float64) - want).max() / scale
                e_pt = np.abs((ta @ tb).cpu().numpy().astype(np.float64) - want).max() / scale
                err = f"{e_cl:.1e} / {e_pt:.1e}"
            flop = 2 * m * n * k
            rows.append((label, f"{m}x{k}x{n}", t_cl * 1e3, t_pt * 1e3, flop / t_cl / 1e12,
                         flop / t_pt / 1e12, t_pt / t_cl, err))
            print(f"{label} {m}x{k}x{n}: clgrad {t_cl * 1e3:.3f} ms ({flop / t_cl / 1e12:.1f} "
                  f"TFLOP/s), cuBLAS {t_pt * 1e3:.3f} ms ({flop / t_pt / 1e12:.1f}), "
                  f"{t_pt / t_cl:.2f}x  {err}", flush=True)
    clgrad.backends.cuda.matmul.allow_tf32 = False
    print("\n| dtype | M x K x N | clgrad ms | cuBLAS ms | clgrad TFLOP/s | cuBLAS TFLOP/s | "
          "clgrad speed / cuBLAS | error vs float64 (clgrad / cuBLAS) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]:.3f} | {r[3]:.3f} | {r[4]:.1f} | {r[5]:.1f} | "
              f"{r[6]:.2f}x | {r[7]} |")


if __name__ == "__main__":
    main()
