"""bfloat16 through the reductions, scans, sorts, softmax and losses, and the normalisations
(clgrad/ops/reduce.py, scan.py, sort.py, loss.py, norm.py): computed in float32, the result
rounded once to bfloat16 (ew.via_float32), as PyTorch's bfloat16 ops compute in float.

Oracle: NumPy float64 on the bfloat16 inputs (every input is made bfloat16-exact with ``rb``),
the exact result rounded to bfloat16 once; the op's result must be within 1 bfloat16 ulp of it
(relative 2^-7: one ulp is 2^-8 to 2^-7 of the value), plus an absolute floor for the float32
kernels' own error, which can move a result across a bfloat16 rounding boundary or, where
a sum cancels to near zero, leave it there (see ATOL)."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import dtypes

BF, F32, I64 = clgrad.bfloat16, clgrad.float32, clgrad.int64
REL = 2.0 ** -7
# The absolute floor: the float32 computation's error. A float32 sum of n terms is within
# n * 2^-24 * sum|x| of the exact one (Higham's recursive-summation bound; the kernels are
# Kahan-compensated, so this is loose). The inputs below have n <= 64 terms of |x| <= 4 per
# reduced row: 64 * 2^-24 * 256 = 9.8e-4. Pointwise float32 functions (exp, log, rsqrt) add a
# few float32 ulps (< 1e-6 relative), inside REL.
ATOL = 64 * 2.0 ** -24 * 256
RNG = np.random.default_rng(7)


def rb(a):
    """``a`` rounded to bfloat16 (as float64: exact)."""
    return dtypes.bf16_to_float32(dtypes.to_bf16_bits(np.asarray(a, np.float64))).astype(
        np.float64)


def randn(*shape, scale=1.0):
    """bfloat16-exact normal values within [-4, 4] * scale (float64)."""
    return rb(np.clip(RNG.standard_normal(shape), -4, 4) * scale)


def bf(a, requires_grad=False):
    return clgrad.tensor(np.asarray(a, np.float32), dtype=BF, requires_grad=requires_grad)


def host(t):
    return np.asarray(t._values(), np.float64)


def check(t, want, dtype=BF, atol=ATOL):
    """t is of ``dtype`` and (bfloat16) within 1 ulp + atol of ``want`` rounded once; other
    dtypes: within float32 tolerance of ``want``. NaN where want is NaN; infinities equal."""
    assert t.dtype is dtype, (t.dtype, dtype)
    got, want = host(t), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype is BF:
        want, rel = rb(want), REL
    else:
        rel = 1e-5
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all(), (got, want)
    err = np.where(got == want, 0.0, np.abs(got - want))[~nan]
    bound = (rel * np.abs(want) + atol)[~nan]
    assert (err <= bound).all(), (got, want, np.max(err - bound))


# -- reductions and scans -------------------------------------------------------------------
X = randn(4, 64)
XP = rb(1 + RNG.uniform(-0.05, 0.05, (4, 16)))  # products of values near 1
XS = rb(np.array([[0.0, 1.5, -2.0, 0.0], [3.0, 0.0, 0.0, 0.0], [0.0] * 4]))


def _var(a, axis, ddof):
    return np.var(a, axis=axis, ddof=ddof)


def _lse(a, axis):
    m = np.max(a, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(a - m), axis=axis)) + np.squeeze(m, axis)


REDUCTIONS = {  # name: (input, clgrad op, float64 reference)
    "sum": (X, lambda t: t.sum(), lambda a: a.sum()),
    "sum_dim": (X, lambda t: t.sum(1), lambda a: a.sum(1)),
    "sum_dim0_keep": (X, lambda t: t.sum(0, keepdim=True), lambda a: a.sum(0, keepdims=True)),
    "sum_t": (X, lambda t: t.t().sum(0), lambda a: a.sum(1)),  # a strided view
    "mean": (X, lambda t: t.mean(), lambda a: a.mean()),
    "mean_dim": (X, lambda t: t.mean(1), lambda a: a.mean(1)),
    "nansum": (X, lambda t: clgrad.nansum(t, 1), lambda a: a.sum(1)),
    "nanmean": (X, lambda t: clgrad.nanmean(t, 0), lambda a: a.mean(0)),
    "prod": (XP, lambda t: t.prod(1), lambda a: a.prod(1)),
    "prod_all": (XP[:2], lambda t: t.prod(), lambda a: a.prod()),
    "amax": (X, lambda t: t.amax(1), lambda a: a.max(1)),
    "amin": (X, lambda t: t.amin(), lambda a: a.min()),
    "max_all": (X, lambda t: t.max(), lambda a: a.max()),
    "min_all": (X, lambda t: t.min(), lambda a: a.min()),
    "var": (X, lambda t: t.var(1), lambda a: _var(a, 1, 1)),
    "var_all_biased": (X, lambda t: t.var(unbiased=False), lambda a: _var(a, None, 0)),
    "std": (X, lambda t: t.std(0), lambda a: np.sqrt(_var(a, 0, 1))),
    "var_mean": (X, lambda t: clgrad.var_mean(t, 1)[0], lambda a: _var(a, 1, 1)),
    "logsumexp": (X, lambda t: clgrad.logsumexp(t, 1), lambda a: _lse(a, 1)),
    "normalize": (X, lambda t: F.normalize(t, dim=1),
                  lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)),
    "cumsum": (X, lambda t: t.cumsum(1), lambda a: np.cumsum(a, 1)),
    "cumprod": (XP, lambda t: t.cumprod(1), lambda a: np.cumprod(a, 1)),
    "cummax": (X, lambda t: clgrad.cummax(t, 1)[0], lambda a: np.maximum.accumulate(a, 1)),
    "cummin": (X, lambda t: clgrad.cummin(t, 0)[0], lambda a: np.minimum.accumulate(a, 0)),
    "diff": (X, lambda t: clgrad.diff(t, dim=1), lambda a: np.diff(a, axis=1)),
    "diff_2_prepend": (X, lambda t: clgrad.diff(t, 2, 0, prepend=t[:1]),
                       lambda a: np.diff(a, 2, axis=0, prepend=a[:1])),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction_values(name):
    a, op, ref = REDUCTIONS[name]
    check(op(bf(a)), ref(a))


def test_var_mean_std_mean_dtypes():
    v, m = clgrad.var_mean(bf(X), 1)
    s, m2 = clgrad.std_mean(bf(X), 1)
    for t in (v, m, s, m2):
        assert t.dtype is BF
    check(m, X.mean(1))
    check(s, np.std(X, 1, ddof=1))


def test_dtype_argument_decides():
    """PyTorch: the requested dtype is the result's (and the computation's)."""
    t = bf(X)
    check(t.sum(1, dtype=F32), X.sum(1), F32, atol=1e-5)
    check(t.cumsum(1, dtype=F32), np.cumsum(X, 1), F32, atol=1e-5)
    check(t.mean(dtype=F32), X.mean(), F32, atol=1e-6)
    check(F.softmax(t, 1, dtype=F32), _softmax(X), F32, atol=1e-7)
    x32 = RNG.standard_normal((3, 8))
    check(clgrad.tensor(x32, dtype=F32).sum(1, dtype=BF), rb(x32).sum(1))  # cast first
    check(clgrad.tensor([[1, 2], [3, 4]]).sum(0, dtype=BF), [4.0, 6.0])


@pytest.mark.parametrize("op", ["max", "min"])
def test_minmax_dim_indices(op):
    t = bf(X)
    vals, idx = getattr(t, op)(1)
    assert vals.dtype is BF and idx.dtype is I64
    want = X.max(1) if op == "max" else X.min(1)
    assert (host(vals) == want).all()  # a bfloat16 maximum is exact
    arg = X.argmax(1) if op == "max" else X.argmin(1)  # first on ties, as clgrad
    assert (idx.numpy() == arg).all()
    a = t.argmax(0) if op == "max" else t.argmin(0)
    assert a.dtype is I64
    assert (a.numpy() == (X.argmax(0) if op == "max" else X.argmin(0))).all()
    flat = t.argmax() if op == "max" else t.argmin()
    assert flat.item() == (X.argmax() if op == "max" else X.argmin())


def test_cummax_indices():
    vals, idx = clgrad.cummax(bf(X), 1)
    assert idx.dtype is I64
    assert (np.take_along_axis(X, idx.numpy(), 1) == host(vals)).all()


@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any(op):
    t = bf(XS)
    for dim, axis in ((None, None), (1, 1), (0, 0)):
        got = getattr(t, op)() if dim is None else getattr(t, op)(dim)
        assert got.dtype is clgrad.bool
        assert (got.numpy() == getattr(np, op)(XS != 0, axis=axis)).all()
    assert clgrad.count_nonzero(t).item() == np.count_nonzero(XS)


def test_nan_propagates():
    a = X[:2].copy()
    a[0, 5] = a[0, 9] = np.nan
    t = bf(a)
    check(t.sum(1), a.sum(1))
    check(t.sum(), np.nan)
    v, i = t.max(1)
    assert np.isnan(host(v)[0]) and i.numpy()[0] == 5  # the first NaN's index
    check(v[1:], a[1:].max(1))
    assert math.isnan(t.max().item()) and math.isnan(t.amin(1)[0].item())
    assert t.argmax(1).numpy()[0] == 5
    sm = host(F.softmax(t, 1))
    assert np.isnan(sm[0]).all() and not np.isnan(sm[1]).any()
    check(clgrad.nansum(t, 1), np.nansum(a, 1))
    s, _ = t.sort(1)
    assert np.isnan(host(s)[0, -2:]).all()  # NaN sorts last


# -- sort -----------------------------------------------------------------------------------
XT = rb(RNG.standard_normal((3, 40)))  # (bfloat16 rounding makes ties: stable order tested)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(descending):
    t = bf(XT)
    vals, idx = t.sort(1, descending=descending)
    assert vals.dtype is BF and idx.dtype is I64
    want = np.argsort(-XT if descending else XT, axis=1, kind="stable")
    assert (idx.numpy() == want).all()
    assert (host(vals) == np.take_along_axis(XT, want, 1)).all()
    assert (t.argsort(1, descending=descending).numpy() == want).all()


@pytest.mark.parametrize("k", [3, 40])
def test_topk_kthvalue_median(k):
    t = bf(XT)
    vals, idx = t.topk(k, 1)
    assert vals.dtype is BF and idx.dtype is I64
    want = np.argsort(-XT, axis=1, kind="stable")[:, :k]
    assert (host(vals) == np.take_along_axis(XT, want, 1)).all()
    assert (idx.numpy() == want).all()
    v, i = t.kthvalue(k, 1)
    assert v.dtype is BF and i.dtype is I64
    assert (host(v) == np.sort(XT, 1)[:, k - 1]).all()
    assert (np.take_along_axis(XT, i.numpy()[:, None], 1)[:, 0] == host(v)).all()
    m, mi = t.median(1)
    assert m.dtype is BF and mi.dtype is I64
    assert (host(m) == np.sort(XT, 1)[:, (XT.shape[1] - 1) // 2]).all()
    assert t.median().dtype is BF
    assert t.median().item() == np.sort(XT, None)[(XT.size - 1) // 2]


def test_unique():
    a = rb([3.0, 1.0, 3.0, 2.5, 1.0])
    vals, inv, cnt = clgrad.unique(bf(a), return_inverse=True, return_counts=True)
    assert vals.dtype is BF and inv.dtype is I64
    assert host(vals).tolist() == [1.0, 2.5, 3.0]
    assert inv.numpy().tolist() == [2, 0, 2, 1, 0] and cnt.numpy().tolist() == [2, 1, 2]


# -- softmax and losses -----------------------------------------------------------------------
N, C = 8, 5
LOGITS = randn(N, C, scale=2)
TGT = RNG.integers(0, C, N)
W = rb(RNG.uniform(0.5, 2, C))
PROBS = rb(RNG.dirichlet(np.ones(C), N))
P = rb(RNG.uniform(0.05, 0.95, (N, C)))
Y = rb(RNG.uniform(0, 1, (N, C)))


def _softmax(a, axis=1):
    e = np.exp(a - a.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _logsm(a, axis=1):
    return a - np.expand_dims(_lse(a, axis), axis)


def _ce(a, t, w=None, ignore=-100, eps=0.0, reduction="mean"):
    lp = _logsm(a)
    w = np.ones(a.shape[1]) if w is None else w
    keep = t != ignore
    ts = np.where(keep, t, 0)
    pick = -lp[np.arange(len(t)), ts] * w[ts]
    smooth = -(lp * w).sum(1) / a.shape[1]
    loss = np.where(keep, (1 - eps) * pick + eps * smooth, 0.0)
    if reduction == "none":
        return loss
    return loss.sum() / (w[ts] * keep).sum() if reduction == "mean" else loss.sum()


def _sl1(d, beta):
    return np.where(np.abs(d) < beta, 0.5 * d * d / beta, np.abs(d) - 0.5 * beta)


def _bcel(x, t, pw):
    return (1 - t) * x + (1 + (pw - 1) * t) * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))


LOSSES = {  # name: (clgrad loss of bfloat16 tensors, float64 reference)
    "softmax": (lambda: F.softmax(bf(LOGITS), 1), lambda: _softmax(LOGITS)),
    "softmax_dim0": (lambda: F.softmax(bf(LOGITS), 0), lambda: _softmax(LOGITS, 0)),
    "log_softmax": (lambda: F.log_softmax(bf(LOGITS), 1), lambda: _logsm(LOGITS)),
    "ce": (lambda: F.cross_entropy(bf(LOGITS), clgrad.tensor(TGT)), lambda: _ce(LOGITS, TGT)),
    "ce_weight_ignore": (
        lambda: F.cross_entropy(bf(LOGITS), clgrad.tensor(np.where(TGT == 1, -100, TGT)),
                                weight=bf(W)),
        lambda: _ce(LOGITS, np.where(TGT == 1, -100, TGT), W)),
    "ce_smooth_none": (
        lambda: F.cross_entropy(bf(LOGITS), clgrad.tensor(TGT), reduction="none",
                                label_smoothing=0.2),
        lambda: _ce(LOGITS, TGT, eps=0.2, reduction="none")),
    "ce_probs": (lambda: F.cross_entropy(bf(LOGITS), bf(PROBS)),
                 lambda: -(PROBS * _logsm(LOGITS)).sum(1).mean()),
    "nll": (lambda: F.nll_loss(bf(LOGITS), clgrad.tensor(TGT), reduction="sum"),
            lambda: -LOGITS[np.arange(N), TGT].sum()),
    "mse": (lambda: F.mse_loss(bf(LOGITS), bf(Y)), lambda: ((LOGITS - Y) ** 2).mean()),
    "mse_none": (lambda: F.mse_loss(bf(LOGITS), bf(Y), reduction="none"),
                 lambda: (LOGITS - Y) ** 2),
    "l1": (lambda: F.l1_loss(bf(LOGITS), bf(Y), reduction="sum"),
           lambda: np.abs(LOGITS - Y).sum()),
    "smooth_l1": (lambda: F.smooth_l1_loss(bf(LOGITS), bf(Y), beta=0.5),
                  lambda: _sl1(LOGITS - Y, 0.5).mean()),
    "huber": (lambda: F.huber_loss(bf(LOGITS), bf(Y), reduction="none", delta=2.0),
              lambda: 2.0 * _sl1(LOGITS - Y, 2.0)),
    "bce": (lambda: F.binary_cross_entropy(bf(P), bf(Y)),
            lambda: -(Y * np.log(P) + (1 - Y) * np.log(1 - P)).mean()),
    "bce_weight": (lambda: F.binary_cross_entropy(bf(P), bf(Y), weight=bf(W), reduction="sum"),
                   lambda: -(W * (Y * np.log(P) + (1 - Y) * np.log(1 - P))).sum()),
    "bce_logits": (lambda: F.binary_cross_entropy_with_logits(bf(LOGITS), bf(Y),
                                                              pos_weight=bf(W)),
                   lambda: _bcel(LOGITS, Y, W).mean()),
    "kl_div": (lambda: F.kl_div(bf(_logsm(LOGITS)), bf(PROBS), reduction="batchmean"),
               lambda: (PROBS * (np.log(PROBS) - rb(_logsm(LOGITS)))).sum() / N),
    "kl_div_log": (lambda: F.kl_div(bf(_logsm(LOGITS)), bf(np.log(PROBS)), log_target=True),
                   lambda: (np.exp(rb(np.log(PROBS))) *
                            (rb(np.log(PROBS)) - rb(_logsm(LOGITS)))).mean()),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_softmax_and_losses(name):
    op, ref = LOSSES[name]
    check(op(), ref())


def test_mse_bf16_with_float32_target_is_float32():
    """bfloat16 with float32 promotes to float32 (the result is float32's)."""
    got = F.mse_loss(bf(LOGITS), clgrad.tensor(Y, dtype=F32))
    check(got, ((LOGITS - Y) ** 2).mean(), F32)


# -- normalisation --------------------------------------------------------------------------
XN = rb(randn(4, 3, 4, 4, scale=2) + 1)  # (N, C, H, W), bfloat16-exact
G3, B3 = rb(RNG.uniform(0.5, 1.5, 3)), rb(RNG.uniform(-0.5, 0.5, 3))
EPS = 1e-5


def _bn_ref(a, w, b):
    ax = (0, 2, 3)
    m, v = a.mean(ax, keepdims=True), a.var(ax, keepdims=True)
    return (a - m) / np.sqrt(v + EPS) * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("pdt", [BF, F32], ids=["bf16_params", "f32_params"])
def test_batch_norm_train_eval(pdt):
    rm0, rv0 = rb(RNG.uniform(-1, 1, 3)), rb(RNG.uniform(0.5, 2, 3))
    rm, rv = (clgrad.tensor(v, dtype=pdt) for v in (rm0, rv0))
    w, b = clgrad.tensor(G3, dtype=pdt), clgrad.tensor(B3, dtype=pdt)
    y = F.batch_norm(bf(XN), rm, rv, w, b, training=True, momentum=0.1, eps=EPS)
    check(y, _bn_ref(XN, G3, B3))
    assert rm.dtype is pdt and rv.dtype is pdt  # updated in place in their own dtype
    ax = (0, 2, 3)
    want_m = 0.9 * rm0 + 0.1 * XN.mean(ax)
    want_v = 0.9 * rv0 + 0.1 * XN.var(ax, ddof=1)
    check(rm, want_m, pdt, atol=1e-6)
    check(rv, want_v, pdt, atol=1e-6)
    ye = F.batch_norm(bf(XN), rm, rv, w, b, training=False, eps=EPS)
    rmh, rvh = host(rm), host(rv)  # (the stored statistics: bfloat16-rounded or float32)
    check(ye, (XN - rmh.reshape(1, -1, 1, 1)) / np.sqrt(rvh.reshape(1, -1, 1, 1) + EPS) *
          G3.reshape(1, -1, 1, 1) + B3.reshape(1, -1, 1, 1))


def test_batch_norm_no_params_and_bad_mix():
    check(F.batch_norm(bf(XN), None, None, training=True, eps=EPS),
          _bn_ref(XN, np.ones(3), np.zeros(3)))
    with pytest.raises(TypeError):  # bfloat16 weight, float32 running statistics
        F.batch_norm(bf(XN), clgrad.zeros(3), clgrad.ones(3), bf(G3), training=True)
    with pytest.raises(TypeError):  # float64 parameters
        F.batch_norm(bf(XN), None, None, clgrad.tensor(G3, dtype=clgrad.float64),
                     training=True)


@pytest.mark.parametrize("pdt", [BF, F32], ids=["bf16_params", "f32_params"])
def test_batch_norm_grad(pdt):
    x = bf(XN, requires_grad=True)
    w = clgrad.tensor(G3, dtype=pdt, requires_grad=True)
    b = clgrad.tensor(B3, dtype=pdt, requires_grad=True)
    g = randn(*XN.shape)
    F.batch_norm(x, None, None, w, b, training=True, eps=EPS).backward(bf(g))
    assert x.grad.dtype is BF and w.grad.dtype is pdt and b.grad.dtype is pdt
    ax = (0, 2, 3)
    xhat = (XN - XN.mean(ax, keepdims=True)) / np.sqrt(XN.var(ax, keepdims=True) + EPS)
    istd = 1 / np.sqrt(XN.var(ax, keepdims=True) + EPS)
    gx = G3.reshape(1, -1, 1, 1) * istd * (g - g.mean(ax, keepdims=True) -
                                           xhat * (g * xhat).mean(ax, keepdims=True))
    # gx is a difference of terms of |g| <= 4: the float32 error is ~ 1e-6 * 4 per term,
    # relative to gx's size per channel (~1); floor as ATOL
    check(x.grad, gx)
    check(w.grad, (g * xhat).sum(ax), pdt, atol=ATOL)
    check(b.grad, g.sum(ax), pdt, atol=ATOL)


def test_batch_norm_module_bf16():
    """nn.BatchNorm2d converted to bfloat16: its running statistics bfloat16, updated."""
    bn = clgrad.nn.BatchNorm2d(3).to(BF)
    assert bn.running_mean.dtype is BF
    y = bn(bf(XN))
    assert y.dtype is BF
    check(bn.running_mean, 0.1 * XN.mean((0, 2, 3)), BF, atol=1e-6)
    assert bn.num_batches_tracked.item() == 1


def _ln_ref(a, w, b, axes):
    m, v = a.mean(axes, keepdims=True), a.var(axes, keepdims=True)
    return (a - m) / np.sqrt(v + EPS) * w + b


@pytest.mark.parametrize("pdt", [BF, F32], ids=["bf16_params", "f32_params"])
def test_layer_norm_and_grad(pdt):
    a = randn(6, 16, scale=2)
    w, b = rb(RNG.uniform(0.5, 1.5, 16)), rb(RNG.uniform(-0.5, 0.5, 16))
    x = bf(a, requires_grad=True)
    wt = clgrad.tensor(w, dtype=pdt, requires_grad=True)
    y = F.layer_norm(x, (16,), wt, clgrad.tensor(b, dtype=pdt), eps=EPS)
    check(y, _ln_ref(a, w, b, -1))
    g = randn(6, 16)
    y.backward(bf(g))
    assert x.grad.dtype is BF and wt.grad.dtype is pdt
    istd = 1 / np.sqrt(a.var(-1, keepdims=True) + EPS)
    xhat = (a - a.mean(-1, keepdims=True)) * istd
    gh = g * w
    gx = istd * (gh - gh.mean(-1, keepdims=True) - xhat * (gh * xhat).mean(-1, keepdims=True))
    check(x.grad, gx)
    check(wt.grad, (g * xhat).sum(0), pdt, atol=ATOL)


def test_group_norm():
    a = randn(2, 6, 3, 3)
    w, b = rb(RNG.uniform(0.5, 1.5, 6)), rb(RNG.uniform(-0.5, 0.5, 6))
    y = F.group_norm(bf(a), 3, bf(w), bf(b), eps=EPS)
    ag = a.reshape(2, 3, -1)
    xh = ((ag - ag.mean(-1, keepdims=True)) / np.sqrt(ag.var(-1, keepdims=True) + EPS))
    check(y, xh.reshape(a.shape) * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1))


@pytest.mark.parametrize("pdt", [BF, F32], ids=["bf16_params", "f32_params"])
def test_instance_norm(pdt):
    rm, rv = clgrad.zeros(3, dtype=pdt), clgrad.ones(3, dtype=pdt)
    y = F.instance_norm(bf(XN), rm, rv, clgrad.tensor(G3, dtype=pdt),
                        clgrad.tensor(B3, dtype=pdt), use_input_stats=True, eps=EPS)
    check(y, _ln_ref(XN, G3.reshape(1, -1, 1, 1), B3.reshape(1, -1, 1, 1), (2, 3)))
    assert rm.dtype is pdt and rv.dtype is pdt
    check(rm, 0.1 * XN.mean((2, 3)).mean(0), pdt, atol=1e-6)
    check(rv, 0.9 + 0.1 * XN.var((2, 3), ddof=1).mean(0), pdt, atol=1e-6)


def test_local_response_norm():
    a = randn(2, 5, 3, 3)
    size, alpha, beta, k = 3, 1e-2, 0.75, 1.0
    sq = np.pad(a * a, ((0, 0), (size // 2, (size - 1) // 2), (0, 0), (0, 0)))
    win = sum(sq[:, i:i + a.shape[1]] for i in range(size))
    check(F.local_response_norm(bf(a), size, alpha, beta, k),
          a / (k + alpha / size * win) ** beta)


# -- gradients --------------------------------------------------------------------------------
def test_cross_entropy_grad():
    x = bf(LOGITS, requires_grad=True)
    F.cross_entropy(x, clgrad.tensor(TGT)).backward()
    assert x.grad.dtype is BF
    onehot = np.eye(C)[TGT]
    check(x.grad, (_softmax(LOGITS) - onehot) / N, atol=1e-6)


def test_softmax_and_reduction_grads():
    g = randn(N, C)
    x = bf(LOGITS, requires_grad=True)
    F.softmax(x, 1).backward(bf(g))
    s = _softmax(LOGITS)
    check(x.grad, s * (g - (g * s).sum(1, keepdims=True)), atol=1e-6)
    x = bf(LOGITS, requires_grad=True)
    (x.mean() + x.amax(1).sum() + x.max(0)[0].sum()).backward()
    want = np.full(LOGITS.shape, 1 / LOGITS.size)
    want += LOGITS == LOGITS.max(1, keepdims=True)  # (no ties among these logits' maxima)
    want[LOGITS.argmax(0), np.arange(C)] += 1
    assert x.grad.dtype is BF
    check(x.grad, want, atol=0)
    x = bf(XP, requires_grad=True)
    x.cumsum(1).sum().backward()
    check(x.grad, np.tile(np.arange(16, 0, -1.0), (4, 1)), atol=0)
    x = bf(XT, requires_grad=True)
    x.sort(1, descending=True)[0][:, :2].sum().backward()
    assert x.grad.dtype is BF
    want = np.zeros(XT.shape)
    np.put_along_axis(want, np.argsort(-XT, 1, kind="stable")[:, :2], 1.0, 1)
    check(x.grad, want, atol=0)
