"""Training batch norm on the GPU, forward + backward, against PyTorch CUDA (cuDNN's batch
norm), at the zoo's shapes (ResNet-18 / ResNeXt-29 stages at batch 128, one batch-8 shape).

    CLGRAD_DEVICE=gpu python bench/gpu/batch_norm.py [--mixed]

Per shape: F.batch_norm(x, running_mean, running_var, weight, bias, training=True) then
backward of a fixed gradient, 20 steps back to back between two synchronisations (host clock),
the minimum of 5 such rounds, for each framework. "GB/s at 5 passes" counts x read twice,
y written, gy and x read once more by the backward (5 tensor-sized passes): a floor, not what
either framework moves. At batch 8 a step is a few launches, so those rows measure host time.
Results of 2026-12-02: bench/results/gpu/batch_norm_h200_2026-12-02.txt.
--mixed: x, y, gy and gx float16 with float32 parameters and running statistics in both
frameworks (PyTorch's mixed batch norm, what autocast gives; kernels/norm.cl's BN_HALF).
"""
import sys
import time

import numpy as np
import torch

import clgrad
import clgrad.nn.functional as F

SHAPES = [(128, 64, 32, 32), (128, 128, 16, 16), (128, 256, 8, 8), (128, 512, 4, 4),
          (128, 128, 32, 32), (128, 1024, 8, 8), (8, 64, 32, 32)]


def timed(step, sync, reps=20, rounds=5):
    """Minimum over rounds of the mean time of ``reps`` back-to-back steps (ms)."""
    for _ in range(3):
        step()
    sync()
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            step()
        sync()
        best = min(best, (time.perf_counter() - t) / reps)
    return best * 1e3


def main():
    torch.backends.cudnn.allow_tf32 = False
    mixed = "--mixed" in sys.argv[1:]
    dt, tdt = (clgrad.float16, torch.float16) if mixed else (clgrad.float32, torch.float32)
    for sh in SHAPES:
        c = sh[1]
        x = clgrad.randn(*sh).to(dt).requires_grad_()
        w, b = clgrad.ones(c, requires_grad=True), clgrad.zeros(c, requires_grad=True)
        rm, rv, g = clgrad.zeros(c), clgrad.ones(c), clgrad.randn(*sh).to(dt)
        tx = torch.randn(*sh, device="cuda", dtype=tdt, requires_grad=True)
        tw = torch.ones(c, device="cuda", requires_grad=True)
        tb = torch.zeros(c, device="cuda", requires_grad=True)
        trm, trv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")
        tg = torch.randn(*sh, device="cuda", dtype=tdt)

        def clgrad_step():
            F.batch_norm(x, rm, rv, w, b, True).backward(g)

        def torch_step():
            torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, True).backward(tg)
        ours = timed(clgrad_step, clgrad.synchronize)
        theirs = timed(torch_step, torch.cuda.synchronize)
        gb = 5 * np.prod(sh) * (2 if mixed else 4) / 1e9
        print(f"{sh}: clgrad {ours:.3f} ms torch {theirs:.3f} ms ratio {ours / theirs:.2f} "
              f"({gb / ours * 1e3:.0f} GB/s at 5 passes)", flush=True)


if __name__ == "__main__":
    main()
