"""torch.distributions' Categorical, Normal, Bernoulli (issue 22): log_prob, entropy, cdf and
their gradients against PyTorch; sample shapes and frequencies; the REINFORCE idiom. Then
Uniform, Exponential, Laplace, OneHotCategorical, Independent and kl_divergence against
closed forms in NumPy float64 (torch-free): sample moments within a bound from the sample
size, rsample gradients against the analytic derivative and float64 finite differences."""
import math

import numpy as np
import pytest

import clgrad
from clgrad.distributions import (Bernoulli, Categorical, Exponential, Independent, Laplace,
                                  Normal, OneHotCategorical, Uniform, kl_divergence,
                                  register_kl)

try:
    import torch  # the oracle of the first tests (not in the dev extra)
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="torch (the oracle) is not installed")

P = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0], [0.3, 0.3, 0.4]])


def _pair(a):
    return clgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _close(c, t, **kw):
    np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), **kw)


@needs_torch
@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_categorical_log_prob_entropy_and_grads_match_torch(kind):
    a = P if kind == "probs" else np.log(P + 0.05) * 1.7
    pc, pt = _pair(a)
    dc, dt = Categorical(**{kind: pc}), torch.distributions.Categorical(**{kind: pt})
    v = np.array([2, 0, 1])
    for got, want in ((dc.probs, dt.probs), (dc.logits, dt.logits),
                      (dc.log_prob(clgrad.tensor(v)), dt.log_prob(torch.tensor(v))),
                      (dc.entropy(), dt.entropy())):
        _close(got, want, rtol=1e-12, atol=1e-12)
    # broadcasting a batch of values against the batch of distributions
    vv = np.array([[0, 1, 2], [2, 2, 2]])
    _close(dc.log_prob(clgrad.tensor(vv)), dt.log_prob(torch.tensor(vv)), rtol=1e-12)
    (dc.log_prob(clgrad.tensor(v)).sum() + dc.entropy().sum()).backward()
    (dt.log_prob(torch.tensor(v)).sum() + dt.entropy().sum()).backward()
    _close(pc.grad, pt.grad, rtol=1e-10, atol=1e-12)
    assert tuple(dc.batch_shape) == tuple(dt.batch_shape) and tuple(dc.event_shape) == ()
    assert dc.enumerate_support().tolist() == dt.enumerate_support().tolist()


def test_categorical_sampling_shapes_and_frequencies():
    clgrad.manual_seed(0)
    d = Categorical(probs=clgrad.tensor(P))
    s = d.sample((20000,))
    assert tuple(s.shape) == (20000, 3) and s.dtype is clgrad.int64
    freq = np.stack([(s.numpy() == k).mean(0) for k in range(3)], -1)
    np.testing.assert_allclose(freq, P, atol=0.015)
    assert (s.numpy()[:, 1] != 2).all()  # probability 0 is never drawn
    assert tuple(Categorical(logits=clgrad.zeros(4)).sample().shape) == ()
    with pytest.raises(ValueError):
        Categorical(probs=clgrad.tensor([0.5, 0.5]), logits=clgrad.tensor([0.0, 0.0]))
    with pytest.raises(ValueError):
        Categorical()


@needs_torch
def test_normal_against_torch_and_rsample_gradients():
    loc, scale = np.array([0.0, 1.0, -2.0]), np.array([[2.0], [0.5]])
    lc, lt = _pair(loc)
    sc, st = _pair(scale)
    dc, dt = Normal(lc, sc), torch.distributions.Normal(lt, st)
    v = np.array([0.3, -1.0, 4.0])
    for got, want in ((dc.log_prob(clgrad.tensor(v)), dt.log_prob(torch.tensor(v))),
                      (dc.entropy(), dt.entropy()), (dc.cdf(clgrad.tensor(v)),
                                                     dt.cdf(torch.tensor(v))),
                      (dc.variance, dt.variance), (dc.stddev, dt.stddev), (dc.mean, dt.mean)):
        _close(got, want, rtol=1e-12, atol=1e-14)
    (dc.log_prob(clgrad.tensor(v)).sum() + dc.entropy().sum()).backward()
    (dt.log_prob(torch.tensor(v)).sum() + dt.entropy().sum()).backward()
    _close(lc.grad, lt.grad, rtol=1e-12)
    _close(sc.grad, st.grad, rtol=1e-12)
    clgrad.manual_seed(1)
    d = Normal(clgrad.tensor([1.0, -3.0]), clgrad.tensor([0.5, 2.0]))
    s = d.sample((40000,)).numpy()
    np.testing.assert_allclose(s.mean(0), [1.0, -3.0], atol=0.03)
    np.testing.assert_allclose(s.std(0), [0.5, 2.0], rtol=0.02)
    # rsample: d(sample)/d(loc) = 1, d(sample)/d(scale) = eps = (sample - loc) / scale
    mu, sd = clgrad.tensor(0.5, requires_grad=True), clgrad.tensor(2.0, requires_grad=True)
    r = Normal(mu, sd).rsample((5,))
    r.sum().backward()
    assert mu.grad.item() == pytest.approx(5.0)
    assert sd.grad.item() == pytest.approx(((r.detach().numpy() - 0.5) / 2.0).sum(), rel=1e-5)
    assert not Normal(mu, sd).sample().requires_grad
    assert tuple(Normal(0.0, 1.0).sample((3, 2)).shape) == (3, 2)


@needs_torch
@pytest.mark.parametrize("kind", ["probs", "logits"])
def test_bernoulli_against_torch(kind):
    a = np.array([0.2, 0.9, 0.5]) if kind == "probs" else np.array([0.3, -2.0, 4.0])
    pc, pt = _pair(a)
    dc, dt = Bernoulli(**{kind: pc}), torch.distributions.Bernoulli(**{kind: pt})
    v = np.array([1.0, 0.0, 1.0])
    for got, want in ((dc.probs, dt.probs), (dc.logits, dt.logits),
                      (dc.log_prob(clgrad.tensor(v)), dt.log_prob(torch.tensor(v))),
                      (dc.entropy(), dt.entropy()), (dc.variance, dt.variance)):
        _close(got, want, rtol=1e-10, atol=1e-12)
    (dc.log_prob(clgrad.tensor(v)).sum() + dc.entropy().sum()).backward()
    (dt.log_prob(torch.tensor(v)).sum() + dt.entropy().sum()).backward()
    _close(pc.grad, pt.grad, rtol=1e-8, atol=1e-12)
    clgrad.manual_seed(2)
    s = dc.sample((20000,)).numpy()
    np.testing.assert_allclose(s.mean(0), dt.probs.detach().numpy(), atol=0.015)
    assert set(np.unique(s)) <= {0.0, 1.0}


def test_reinforce_idiom_from_pytorch_examples():
    """pytorch/examples reinforcement_learning/reinforce.py: sample, log_prob, -log_prob * R."""
    clgrad.manual_seed(3)
    policy = clgrad.nn.Linear(4, 2)
    state = clgrad.randn(1, 4)
    probs = clgrad.nn.functional.softmax(policy(state), dim=1)
    m = Categorical(probs)
    action = m.sample()
    loss = (-m.log_prob(action) * 1.5).sum()
    loss.backward()
    p = probs.detach().numpy()[0]
    a = int(action.item())
    onehot = np.eye(2)[a]
    # d(-log p_a)/d(logits) = p - onehot; chain through the linear layer's bias
    np.testing.assert_allclose(policy.bias.grad.numpy(), 1.5 * (p - onehot), rtol=1e-5,
                               atol=1e-6)


# -- Uniform, Exponential, Laplace, OneHotCategorical, Independent, kl_divergence ---------
# (torch-free: closed forms in NumPy float64)

F64 = clgrad.float64
_erf = np.vectorize(math.erf)


def _t(a, grad=False):
    return clgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, requires_grad=grad)


# family -> (make(params), params as float64 arrays, values inside the support,
#            closed forms: log_prob, cdf, entropy, mean, variance, 4th central moment)
LOW, HIGH = np.array([-1.0, 0.5, 2.0]), np.array([1.0, 3.0, 2.5])
RATE = np.array([0.5, 1.0, 4.0])
LOC, SCALE = np.array([0.0, -1.5, 3.0]), np.array([1.0, 0.3, 2.5])
CLOSED = {
    "Uniform": (lambda p: Uniform(*p), (LOW, HIGH), np.array([0.3, 0.5, 2.2]),
                dict(log_prob=lambda v, lo, hi: -np.log(hi - lo),
                     cdf=lambda v, lo, hi: (v - lo) / (hi - lo),
                     entropy=lambda lo, hi: np.log(hi - lo),
                     mean=lambda lo, hi: (lo + hi) / 2,
                     variance=lambda lo, hi: (hi - lo) ** 2 / 12,
                     m4=lambda lo, hi: (hi - lo) ** 4 / 80)),
    "Exponential": (lambda p: Exponential(*p), (RATE,), np.array([0.0, 2.0, 0.1]),
                    dict(log_prob=lambda v, r: np.log(r) - r * v,
                         cdf=lambda v, r: 1 - np.exp(-r * v),
                         entropy=lambda r: 1 - np.log(r), mean=lambda r: 1 / r,
                         variance=lambda r: 1 / r ** 2, m4=lambda r: 9 / r ** 4)),
    "Laplace": (lambda p: Laplace(*p), (LOC, SCALE), np.array([0.7, -1.5, -2.0]),
                dict(log_prob=lambda v, m, b: -np.log(2 * b) - np.abs(v - m) / b,
                     cdf=lambda v, m, b: np.where(v < m, 0.5 * np.exp((v - m) / b),
                                                  1 - 0.5 * np.exp(-(v - m) / b)),
                     entropy=lambda m, b: 1 + np.log(2 * b), mean=lambda m, b: m + 0 * b,
                     variance=lambda m, b: 2 * b ** 2, m4=lambda m, b: 24 * b ** 4)),
    "Normal": (lambda p: Normal(*p), (LOC, SCALE), np.array([0.7, -1.5, -2.0]),
               dict(log_prob=lambda v, m, s: -(v - m) ** 2 / (2 * s * s) - np.log(s)
                    - 0.5 * np.log(2 * np.pi),
                    cdf=lambda v, m, s: 0.5 * (1 + _erf((v - m) / (s * np.sqrt(2)))),
                    entropy=lambda m, s: 0.5 + 0.5 * np.log(2 * np.pi) + np.log(s),
                    mean=lambda m, s: m + 0 * s, variance=lambda m, s: s ** 2,
                    m4=lambda m, s: 3 * s ** 4)),
}


@pytest.mark.parametrize("name", list(CLOSED))
def test_continuous_families_against_closed_forms(name):
    make, params, v, f = CLOSED[name]
    d = make([_t(p) for p in params])
    assert tuple(d.batch_shape) == (3,) and tuple(d.event_shape) == ()
    assert d.has_rsample
    x = _t(v)
    kw = dict(rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d.log_prob(x).numpy(), f["log_prob"](v, *params), **kw)
    np.testing.assert_allclose(d.cdf(x).numpy(), f["cdf"](v, *params), **kw)
    np.testing.assert_allclose(d.entropy().numpy(), f["entropy"](*params), **kw)
    np.testing.assert_allclose(d.mean.numpy(), f["mean"](*params), **kw)
    np.testing.assert_allclose(d.variance.numpy(), f["variance"](*params), **kw)
    np.testing.assert_allclose(d.stddev.numpy(), np.sqrt(f["variance"](*params)), **kw)
    # icdf inverts the closed-form cdf
    q = np.array([0.1, 0.5, 0.975])
    np.testing.assert_allclose(f["cdf"](d.icdf(_t(q)).numpy(), *params), q, rtol=1e-10)
    # expand: the same values over a larger batch, validation setting carried over
    e = d.expand((2, 3))
    assert tuple(e.batch_shape) == (2, 3) and type(e) is type(d)
    np.testing.assert_allclose(e.log_prob(x).numpy(), np.broadcast_to(
        f["log_prob"](v, *params), (2, 3)), **kw)
    assert e._validate_args == d._validate_args
    assert tuple(e.sample((4,)).shape) == (4, 2, 3)


def test_known_values_and_modes():
    assert Normal(0.0, 1.0).icdf(_t(0.975)).item() == pytest.approx(1.959963984540054,
                                                                   rel=1e-12)
    assert Laplace(1.0, 2.0).icdf(_t(0.5)).item() == 1.0
    assert Exponential(_t(2.0)).icdf(_t(0.5)).item() == pytest.approx(math.log(2) / 2)
    assert Exponential(_t([2.0])).mode.tolist() == [0.0]
    assert Laplace(_t([1.5]), 1.0).mode.tolist() == [1.5]
    assert np.isnan(Uniform(0.0, 1.0).mode.item())
    # outside the support: Uniform log_prob -inf, cdf clamped (validation off)
    u = Uniform(_t([0.0]), _t([1.0]), validate_args=False)
    assert u.log_prob(_t([1.5])).item() == float("-inf")
    assert u.cdf(_t([-1.0, 2.0])).tolist() == [0.0, 1.0]
    assert Uniform(0.0, 2.0).log_prob(_t(0.0)).item() == pytest.approx(-math.log(2))
    # numbers only: a 0-dim batch
    assert tuple(Laplace(0.0, 1.0).batch_shape) == () and tuple(Uniform(0, 1).sample().shape) == ()


@pytest.mark.parametrize("name", list(CLOSED))
def test_sample_moments_within_the_sampling_error(name):
    """Mean and variance of n draws within 5 standard errors: sqrt(var / n) for the mean,
    sqrt((mu4 - var^2) / n) for the variance (mu4 the closed-form 4th central moment)."""
    make, params, _, f = CLOSED[name]
    clgrad.manual_seed(11)
    n = 100_000
    s = make([_t(p) for p in params]).sample((n,)).numpy()
    mean, var, m4 = f["mean"](*params), f["variance"](*params), f["m4"](*params)
    assert np.all(np.abs(s.mean(0) - mean) <= 5 * np.sqrt(var / n))
    assert np.all(np.abs(s.var(0) - var) <= 5 * np.sqrt((m4 - var ** 2) / n))
    if name == "Exponential":
        assert (s >= 0).all()
    if name == "Uniform":
        assert ((s >= LOW) & (s < HIGH)).all()


def _rsample_sum(name, params, w, seed=5):
    clgrad.manual_seed(seed)
    return (CLOSED[name][0](params).rsample((4,)) * _t(w)).sum()


@pytest.mark.parametrize("name", ["Uniform", "Exponential", "Laplace"])
def test_rsample_gradients_analytic_and_finite_differences(name):
    _, params, _, _ = CLOSED[name]
    w = np.linspace(0.5, 2.0, 12).reshape(4, 3)
    ps = [_t(p, grad=True) for p in params]
    clgrad.manual_seed(5)
    x = CLOSED[name][0](ps).rsample((4,))
    (x * _t(w)).sum().backward()
    xs = x.detach().numpy()
    # analytic d(sample)/d(param) at the drawn sample
    if name == "Uniform":
        u = (xs - LOW) / (HIGH - LOW)
        want = [(w * (1 - u)).sum(0), (w * u).sum(0)]
    elif name == "Exponential":
        want = [(w * -xs / RATE).sum(0)]
    else:
        want = [w.sum(0), (w * (xs - LOC) / SCALE).sum(0)]
    for p, g in zip(ps, want):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-9, atol=1e-12)
    # central finite differences in float64, the same draws (same seed)
    h = 1e-6
    for i, p in enumerate(params):
        fd = []
        for j in range(3):
            up, dn = [q.copy() for q in params], [q.copy() for q in params]
            up[i][j] += h
            dn[i][j] -= h
            fd.append((_rsample_sum(name, [_t(q) for q in up], w).item()
                       - _rsample_sum(name, [_t(q) for q in dn], w).item()) / (2 * h))
        np.testing.assert_allclose(ps[i].grad.numpy(), fd, rtol=1e-6, atol=1e-8)
    assert not CLOSED[name][0](ps).sample().requires_grad


def test_log_prob_gradients_against_the_analytic_derivative():
    r = _t(RATE, grad=True)
    v = np.array([0.2, 1.0, 3.0])
    Exponential(r).log_prob(_t(v)).sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), 1 / RATE - v, rtol=1e-12)
    m, b = _t(LOC, grad=True), _t(SCALE, grad=True)
    v = np.array([0.7, -1.0, -2.0])
    (Laplace(m, b).log_prob(_t(v)).sum() + Laplace(m, b).entropy().sum()).backward()
    np.testing.assert_allclose(m.grad.numpy(), np.sign(v - LOC) / SCALE, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), -1 / SCALE + np.abs(v - LOC) / SCALE ** 2
                               + 1 / SCALE, rtol=1e-12)
    lo, hi = _t(LOW, grad=True), _t(HIGH, grad=True)
    Uniform(lo, hi).entropy().sum().backward()
    np.testing.assert_allclose(hi.grad.numpy(), 1 / (HIGH - LOW), rtol=1e-12)
    np.testing.assert_allclose(lo.grad.numpy(), -1 / (HIGH - LOW), rtol=1e-12)


def test_one_hot_categorical():
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    pc = _t(p, grad=True)
    d = OneHotCategorical(probs=pc)
    assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (3,)
    v = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(d.log_prob(_t(v)).detach().numpy(), np.log([0.7, 0.5]), rtol=1e-12)
    ent = -np.array([(q[q > 0] * np.log(q[q > 0])).sum() for q in p])
    np.testing.assert_allclose(d.entropy().detach().numpy(), ent, rtol=1e-12)
    np.testing.assert_allclose(d.mean.detach().numpy(), p)
    np.testing.assert_allclose(d.variance.detach().numpy(), p * (1 - p), rtol=1e-12)
    assert d.mode.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    d.log_prob(_t(v)).sum().backward()  # d log(p_k / sum p) / dp_j = [j = k] / p_k - 1
    np.testing.assert_allclose(pc.grad.numpy(), v / np.where(v > 0, p, 1) - 1, rtol=1e-12)
    lg = OneHotCategorical(logits=_t(np.log(p[0])))
    np.testing.assert_allclose(lg.probs.detach().numpy(), p[0], rtol=1e-12)
    clgrad.manual_seed(4)
    n = 40_000
    s = d.sample((n,))
    assert tuple(s.shape) == (n, 2, 3) and s.dtype is F64
    s = s.detach().numpy()
    assert (s.sum(-1) == 1).all() and set(np.unique(s)) <= {0.0, 1.0}
    # category frequencies within 5 binomial standard errors
    assert np.all(np.abs(s.mean(0) - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12)
    sup = d.enumerate_support()
    assert tuple(sup.shape) == (3, 2, 3)
    np.testing.assert_array_equal(sup.detach().numpy()[:, 0], np.eye(3))
    e = d.expand((4, 2))
    assert tuple(e.batch_shape) == (4, 2) and tuple(e.sample().shape) == (4, 2, 3)
    with pytest.raises(ValueError, match="support"):
        d.log_prob(_t([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="Simplex"):
        OneHotCategorical(probs=_t([0.5, -0.1, 0.6]))


def test_independent():
    loc, scale = np.arange(6.0).reshape(2, 3) / 3, np.linspace(0.5, 2.0, 6).reshape(2, 3)
    lc, sc = _t(loc, grad=True), _t(scale, grad=True)
    base = Normal(lc, sc)
    d = Independent(base, 1)
    assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (3,) and d.has_rsample
    v = np.full((2, 3), 0.25)
    lp = -(v - loc) ** 2 / (2 * scale ** 2) - np.log(scale) - 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(d.log_prob(_t(v)).detach().numpy(), lp.sum(-1), rtol=1e-12)
    np.testing.assert_allclose(d.entropy().detach().numpy(), (0.5 + 0.5 * np.log(2 * np.pi)
                                                     + np.log(scale)).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(d.mean.detach().numpy(), loc)
    np.testing.assert_allclose(d.variance.detach().numpy(), scale ** 2, rtol=1e-12)
    d2 = Independent(base, 2)
    assert tuple(d2.batch_shape) == () and tuple(d2.event_shape) == (2, 3)
    assert d2.log_prob(_t(v)).item() == pytest.approx(lp.sum(), rel=1e-12)
    clgrad.manual_seed(6)
    r = d.rsample((5,))
    assert tuple(r.shape) == (5, 2, 3)
    r.sum().backward()
    np.testing.assert_allclose(lc.grad.numpy(), np.full((2, 3), 5.0))
    e = d.expand((4, 2))
    assert tuple(e.batch_shape) == (4, 2) and tuple(e.event_shape) == (3,)
    assert tuple(e.log_prob(_t(v)).shape) == (4, 2)
    assert repr(d.support) == "IndependentConstraint(Real(), 1)"
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        Independent(base, 3)
    with pytest.raises(ValueError, match="event_shape"):  # value's last dim is not the event's
        d.log_prob(_t(np.zeros((2, 4))))
    with pytest.raises(ValueError, match="support"):
        Independent(Exponential(_t([1.0, 2.0])), 1).log_prob(_t([1.0, -1.0]))
    assert not Independent(Categorical(probs=_t(np.ones((2, 3)))), 1).has_rsample


def _kl_bern(p, q):
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p == 0, 0.0, p * np.log(p / q))
        b = np.where(p == 1, 0.0, (1 - p) * np.log((1 - p) / (1 - q)))
    return a + b


def test_kl_divergence_against_closed_forms():
    kw = dict(rtol=1e-10, atol=1e-12)
    m1, s1, m2, s2 = LOC, SCALE, np.array([0.5, -1.0, 1.0]), np.array([2.0, 0.3, 1.0])
    got = kl_divergence(Normal(_t(m1), _t(s1)), Normal(_t(m2), _t(s2))).numpy()
    np.testing.assert_allclose(got, np.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2)
                               / (2 * s2 ** 2) - 0.5, **kw)
    got = kl_divergence(Laplace(_t(m1), _t(s1)), Laplace(_t(m2), _t(s2))).numpy()
    dd = np.abs(m1 - m2)
    np.testing.assert_allclose(got, np.log(s2 / s1) + dd / s2 + s1 / s2 * np.exp(-dd / s1)
                               - 1, **kw)
    r1, r2 = RATE, np.array([1.0, 1.0, 0.5])
    got = kl_divergence(Exponential(_t(r1)), Exponential(_t(r2))).numpy()
    np.testing.assert_allclose(got, np.log(r1 / r2) + r2 / r1 - 1, **kw)
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    q = np.array([[0.3, 0.3, 0.4], [0.2, 0.8, 0.0], [0.5, 0.0, 0.5]])
    got = kl_divergence(Categorical(probs=_t(p)), Categorical(probs=_t(q))).numpy()
    want = [(p[0] * np.log(p[0] / q[0])).sum(), (p[1, :2] * np.log(p[1, :2] / q[1, :2])).sum(),
            np.inf]  # p's mass where q has none: inf
    np.testing.assert_allclose(got, want, **kw)
    got = kl_divergence(OneHotCategorical(probs=_t(p)), OneHotCategorical(probs=_t(q)))
    np.testing.assert_allclose(got.numpy(), want, **kw)
    bp, bq = np.array([0.2, 0.0, 1.0, 0.3, 0.6]), np.array([0.5, 0.4, 0.7, 0.0, 1.0])
    got = kl_divergence(Bernoulli(_t(bp)), Bernoulli(_t(bq))).numpy()
    np.testing.assert_allclose(got, _kl_bern(bp, bq), rtol=1e-6)
    assert got[3] == np.inf and got[4] == np.inf
    got = kl_divergence(Uniform(_t([0.0, 0.0, -1.0]), _t([1.0, 1.0, 1.0])),
                        Uniform(_t([-1.0, 0.5, -1.0]), _t([2.0, 1.0, 0.5]))).numpy()
    np.testing.assert_allclose(got, [np.log(3.0), np.inf, np.inf], **kw)
    a = Independent(Normal(_t(np.stack([m1, m2])), _t(np.stack([s1, s2]))), 1)
    b = Independent(Normal(_t(np.stack([m2, m1])), _t(np.stack([s2, s1]))), 1)
    base = kl_divergence(a.base_dist, b.base_dist).numpy()
    got = kl_divergence(a, b)
    assert tuple(got.shape) == (2,)
    np.testing.assert_allclose(got.numpy(), base.sum(-1), **kw)
    # gradients reach the parameters
    mu = _t([0.3], grad=True)
    kl_divergence(Normal(mu, 1.0), Normal(_t([0.0]), 1.0)).sum().backward()
    assert mu.grad.item() == pytest.approx(0.3)


def test_kl_divergence_against_a_monte_carlo_estimate():
    """KL(p || q) = E_p[log p - log q]: the mean of n draws within 5 standard errors."""
    clgrad.manual_seed(9)
    p, q = Laplace(_t([0.0, 1.0]), _t([1.0, 0.5])), Laplace(_t([0.5, 0.0]), _t([2.0, 1.0]))
    x = p.sample((200_000,))
    diff = (p.log_prob(x) - q.log_prob(x)).numpy()
    se = diff.std(0) / np.sqrt(len(diff))
    assert np.all(np.abs(diff.mean(0) - kl_divergence(p, q).numpy()) <= 5 * se)


def test_kl_dispatch_and_errors():
    with pytest.raises(NotImplementedError, match="No KL"):
        kl_divergence(Normal(0.0, 1.0), Laplace(0.0, 1.0))
    with pytest.raises(TypeError, match="Distribution subclass"):
        register_kl(int, Normal)
    with pytest.raises(NotImplementedError):
        kl_divergence(Independent(Normal(clgrad.zeros(2, 3), 1.0), 1),
                      Independent(Normal(clgrad.zeros(2, 3), 1.0), 2))

    class MyNormal(Normal):
        pass

    # a subclass uses the parent pair's KL until it registers a more specific one
    p, q = MyNormal(_t(1.0), 1.0), Normal(_t(0.0), 1.0)
    assert kl_divergence(p, q).item() == pytest.approx(0.5)

    @register_kl(MyNormal, Normal)
    def _kl(a, b):
        return clgrad.tensor(-7.0)

    assert kl_divergence(p, q).item() == -7.0
    assert kl_divergence(q, p).item() == pytest.approx(0.5)  # (Normal, MyNormal): the parent
    from clgrad.distributions import kl as kl_module
    kl_module._KL_REGISTRY.pop((MyNormal, Normal))
    kl_module._KL_MEMO.clear()


def test_validation_of_the_new_families():
    with pytest.raises(ValueError, match="low>= high"):
        Uniform(_t([0.0, 1.0]), _t([1.0, 1.0]))
    Uniform(_t([2.0]), _t([1.0]), validate_args=False)  # no check
    with pytest.raises(ValueError, match=r"Expected parameter rate .*GreaterThan"):
        Exponential(_t([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"Expected parameter scale .*GreaterThan"):
        Laplace(0.0, _t([-1.0]))
    with pytest.raises(ValueError, match=r"Expected parameter loc .*Real"):
        Laplace(_t([float("nan")]), 1.0)
    with pytest.raises(ValueError, match=r"support \(GreaterThanEq\(lower_bound=0.0\)"):
        Exponential(_t([1.0])).log_prob(_t([-0.5]))
    with pytest.raises(ValueError, match=r"support \(Interval"):
        Uniform(0.0, 1.0).log_prob(_t(1.5))
    with pytest.raises(ValueError, match=r"support \(Interval"):
        Uniform(0.0, 1.0).cdf(_t(-0.5))
    with pytest.raises(ValueError, match="must be a Tensor"):
        Laplace(0.0, 1.0).log_prob(0.5)


def test_missing_families_raise_attribute_error_naming_them():
    D = clgrad.distributions
    for name in ("Dirichlet", "MultivariateNormal", "Beta", "Gamma"):
        with pytest.raises(AttributeError, match=rf"torch.distributions.{name} is not "
                                                 rf"implemented in clgrad.*Uniform"):
            getattr(D, name)
        assert not hasattr(D, name)
    with pytest.raises(AttributeError, match="^module 'clgrad.distributions' has no attribute "
                                             "'__wrapped__'$"):
        D.__wrapped__
    for name in D.__all__:
        assert getattr(D, name) is not None
