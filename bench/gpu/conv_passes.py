"""Convolution on the GPU pass by pass (forward, input gradient, weight gradient): S3 depthwise
(N=128, C=256, 56x56, k3, p1, groups=C) with the tiles of depthwise_gpu (kernels/conv_dw_gpu.cl)
against 'direct', or S2 AlexNet conv2 (N=128, C=96, 27x27, O=256, k5, p2, groups=2) with the
tiles of igemm_gpu (kernels/conv_igemm_gpu.cl) against im2col and implicit; PyTorch/cuDNN
(TF32 off) per pass; a correctness smoke of depthwise_gpu against float64 references first.

    CLGRAD_DEVICE=gpu python bench/gpu/conv_passes.py [--case S3|S2] [--out DIR] [--quick]

Smoke: small problems (channel multiplier, stride, dilation, padding, float32 and float64)
against a float64 NumPy reference; S3 itself against PyTorch in float64 on the GPU. Timing:
each pass run REPS times back to back between two synchronisations (host clock), median of 5
such rounds; bandwidth counts the bytes each pass must move at least (forward: x read, y
written; input gradient: gy read, gx written; weight gradient: x and gy read), TFLOP/s the
convolution's 2*N*O*oH*oW*(C/G)*kH*kW. Prints one line per measurement and writes them as JSON
lines to DIR/conv_<case>.jsonl; the best tiles to DIR/best.txt (S3: CLGRAD_CONV_DWG's form)
or DIR/best_igemm.txt (S2: CLGRAD_CONV_IGEMM's).
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
import clgrad  # noqa: E402
from clgrad import backends  # noqa: E402
from clgrad.ops import conv as C  # noqa: E402
from clgrad.ops.conv import choice as CH, gpu as conv_gpu, problem as P  # noqa: E402
from clgrad.ops.conv.problem import v5  # noqa: E402

REPS = 20
FWD = [(1, 1, 128), (1, 4, 128), (2, 2, 128), (2, 4, 128), (2, 8, 128), (4, 1, 128),
       (4, 2, 128), (4, 4, 128), (4, 8, 64), (8, 2, 128), (8, 4, 64), (2, 4, 64), (2, 4, 256),
       (4, 4, 64), (4, 4, 256), (4, 2, 256)]
WGRAD = [(1, 256, 1), (2, 256, 1), (4, 256, 1), (4, 256, 2), (4, 128, 1), (4, 128, 2),
         (4, 512, 1), (8, 256, 1), (8, 128, 2), (8, 64, 4), (4, 64, 4), (2, 128, 2)]
IGEMM = [(128, 128, 8, 8, 8), (64, 128, 8, 4, 8), (128, 128, 16, 8, 8), (128, 64, 8, 8, 4),
         (48, 64, 12, 4, 4),
         (64, 64, 8, 4, 4), (64, 128, 16, 4, 8)]
ROWS = []


def emit(**row):
    ROWS.append(row)
    print(json.dumps(row), flush=True)


def rounds(fn, sync, reps=REPS, n=5):
    fn()
    sync()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        ts.append((time.perf_counter() - t0) / reps)
    return 1e3 * float(np.median(ts)), 1e3 * min(ts), 1e3 * max(ts)


def ref_np(x, w, b, gy, stride, padding, dilation, groups):
    """float64 y, gx, gw, gb by explicit loops over taps (any stride/dilation/padding)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    oh, ow = gy.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    y = np.zeros((n, o, oh, ow)) + b[None, :, None, None]
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    og = o // groups
    for oo in range(o):
        g = oo // og
        for ci in range(cg):
            cc = g * cg + ci
            for i in range(kh):
                for j in range(kw):
                    win = xp[:, cc, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                             j * dw: j * dw + sw * (ow - 1) + 1: sw]
                    y[:, oo] += w[oo, ci, i, j] * win
                    gw[oo, ci, i, j] = (gy[:, oo] * win).sum()
                    gxp[:, cc, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                        j * dw: j * dw + sw * (ow - 1) + 1: sw] += w[oo, ci, i, j] * gy[:, oo]
    return y, gxp[:, :, ph:ph + h, pw:pw + wd], gw, gy.sum((0, 2, 3))


def relerr(a, r):
    return float(np.abs(a - r).max() / max(np.abs(r).max(), 1e-30))


def smoke():
    rng = np.random.default_rng(1)
    backends.conv_algorithm = "depthwise_gpu"
    fails = 0
    cases = [(2, 4, 9, 11, 1, 3, (1, 1), (1, 1), (1, 1)), (2, 3, 10, 13, 2, 3, (2, 1), (1, 2),
             (2, 1)), (1, 2, 12, 9, 3, 2, (2, 3), (0, 3), (2, 2)),
             (2, 8, 30, 61, 1, 5, (1, 1), (2, 2), (1, 1))]
    for dt, tol in ((clgrad.float32, 1e-4), (clgrad.float64, 1e-10)):
        for n, c, h, w, m, k, s, p, d in cases:
            x = rng.standard_normal((n, c, h, w))
            wt = rng.standard_normal((c * m, 1, k, k))
            b = rng.standard_normal(c * m)
            xt, wtt, bt = (clgrad.tensor(v, dtype=dt, requires_grad=True) for v in (x, wt, b))
            y = C.conv2d(xt, wtt, bt, stride=s, padding=p, dilation=d, groups=c)
            gy = rng.standard_normal(tuple(y.shape))
            y.backward(clgrad.tensor(gy, dtype=dt))
            ref = ref_np(x, wt, b, gy, s, p, d, c)
            got = (y.numpy(), xt.grad.numpy(), wtt.grad.numpy(), bt.grad.numpy())
            err = max(relerr(a, r) for a, r in zip(got, ref))
            ok = err <= tol and set(backends.last_conv_algorithms.values()) == {"depthwise_gpu"}
            fails += not ok
            print(f"{'PASS' if ok else 'FAIL'} smoke {dt.name} {(n, c, h, w, m, k, s, p, d)} "
                  f"err {err:.1e} {backends.last_conv_algorithms}", flush=True)
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp")
    ap.add_argument("--case", default="S3", choices=("S3", "S2"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-smoke", action="store_true")
    args = ap.parse_args()
    dev = clgrad.default_device()
    d = dev.cl_device
    meta = dict(device=f"{dev.name} ({d.platform.name.strip()}, {d.max_compute_units} CUs)",
                driver=f"{d.driver_version.strip()} / {d.version.strip()}",
                date=time.strftime("%Y-%m-%dT%H:%M:%S"))
    emit(case="_meta", **meta)
    fails = 0 if args.no_smoke else smoke()
    import torch
    torch.backends.cudnn.allow_tf32 = False
    s3 = args.case == "S3"
    n, c, h, o, k, pad, g = (128, 256, 56, 256, 3, 1, 256) if s3 else (128, 96, 27, 256, 5, 2, 2)
    if args.quick:
        n, c, h, o, g = (2, 8, 20, 8, 8) if s3 else (2, 8, 9, 12, 2)
    rng = np.random.default_rng(0)
    oh = h + 2 * pad - k + 1
    xn = rng.standard_normal((n, c, h, h), dtype=np.float32)
    wn = (rng.standard_normal((o, c // g, k, k)) / np.sqrt(c // g * k * k)).astype(np.float32)
    bn = rng.standard_normal(o).astype(np.float32)
    gn = rng.standard_normal((n, o, oh, oh), dtype=np.float32)
    x, w, b, g4 = (clgrad.from_numpy(v) for v in (xn, wn, bn, gn))
    y, gi, gw, gb = clgrad.empty(n, o, oh, oh), clgrad.empty(n, c, h, h), \
        clgrad.empty(o, c // g, k, k), clgrad.empty(o)
    geo = P._check(x, w, b, 1, pad, 1, g)
    pf = P._forward_problem(geo, x, w, y, b)
    pw = geo._replace(x=v5(x, g))
    nb = 4 * (n * c * h * h + n * o * oh * oh)  # bytes at least: one input, one output
    flops = 2 * n * o * oh * oh * (c // g) * k * k
    fwd_t, wg_t = (FWD, WGRAD) if s3 else (IGEMM, IGEMM)
    if args.quick:
        del fwd_t[3:], wg_t[3:]
    sync = clgrad.synchronize
    # correctness of the big problem against PyTorch float64 on the GPU
    tdev = "cuda" if torch.cuda.is_available() else "cpu"
    tx, tw, tb, tg = (torch.from_numpy(v).to(tdev).double().requires_grad_()
                      for v in (xn, wn, bn, gn))
    ty = torch.nn.functional.conv2d(tx, tw, tb, padding=pad, groups=g)
    ty.backward(tg)
    refs = [t.detach().cpu().numpy() for t in (ty, tx.grad, tw.grad, tb.grad)]
    del tx, tw, tb, tg, ty
    def pass_run(pass_name, p, *operands):  # plan + launch, as conv2d does
        return lambda algo: CH._run(algo, CH._plan(algo, pass_name, p, w), pass_name, p,
                                    *operands)
    runs = {"forward": pass_run("forward", pf, x, w, y, b),
            "grad_input": lambda algo: CH._grad_input(geo, g4, w, gi, algo),
            "grad_weight": pass_run("grad_weight", pw, x, g4, gw, gb)}
    outs = {"forward": lambda: [y], "grad_input": lambda: [gi], "grad_weight": lambda: [gw, gb]}
    refi = {"forward": [0], "grad_input": [1], "grad_weight": [2, 3]}
    reps = REPS if s3 else 8

    def one(pass_name, algo, tiles):
        runs[pass_name](algo)
        sync()
        err = max(relerr(o.numpy(), refs[i]) for o, i in zip(outs[pass_name](), refi[pass_name]))
        med, lo, hi = rounds(lambda: runs[pass_name](algo), sync, reps=reps)
        emit(case=args.case, pass_=pass_name, algo=algo, tiles=tiles, ms=med, min=lo, max=hi,
             gbs=nb / med / 1e6, tflops=flops / med / 1e9, err=err, ok=err < 1e-4)
        return med, err

    best = {}

    def keep(pn, med, err, tiles):
        if err < 1e-4 and med < best.get(pn, (1e9,))[0]:
            best[pn] = (med, tiles)

    algo = "depthwise_gpu" if s3 else "igemm_gpu"
    for tiles in fwd_t:
        if s3:
            conv_gpu._CFG["gpu"].update(fvx=tiles[0], fvy=tiles[1], fwg=tiles[2])
        else:
            set_igemm(tiles)
        for pn in ("forward", "grad_input") if s3 else runs:
            keep(pn, *one(pn, algo, tiles), tiles)
    if s3:
        for tiles in wg_t:
            conv_gpu._CFG["gpu"].update(wvx=tiles[0], wwg=tiles[1], wsplit=tiles[2])
            keep("grad_weight", *one("grad_weight", algo, tiles), tiles)
    for other in ("direct",) if s3 else ("im2col", "implicit"):
        for pn in runs:
            one(pn, other, None)
    # PyTorch / cuDNN per pass (float32)
    tx, tw, tb, tg = (torch.from_numpy(v).to(tdev) for v in (xn, wn, bn, gn))
    tf, tgrad = torch.nn.functional, torch.nn.grad
    tsync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
    with torch.no_grad():
        tpass = {"forward": lambda: tf.conv2d(tx, tw, tb, padding=pad, groups=g),
                 "grad_input": lambda: tgrad.conv2d_input(tx.shape, tw, tg, padding=pad,
                                                          groups=g),
                 "grad_weight": lambda: (tgrad.conv2d_weight(tx, tw.shape, tg, padding=pad,
                                                             groups=g), tg.sum((0, 2, 3)))}
        for pn, fn in tpass.items():
            med, lo, hi = rounds(fn, tsync, reps=reps)
            emit(case=args.case, pass_=pn, algo="torch-cuda", ms=med, min=lo, max=hi,
                 gbs=nb / med / 1e6, tflops=flops / med / 1e9)
        if s3:
            ty = torch.empty_like(tx)
            med, lo, hi = rounds(lambda: ty.copy_(tx), tsync)
            emit(case="copy 411 MB", algo="torch-cuda", ms=med, gbs=nb / med / 1e6)
    print(f"\n{args.case} best per pass:", {k: (round(v[0], 4), v[1]) for k, v in best.items()})
    print("smoke failures:", fails)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if s3:
        cfg = dict(zip(("fvx", "fvy", "fwg"), best.get("forward", (0, FWD[0]))[1]))
        cfg.update(zip(("wvx", "wwg", "wsplit"), best.get("grad_weight", (0, WGRAD[0]))[1]))
        (Path(args.out) / "best.txt").write_text(",".join(f"{k}={v}" for k, v in cfg.items()))
    else:
        (Path(args.out) / "best_igemm.txt").write_text(";".join(
            f"{kind}:{','.join(map(str, best.get(pn, (0, IGEMM[i]))[1]))}"
            for i, (kind, pn) in enumerate((("wide", "forward"), ("narrow", "grad_input"),
                                            ("wgrad", "grad_weight")))))
    with open(Path(args.out) / f"conv_{args.case}.jsonl", "w") as f:
        for r in ROWS:
            f.write(json.dumps(dict(r, **meta)) + "\n")


def set_igemm(tiles):
    t = dict(zip(("TSM", "TSN", "TSK", "WPTM", "WPTN"), tiles))
    for key in conv_gpu._IGEMM:
        conv_gpu._IGEMM[key] = t


if __name__ == "__main__":
    main()
