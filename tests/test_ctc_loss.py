"""ctc_loss / nn.CTCLoss (clgrad/ops/ctc_loss.py, kernels/ctc_loss.cl).

Oracles: the loss by brute force (every path over the classes of the input's length, collapsed
and compared with the target: tiny T and C), a NumPy float64 alpha recursion (Graves et al.
2006, eq. 6-8) for larger sizes, hand-computed losses, float64 central differences (of the
NumPy loss, and clgrad's gradcheck through log_softmax), and PyTorch 2.13 where importable.

The gradient with respect to log_probs is PyTorch's (measured: its grad minus finite
differences of its own loss is exp(log_probs) * g): the derivative of the loss plus
exp(log_probs) * g for t < input_length, which is exact through log_softmax.
"""
import itertools
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from clgrad.ops import ctc_loss as ctc_mod

f64, f32 = clgrad.float64, clgrad.float32
RNG = np.random.default_rng(11)


# -- NumPy oracles -----------------------------------------------------------------------------
def _log_softmax(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _random_lp(t, n, c):
    return _log_softmax(RNG.standard_normal((t, n, c)))


def brute_nll(lp, target, blank=0):
    """-log sum over every path of len(lp) collapsing to ``target`` (lp: (T, C))."""
    total = -math.inf
    for path in itertools.product(range(lp.shape[1]), repeat=lp.shape[0]):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or path[i - 1] != k)]
        if collapsed == list(target):
            total = np.logaddexp(total, sum(lp[t, k] for t, k in enumerate(path)))
    return -total


def alpha_nll(lp, target, blank=0):
    """-log p(target | lp) by the alpha recursion in log space (lp: (T, C), T = its length)."""
    ext = [blank]
    for k in target:
        ext += [k, blank]
    sn, tm = len(ext), lp.shape[0]
    if tm == 0:
        return 0.0 if sn == 1 else math.inf
    a = np.full(sn, -np.inf)
    a[0] = lp[0, blank]
    if sn > 1:
        a[1] = lp[0, ext[1]]
    for t in range(1, tm):
        prev = a.copy()
        for s in range(sn):
            v = prev[s]
            if s >= 1:
                v = np.logaddexp(v, prev[s - 1])
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                v = np.logaddexp(v, prev[s - 2])
            a[s] = v + lp[t, ext[s]]
    end = a[-1] if sn == 1 else np.logaddexp(a[-1], a[-2])
    return -end


def np_ctc(lp, targets, il, tl, blank=0, reduction="mean", zero_infinity=False):
    """Batched NumPy reference: lp (T, N, C), targets (N, S) padded."""
    losses = np.array([alpha_nll(lp[:il[i], i], targets[i][:tl[i]], blank)
                       for i in range(lp.shape[1])])
    if zero_infinity:
        losses = np.where(np.isinf(losses), 0.0, losses)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    return (losses / np.maximum(np.asarray(tl), 1)).mean()


def _t(a, dtype=f64, grad=False):
    return clgrad.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def _targets(n, s, c, blank=0):
    """Random labels in [0, C) without blank, padded with -1 (never read)."""
    labels = [k for k in range(c) if k != blank]
    return RNG.choice(labels, size=(n, s))


# -- values --------------------------------------------------------------------------------------
@pytest.mark.parametrize("tm,c,target,blank", [
    (4, 3, [1, 2], 0), (4, 3, [1, 1], 0), (5, 3, [2, 2, 2], 0), (3, 3, [], 0),
    (5, 3, [0, 2], 1), (4, 4, [3, 1, 3], 0), (1, 3, [2], 0), (5, 2, [1], 0)])
def test_loss_matches_brute_force_enumeration(tm, c, target, blank):
    lp = _random_lp(tm, 1, c)
    want = brute_nll(lp[:, 0], target, blank)
    assert np.isclose(alpha_nll(lp[:, 0], target, blank), want, rtol=1e-12)  # the oracle itself
    tg = np.array([target], dtype=np.int64).reshape(1, len(target))
    got = F.ctc_loss(_t(lp), _t(tg, clgrad.int64), [tm],
                     [len(target)], blank=blank, reduction="none").numpy()
    np.testing.assert_allclose(got, [want], rtol=1e-12)


@pytest.mark.parametrize("dtype,tol", [(f64, 1e-12), (f32, 2e-5)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_reductions_padded_and_concatenated(dtype, tol, reduction):
    tm, n, c, s = 30, 5, 6, 8
    lp = _random_lp(tm, n, c)
    tg = _targets(n, s, c)
    tl = [8, 0, 3, 5, 1]
    il = [30, 17, 9, 30, 1]
    want = np_ctc(lp, tg, il, tl, reduction=reduction)
    cat = np.concatenate([tg[i, :tl[i]] for i in range(n)])
    padded = np.where(np.arange(s) < np.array(tl)[:, None], tg, -1)  # padding never read
    for targets in (padded, cat):
        got = F.ctc_loss(_t(lp, dtype), _t(targets, clgrad.int64), il, tl,
                         reduction=reduction).numpy()
        np.testing.assert_allclose(got, want, rtol=tol)
    # lengths as tensors (int64 and int32), tuples
    got = F.ctc_loss(_t(lp, dtype), _t(padded, clgrad.int64), _t(il, clgrad.int32),
                     _t(tl, clgrad.int64), reduction=reduction).numpy()
    np.testing.assert_allclose(got, want, rtol=tol)
    mod = nn.CTCLoss(reduction=reduction)(_t(lp, dtype), _t(cat, clgrad.int64), tuple(il),
                                          tuple(tl))
    np.testing.assert_allclose(mod.numpy(), want, rtol=tol)


@pytest.mark.parametrize("group", [4, 64])
def test_several_work_items_per_sample(monkeypatch, group):
    """The GPU's layout (a work-group per sample, barriers between time steps) on any device:
    4 work items each walk several extended positions (2 S + 1 = 17); 64 leave some idle."""
    monkeypatch.setattr(ctc_mod, "_CPU_GROUP", group)
    monkeypatch.setattr(ctc_mod, "_GPU_GROUP", group)
    tm, n, c, s = 20, 3, 5, 8
    lp = _random_lp(tm, n, c)
    tg, il, tl = _targets(n, s, c), [20, 15, 9], [8, 4, 0]
    x = _t(lp, grad=True)
    out = F.ctc_loss(x, _t(tg, clgrad.int64), il, tl, reduction="sum")
    np.testing.assert_allclose(out.item(), np_ctc(lp, tg, il, tl, reduction="sum"), rtol=1e-12)
    out.backward()
    monkeypatch.setattr(ctc_mod, "_CPU_GROUP", 1)
    monkeypatch.setattr(ctc_mod, "_GPU_GROUP", 1)
    y = _t(lp, grad=True)
    F.ctc_loss(y, _t(tg, clgrad.int64), il, tl, reduction="sum").backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_unbatched_input():
    lp = _random_lp(6, 1, 4)[:, 0]
    want = alpha_nll(lp, [1, 3, 3])
    for tg in (_t([1, 3, 3], clgrad.int64), _t([[1, 3, 3, 2]], clgrad.int64)):
        for il, tl in ((_t(6, clgrad.int64), _t(3, clgrad.int64)), ([6], [3])):
            out = F.ctc_loss(_t(lp), tg, il, tl, reduction="none")
            assert tuple(out.shape) == ()
            np.testing.assert_allclose(out.item(), want, rtol=1e-12)
    out = F.ctc_loss(_t(lp), _t([1, 3, 3], clgrad.int64), [6], [3])  # 'mean': / 3
    np.testing.assert_allclose(out.item(), want / 3, rtol=1e-12)


def test_hand_computed_losses():
    # empty target: the all-blank path; 'mean' divides by max(0, 1)
    lp = _random_lp(4, 1, 3)
    got = F.ctc_loss(_t(lp), _t(np.zeros((1, 0)), clgrad.int64), [4], [0])
    np.testing.assert_allclose(got.item(), -lp[:, 0, 0].sum(), rtol=1e-12)
    # "aa" needs a blank between: T=3 has the one path a _ a, T=2 none
    lp = _random_lp(3, 1, 2)
    got = F.ctc_loss(_t(lp), _t([[1, 1]], clgrad.int64), [3], [2], reduction="sum")
    np.testing.assert_allclose(got.item(), -(lp[0, 0, 1] + lp[1, 0, 0] + lp[2, 0, 1]),
                               rtol=1e-12)
    got = F.ctc_loss(_t(lp), _t([[1, 1]], clgrad.int64), [2], [2], reduction="sum")
    assert got.item() == math.inf
    # "ab" in T=2: the one path a b
    lp = _random_lp(2, 1, 3)
    got = F.ctc_loss(_t(lp), _t([[1, 2]], clgrad.int64), [2], [2], reduction="sum")
    np.testing.assert_allclose(got.item(), -(lp[0, 0, 1] + lp[1, 0, 2]), rtol=1e-12)
    # input length 0: the empty target has probability 1, any other 0
    got = F.ctc_loss(_t(_random_lp(2, 2, 3)), _t([[1], [2]], clgrad.int64), [0, 0], [0, 1],
                     reduction="none")
    np.testing.assert_array_equal(got.numpy(), [0.0, math.inf])


def test_infeasible_with_and_without_zero_infinity():
    lp = _random_lp(5, 2, 3)
    tg = np.array([[1, 1, 2], [2, 1, 0]])
    il, tl = [3, 5], [3, 2]  # sample 0 needs 4 frames (1 _ 1 2): infeasible in 3
    feasible = alpha_nll(lp[:5, 1], [2, 1])
    for zi in (False, True):
        x = _t(lp, grad=True)
        out = F.ctc_loss(x, _t(tg, clgrad.int64), il, tl, reduction="none", zero_infinity=zi)
        np.testing.assert_allclose(out.detach().numpy(), [0.0 if zi else math.inf, feasible],
                                   rtol=1e-12)
        out.sum().backward()
        g = x.grad.numpy()
        if zi:  # zero loss, zero gradient
            np.testing.assert_array_equal(g[:, 0], 0.0)
        else:   # PyTorch's NaN for t < input_length, 0 after
            assert np.isnan(g[:3, 0]).all() and (g[3:, 0] == 0).all()
        assert np.isfinite(g[:, 1]).all() and np.abs(g[:, 1]).max() > 0
    # zero_infinity through 'mean' and 'sum'
    for red in ("mean", "sum"):
        out = F.ctc_loss(_t(lp), _t(tg, clgrad.int64), il, tl, reduction=red,
                         zero_infinity=True)
        np.testing.assert_allclose(out.item(), np_ctc(lp, tg, il, tl, reduction=red,
                                                      zero_infinity=True), rtol=1e-12)


# -- gradients -----------------------------------------------------------------------------------
def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        a, b = x.copy(), x.copy()
        a[i] += eps
        b[i] -= eps
        g[i] = (f(a) - f(b)) / (2 * eps)
    return g


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_gradient_is_pytorchs_derivative_plus_exp_log_probs(reduction):
    """grad = d loss / d lp (finite differences of the NumPy loss) + exp(lp) * g for t < il."""
    tm, n, c = 6, 3, 4
    lp = _random_lp(tm, n, c)
    tg = np.array([[1, 2, 2], [3, 3, 0], [2, 0, 0]])
    il, tl = [6, 5, 3], [3, 2, 1]
    w = RNG.standard_normal(n) if reduction == "none" else None

    def f(v):
        out = np_ctc(v, tg, il, tl, reduction=reduction)
        return (out * w).sum() if w is not None else out
    x = _t(lp, grad=True)
    out = F.ctc_loss(x, _t(tg, clgrad.int64), il, tl, reduction=reduction)
    (out * _t(w)).sum().backward() if w is not None else out.backward()
    g_n = w if w is not None else np.ones(n) if reduction == "sum" else \
        1 / (n * np.maximum(tl, 1))
    mask = np.arange(tm)[:, None] < np.array(il)[None, :]
    want = _fd(f, lp) + np.exp(lp) * (g_n * mask)[:, :, None]
    np.testing.assert_allclose(x.grad.numpy(), want, atol=1e-7)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_gradcheck_through_log_softmax(reduction):
    """Through log_softmax (the usual use) the gradient is the exact derivative; the logits
    are a permuted (N, T, C) view, so log_probs is non-contiguous."""
    logits = _t(RNG.standard_normal((3, 7, 5)), grad=True)   # (N, T, C)
    tg = _t([[1, 1, 4], [2, 3, 0], [4, 0, 0]], clgrad.int64)

    def fn(z):
        return F.ctc_loss(F.log_softmax(z.permute(1, 0, 2), 2), tg, [7, 6, 4], [3, 2, 1],
                          reduction=reduction)
    assert gradcheck(fn, (logits,))


def test_gradcheck_concatenated_blank_elsewhere_and_unbatched():
    logits = _t(RNG.standard_normal((6, 2, 4)), grad=True)
    assert gradcheck(lambda z: F.ctc_loss(F.log_softmax(z, 2), _t([0, 1, 0, 3], clgrad.int64),
                                          [6, 5], [3, 1], blank=2), (logits,))
    x1 = _t(RNG.standard_normal((5, 3)), grad=True)
    assert gradcheck(lambda z: F.ctc_loss(F.log_softmax(z, 1), _t([1, 2], clgrad.int64),
                                          [5], [2], reduction="sum"), (x1,))


def test_double_backward_raises():
    x = _t(_random_lp(4, 1, 3), grad=True)
    out = F.ctc_loss(x, _t([[1, 2]], clgrad.int64), [4], [2])
    with pytest.raises(RuntimeError):
        clgrad.autograd.grad(out, x, create_graph=True)
    assert "CtcLoss" in repr(F.ctc_loss(x, _t([[1, 2]], clgrad.int64), [4], [2],
                                        reduction="none"))


# -- argument checks ----------------------------------------------------------------------------
def _call(lp=None, tg=None, il=(4, 4), tl=(2, 1), **kw):
    lp = _t(_random_lp(4, 2, 3)) if lp is None else lp
    tg = _t([[1, 2], [2, 0]], clgrad.int64) if tg is None else tg
    return F.ctc_loss(lp, tg, il, tl, **kw)


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"il": (5, 4)}, RuntimeError, "input_lengths to have value at most 4"),
    ({"il": (-1, 4)}, RuntimeError, "input_lengths to have value at least 0"),
    ({"tl": (3, 1)}, RuntimeError, "targets to have size at least 3"),
    ({"tl": (-1, 1)}, RuntimeError, "target_lengths to have value at least 0"),
    ({"il": (4, 4, 4)}, RuntimeError, "input_lengths must be of size batch_size"),
    ({"tl": (1,)}, RuntimeError, "target_lengths must be of size batch_size"),
    ({"blank": 3}, RuntimeError, "blank must be in label range"),
    ({"blank": -1}, RuntimeError, "blank must be in label range"),
    ({"tg": "blank"}, RuntimeError, "must not contain the blank label 0"),
    ({"tg": "range"}, RuntimeError, r"target labels must be in \[0, 3\)"),
    ({"tg": "concat"}, RuntimeError, "sum\\(target_lengths\\) = 3"),
    ({"tg": "3d"}, RuntimeError, "targets of 1 to 2 dims"),
    ({"tg": "batch"}, RuntimeError, "targets of size 2 at dimension 0"),
    ({"lp": "4d"}, RuntimeError, "log_probs of 3 dims"),
    ({"lp": "empty"}, RuntimeError, "must not be empty"),
    ({"lp": "int"}, NotImplementedError, "float32 or float64"),
    ({"il": "float"}, RuntimeError, "input_lengths must be integral"),
    ({"il": 4}, TypeError, "input_lengths to be a Tensor or a tuple of ints"),
    ({"tl": (1.5, 1)}, TypeError, "target_lengths to be a Tensor or a tuple of ints"),
    ({"reduction": "avg"}, ValueError, "avg is not a valid value for reduction"),
])
def test_errors(kwargs, exc, match):
    kw = dict(kwargs)
    tg = {"blank": [[1, 0], [2, 0]], "range": [[1, 3], [2, 0]], "concat": [1, 2],
          "3d": [[[1, 2]], [[2, 0]]], "batch": [[1, 2]]}
    if kw.get("tg") in tg:
        kw["tg"] = _t(tg[kw["tg"]], clgrad.int64)
    lps = {"4d": _t(np.zeros((4, 2, 3, 1))), "empty": _t(np.zeros((0, 2, 3))),
           "int": _t(np.zeros((4, 2, 3)), clgrad.int64)}
    if kw.get("lp") in lps:
        kw["lp"] = lps[kw["lp"]]
    if kw.get("il") == "float":
        kw["il"] = _t([4.0, 4.0])
    with pytest.raises(exc, match=match):
        _call(**kw)


def test_module_defaults_and_reduction_check():
    m = nn.CTCLoss()
    assert (m.blank, m.reduction, m.zero_infinity) == (0, "mean", False)
    with pytest.raises(ValueError):
        nn.CTCLoss(reduction="avg")


# -- PyTorch, where importable -------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_against_pytorch(dtype):
    torch = pytest.importorskip("torch")
    tm, n, c, s = 12, 4, 5, 5
    for trial in range(3):
        lp = _random_lp(tm, n, c).astype(dtype)
        tl = RNG.integers(0, s + 1, n)
        il = RNG.integers(0, tm + 1, n)
        tg = _targets(n, s, c)
        for red, zi in itertools.product(("none", "mean", "sum"), (False, True)):
            x = clgrad.tensor(lp, requires_grad=True)
            out = F.ctc_loss(x, _t(tg, clgrad.int64), tuple(il.tolist()), tuple(tl.tolist()),
                             reduction=red, zero_infinity=zi)
            xt = torch.tensor(lp, requires_grad=True)
            ref = torch.nn.functional.ctc_loss(xt, torch.tensor(tg), tuple(il.tolist()),
                                               tuple(tl.tolist()), reduction=red,
                                               zero_infinity=zi)
            tol = 1e-12 if dtype == "float64" else 2e-5
            np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=tol)
            w = RNG.standard_normal(tuple(ref.shape))
            (out * clgrad.tensor(w.astype(dtype))).sum().backward()
            (ref * torch.tensor(w.astype(dtype))).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=tol,
                                       atol=tol * 10)


def test_against_pytorch_unbatched_and_concatenated():
    torch = pytest.importorskip("torch")
    lp = _random_lp(7, 1, 4)[:, 0]
    for tg, il, tl in (([1, 2, 2], 7, 3), ([3], 7, 1), ([], 5, 0)):
        x, xt = clgrad.tensor(lp, requires_grad=True), torch.tensor(lp, requires_grad=True)
        out = F.ctc_loss(x, _t(tg, clgrad.int64), _t(il, clgrad.int64), _t(tl, clgrad.int64))
        ref = torch.nn.functional.ctc_loss(xt, torch.tensor(tg, dtype=torch.long),
                                           torch.tensor(il), torch.tensor(tl))
        np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-12)
        out.backward()
        ref.backward()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)


# -- a tiny training program ---------------------------------------------------------------------
def _synthetic(n, tm, c, s, rng):
    """Sequences of S labels in [1, C): each label shown for 2 frames (one-hot plus noise),
    blank frames (zeros) between and around, so every target fits."""
    x = rng.normal(0, 0.1, (tm, n, c)).astype(np.float32)
    tg = rng.integers(1, c, (n, s))
    for i in range(n):
        t = 1
        for k in tg[i]:
            x[t:t + 2, i, k] += 1.0
            t += 3
    return x, tg


def test_training_a_bilstm_with_ctc_decreases_the_loss_and_decodes():
    clgrad.manual_seed(0)
    rng = np.random.default_rng(0)
    tm, n, c, s = 10, 16, 4, 3

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(c, 8, bidirectional=True)
            self.out = nn.Linear(16, c)

        def forward(self, x):
            return F.log_softmax(self.out(self.rnn(x)[0]), 2)

    net = Net()
    opt = clgrad.optim.Adam(net.parameters(), lr=0.05)
    crit = nn.CTCLoss()
    x, tg = _synthetic(n, tm, c, s, rng)
    xs, tgs = clgrad.tensor(x), clgrad.tensor(tg)
    lengths = (tm,) * n, (s,) * n
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = crit(net(xs), tgs, *lengths)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0], losses[::10]
    xv, tv = _synthetic(n, tm, c, s, rng)  # fresh sequences: greedy decoding
    with clgrad.no_grad():
        best = net(clgrad.tensor(xv)).numpy().argmax(2)   # (T, N)
    decoded = [[k for t, k in enumerate(best[:, i]) if k != 0 and (t == 0 or best[t - 1, i] != k)]
               for i in range(n)]
    right = sum(d == list(tv[i]) for i, d in enumerate(decoded))
    assert right >= n - 1, (decoded, tv.tolist())
