"""float16 convolutions (im2col + tensor-core GEMMs) against float32 and cuDNN, per layer.

float16 runs four ways: im2col's float16 GEMMs (f16), the tensor-core implicit GEMM for the
forward and input gradient (f16mma: clgrad/ops/conv/mma.py; im2col's weight gradient),
float32's kernels on float32 copies (f16via32), and conv2d's default (f16auto: on tensor cores
the route measured per layer, conv.op.half_via_float32; its pick in the route column, 16 or
32).

Layers at batch N (default 128, CIFAR-sized maps as the zoo's): ResNet-18's 3 x 3 convs, a
ResNeXt-29 grouped 3 x 3 (groups 8) and 1 x 1, AlexNet-like conv2 (5 x 5, groups 2).
Per layer and dtype: forward ms, and forward + backward ms (input and weight gradients), each
the median of 5 rounds of REPS back-to-back steps between two synchronisations (host clock);
TFLOP/s counts 2 N O oH oW (C/G) kH kW per pass (3 passes for forward + backward). PyTorch
(cuDNN, TF32 off) in float32 and float16 where it has CUDA. A float64 check of each layer's
float16 forward at N=2 first (max error relative to max |y|).

    CLGRAD_DEVICE=gpu python bench/gpu/conv_half.py [--batch 128] [--out FILE.jsonl]
    python bench/gpu/conv_half.py --quick   # smoke on any device with cl_khr_fp16
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
import clgrad  # noqa: E402
import clgrad.nn.functional as F  # noqa: E402
from clgrad.ops.conv import op as conv_op  # noqa: E402
from clgrad.runtime import default_device  # noqa: E402

REPS = 10
LAYERS = {  # name: C, H, O, k, stride, padding, groups
    "r18 64-64 32x32": (64, 32, 64, 3, 1, 1, 1),
    "r18 128-128 16x16": (128, 16, 128, 3, 1, 1, 1),
    "r18 256-256 8x8": (256, 8, 256, 3, 1, 1, 1),
    "r18 512-512 4x4": (512, 4, 512, 3, 1, 1, 1),
    "r18 64-128 s2": (64, 32, 128, 3, 2, 1, 1),
    "resnext 256-256 g8 16x16": (256, 16, 256, 3, 1, 1, 8),
    "resnext 1x1 512-256 16x16": (512, 16, 256, 1, 1, 0, 1),
    "alexnet-like 96-256 k5 g2 13x13": (96, 13, 256, 5, 1, 2, 2),
}


def _median_ms(step, sync, rounds=5, reps=REPS):
    step()
    sync()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            step()
        sync()
        times.append((time.perf_counter() - t0) / reps * 1e3)
    return statistics.median(times)


def _clgrad_case(n, c, h, o, k, s, p, g, dtype, backward):
    rng = np.random.default_rng(0)
    x = clgrad.tensor(rng.standard_normal((n, c, h, h)), dtype=dtype, requires_grad=backward)
    w = clgrad.tensor(rng.standard_normal((o, c // g, k, k)) * 0.05, dtype=dtype,
                      requires_grad=backward)
    y = F.conv2d(x, w, stride=s, padding=p, groups=g)
    gy = clgrad.ones(tuple(y.shape), dtype=dtype)

    def step():
        out = F.conv2d(x, w, stride=s, padding=p, groups=g)
        if backward:
            x.grad = w.grad = None
            out.backward(gy)
    return step, x._storage.device.synchronize


def _torch_case(torch, n, c, h, o, k, s, p, g, dtype, backward):
    x = torch.randn(n, c, h, h, device="cuda", dtype=dtype, requires_grad=backward)
    w = (torch.randn(o, c // g, k, k, device="cuda") * 0.05).to(dtype).requires_grad_(backward)
    y = torch.nn.functional.conv2d(x, w, stride=s, padding=p, groups=g)
    gy = torch.ones_like(y)

    def step():
        out = torch.nn.functional.conv2d(x, w, stride=s, padding=p, groups=g)
        if backward:
            x.grad = w.grad = None
            out.backward(gy)
    return step, torch.cuda.synchronize


def _check(c, h, o, k, s, p, g):
    """float16 forward at N=2 against float64 (im2col_ref by einsum over windows)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, c, h, h)).astype(np.float16).astype(np.float64)
    w = (rng.standard_normal((o, c // g, k, k)) * 0.05).astype(np.float16).astype(np.float64)
    y = F.conv2d(clgrad.tensor(x, dtype=clgrad.float16), clgrad.tensor(w, dtype=clgrad.float16),
                 stride=s, padding=p, groups=g).numpy().astype(np.float64)
    y64 = F.conv2d(clgrad.tensor(x, dtype=clgrad.float64), clgrad.tensor(w, dtype=clgrad.float64),
                   stride=s, padding=p, groups=g).numpy() if default_device().fp64 else None
    if y64 is None:
        return float("nan")
    return float(np.max(np.abs(y - y64)) / np.max(np.abs(y64)))


def _profile(args):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import events  # sets CLGRAD_ENQUEUE=pyopencl before the first launch
    dev = default_device()
    rec = events.Recorder(dev)
    for name, (c, h, o, k, s, p, g) in LAYERS.items():
        step, sync = _clgrad_case(args.batch, c, h, o, k, s, p, g, clgrad.float16, True)
        step()
        sync()
        rec.clear()
        step()
        sync()
        times, counts = rec.per_kernel()
        total = sum(times.values()) * 1e3
        parts = ", ".join(f"{kname} {t * 1e3:.3f} ms x{counts[kname]}"
                          for kname, t in sorted(times.items(), key=lambda kv: -kv[1]))
        print(f"{name}: {total:.3f} ms: {parts}", flush=True)
    rec.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="batch 2, two layers, one round")
    ap.add_argument("--profile", action="store_true",
                    help="float16 forward + backward per kernel (OpenCL events) per layer")
    args = ap.parse_args()
    if args.profile:
        return _profile(args)
    global REPS
    layers = LAYERS
    if args.quick:
        args.batch, REPS = 2, 1
        layers = dict(list(LAYERS.items())[3:5])
    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
        else:
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cudnn.benchmark = True
    except ImportError:
        torch = None
    rows = []
    for name, (c, h, o, k, s, p, g) in layers.items():
        n = args.batch
        oh = (h + 2 * p - k) // s + 1
        flop = 2 * n * o * oh * oh * (c // g) * k * k
        row = dict(layer=name, n=n, err16=_check(c, h, o, k, s, p, g))
        # float16 through each route (conv_op.HALF_IM2COL forces one), then as conv2d runs
        # it by default: on tensor cores the route measured for the layer (f16auto)
        for dname, dt, force, algo in (("f32", clgrad.float32, None, "auto"),
                                       ("f16", clgrad.float16, True, "im2col"),
                                       ("f16mma", clgrad.float16, True, "igemm_mma"),
                                       ("f16via32", clgrad.float16, False, "auto"),
                                       ("f16auto", clgrad.float16, None, "auto")):
            conv_op.HALF_IM2COL = force
            clgrad.backends.conv_algorithm = algo
            try:
                for bw in (False, True):
                    ms = _median_ms(*_clgrad_case(n, c, h, o, k, s, p, g, dt, bw))
                    row[f"clgrad_{dname}_{'fb' if bw else 'f'}"] = round(ms, 4)
            finally:
                clgrad.backends.conv_algorithm = "auto"
            if force:
                row[f"algo_{dname}"] = dict(clgrad.backends.last_conv_algorithms)
        x16 = clgrad.empty((n, c, h, h), dtype=clgrad.float16)
        row["route_f16auto"] = "float32" if conv_op.half_via_float32(
            x16, (c // g) * (o // g)) else "float16"
        if torch is not None:
            for dname, dt in (("f32", torch.float32), ("f16", torch.float16)):
                for bw in (False, True):
                    ms = _median_ms(*_torch_case(torch, n, c, h, o, k, s, p, g, dt, bw))
                    row[f"torch_{dname}_{'fb' if bw else 'f'}"] = round(ms, 4)
        for key in [k_ for k_ in row if k_.endswith(("_f", "_fb"))]:
            passes = 3 if key.endswith("_fb") else 1
            row[key + "_tflops"] = round(flop * passes / row[key] / 1e9, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print(f"{'layer':34s} {'f32 f/fb':>15s} {'f16 im2col f/fb':>15s} {'f16 mma f/fb':>15s} "
          f"{'f16 via32 f/fb':>15s} "
          f"{'f16 auto f/fb':>15s} {'route':>7s} {'cudnn16 f/fb':>15s} "
          f"{'auto/cudnn16 fb':>15s} {'err16':>8s}")
    for r in rows:
        t16 = (f"{r['torch_f16_f']:.3f}/{r['torch_f16_fb']:.3f}" if "torch_f16_f" in r else "-")
        ratio = (f"{r['clgrad_f16auto_fb'] / r['torch_f16_fb']:.2f}x" if "torch_f16_fb" in r
                 else "-")
        cells = "".join(f"{r[f'clgrad_{d}_f']:.3f}/{r[f'clgrad_{d}_fb']:.3f}".rjust(15) + " "
                        for d in ("f32", "f16", "f16mma", "f16via32", "f16auto"))
        print(f"{r['layer']:34s} {cells}{r['route_f16auto'][-2:]:>7s} {t16:>15s} "
              f"{ratio:>15s} {r['err16']:.1e}")
    if args.out:
        with open(args.out, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
