"""Adversarial checks of the GPU fast paths of 2026-12-04 at sizes that take them unforced
(split reductions, elementwise _x4, batch norm's float4 and split paths, depthwise forward,
pointwise 1 x 1 maps, max pooling's small tiles, Winograd weight gradients), against float64
NumPy. Prints one row per case (max error, tolerance, ok) and exits 1 if any fails; writes
nothing.

    CLGRAD_DEVICE=gpu python bench/gpu/adversarial.py
"""
import sys

import numpy as np

import clgrad
import clgrad.nn.functional as F

RNG = np.random.default_rng(0)
ROWS = []


def check(name, got, want, tol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    finite = np.isfinite(want)
    same_nan = np.array_equal(np.isnan(got), np.isnan(want))
    scale = max(1.0, float(np.abs(want[finite]).max())) if finite.any() else 1.0
    err = float(np.abs(got[finite] - want[finite]).max()) / scale if finite.any() else 0.0
    ok = same_nan and np.array_equal(got[~finite], want[~finite], equal_nan=True) and err <= tol
    ROWS.append((name, err, tol, ok))


def reductions():
    x = RNG.standard_normal((3, 1 << 18)).astype(np.float32)  # few outputs, many elements
    x[1, -1] = np.nan
    t, xd = clgrad.tensor(x), x.astype(np.float64)
    for op, ref in (("sum", np.sum), ("mean", np.mean), ("amax", np.max), ("amin", np.min)):
        check(f"reduce {op}(1) NaN last", getattr(t, op)(1).numpy(), ref(xd, 1), 1e-5)
        check(f"reduce {op}() over a transpose", getattr(t.t(), op)().numpy(), ref(xd), 1e-5)
    xi = RNG.integers(-9, 9, (1 << 20,)).astype(np.int32)
    check("reduce int32 sum", clgrad.tensor(xi).sum().numpy(), xi.astype(np.int64).sum(), 0)
    y = RNG.standard_normal((1 << 19,))
    check("reduce float64 var", clgrad.tensor(y).var().numpy(), y.var(ddof=1), 1e-12)
    e = clgrad.tensor(x[:1]).expand(4, 1 << 18)
    check("reduce sum of stride-0 rows", e.sum(1).numpy(), np.repeat(xd[:1].sum(1), 4), 1e-5)


def elementwise():
    a = RNG.standard_normal((1 << 18) + 3).astype(np.float32)
    a[:4] = [np.nan, -0.0, np.inf, -np.inf]
    b = RNG.standard_normal((1 << 18) + 3).astype(np.float32)
    ta, tb = clgrad.tensor(a), clgrad.tensor(b)
    with np.errstate(all="ignore"):
        check("ew a + b", (ta + tb).numpy(), a + b, 0)
        check("ew maximum NaN", clgrad.maximum(ta, tb).numpy(), np.maximum(a, b), 0)
        check("ew relu -0/NaN", ta.relu().numpy(), np.where(a < 0, 0, a), 0)
        check("ew offset views a[1:] * b[:-1]", (ta[1:] * tb[:-1]).numpy(), a[1:] * b[:-1], 0)
        c = ta.clone()
        c.add_(c, alpha=3)
        check("ew x.add_(x, alpha=3)", c.numpy(), a + 3 * a, 1e-7)


def batch_norm():
    for name, shape, lead, mean, spread in (("float4 NCHW", (8, 16, 32, 32), 0, 0, 1),
                                            ("scalar offset 1", (8, 16, 32, 32), 1, 0, 1),
                                            ("float4 mean 3e19", (8, 16, 32, 32), 0, 3e19, 1e17),
                                            ("split C=2 float4", (64, 2, 64, 64), 0, 2, 1)):
        flat = (mean + spread * RNG.standard_normal(lead + int(np.prod(shape))))
        x = clgrad.tensor(flat.astype(np.float32))[lead:].view(*shape)
        xd = x.numpy().astype(np.float64)
        ax = (0, 2, 3)
        ref = (xd - xd.mean(ax, keepdims=True)) / np.sqrt(xd.var(ax, keepdims=True) + 1e-5)
        rv = clgrad.ones(shape[1])
        y = F.batch_norm(x, clgrad.zeros(shape[1]), rv, training=True, momentum=1.0)
        check(f"bn {name} y", y.numpy(), ref, 2e-4)
        m = xd.size // shape[1]
        check(f"bn {name} running var", rv.numpy(), xd.var(ax) * m / (m - 1), 1e-4)


def conv_ref(x, w, pad, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                y[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", xp[:, g * cg:(g + 1) * cg, i:i + oh, j:j + ow],
                    w[g * og:(g + 1) * og, :, i, j])
    return y


def convs():
    for algo, (n, c, o, h, k, pad, groups) in (("depthwise_gpu", (16, 96, 96, 7, 3, 1, 96)),
                                                ("pointwise", (128, 480, 20, 1, 1, 0, 1)),
                                                ("winograd", (8, 32, 48, 14, 3, 1, 1)),
                                                ("winograd", (4, 16, 24, 11, 5, 2, 1))):
        x = RNG.standard_normal((n, c, h, h)).astype(np.float32)
        wb = RNG.standard_normal((o + 2, c // groups, k, k)).astype(np.float32)
        p = clgrad.tensor(wb, requires_grad=True)
        with clgrad.backends.flags(conv_algorithm=algo):
            y = F.conv2d(clgrad.tensor(x), p[1:1 + o], padding=pad, groups=groups)
            g = RNG.standard_normal(tuple(y.shape)).astype(np.float32)
            y.backward(clgrad.tensor(g))
        used = clgrad.backends.last_conv_algorithms
        check(f"conv {algo} k{k} fwd ({used['forward']})", y.detach().numpy(),
              conv_ref(x.astype(np.float64), wb[1:1 + o].astype(np.float64), pad, groups),
              1e-4)
        # the weight gradient as a correlation of x with g (per group), padded alike
        xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        gd, og, cg = g.astype(np.float64), o // groups, c // groups
        dw = np.zeros((o, cg, k, k))
        oh = g.shape[2]
        for gi in range(groups):
            for i in range(k):
                for j in range(k):
                    dw[gi * og:(gi + 1) * og, :, i, j] = np.einsum(
                        "nchw,nohw->oc", xp[:, gi * cg:(gi + 1) * cg, i:i + oh, j:j + oh],
                        gd[:, gi * og:(gi + 1) * og])
        full = np.zeros(wb.shape)
        full[1:1 + o] = dw
        check(f"conv {algo} k{k} wgrad ({used['grad_weight']})", p.grad.numpy(), full, 1e-3)


def pooling():
    for k in (2, 3, 4):
        x = RNG.integers(0, 4, (32, 64, 28, 29)).astype(np.float32)  # ties
        x[0, 0, 0, 1] = np.nan
        y = F.max_pool2d(clgrad.tensor(x), k, k, ceil_mode=True)
        oh, ow = -(-(28 - k) // k) + 1, -(-(29 - k) // k) + 1
        xp = np.full((32, 64, oh * k, ow * k), -np.inf, np.float32)
        xp[:, :, :28, :29] = x
        win = xp.reshape(32, 64, oh, k, ow, k).transpose(0, 1, 2, 4, 3, 5).reshape(
            32, 64, oh, ow, k * k)
        ref = np.where(np.isnan(win).any(-1), np.nan, win.max(-1))
        check(f"max_pool {k}x{k} ceil_mode ties NaN", y.numpy(), ref, 0)


def main():
    print(f"device: {clgrad.empty(0)._storage.device.name}")
    for part in (reductions, elementwise, batch_norm, convs, pooling):
        part()
    print(f"{'case':<48} {'max rel err':>12} {'tol':>8}  ok")
    for name, err, tol, ok in ROWS:
        print(f"{name:<48} {err:12.3e} {tol:8.0e}  {'ok' if ok else 'FAIL'}")
    bad = [r for r in ROWS if not r[3]]
    print(f"{len(ROWS) - len(bad)} of {len(ROWS)} ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
