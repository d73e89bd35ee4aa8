"""torch.distributions' Categorical, Normal, Bernoulli (issue 22): log_prob, entropy, cdf and
their gradients against PyTorch; sample shapes and frequencies; the REINFORCE idiom."""
import numpy as np
import pytest

import clgrad
from clgrad.distributions import Bernoulli, Categorical, Normal

torch = pytest.importorskip("torch")  # the oracle (not in the dev extra)

P = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0], [0.3, 0.3, 0.4]])


def _pair(a):
    return clgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _close(c, t, **kw):
    np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), **kw)


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
