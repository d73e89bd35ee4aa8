"""float16 results against float64 NumPy on the same (half-rounded) inputs: each op must
round its result once, as PyTorch's float16 ops do (computed in float32, "opmath"), so
|got - ref| <= 2^-11 |ref| (half a half ulp, relative) + a float32 term for what the float32
computation itself may lose (k * 2^-24 * the sum of |terms|). Each test found a defect:
intermediates rounded to half (or overflowing there) before the result."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F

EPS16, EPS32 = 2.0 ** -11, 2.0 ** -24


def _half(a):
    return np.asarray(a, np.float16)


def _t(a, grad=False):
    t = clgrad.tensor(np.asarray(a, np.float32)).half()
    return t.requires_grad_(True) if grad else t


def _check(got, ref, terms=None, k=8):
    got = got.detach().float().numpy().astype(np.float64)
    ref = np.asarray(ref, np.float64)
    terms = np.abs(ref) if terms is None else terms
    bound = EPS16 * np.abs(ref) + k * EPS32 * terms + 2.0 ** -25  # (+ the least subnormal/2)
    bad = ~(np.abs(got - ref) <= bound)
    assert not bad.any(), (f"{bad.sum()} of {bad.size} outside one rounding; first: got "
                           f"{got[bad][:4]}, want {ref[bad][:4]}")


def _sig(x):
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) /
                    (1 + np.exp(-np.abs(x))))


X = _half(np.concatenate([np.linspace(-16, 16, 513), [-11.1, -12.3, 1.9, 0.3]]))


def test_silu_sigmoid_mish_compute_in_float_not_half(fp16):
    # exp(12.3) overflows half: silu(-12.3) was -0.0 (-5.6e-05 exact); sigmoid was 1.6 ulp off
    x = X.astype(np.float64)
    _check(F.silu(_t(X)), x * _sig(x))
    _check(clgrad.sigmoid(_t(X)), _sig(x))
    _check(F.mish(_t(X)), x * np.tanh(np.log1p(np.exp(x))))
    _check(F.hardsigmoid(_t(X)), np.clip(x / 6 + 0.5, 0, 1))


def test_silu_and_softplus_gradients_compute_in_float(fp16):
    x = X.astype(np.float64)
    t = _t(X, grad=True)
    F.silu(t).sum().backward()
    s = _sig(x)
    _check(t.grad, s * (1 + x * (1 - s)), terms=s * (1 + np.abs(x)))
    t = _t(X, grad=True)
    F.softplus(t).sum().backward()
    _check(t.grad, s)


def test_add_sub_alpha_scale_in_float_before_the_sum(fp16):
    # a - (-7) b was a + half(7 b): 0.0 where the exact result is 2^-10
    rng = np.random.default_rng(0)
    a, b = _half(rng.standard_normal(2048) * 3), _half(rng.standard_normal(2048) * 3)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for alpha in (-7, 3.3):
        terms = np.abs(a64) + np.abs(alpha * b64)
        _check(clgrad.sub(_t(a), _t(b), alpha=alpha), a64 - alpha * b64, terms)
        _check(clgrad.add(_t(a), _t(b), alpha=alpha), a64 + alpha * b64, terms)


def test_addcmul_addcdiv_lerp_round_once(fp16):
    rng = np.random.default_rng(1)
    a, b, c = (_half(rng.standard_normal(2048) * 3) for _ in range(3))
    a64, b64, c64 = (v.astype(np.float64) for v in (a, b, c))
    c64p = _half(np.abs(c64) + 0.25).astype(np.float64)
    _check(clgrad.addcmul(_t(a), _t(b), _t(c), value=0.3), a64 + 0.3 * b64 * c64,
           np.abs(a64) + np.abs(0.3 * b64 * c64))
    _check(clgrad.addcdiv(_t(a), _t(b), _t(c64p), value=0.3), a64 + 0.3 * b64 / c64p,
           np.abs(a64) + np.abs(0.3 * b64 / c64p))
    _check(clgrad.lerp(_t(a), _t(b), 0.3), a64 + 0.3 * (b64 - a64),
           np.abs(a64) + np.abs(0.3 * (b64 - a64)))


def test_layer_norm_float16_keeps_mean_and_rstd_in_float(fp16):
    # rn_fwd ran in half: mean rounded to half, sums in half (175 ulp off at rows of 300)
    rng = np.random.default_rng(2)
    x = _half(rng.standard_normal((16, 300)) * 3 + 1)
    x64 = x.astype(np.float64)
    mu, var = x64.mean(1, keepdims=True), x64.var(1, keepdims=True)
    ref = (x64 - mu) / np.sqrt(var + 1e-5)
    _check(F.layer_norm(_t(x), (300,)), ref, terms=np.abs(x64 / np.sqrt(var)), k=64)
    g = F.group_norm(_t(x).reshape(4, 8, 150), 2)
    xg = x64.reshape(4, 2, -1)
    mg, vg = xg.mean(2, keepdims=True), xg.var(2, keepdims=True)
    _check(g.reshape(4, 2, -1), (xg - mg) / np.sqrt(vg + 1e-5), k=64,
           terms=np.abs(xg / np.sqrt(vg)))


def test_sdpa_float16_scores_in_float(fp16):
    # scores rounded to half (|s| ~ 100, ulp 0.06) before softmax: outputs 70 ulps off
    rng = np.random.default_rng(3)
    q, k, v = (_half(rng.standard_normal((2, 9, 16)) * s) for s in (8, 8, 1))
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    s = q64 @ k64.transpose(0, 2, 1) / math.sqrt(16)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ref = p @ v64
    got = F.scaled_dot_product_attention(_t(q), _t(k), _t(v))
    assert got.dtype is clgrad.float16
    # float32 scores of |s| ~ 100 carry 2^-24 * 100 relative error into exp: k = 512
    _check(got, ref, terms=p @ np.abs(v64), k=512)


def test_matmul_broadcast_weight_gradient_sums_in_float(fp16):
    # (B, M, K) @ (K, N): dL/db summed B half-rounded products (836 ulp off at B = 37)
    rng = np.random.default_rng(4)
    a, b = _half(rng.standard_normal((37, 3, 100))), _half(rng.standard_normal((100, 29)))
    g = _half(rng.standard_normal((37, 3, 29)))
    tb = _t(b, grad=True)
    (_t(a) @ tb).backward(_t(g))
    a2, g2 = a.astype(np.float64).reshape(-1, 100), g.astype(np.float64).reshape(-1, 29)
    _check(tb.grad, a2.T @ g2, terms=np.abs(a2).T @ np.abs(g2), k=16)


def test_0dim_float32_tensor_operand_stays_in_float(fp16):
    """PyTorch takes a 0-dim float32/float64 tensor as a number (in float, not rounded to
    half first): x * tensor(1e5) is 5e4, not inf; the result float16, rounded once."""
    x = _t([0.5, -0.25])
    w = clgrad.tensor(1e5)
    for got, want in ((x * w, [5e4, -2.5e4]), (w * x, [5e4, -2.5e4]),
                      (x / clgrad.tensor(1e-5), [5e4, -2.5e4]),
                      (x + clgrad.tensor(3.0), [3.5, 2.75]),
                      (clgrad.tensor(3.0) - x, [2.5, 3.25]),
                      (x * clgrad.tensor(1e5, dtype=clgrad.float64), [5e4, -2.5e4])):
        assert got.dtype is clgrad.float16
        _check(got, want)
    x.requires_grad_(True)
    (x * w).sum().backward()  # the gradient of x is w = 1e5: beyond float16, inf as PyTorch
    assert x.grad.dtype is clgrad.float16


# -- the division's gradient, the activations' parameters, cross entropy (2026-12 pass) -------
def _check_ulp(got, ref, terms=None, k=8, bits=11, emin=-14):
    """got within half an ulp of ``ref`` (the spacing of ``bits``-bit significands at ref,
    floored at 2^emin: float16 11 and -14, bfloat16 8 and -126), the result of one rounding,
    plus k float32 roundings of ``terms`` (what the float computation may lose). _check's
    2^-11 |ref| is up to a whole ulp near the top of a binade: too wide for 0.6-0.9 ulp."""
    got = got.detach().float().numpy().astype(np.float64)
    ref = np.asarray(ref, np.float64)
    terms = np.abs(ref) if terms is None else terms
    ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), 2.0 ** emin))) - (bits - 1))
    err = np.abs(got - ref)
    bad = ~(err <= 0.5 * ulp + k * EPS32 * terms)
    assert not bad.any(), (f"{bad.sum()} of {bad.size} beyond half an ulp; worst "
                           f"{np.max(err[bad] / ulp[bad]):.3g} ulp; first: got {got[bad][:4]}, "
                           f"want {ref[bad][:4]}")


def _bf(a, grad=False):
    t = clgrad.tensor(np.asarray(a, np.float32)).to(clgrad.bfloat16)
    return t.requires_grad_(True) if grad else t


def _bf_vals(a):
    return _bf(a).float().numpy().astype(np.float64)


def test_div_divisor_gradient_rounds_once_in_float(fp16):
    # -g a / b^2 was -(g * half(a / b)) / b, rounded three times: 1.1-1.4 ulp for c / x, 1.9
    # with a g; inf where g a / b overflows half (a / b = 6e4 / 0.2, g = 1e-3: gradient 1500);
    # 36 ulp where a / b is a half subnormal (1e-4 / 1000, g = 1e4). PyTorch's float16 rounds
    # three times too (2.8 ulp; inf for 7e4 / x, whose 7e4 it takes in half).
    rng = np.random.default_rng(5)
    x = _half(rng.uniform(2, 100, 2048))
    x64 = x.astype(np.float64)
    for c in (3.0, 6e4, 7e4):
        t = _t(x, grad=True)
        (c / t).sum().backward()
        _check_ulp(t.grad, -c / x64 ** 2)
    sign = rng.choice([-1.0, 1.0], 2048)
    for a, b, g in ((rng.standard_normal(2048) * 3, rng.uniform(0.5, 4, 2048) * sign,
                     rng.standard_normal(2048)),
                    (rng.uniform(1e2, 1e3, 2048), rng.uniform(2, 100, 2048),
                     rng.uniform(10, 100, 2048)),
                    (rng.uniform(1e2, 6e4, 2048), rng.uniform(0.1, 1, 2048) * sign,
                     rng.uniform(1e-4, 1e-2, 2048)),
                    (rng.uniform(1e-4, 1e-3, 2048), rng.uniform(10, 1000, 2048),
                     rng.uniform(1e2, 1e4, 2048))):
        a, b, g = _half(a), _half(b), _half(g)
        a64, b64, g64 = (v.astype(np.float64) for v in (a, b, g))
        keep = np.abs(g64 * a64 / b64 ** 2) < 6e4  # a representable gradient
        a, b, g, a64, b64, g64 = (v[keep] for v in (a, b, g, a64, b64, g64))
        ta, tb = _t(a, grad=True), _t(b, grad=True)
        (ta / tb).backward(_t(g))
        _check_ulp(ta.grad, g64 / b64)
        _check_ulp(tb.grad, -g64 * a64 / b64 ** 2)
    # bfloat16 runs float32's division (its backward included) and rounds once: kept so
    xb = _bf_vals(x)
    t = _bf(x, grad=True)
    (6e4 / t).sum().backward()
    _check_ulp(t.grad, -6e4 / xb ** 2, bits=8, emin=-126)
    ab, bb = _bf_vals(rng.standard_normal(512) * 3), _bf_vals(rng.uniform(0.5, 4, 512))
    ta, tb = _bf(ab, grad=True), _bf(bb, grad=True)
    (ta / tb).sum().backward()
    _check_ulp(tb.grad, -ab / bb ** 2, bits=8, emin=-126)


_KINKS = _half([v * s for v in (0.1, 0.3, 0.7) for s in (-1, 1)])
XK = np.concatenate([X, _KINKS, np.nextafter(_KINKS, _half(-1)), np.nextafter(_KINKS, _half(1))])
_SELU_A, _SELU_S = 1.6732632423543772848, 1.0507009873554804934


def _sp(v):
    return np.maximum(v, 0) + np.log1p(np.exp(-np.abs(v)))


# (name, f(t), forward(x), derivative(x)) in float64, each parameter the number given (not
# rounded to half); the derivative's choices at the kinks are PyTorch's
PARAM_ACTS = [
    ("leaky_relu", lambda t: F.leaky_relu(t, 0.01), lambda x: np.where(x > 0, x, 0.01 * x),
     lambda x: np.where(x > 0, 1, 0.01)),
    ("leaky_relu_", lambda t: F.leaky_relu(t * 1, 0.3, inplace=True),
     lambda x: np.where(x > 0, x, 0.3 * x), lambda x: np.where(x > 0, 1, 0.3)),
    ("rrelu_eval", lambda t: F.rrelu(t, 0.1, 0.3), lambda x: np.where(x > 0, x, 0.2 * x),
     lambda x: np.where(x > 0, 1, 0.2)),
    ("elu", lambda t: F.elu(t, 0.3), lambda x: np.where(x > 0, x, 0.3 * np.expm1(x)),
     lambda x: np.where(x > 0, 1, 0.3 * np.exp(x))),
    ("elu_", lambda t: F.elu(t * 1, 1.7, inplace=True),
     lambda x: np.where(x > 0, x, 1.7 * np.expm1(x)),
     lambda x: np.where(x > 0, 1, 1.7 * np.exp(x))),
    ("celu", lambda t: F.celu(t, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x / 0.7)),
     lambda x: np.where(x > 0, 1, np.exp(x / 0.7))),
    ("selu", F.selu, lambda x: _SELU_S * np.where(x > 0, x, _SELU_A * np.expm1(x)),
     lambda x: _SELU_S * np.where(x > 0, 1, _SELU_A * np.exp(x))),
    ("softplus", lambda t: F.softplus(t, 1.7, 5.0),
     lambda x: np.where(1.7 * x > 5, x, _sp(1.7 * x) / 1.7),
     lambda x: np.where(1.7 * x > 5, 1, _sig(1.7 * x))),
    ("softplus_0.3", lambda t: F.softplus(t, 1.0, 0.3), lambda x: np.where(x > 0.3, x, _sp(x)),
     lambda x: np.where(x > 0.3, 1, _sig(x))),
    ("hardtanh", lambda t: F.hardtanh(t, -0.1, 0.7), lambda x: np.clip(x, -0.1, 0.7),
     lambda x: np.where((x <= -0.1) | (x >= 0.7), 0, 1)),
    ("hardtanh_", lambda t: F.hardtanh(t * 1, -0.1, 0.7, inplace=True),
     lambda x: np.clip(x, -0.1, 0.7), lambda x: np.where((x <= -0.1) | (x >= 0.7), 0, 1)),
    ("threshold", lambda t: F.threshold(t, 0.3, 0.1), lambda x: np.where(x > 0.3, x, 0.1),
     lambda x: np.where(x > 0.3, 1, 0)),
    ("threshold_", lambda t: F.threshold(t * 1, -0.1, 0.7, inplace=True),
     lambda x: np.where(x > -0.1, x, 0.7), lambda x: np.where(x > -0.1, 1, 0)),
    ("softshrink", lambda t: F.softshrink(t, 0.3),
     lambda x: np.where(x > 0.3, x - 0.3, np.where(x < -0.3, x + 0.3, 0)),
     lambda x: np.where(np.abs(x) <= 0.3, 0, 1)),
    ("hardshrink", lambda t: F.hardshrink(t, 0.7), lambda x: np.where(np.abs(x) > 0.7, x, 0),
     lambda x: np.where(np.abs(x) <= 0.7, 0, 1)),
]


@pytest.mark.parametrize("name, f, fwd, der", PARAM_ACTS, ids=[p[0] for p in PARAM_ACTS])
def test_activation_parameters_in_float(fp16, name, f, fwd, der):
    # the parameters were rounded to half: leaky_relu(x, 0.01) 0.92 ulp off, celu's gradient
    # 5.6 ulp (exp(x / half(0.7))), softplus 2.7 ulp (beta x > threshold decided with
    # half(1.7)); at the kinks the other branch (threshold(half(0.3), 0.3) gave the value;
    # hardtanh's gradient at half(-0.1) > -0.1 was 0; softshrink(half(0.3) + ulp) 51 ulp)
    x = XK.astype(np.float64)
    g = _half(np.random.default_rng(6).uniform(0.5, 2, x.size) * np.where(x > 1, 1, -1))
    t = _t(XK, grad=True)
    y = f(t)
    y.backward(_t(g))
    _check_ulp(y, fwd(x))
    _check_ulp(t.grad, g.astype(np.float64) * der(x))


def test_activation_kinks_decided_as_pytorch_float16(fp16):
    """PyTorch's float16 hardtanh, threshold and softplus compare with their parameters in
    float (so do these now): the same branch, output and gradient at half(p) and its
    neighbours. (softshrink and hardshrink compare with lambd rounded to half there, both on
    CPU and CUDA; clgrad takes lambd in float as for the others and as its bfloat16 and float32
    do: they differ from PyTorch's float16 at |x| = half(lambd) only.)"""
    torch = pytest.importorskip("torch")
    xs = np.concatenate([_KINKS, np.nextafter(_KINKS, _half(-1)), np.nextafter(_KINKS, _half(1))])
    for p in (0.1, 0.3, 0.7):
        for name, fn in (("hardtanh", lambda m, t: m.hardtanh(t, -p, p)),
                         ("hardtanh_", lambda m, t: m.hardtanh(t * 1, -p, p, inplace=True)),
                         ("threshold", lambda m, t: m.threshold(t, p, -5.0)),
                         ("threshold_", lambda m, t: m.threshold(t * 1, -p, 5.0, inplace=True)),
                         ("softplus", lambda m, t: m.softplus(t, 1.0, p))):
            tt = torch.tensor(xs).requires_grad_(True)
            yt = fn(torch.nn.functional, tt)
            yt.sum().backward()
            tc = _t(xs, grad=True)
            yc = fn(F, tc)
            yc.sum().backward()
            for a, b, what in ((yc, yt, "output"), (tc.grad, tt.grad, "gradient")):
                np.testing.assert_array_equal(a.detach().float().numpy(),
                                              b.detach().float().numpy(),
                                              err_msg=f"{name} p={p}: {what}")


def _ce_ref(x, t, w, eps, ignore):
    """Cross entropy of float64 logits (N, C): per-row losses, their gradients, the rows'
    weights, and float32's error terms of both (k * 2^-24 of which the check allows)."""
    n, c = x.shape
    m = x.max(1, keepdims=True)
    s = np.exp(x - m).sum(1, keepdims=True)
    logp = x - m - np.log(s)
    p = np.exp(logp)
    valid = t != ignore
    tt = np.where(valid, t, 0)
    wt = w[tt] * valid
    rows = np.arange(n)
    loss = ((1 - eps) * wt * -logp[rows, tt] + eps / c * -(w * logp).sum(1) * valid)
    hit = np.zeros_like(x)
    hit[rows, tt] = (1 - eps) * wt
    wall = w.sum()
    grad = (p * ((1 - eps) * wt[:, None] + eps * wall / c) - hit - eps * w / c) * valid[:, None]
    lterms = ((1 - eps) * wt * (np.abs(x[rows, tt]) + np.abs(m[:, 0]) + np.log(s[:, 0])) +
              eps / c * (w * (np.abs(x) + np.abs(m) + np.log(s))).sum(1)) * valid
    gterms = (p * ((1 - eps) * wt[:, None] + eps * wall / c) * (1 + np.abs(x) + np.abs(m)) +
              hit + eps * w / c) * valid[:, None]
    return loss, grad, wt, lterms, gterms


def _nct_rows(a):
    """(N, C, S) -> (N S, C): the class dim last, a row per position."""
    return np.moveaxis(a, 1, -1).reshape(-1, a.shape[1])


@pytest.mark.parametrize("shape", [(16, 10), (64, 100), (4, 7, 6)])
def test_cross_entropy_float16_rounds_once(fp16, shape):
    # ce_fwd/ce_bwd ran in half: the row's max, sum of exps, p = exp(x - m) / s and g / denom
    # each rounded to half (the gradient up to 120 ulp off; PyTorch's float16 28: it rounds
    # log_softmax's output, then computes its backward from that in float)
    rng = np.random.default_rng(7)
    nc = shape[1]
    x = _half(rng.standard_normal(shape) * (8 if nc == 10 else 3))
    tgt = rng.integers(0, nc, (shape[0],) + shape[2:])
    tgt.flat[::5] = 3
    w = _half(rng.uniform(0.2, 2, nc))
    xr = _nct_rows(x.astype(np.float64)) if x.ndim == 3 else x.astype(np.float64)
    for eps, weighted, ignore in ((0.0, False, -100), (0.1, False, -100), (0.0, True, -100),
                                  (0.1, True, 3)):
        w64 = w.astype(np.float64) if weighted else np.ones(nc)
        loss, grad, wt, lterms, gterms = _ce_ref(xr, tgt.reshape(-1), w64, eps, ignore)
        for red in ("mean", "sum", "none"):
            gl = _half(rng.uniform(0.5, 2, tgt.shape)) if red == "none" else _half(1.5)
            scale = np.asarray(gl, np.float64).reshape(-1)[:, None] * np.ones((1, nc))
            ref, lt = loss.reshape(tgt.shape), lterms.reshape(tgt.shape)
            if red != "none":
                ref, lt = loss.sum(), lterms.sum()
                if red == "mean":
                    ref, lt, scale = ref / wt.sum(), lt / wt.sum(), scale / wt.sum()
            tx = _t(x, grad=True)
            out = F.cross_entropy(tx, clgrad.tensor(tgt), weight=_t(w) if weighted else None,
                                  ignore_index=ignore, reduction=red, label_smoothing=eps)
            out.backward(_t(gl))
            assert out.dtype is clgrad.float16 and tx.grad.dtype is clgrad.float16
            _check_ulp(out, ref, lt, k=64)
            got = tx.grad if x.ndim == 2 else tx.grad.permute(0, 2, 1).reshape(-1, nc)
            _check_ulp(got, scale * grad, np.abs(scale) * gterms, k=16)


def test_nll_and_probability_targets_float16_round_once(fp16):
    # nll_loss of half log-probabilities: 'mean' divided by a half sum of weights (gradient 2.2
    # ulp); probability targets: log_softmax, the smoothing, the product and the sum each
    # rounded to half (gradient 5.3 ulp with label_smoothing 0.1; PyTorch's 11); a mean over
    # 70000 rows: the half sum of their weights was inf, the loss NaN
    rng = np.random.default_rng(8)
    n, nc = 64, 50
    lp = _half(np.log(rng.dirichlet(np.ones(nc), n)))
    tgt = rng.integers(0, nc, n)
    w = _half(rng.uniform(0.2, 2, nc))
    lp64, w64 = lp.astype(np.float64), w.astype(np.float64)
    for red in ("mean", "sum", "none"):
        per = -w64[tgt] * lp64[np.arange(n), tgt]
        denom = w64[tgt].sum() if red == "mean" else 1.0
        ref = per if red == "none" else per.sum() / denom
        tx = _t(lp, grad=True)
        out = F.nll_loss(tx, clgrad.tensor(tgt), weight=_t(w), reduction=red)
        out.sum().backward()
        _check_ulp(out, ref, k=64)
        want = np.zeros((n, nc))
        want[np.arange(n), tgt] = -w64[tgt] / denom
        _check_ulp(tx.grad, want)
    x = _half(rng.standard_normal((n, 20)) * 4)
    q = _half(rng.dirichlet(np.ones(20), n))
    x64, q64 = x.astype(np.float64), q.astype(np.float64)
    logp = x64 - np.log(np.exp(x64).sum(1, keepdims=True))
    for eps in (0.0, 0.1):
        qq = q64 * (1 - eps) + eps / 20
        tx = _t(x, grad=True)
        out = F.cross_entropy(tx, _t(q), label_smoothing=eps)
        out.backward()
        assert out.dtype is clgrad.float16
        _check_ulp(out, -(qq * logp).sum(1).mean(), k=64)
        g = (np.exp(logp) * qq.sum(1, keepdims=True) - qq) / n
        _check_ulp(tx.grad, g, terms=np.abs(g) + np.exp(logp) / n * (1 + np.abs(x64)), k=16)
    x = _half(rng.standard_normal((70000, 3)))
    tgt = rng.integers(0, 3, 70000)
    x64 = x.astype(np.float64)
    ref = (np.log(np.exp(x64).sum(1)) - x64[np.arange(70000), tgt]).mean()
    _check_ulp(F.cross_entropy(_t(x), clgrad.tensor(tgt)), ref, terms=ref, k=512)
