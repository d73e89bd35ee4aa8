"""Correctness smoke on the benchmark device (run first by bench/gpu/run.sh): every GEMM tile
candidate in several operand layouts, the tile sizes gemm picks by default, matmul through
autograd, and conv2d forward+backward (groups 1, 2, depthwise) against NumPy in float64.

    CLGRAD_DEVICE=gpu python bench/gpu/smoke.py

Prints one line per check and a summary; exits 1 if any check failed (the benchmarks still
run, and their tables carry the errors they measured).
"""
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import clgrad  # noqa: E402
from clgrad.ops import matmul as mm  # noqa: E402

FAILED = []


def check(name, got, ref, tol):
    err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
    ok = err <= tol
    print(f"{'PASS' if ok else 'FAIL'} {name}: max rel err {err:.2e}", flush=True)
    if not ok:
        FAILED.append(name)


def operand(rng, r, c, kind):
    """(numpy, clgrad view) of an r x c matrix: 'c' rows at offset 4, 't' transposed,
    's' step-2 view at offset 1 (the layouts that select each GEMM load variant)."""
    base = rng.standard_normal(2 * r * c + 8, dtype=np.float32)
    st, off = {"c": ((c, 1), 4), "t": ((1, r), 0), "s": ((2 * c, 2), 1)}[kind]
    a = np.lib.stride_tricks.as_strided(base[off:], (r, c), [s * 4 for s in st]).copy()
    return a, clgrad.as_strided(clgrad.from_numpy(base), (r, c), st, off)


def gemm_checks(rng):
    cands = mm.GPU_CANDIDATES if clgrad.default_device().kind != "cpu" else mm.CPU_CANDIDATES
    for i, cfg in enumerate(cands):
        for la, lb in ("cc", "tt", "ss", "ct", "tc"):
            for m, k, n in ((129, 260, 68), (300, 65, 7)):
                an, a = operand(rng, m, k, la)
                bn, b = operand(rng, k, n, lb)
                c = clgrad.empty(m, n)
                mm.gemm(c, a, b, tiles_override=cfg)
                ref = an.astype(np.float64) @ bn.astype(np.float64)
                check(f"gemm cand{i} {la}{lb} {m}x{k}x{n}", c.numpy(), ref, 1e-5)
    for n in (1024, 2048):  # the default tiles (tuned or not), big enough for 'large'
        an = rng.standard_normal((n, n), dtype=np.float32)
        bn = rng.standard_normal((n, n), dtype=np.float32)
        got = (clgrad.from_numpy(an) @ clgrad.from_numpy(bn)).numpy()
        check(f"matmul {n}^3 default tiles", got, an.astype(np.float64) @ bn, 1e-5)
    an = rng.standard_normal((3, 70, 40), dtype=np.float32)
    bn = rng.standard_normal((40, 33), dtype=np.float32)
    a = clgrad.from_numpy(an).requires_grad_()
    b = clgrad.from_numpy(bn).requires_grad_()
    y = a @ b
    y.backward(clgrad.ones_like(y))
    check("batched matmul (stride-0 batch of b)", y.detach().numpy(), an.astype(np.float64) @ bn,
          1e-5)
    check("matmul grad a", a.grad.numpy(), np.ones((3, 70, 33)) @ bn.T.astype(np.float64), 1e-5)
    check("matmul grad b", b.grad.numpy(),
          np.einsum("bmk,bmn->kn", an.astype(np.float64), np.ones((3, 70, 33))), 1e-5)


def conv_checks(rng):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from conv import np_conv, np_conv_backward
    import clgrad.nn.functional as F
    for n, c, h, o, k, pad, g in ((4, 16, 14, 32, 3, 1, 1), (2, 96, 13, 256, 5, 2, 2),
                                  (4, 64, 16, 64, 3, 1, 64), (3, 8, 9, 12, 3, 0, 4)):
        xn = rng.standard_normal((n, c, h, h))
        wn = rng.standard_normal((o, c // g, k, k)) / np.sqrt(c // g * k * k)
        bn = rng.standard_normal(o)
        x, w, b = (clgrad.from_numpy(v.astype(np.float32)).requires_grad_()
                   for v in (xn, wn, bn))
        y = F.conv2d(x, w, b, padding=pad, groups=g)
        gn = rng.standard_normal(tuple(y.shape))
        y.backward(clgrad.from_numpy(gn.astype(np.float32)))
        yr, saved = np_conv(xn, wn, bn, pad, g)
        gx, gw, gb = np_conv_backward(gn, saved)
        tag = f"conv2d N={n} C={c} {h}x{h} O={o} k={k} groups={g}"
        check(tag + " y", y.detach().numpy(), yr, 1e-4)
        check(tag + " dx", x.grad.numpy(), gx, 1e-4)
        check(tag + " dw", w.grad.numpy(), gw, 1e-4)
        check(tag + " db", b.grad.numpy(), gb, 1e-4)


def main():
    t0 = time.time()
    dev = clgrad.default_device()
    print("devices:", clgrad.devices(), flush=True)
    print(f"device: {dev} driver {dev.cl_device.driver_version} tiles {mm.tiles(dev)}",
          flush=True)
    rng = np.random.default_rng(0)
    for part in (gemm_checks, conv_checks):
        try:
            part(rng)
        except Exception:  # noqa: BLE001  (report and go on: the smoke must finish)
            FAILED.append(part.__name__)
            print(f"FAIL {part.__name__} raised:\n{traceback.format_exc()}", flush=True)
    print(f"smoke: {len(FAILED)} failed {FAILED} in {time.time() - t0:.1f} s", flush=True)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
