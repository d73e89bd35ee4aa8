"""torch.utils.checkpoint (issue 22): gradients equal the plain run (dropout included, by the
restored generator), the segment's activations are freed after forward, parameters and
autograd.grad get gradients, PyTorch's reentrant rules, float64 finite differences."""
import weakref

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
from clgrad.autograd import gradcheck
from clgrad.utils.checkpoint import checkpoint, checkpoint_sequential

torch = pytest.importorskip("torch")  # the oracle (not in the dev extra)


def _model(seed=0):
    clgrad.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(0.5), nn.Linear(16, 16),
                         nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3))


def _grads(model, x):
    return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]


def _reset(model, x):
    for p in list(model.parameters()) + [x]:
        p.grad = None


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_gradients_equal_plain_run_with_dropout(use_reentrant):
    model = _model()
    x = clgrad.randn(8, 6, requires_grad=True)
    clgrad.manual_seed(42)
    ref = model(x)
    (ref * ref).sum().backward()
    want = _grads(model, x)
    _reset(model, x)
    clgrad.manual_seed(42)
    out = checkpoint(model, x, use_reentrant=use_reentrant)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    after_fwd = clgrad.randn(3).numpy()  # the generator moved on as in the plain run
    (out * out).sum().backward()
    for got, exp in zip(_grads(model, x), want):
        np.testing.assert_allclose(got, exp, rtol=1e-6, atol=1e-7)
    # backward put the generator back: the next draw is the one after the forward's
    clgrad.manual_seed(42)
    model(x)
    np.testing.assert_array_equal(clgrad.randn(3).numpy(), after_fwd)
    assert out.grad_fn is not None and "Checkpoint" in repr(out.grad_fn)


def test_checkpoint_without_rng_preservation_draws_other_masks():
    model = _model()
    x = clgrad.randn(8, 6, requires_grad=True)
    clgrad.manual_seed(42)
    (model(x) ** 2).sum().backward()
    want = _grads(model, x)
    _reset(model, x)
    clgrad.manual_seed(42)
    (checkpoint(model, x, use_reentrant=False, preserve_rng_state=False) ** 2).sum().backward()
    assert any(not np.allclose(a, b) for a, b in zip(_grads(model, x), want))


def test_checkpoint_frees_the_segments_activations():
    clgrad.manual_seed(0)
    lin1, lin2 = nn.Linear(64, 256), nn.Linear(256, 3)
    kept = []

    def f(x):
        h = lin1(x).tanh()
        kept.append(weakref.ref(h._storage))
        return lin2(h.exp())  # tanh and exp save their outputs, linear its input
    x = clgrad.randn(64, 64, requires_grad=True)
    before = clgrad.memory_allocated()
    y = f(x)
    plain = clgrad.memory_allocated() - before
    assert kept[-1]() is not None  # the plain graph holds the activations
    del y
    before = clgrad.memory_allocated()
    y = checkpoint(f, x, use_reentrant=False)
    held = clgrad.memory_allocated() - before
    assert kept[-1]() is None  # the checkpointed one does not
    assert held <= 64 * 3 * 4 + 1024 < plain  # the output only
    y.sum().backward()
    assert lin1.weight.grad is not None and x.grad is not None


def test_parameters_get_gradients_when_the_input_needs_none():
    model = _model()
    model.eval()
    x = clgrad.randn(4, 6)
    (model(x) ** 2).sum().backward()
    want = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    (checkpoint(model, x, use_reentrant=False) ** 2).sum().backward()
    for p, w in zip(model.parameters(), want):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-6, atol=1e-7)
    # use_reentrant=True: as PyTorch, a warning and no gradients
    model.zero_grad(set_to_none=True)
    with pytest.warns(UserWarning, match="None of the inputs"):
        out = checkpoint(model, x, use_reentrant=True)
    assert not out.requires_grad
    tm = torch.nn.Linear(6, 3)
    with pytest.warns(UserWarning, match="None of the inputs"):
        assert not torch.utils.checkpoint.checkpoint(tm, torch.randn(2, 6),
                                                     use_reentrant=True).requires_grad


def test_autograd_grad_multiple_outputs_kwargs_and_passthrough():
    w = clgrad.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    a = np.random.default_rng(0).standard_normal((2, 3))

    def f(x, scale=1.0):
        h = (x @ w).sin()
        return h * scale, (h * h).sum(1), "tag", x.shape[0]
    x = clgrad.tensor(a, requires_grad=True)
    o1, o2, tag, n = checkpoint(f, x, use_reentrant=False, scale=2.0)
    assert tag == "tag" and n == 2
    gx, gw = clgrad.autograd.grad((o1.sum() + o2.sum()), (x, w))
    xt = torch.tensor(a, requires_grad=True)
    wt = torch.tensor(w.detach().numpy(), requires_grad=True)
    ht = (xt @ wt).sin()
    gxt, gwt = torch.autograd.grad((ht * 2.0).sum() + (ht * ht).sum(1).sum(), (xt, wt))
    np.testing.assert_allclose(gx.numpy(), gxt.numpy(), rtol=1e-13)
    np.testing.assert_allclose(gw.numpy(), gwt.numpy(), rtol=1e-13)
    # only one of the outputs used
    o1, o2, _, _ = checkpoint(f, x, use_reentrant=False)
    (g,) = clgrad.autograd.grad(o2.sum(), (x,))
    ht = (xt @ wt).sin()
    (gt,) = torch.autograd.grad((ht * ht).sum(), (xt,))
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-13)


def test_checkpoint_gradcheck_and_nested():
    w = clgrad.tensor(np.random.default_rng(1).standard_normal((3, 3)), requires_grad=True)

    def inner(x):
        return (x @ w).tanh()

    def outer(x):
        return checkpoint(inner, x * 2.0, use_reentrant=False).exp()
    x = clgrad.tensor(np.random.default_rng(2).standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(lambda x, w: checkpoint(inner, x, use_reentrant=False), (x, w))
    assert gradcheck(lambda x, w: checkpoint(outer, x, use_reentrant=False), (x, w))


def test_checkpoint_sequential_matches_plain_and_torch():
    model = _model(3)
    model.eval()
    tm = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Dropout(0.5),
                             torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Dropout(0.3),
                             torch.nn.Linear(16, 3)).double().eval()
    with torch.no_grad():
        for pt, pc in zip(tm.parameters(), model.parameters()):
            pt.copy_(torch.tensor(pc.detach().numpy()))
    a = np.random.default_rng(4).standard_normal((5, 6))
    for segments in (1, 2, 3, 7):
        x = clgrad.tensor(a, dtype=clgrad.float32, requires_grad=True)
        model.zero_grad(set_to_none=True)
        out = checkpoint_sequential(model, segments, x, use_reentrant=False)
        out.sum().backward()
        xt = torch.tensor(a, requires_grad=True)
        tm.zero_grad(set_to_none=True)
        ot = torch.utils.checkpoint.checkpoint_sequential(tm, segments, xt, use_reentrant=False)
        ot.sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), ot.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
        for pc, pt in zip(model.parameters(), tm.parameters()):
            np.testing.assert_allclose(pc.grad.numpy(), pt.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_pytorch_argument_rules():
    lin = nn.Linear(2, 2)
    x = clgrad.randn(1, 2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant"):
        checkpoint(lin, x)
    with pytest.raises(ValueError, match="Unexpected keyword"):
        checkpoint(lambda v, k=1: v, x, use_reentrant=True, k=2)
    with pytest.raises(ValueError, match="Unexpected keyword"):
        checkpoint_sequential(nn.Sequential(lin), 1, x, use_reentrant=False, foo=1)
    with clgrad.no_grad():
        assert not checkpoint(lin, x, use_reentrant=False).requires_grad
    y = x * 1.0
    out = checkpoint(lambda v: v.exp(), y, use_reentrant=False)
    y.mul_(2)  # the input changed before backward: the recomputation would be wrong
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        out.sum().backward()
    assert clgrad.utils.checkpoint.checkpoint is checkpoint
