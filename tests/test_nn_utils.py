"""clgrad.nn.utils (clip_grad_norm_, clip_grad_value_, parameters_to_vector,
vector_to_parameters) and the nn.init fills added for the CNN layer set, against NumPy."""
import math

import numpy as np
import pytest

import clgrad
from clgrad import nn
from clgrad.nn import init
from clgrad.nn.utils import (clip_grad_norm_, clip_grad_value_, parameters_to_vector,
                             vector_to_parameters)

RNG = np.random.default_rng(17)


def _params_with_grads(grads):
    ps = []
    for g in grads:
        p = nn.Parameter(clgrad.zeros(g.shape, dtype=clgrad.float64))
        p.grad = clgrad.tensor(g)
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm(norm_type, max_norm):
    grads = [RNG.standard_normal((3, 4)), RNG.standard_normal(5), RNG.standard_normal(())]
    ps = _params_with_grads(grads)
    flat = np.concatenate([g.reshape(-1) for g in grads])
    want = np.abs(flat).max() if math.isinf(norm_type) else \
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    total = clip_grad_norm_(ps + [nn.Parameter(clgrad.zeros(2))], max_norm, norm_type)
    assert total.ndim == 0
    np.testing.assert_allclose(total.item(), want, rtol=1e-12)
    coef = min(1.0, max_norm / (want + 1e-6))
    for p, g in zip(ps, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-12)


def test_clip_grad_nonfinite_value_and_empty():
    ps = _params_with_grads([np.array([1.0, np.inf])])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    assert math.isinf(clip_grad_norm_(ps, 1.0).item())
    assert clip_grad_norm_([nn.Parameter(clgrad.zeros(2))], 1.0).item() == 0.0
    g = RNG.standard_normal((4, 3)) * 3
    ps = _params_with_grads([g])
    clip_grad_value_(ps[0], 1.5)
    np.testing.assert_array_equal(ps[0].grad.numpy(), np.clip(g, -1.5, 1.5))
    m = nn.Linear(3, 2)
    m(clgrad.randn(4, 3)).sum().backward()
    total = clgrad.nn.utils.clip_grad_norm_(m.parameters(), 0.1)
    w, b = m.weight.grad.numpy(), m.bias.grad.numpy()
    np.testing.assert_allclose(np.sqrt((w ** 2).sum() + (b ** 2).sum()),
                               min(0.1, total.item()), rtol=1e-4)


def test_parameters_vector_round_trip():
    m = nn.Sequential(nn.Linear(3, 2), nn.Conv2d(1, 2, 2))
    vec = parameters_to_vector(m.parameters())
    flat = np.concatenate([p.detach().numpy().reshape(-1) for p in m.parameters()])
    np.testing.assert_array_equal(vec.detach().numpy(), flat)
    new = RNG.standard_normal(vec.shape[0]).astype(np.float32)
    vector_to_parameters(clgrad.tensor(new), m.parameters())
    np.testing.assert_array_equal(parameters_to_vector(m.parameters()).detach().numpy(), new)
    assert m[0].weight.shape == (2, 3)
    with pytest.raises(ValueError, match="expected a vector of 18 elements"):
        vector_to_parameters(clgrad.zeros(3), m.parameters())
    p = nn.Parameter(clgrad.ones(2, 2))
    parameters_to_vector([p]).sum().backward()                       # differentiable
    np.testing.assert_array_equal(p.grad.numpy(), np.ones((2, 2)))


def test_init_fills():
    clgrad.manual_seed(3)
    w = clgrad.empty(4000, dtype=clgrad.float64)
    init.trunc_normal_(w, mean=0.5, std=1.0, a=-1.0, b=1.5)
    v = w.numpy()
    assert v.min() >= -1.0 and v.max() <= 1.5
    # mean of N(0.5, 1) truncated to [-1.5, 1] (standardised bounds): mu + phi diff / Z
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)   # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))           # noqa: E731
    want = 0.5 + (phi(-1.5) - phi(1.0)) / (cdf(1.0) - cdf(-1.5))
    assert abs(v.mean() - want) < 0.03
    for shape in [(3, 5), (6, 2), (4, 2, 3, 3)]:
        q = init.orthogonal_(clgrad.empty(shape, dtype=clgrad.float64), gain=2.0).numpy()
        q = q.reshape(shape[0], -1)
        small = min(q.shape)
        gram = q @ q.T if q.shape[0] == small else q.T @ q
        np.testing.assert_allclose(gram, 4 * np.eye(small), atol=1e-12)
    np.testing.assert_array_equal(init.eye_(clgrad.empty(2, 3)).numpy(), np.eye(2, 3))
    d = init.dirac_(clgrad.empty(4, 1, 3, 3, dtype=clgrad.float64), groups=2).numpy()
    x = RNG.standard_normal((1, 2, 5, 5))
    y = clgrad.nn.functional.conv2d(clgrad.tensor(x), clgrad.tensor(d), padding=1,
                                    groups=2).numpy()
    np.testing.assert_allclose(y[0, 0], x[0, 0], rtol=1e-6)
    np.testing.assert_array_equal(y[0, 1], 0 * x[0, 0])
    np.testing.assert_allclose(y[0, 2], x[0, 1], rtol=1e-6)
    with pytest.raises(ValueError, match="orthogonal_: only tensors with 2"):
        init.orthogonal_(clgrad.empty(3))
    with pytest.raises(ValueError, match="trunc_normal_: expected a < b"):
        init.trunc_normal_(clgrad.empty(3), a=1.0, b=0.0)


def test_get_total_norm_and_clip_grads_with_norm():
    from clgrad.nn.utils import clip_grads_with_norm_, get_total_norm
    g1, g2 = np.array([3.0, 0.0]), np.array([[4.0], [-12.0]])
    ts = [clgrad.tensor(g1), clgrad.tensor(g2)]
    np.testing.assert_allclose(get_total_norm(ts).item(), 13.0)
    np.testing.assert_allclose(get_total_norm(ts, norm_type=1).item(), 19.0)
    np.testing.assert_allclose(get_total_norm(ts, "inf").item(), 12.0)
    np.testing.assert_allclose(get_total_norm(ts[0]).item(), 3.0)
    assert get_total_norm([]).item() == 0.0
    with pytest.raises(RuntimeError, match="non-finite"):
        get_total_norm([clgrad.tensor([math.inf])], error_if_nonfinite=True)
    ps = [nn.Parameter(clgrad.zeros(2, dtype=clgrad.float64)),
          nn.Parameter(clgrad.zeros(2, 1, dtype=clgrad.float64)),
          nn.Parameter(clgrad.zeros(1))]  # no gradient: skipped
    ps[0].grad, ps[1].grad = clgrad.tensor(g1), clgrad.tensor(g2)
    total = get_total_norm([p.grad for p in ps if p.grad is not None])
    assert clip_grads_with_norm_(ps, 6.5, total) is None
    coef = 6.5 / (13.0 + 1e-6)
    np.testing.assert_allclose(ps[0].grad.numpy(), g1 * coef, rtol=1e-12)
    np.testing.assert_allclose(ps[1].grad.numpy(), g2 * coef, rtol=1e-12)
    clip_grads_with_norm_(ps, 100.0, 3.0)  # a number; coefficient clamped to 1
    np.testing.assert_allclose(ps[0].grad.numpy(), g1 * coef, rtol=1e-12)
    clip_grads_with_norm_(ps[0], 1.0, 2.0)
    np.testing.assert_allclose(ps[0].grad.numpy(), g1 * coef / (2.0 + 1e-6), rtol=1e-12)


def test_init_fills_draw_from_the_generator():
    def fill(fn, seed, **kw):
        w = clgrad.empty(4, 3)
        fn(w, generator=clgrad.Generator().manual_seed(seed), **kw)
        return w.numpy()
    for fn, kw in ((init.uniform_, {"a": -2.0, "b": 2.0}), (init.normal_, {"std": 3.0}),
                   (init.xavier_uniform_, {}), (init.xavier_normal_, {}),
                   (init.kaiming_uniform_, {"a": math.sqrt(5)}), (init.kaiming_normal_, {}),
                   (init.trunc_normal_, {}), (init.orthogonal_, {}),
                   (init.sparse_, {"sparsity": 0.5})):
        a = fill(fn, 5, **kw)
        clgrad.manual_seed(0)  # the global generator plays no part
        np.testing.assert_array_equal(a, fill(fn, 5, **kw))
        assert not np.array_equal(a, fill(fn, 6, **kw)), fn.__name__
    bound = 2.0
    u = fill(init.uniform_, 1, a=-bound, b=bound)
    want = np.random.default_rng(1).uniform(-bound, bound, (4, 3)).astype(np.float32)
    np.testing.assert_array_equal(u, want)  # the generator's own stream
    with pytest.raises(TypeError, match="generator"):
        init.normal_(clgrad.empty(2), generator=np.random.default_rng(0))
