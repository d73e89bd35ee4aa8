"""Convolution on the GPU pass by pass (forward, input gradient, weight gradient): S3 depthwise
(N=128, C=256, 56x56, k3, p1, groups=C) with the tiles of depthwise_gpu (kernels/conv_dw_gpu.cl)
against 'direct', or S2 AlexNet conv2 (N=128, C=96, 27x27, O=256, k5, p2, groups=2) with the
tiles of igemm_gpu (kernels/conv_igemm_gpu.cl) against im2col, implicit and (the weight
gradient) winograd:2's F(5x5, 2x2); PyTorch/cuDNN
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

R18: ResNet-18's distinct 3x3 convolutions at N=128 (no bias, padding 1), each pass with each
GPU candidate algorithm of clgrad.ops.conv.gpu.CANDIDATES (plus 'winograd' where the algorithm
registry has it), igemm_gpu's variants (igemm_gpu:cmajor, :copy and :view, the depth orders and
weight reads of _W_READ; igemm_gpu:split1, the weight gradient without split-K), the Winograd
weight gradient's (winograd:M:k2048 / :k128, slices of at most 2048 / 128 tiles instead of
winograd.WGRAD_MAX_K; winograd:M:small, the GEMM's small tiles on every layer) and with
--igemm-tiles every IGEMM tile (CLGRAD_CONV_IGEMM's form): ms, TFLOP/s and % of a PEAK TFLOP/s
FP32 peak (the H200's), cuDNN's ms per pass (TF32 off) where torch has CUDA, a float64 check of
every (layer, pass, algorithm) at N=2 against a NumPy reference, where torch has CUDA the
float32 error at N=128 against torch's float64 (err32: max|d - d64| / max|d64|), and a
summary: per layer and pass the fastest, and ResNet-18's 3x3 total (each layer times its count
in the network) per algorithm against cuDNN. Writes DIR/conv_R18.jsonl.

    CLGRAD_DEVICE=gpu python bench/gpu/conv_passes.py --case R18 [--igemm-tiles] [--out DIR]
    python bench/gpu/conv_passes.py --case R18 --quick   # smoke on any device: tiny layers
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
import clgrad  # noqa: E402
from clgrad import backends  # noqa: E402
from clgrad.ops import conv as C  # noqa: E402
from clgrad.ops import matmul  # noqa: E402
from clgrad.ops.conv import choice as CH, gpu as conv_gpu, problem as P  # noqa: E402
from clgrad.ops.conv import winograd  # noqa: E402
from clgrad.ops.conv.problem import v5  # noqa: E402

REPS = 20
FWD = [(1, 1, 128), (1, 4, 128), (2, 2, 128), (2, 4, 128), (2, 8, 128), (4, 1, 128),
       (4, 2, 128), (4, 4, 128), (4, 8, 64), (8, 2, 128), (8, 4, 64), (2, 4, 64), (2, 4, 256),
       (4, 4, 64), (4, 4, 256), (4, 2, 256)]
WGRAD = [(1, 256, 1), (2, 256, 1), (4, 256, 1), (4, 256, 2), (4, 128, 1), (4, 128, 2),
         (4, 512, 1), (8, 256, 1), (8, 128, 2), (8, 64, 4), (4, 64, 4), (2, 128, 2)]
IGEMM = [(128, 128, 8, 8, 8), (64, 128, 8, 4, 8), (128, 128, 16, 8, 8), (128, 64, 8, 8, 4),
         (48, 64, 12, 4, 4),
         (64, 64, 8, 4, 4), (64, 128, 16, 4, 8), (128, 64, 16, 8, 4), (128, 128, 16, 8, 4)]
# ResNet-18's 3x3 convolutions: (C, H, O, stride, count in the network)
R18 = [(64, 56, 64, 1, 4), (64, 56, 128, 2, 1), (128, 28, 128, 1, 3), (128, 28, 256, 2, 1),
       (256, 14, 256, 1, 3), (256, 14, 512, 2, 1), (512, 7, 512, 1, 3)]
PEAK = 67.0  # TFLOP/s, FP32, H200
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


def ref_fast(x, w, gy, stride, padding):
    """float64 y, gx, gw (groups 1, dilation 1) as one tensordot per tap."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    s, p = stride, padding
    oh, ow = gy.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    y, gxp, gw = np.zeros((n, o, oh, ow)), np.zeros_like(xp), np.zeros_like(w)
    for i in range(kh):
        for j in range(kw):
            sl = (slice(None), slice(None), slice(i, i + s * (oh - 1) + 1, s),
                  slice(j, j + s * (ow - 1) + 1, s))
            win = xp[sl]
            y += np.einsum("nchw,oc->nohw", win, w[:, :, i, j], optimize=True)
            gw[:, :, i, j] = np.tensordot(gy, win, axes=([0, 2, 3], [0, 2, 3]))
            gxp[sl] += np.einsum("oc,nohw->nchw", w[:, :, i, j], gy, optimize=True)
    return y, gxp[:, :, p:p + h, p:p + wd], gw


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
            got = (y.detach().numpy(), xt.grad.numpy(), wtt.grad.numpy(), bt.grad.numpy())
            err = max(relerr(a, r) for a, r in zip(got, ref))
            ok = err <= tol and set(backends.last_conv_algorithms.values()) == {"depthwise_gpu"}
            fails += not ok
            print(f"{'PASS' if ok else 'FAIL'} smoke {dt.name} {(n, c, h, w, m, k, s, p, d)} "
                  f"err {err:.1e} {backends.last_conv_algorithms}", flush=True)
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp")
    ap.add_argument("--case", default="S3", choices=("S3", "S2", "R18"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-smoke", action="store_true")
    ap.add_argument("--igemm-tiles", action="store_true", help="R18: every IGEMM tile too")
    args = ap.parse_args()
    dev = clgrad.default_device()
    d = dev.cl_device
    meta = dict(device=f"{dev.name} ({d.platform.name.strip()}, {d.max_compute_units} CUs)",
                driver=f"{d.driver_version.strip()} / {d.version.strip()}",
                date=time.strftime("%Y-%m-%dT%H:%M:%S"))
    emit(case="_meta", **meta)
    if args.case == "R18":
        return r18(args, meta)
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
    for other in ("direct",) if s3 else ("im2col", "implicit", "winograd:2"):
        for pn in runs:
            if other != "winograd:2" or pn == "grad_weight":  # (F(5x5, 2x2): dW only)
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


def r18_variants(pass_name):
    """(label, algorithm, setup) of every GPU candidate and igemm_gpu variant of a pass;
    setup() sets the variant's knobs (all reset first)."""
    out = [(a, a, None) for a in conv_gpu.CANDIDATES[pass_name]]
    if "winograd" in CH._KERNELS and "winograd" not in conv_gpu.CANDIDATES[pass_name]:
        out.append(("winograd", "winograd", None))
    if pass_name == "grad_weight":
        out.append(("igemm_gpu:split1", "igemm_gpu",
                    lambda: setattr(conv_gpu, "_SPLIT_PIXELS", 1 << 62)))
        for m in winograd.TILES:
            for k in (2048, 128):
                out.append((f"winograd:{m}:k{k}", f"winograd:{m}",
                            lambda k=k: setattr(winograd, "WGRAD_MAX_K", k)))
            out.append((f"winograd:{m}:small", f"winograd:{m}", lambda: setattr(
                winograd, "_gemm_tiles", lambda p, dev: matmul.tiles(dev).get("small"))))
    else:
        for mode in ("cmajor", "copy", "view"):
            out.append((f"igemm_gpu:{mode}", "igemm_gpu",
                        lambda mode=mode: setattr(conv_gpu, "_W_READ", mode)))
    return out


def r18(args, meta):
    """The R18 case (see the module doc)."""
    try:
        import torch
    except ImportError:
        torch = None
    cuda = torch is not None and torch.cuda.is_available()
    if cuda:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    defaults = dict(_W_READ=conv_gpu._W_READ, _SPLIT_PIXELS=conv_gpu._SPLIT_PIXELS,
                    _IGEMM={k: dict(v) for k, v in conv_gpu._IGEMM.items()})
    wdefaults = dict(WGRAD_MAX_K=winograd.WGRAD_MAX_K, _gemm_tiles=winograd._gemm_tiles)

    def reset():
        for k, v in defaults.items():
            setattr(conv_gpu, k, dict(v) if k == "_IGEMM" else v)
        for k, v in wdefaults.items():
            setattr(winograd, k, v)

    layers, n, reps, nround = R18, 128, 8, 5
    if args.quick:  # any device: tiny layers, few repetitions
        layers, n, reps, nround = [(c // 8, max(h // 8, 4), o // 8, s, k)
                                   for c, h, o, s, k in R18], 2, 2, 2
    tiles = [None] + (IGEMM if args.igemm_tiles else [])
    sync, rng = clgrad.synchronize, np.random.default_rng(0)
    total = {}  # label -> {pass: ms x count}
    fails = 0
    for c, h, o, stride, count in layers:
        name = f"C{c} H{h} O{o} s{stride}"
        oh = (h + 2 - 3) // stride + 1
        flops = 2 * n * o * oh * oh * c * 9

        def operands(nb, dt, gen):
            xn, gn = gen.standard_normal((nb, c, h, h)), gen.standard_normal((nb, o, oh, oh))
            wn = gen.standard_normal((o, c, 3, 3)) / np.sqrt(c * 9)
            x, w, g4 = (clgrad.tensor(v, dtype=dt) for v in (xn, wn, gn))
            y, gi, gw = (clgrad.empty(*sh, dtype=dt) for sh in (
                (nb, o, oh, oh), (nb, c, h, h), (o, c, 3, 3)))
            geo = P._check(x, w, None, stride, 1, 1, 1)
            pf = P._forward_problem(geo, x, w, y, None)
            pw = geo._replace(x=v5(x, 1))

            def run(pass_name, algo):  # False where algo cannot run the pass
                if pass_name == "grad_input":
                    return CH._grad_input(geo, g4, w, gi, algo)
                p, ops = (pf, (x, w, y, None)) if pass_name == "forward" else \
                    (pw, (x, g4, gw, None))
                plan = CH._plan(algo, pass_name, p, w)
                if plan is None:
                    return False
                CH._run(algo, plan, pass_name, p, *ops)
                return True
            outs = {"forward": y, "grad_input": gi, "grad_weight": gw}
            return (xn, wn, gn), run, outs

        # float64 check at N=2
        (xn, wn, gn), run64, outs64 = operands(2, clgrad.float64, np.random.default_rng(1))
        ref = dict(zip(("forward", "grad_input", "grad_weight"),
                       ref_fast(xn, wn, gn, stride, 1)))
        (xn32, wn32, gn32), run, outs32 = operands(n, clgrad.float32, rng)
        ref32 = {}
        if cuda:  # float64 references of the float32 operands at N=128, on the GPU
            tx, tw, tg = (torch.tensor(v, dtype=torch.float64, device="cuda").float().double()
                          for v in (xn32, wn32, gn32))
            tgrad = torch.nn.grad
            ref32 = {"forward": torch.nn.functional.conv2d(tx, tw, stride=stride, padding=1),
                     "grad_input": tgrad.conv2d_input(tx.shape, tw, tg, stride=stride,
                                                      padding=1),
                     "grad_weight": tgrad.conv2d_weight(tx, tw.shape, tg, stride=stride,
                                                        padding=1)}
            ref32 = {k: v.cpu().numpy() for k, v in ref32.items()}
            del tx, tw, tg
        for pn in ("forward", "grad_input", "grad_weight"):
            for label, algo, setup in r18_variants(pn):
                for t in tiles if algo == "igemm_gpu" else [None]:
                    reset()
                    if t is not None:
                        set_igemm(t)
                    if setup:
                        setup()
                    try:
                        if not run64(pn, algo):
                            emit(case="R18", layer=name, pass_=pn, algo=label, ran=False)
                            continue
                        sync()
                        err = relerr(outs64[pn].numpy(), ref[pn])
                        run(pn, algo)
                        sync()
                        err32 = relerr(outs32[pn].numpy(), ref32[pn]) if ref32 else None
                        med, lo, hi = rounds(lambda: run(pn, algo), sync, reps=reps, n=nround)
                    except (RuntimeError, ValueError, cl.Error) as e:  # reported, not fatal
                        fails += 1
                        emit(case="R18", layer=name, pass_=pn, algo=label, error=repr(e))
                        continue
                    ok = err < 1e-10
                    fails += not ok
                    tf = flops / med / 1e9
                    emit(case="R18", layer=name, pass_=pn, algo=label, tiles=t, ms=med, min=lo,
                         max=hi, tflops=tf, peak_pct=100 * tf / PEAK, err64=err, err32=err32,
                         ok=ok)
                    if t is None:
                        total.setdefault(label, {}).setdefault(pn, 0.0)
                        total[label][pn] += med * count
        if cuda:
            tx = torch.randn(n, c, h, h, device="cuda")
            tw = torch.randn(o, c, 3, 3, device="cuda")
            tg = torch.randn(n, o, oh, oh, device="cuda")
            tf_, tgrad = torch.nn.functional, torch.nn.grad
            with torch.no_grad():
                tpass = {"forward": lambda: tf_.conv2d(tx, tw, stride=stride, padding=1),
                         "grad_input": lambda: tgrad.conv2d_input(tx.shape, tw, tg,
                                                                  stride=stride, padding=1),
                         "grad_weight": lambda: tgrad.conv2d_weight(tx, tw.shape, tg,
                                                                    stride=stride, padding=1)}
                for pn, fn in tpass.items():
                    med, lo, hi = rounds(fn, torch.cuda.synchronize, reps=reps, n=nround)
                    tf = flops / med / 1e9
                    emit(case="R18", layer=name, pass_=pn, algo="cudnn", ms=med, min=lo,
                         max=hi, tflops=tf, peak_pct=100 * tf / PEAK)
                    total.setdefault("cudnn", {}).setdefault(pn, 0.0)
                    total["cudnn"][pn] += med * count
    reset()
    print(f"\nR18 at N={n}: per layer and pass, the fastest (ms, TFLOP/s, % of {PEAK:g})")
    for layer in dict.fromkeys(r["layer"] for r in ROWS if r.get("case") == "R18"):
        for pn in ("forward", "grad_input", "grad_weight"):
            rs = [r for r in ROWS if r.get("layer") == layer and r.get("pass_") == pn
                  and "ms" in r and r.get("ok", True) and r["algo"] != "cudnn"]
            cu = [r for r in ROWS if r.get("layer") == layer and r.get("pass_") == pn
                  and r["algo"] == "cudnn"]
            if rs:
                b = min(rs, key=lambda r: r["ms"])
                print(f"  {layer:22s} {pn:12s} {b['algo']:18s} {b['ms']:8.3f} ms "
                      f"{b['tflops']:6.2f} TFLOP/s {b['peak_pct']:5.1f}%" + (
                          f"   cudnn {cu[0]['ms']:8.3f} ms" if cu else "") + (
                          f"   tiles {b['tiles']}" if b.get("tiles") else ""))
    print("\nResNet-18 3x3 total (ms, each layer times its count):")
    for label, per in sorted(total.items(), key=lambda kv: sum(kv[1].values())):
        print(f"  {label:18s} " + " ".join(f"{pn} {v:8.3f}" for pn, v in per.items()) +
              f"  sum {sum(per.values()):8.3f}")
    best = {}  # the fastest clgrad algorithm per (layer, pass), times the layer's count
    counts = {f"C{c} H{h} O{o} s{s}": k for c, h, o, s, k in layers}
    for r in ROWS:
        if r.get("case") == "R18" and "ms" in r and r.get("ok") and r["algo"] != "cudnn":
            key = (r["layer"], r["pass_"])
            best[key] = min(best.get(key, 1e30), r["ms"])
    per = {}
    for (layer, pn), ms in best.items():
        per[pn] = per.get(pn, 0.0) + ms * counts[layer]
    print(f"  {'clgrad best':18s} " + " ".join(f"{pn} {v:8.3f}" for pn, v in per.items()) +
          f"  sum {sum(per.values()):8.3f}")
    print("\nweight gradient per layer and algorithm: ms (err32: float32 at N, torch float64)")
    for r in ROWS:
        if r.get("case") == "R18" and r.get("pass_") == "grad_weight" and "ms" in r:
            e32 = f"{r['err32']:.1e}" if r.get("err32") is not None else "-"
            print(f"  {r['layer']:22s} {r['algo']:22s} {r['ms']:8.3f} ms  err32 {e32}")
    print("failures (float64 errors over 1e-10, exceptions):", fails)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with open(Path(args.out) / "conv_R18.jsonl", "w") as f:
        for r in ROWS:
            f.write(json.dumps(dict(r, **meta)) + "\n")
    return fails


def set_igemm(tiles):
    t = dict(zip(("TSM", "TSN", "TSK", "WPTM", "WPTN"), tiles))
    for key in conv_gpu._IGEMM:
        conv_gpu._IGEMM[key] = t


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
