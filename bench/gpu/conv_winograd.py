"""Winograd against the other conv algorithms, pass by pass (forward, input gradient), on the
3 x 3 stride-1 layers of ResNet-18/34 at batch 128 (issue 35), and what 'auto' measures and
picks for each. Errors against PyTorch in float64 (on the GPU where it has one), relative to
the output's max.

    CLGRAD_DEVICE=gpu python bench/gpu/conv_winograd.py [--out DIR] [--quick]

Timing: each pass run REPS times back to back between two synchronisations (host clock),
median of 5 such rounds; TFLOP/s counts the direct convolution's 2*N*O*oH*oW*C*9. 'auto':
a fresh measurement (CLGRAD_CACHE_DIR set to a new folder, gpu._TUNE_MIN_MACS as shipped),
the algorithm it picked and the times it measured. Prints one JSON line per measurement and
writes them to DIR/conv_winograd.jsonl. --quick: batch 2, a quarter of the channels, 'auto'
measured on any device and size: a smoke run for any device.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
import clgrad  # noqa: E402
from clgrad import backends  # noqa: E402
from clgrad.ops.conv import choice as CH, gpu as conv_gpu, problem as P  # noqa: E402

LAYERS = {"conv2_x 64@56": (64, 56), "conv3_x 128@28": (128, 28), "conv4_x 256@14": (256, 14),
          "conv5_x 512@7": (512, 7)}
ALGOS = ("igemm_gpu", "im2col", "implicit", "winograd:2", "winograd:4")
REPS = 10
ROWS = []


def emit(**row):
    ROWS.append(row)
    print(json.dumps(row), flush=True)


def rounds(fn, reps=REPS, n=5):
    fn()
    clgrad.synchronize()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        clgrad.synchronize()
        ts.append((time.perf_counter() - t0) / reps)
    return 1e3 * float(np.median(ts))


def relerr(a, r):
    return float(np.abs(a - r).max() / max(np.abs(r).max(), 1e-30))


def layer(name, n, c, hw, torch):
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
    wn = (rng.standard_normal((c, c, 3, 3)) * np.sqrt(2 / (9 * c))).astype(np.float32)
    gn = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
    x, w, g4 = (clgrad.from_numpy(v) for v in (xn, wn, gn))
    y, gi = clgrad.empty(n, c, hw, hw), clgrad.empty(n, c, hw, hw)
    geo = P._check(x, w, None, 1, 1, 1, 1)
    pf = P._forward_problem(geo, x, w, y, None)
    refs = None
    if torch is not None:
        tdev = "cuda" if torch.cuda.is_available() else "cpu"
        tx, tw, tg = (torch.from_numpy(v).to(tdev).double() for v in (xn, wn, gn))
        tx.requires_grad_()
        ty = torch.nn.functional.conv2d(tx, tw, padding=1)
        ty.backward(tg)
        refs = {"forward": ty.detach().cpu().numpy(), "grad_input": tx.grad.cpu().numpy()}
        del tx, tw, tg, ty
    runs = {"forward": lambda a: CH._run(a, CH._plan(a, "forward", pf, w), "forward", pf, x, w,
                                         y, None),
            "grad_input": lambda a: CH._grad_input(geo, g4, w, gi, a)}
    outs = {"forward": y, "grad_input": gi}
    flops = 2 * n * c * hw * hw * c * 9
    for pass_name, run in runs.items():
        for algo in ALGOS:
            if CH._plan(algo, pass_name, pf, w) is None:
                continue
            run(algo)
            clgrad.synchronize()
            err = None if refs is None else relerr(outs[pass_name].numpy(), refs[pass_name])
            ms = rounds(lambda: run(algo))
            emit(layer=name, n=n, pass_=pass_name, algo=algo, ms=round(ms, 4),
                 tflops=round(flops / ms / 1e9, 2), err=err)
        tuned = conv_gpu._TUNED
        before = set(tuned)
        p = pf if pass_name == "forward" else P._grad_input_problem(geo, g4, w, gi)
        picked = conv_gpu.measured(pass_name, p, x._storage.device, clgrad.float32, CH._trial)
        new = [tuned[k] for k in tuned if k not in before and k != "_"]
        emit(layer=name, n=n, pass_=pass_name, algo="auto", picked=picked,
             measured=new[0]["ms"] if new else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    os.environ["CLGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="clgrad-wino-")  # fresh table
    if args.quick:  # measure on any device, any size
        os.environ["CLGRAD_CONV_TUNE"] = "on"
        conv_gpu._TUNE_MIN_MACS = 0
    conv_gpu._TUNED.clear()
    try:
        import torch
        torch.backends.cudnn.allow_tf32 = False
    except ImportError:
        torch = None
    dev = clgrad.default_device()
    emit(layer="_meta", device=dev.name, driver=dev.cl_device.driver_version.strip(),
         date=time.strftime("%Y-%m-%dT%H:%M:%S"))
    backends.conv_algorithm = "auto"
    for name, (c, hw) in LAYERS.items():
        layer(name, 2 if args.quick else 128, c // 4 if args.quick else c, hw, torch)
    Path(args.out, "conv_winograd.jsonl").write_text("".join(json.dumps(r) + "\n"
                                                             for r in ROWS))


if __name__ == "__main__":
    main()
