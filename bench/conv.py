"""Convolution: float32 NCHW conv2d forward and forward+backward (grads of input, weight,
bias), clgrad against a NumPy im2col + matmul reference, PyTorch and tinygrad.

    python bench/conv.py          # CPU shapes, 1 and 2 threads
    python bench/conv.py --gpu    # GPU shapes (PyTorch/cuDNN with TF32 off)

Cases (stride 1): S1 N=64 C=16 28x28 O=32 k=3 pad=1, groups 1, 2, 4; S2 AlexNet conv2 C=96
27x27 O=256 k=5 pad=2 groups=2, N=8 (GPU: N=128); S3 depthwise C=64 32x32 k=3 pad=1
groups=64, N=32 (GPU: N=128, C=256, 56x56). Forward runs under no_grad; forward+backward
takes the gradient of sum(y * g) for a fixed random g. For S3 the effective bandwidth counts
the bytes that must move at least: x and y forward; x, y, gy, gx and x again backward.
Needs clgrad.nn.functional.conv2d (exits with a note when it is missing).
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

CPU_CASES = [("S1 g=1", 64, 16, 28, 32, 3, 1, 1), ("S1 g=2", 64, 16, 28, 32, 3, 1, 2),
             ("S1 g=4", 64, 16, 28, 32, 3, 1, 4), ("S2 N=8", 8, 96, 27, 256, 5, 2, 2),
             ("S3 N=32", 32, 64, 32, 64, 3, 1, 64)]
# the targets first: a run cut short by its time limit loses S1, not S2/S3
GPU_CASES = [("S2 N=128", 128, 96, 27, 256, 5, 2, 2),
             ("S3 N=128 C=256 56x56", 128, 256, 56, 256, 3, 1, 256)] + CPU_CASES[:3]


# -- the NumPy reference: im2col + matmul (stride 1) -------------------------------------------
def np_conv(x, w, b, pad, groups):
    """Forward; returns y and what backward needs."""
    import numpy as np
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    g = groups
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    oh, ow = win.shape[2:4]
    col = win.reshape(n, g, cg, oh, ow, kh, kw).transpose(1, 2, 5, 6, 0, 3, 4).reshape(
        g, cg * kh * kw, n * oh * ow)
    wg = w.reshape(g, o // g, cg * kh * kw)
    y = np.matmul(wg, col).reshape(g, o // g, n, oh, ow).transpose(2, 0, 1, 3, 4).reshape(
        n, o, oh, ow) + b[None, :, None, None]
    return y, (col, wg, x.shape, w.shape, pad, g)


def np_conv_backward(gy, saved):
    import numpy as np
    col, wg, (n, c, h, wd), (o, cg, kh, kw), pad, g = saved
    oh, ow = gy.shape[2:]
    gyg = gy.reshape(n, g, o // g, oh * ow).transpose(1, 2, 0, 3).reshape(g, o // g, -1)
    gw = np.matmul(gyg, col.transpose(0, 2, 1)).reshape(o, cg, kh, kw)
    gb = gy.sum((0, 2, 3))
    gcol = np.matmul(wg.transpose(0, 2, 1), gyg).reshape(g, cg, kh, kw, n, oh, ow)
    gxp = np.zeros((n, c, h + 2 * pad, wd + 2 * pad), gy.dtype)
    for i in range(kh):
        for j in range(kw):
            gxp[:, :, i:i + oh, j:j + ow] += gcol[:, :, i, j].transpose(2, 0, 1, 3, 4).reshape(
                n, c, oh, ow)
    return gxp[:, :, pad:pad + h, pad:pad + wd], gw, gb


# -- one case -----------------------------------------------------------------------------------
def run_case(args, w, peers, case):
    import numpy as np
    import clgrad
    import clgrad.nn.functional as F
    name, n, c, h, o, k, pad, g = case
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((n, c, h, h), dtype=np.float32)
    wn = (rng.standard_normal((o, c // g, k, k)) / np.sqrt(c // g * k * k)).astype(np.float32)
    bn = rng.standard_normal(o, dtype=np.float32)
    oh = h + 2 * pad - k + 1
    gn = rng.standard_normal((n, o, oh, oh), dtype=np.float32)
    fwd, both = {}, {}

    x, wt, b = (clgrad.from_numpy(v).requires_grad_() for v in (xn, wn, bn))
    gy = clgrad.from_numpy(gn)

    def cl_fwd():
        with clgrad.no_grad():
            F.conv2d(x, wt, b, padding=pad, groups=g)
        clgrad.synchronize()

    def cl_both():
        x.grad = wt.grad = b.grad = None
        F.conv2d(x, wt, b, padding=pad, groups=g).backward(gy)
        clgrad.synchronize()
    fwd["clgrad"], both["clgrad"] = cl_fwd, cl_both
    err = check(x, wt, b, gy, F, pad, g, xn, wn, bn, gn, w.gpu)

    if "numpy" in peers and not w.gpu:
        fwd["numpy"] = lambda: np_conv(xn, wn, bn, pad, g)
        both["numpy"] = lambda: np_conv_backward(gn, np_conv(xn, wn, bn, pad, g)[1])
    torch = peers.get("torch")
    if torch is not None:
        dev = "cuda" if w.gpu else "cpu"
        sync = torch.cuda.synchronize if w.gpu else (lambda: None)
        tx, tw, tb = (torch.from_numpy(v).to(dev).requires_grad_() for v in (xn, wn, bn))
        tg = torch.from_numpy(gn).to(dev)
        tf = torch.nn.functional

        def t_fwd():
            with torch.no_grad():
                tf.conv2d(tx, tw, tb, padding=pad, groups=g)
            sync()

        def t_both():
            tx.grad = tw.grad = tb.grad = None
            tf.conv2d(tx, tw, tb, padding=pad, groups=g).backward(tg)
            sync()
        key = "torch-cuda" if w.gpu else "torch"
        fwd[key], both[key] = t_fwd, t_both
    tg_mod = peers.get("tinygrad")
    if tg_mod is not None:
        from tinygrad import Device, Tensor, TinyJit
        gx_, gw_, gb_, gg_ = (Tensor(v).realize() for v in (xn, wn, bn, gn))

        @TinyJit
        def tg_fwd(xx, ww, bb):
            return xx.conv2d(ww, bb, groups=g, padding=pad).realize()

        @TinyJit
        def tg_both(xx, ww, bb, gg):
            y = xx.conv2d(ww, bb, groups=g, padding=pad)
            grads = (y * gg).sum().gradient(xx, ww, bb)
            return [t.realize() for t in grads]
        fwd["tinygrad"] = lambda: (tg_fwd(gx_, gw_, gb_), Device["CL"].synchronize())
        both["tinygrad"] = lambda: (tg_both(gx_, gw_, gb_, gg_), Device["CL"].synchronize())

    flops = 2 * n * o * oh * oh * (c // g) * k * k
    for metric, fns, mult in (("forward", fwd, 1), ("forward+backward", both, 3)):
        t0 = time.perf_counter()
        times = common.measure(fns, args.reps, warmup=2, budget=args.budget)
        for peer, ts in times.items():
            w.emit(name, peer, f"{metric} ms", "ms", ts, scale=1e3,
                   gflops=mult * flops / 1e9 / sorted(ts)[len(ts) // 2],
                   **({"max_rel_err": err} if peer == "clgrad" else {}))
            if name.startswith("S3"):
                nbytes = 4 * (2 * n * c * h * h if metric == "forward" else 5 * n * c * h * h)
                w.emit(name, peer, f"{metric} effective bandwidth", "GB/s", ts,
                       scale=nbytes / 1e9, higher_is_better=True)
        print(f"{name} {metric}: {time.perf_counter() - t0:.1f} s", flush=True)


def check(x, wt, b, gy, F, pad, g, xn, wn, bn, gn, gpu):
    """Max relative error of clgrad's y, dx, dw, db against NumPy (float64 on the CPU)."""
    import numpy as np
    x.grad = wt.grad = b.grad = None
    y = F.conv2d(x, wt, b, padding=pad, groups=g)
    y.backward(gy)
    sl = slice(0, 2) if gpu or xn.size > 5e6 else slice(None)  # big: samples 0, 1, no dw
    y_ref, saved = np_conv(xn[sl].astype(np.float64), wn.astype(np.float64),
                           bn.astype(np.float64), pad, g)
    refs = (y_ref,) + np_conv_backward(gn[sl].astype(np.float64), saved)
    got = (y.detach().numpy()[sl], x.grad.numpy()[sl], wt.grad.numpy(), b.grad.numpy())
    if sl != slice(None):
        got, refs = got[:2], refs[:2]
    return float(max(np.abs(a - r).max() / max(np.abs(r).max(), 1e-30)
                     for a, r in zip(got, refs)))


def worker(args, w: common.Worker):
    common.require_clgrad_nn(w, "conv")
    w.device()
    peers = {}
    if w.want("numpy"):
        peers["numpy"] = True
    if w.want("torch") or w.want("torch-cuda"):
        peers["torch"] = w.setup_torch()
    if w.want("tinygrad"):
        tg = w.setup_tinygrad()
        if tg is not None:
            peers["tinygrad"] = tg
    cases = GPU_CASES if w.gpu else CPU_CASES
    if args.cases:
        cases = [c for c in cases if any(s in c[0] for s in args.cases.split(","))]
    if args.quick:
        cases = cases[:1]
    for case in cases:
        try:
            run_case(args, w, peers, case)
        except Exception as e:  # noqa: BLE001  (one failing case must not hide the others)
            w.note(f"{case[0]}: failed ({type(e).__name__}: {str(e)[:300]})")
    w.emit_meta()


def extra_args(p):
    p.add_argument("--cases", default=None, help="comma-separated case name prefixes (S1,S3)")


if __name__ == "__main__":
    common.main("conv", __doc__, worker, extra_args)
