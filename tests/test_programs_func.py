"""Real PyTorch programs using torch.func: the "Per-sample-gradients" tutorial
(tests/programs/per_sample_grads.py: functional_call + vmap(grad(compute_loss),
in_dims=(None, None, 0, 0)) against a loop of autograd.grad over the examples), and the
"Jacobians, Hessians, hvp, vhp, and more" tutorial (tests/programs/jacobians_hessians.py:
jacrev, vmap(vjp_fn), jacfwd, hessian, batch Jacobians/Hessians, hvp), checked against the
hand formulas of tanh(W x + b) (its Hessian parts need autograd.grad(create_graph=True)).

The program's main() runs under clgrad with only its imports rewritten, and its own assertion
(the two ways agree) must hold; the per-sample gradients must also average to the mini-batch
gradient of loss.backward() (an oracle of its own). Where PyTorch is importable, the torch.func
version runs in both frameworks from copied weights on the same data and must agree.
"""
import numpy as np
import pytest
from test_func import needs_create_graph
from test_programs import PROGRAMS, _torch, load_program, rewrite_imports

import clgrad


@pytest.mark.parametrize("name", ["per_sample_grads", "jacobians_hessians"])
def test_func_programs_differ_from_pytorch_only_in_imports(name):
    source = (PROGRAMS / f"{name}.py").read_text()
    assert "clgrad" not in source
    rewrite_imports(source)


def test_per_sample_grads_runs_and_averages_to_the_batch_gradient(programs, capsys):
    prog = load_program("per_sample_grads")
    clgrad.manual_seed(0)
    model, data, targets, loop, ft = prog.main(batch_size=4)
    assert "clgrad.Size([4, 32, 1, 3, 3])" in capsys.readouterr().out
    names = [n for n, _ in model.named_parameters()]
    assert list(ft) == names
    for (name, p), a, b in zip(model.named_parameters(), loop, ft.values()):
        assert tuple(b.shape) == (4, *p.shape)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-7)
        # the mean loss's gradient (main's loss.backward()) is the mean per-sample gradient
        np.testing.assert_allclose(b.numpy().mean(0), p.grad.numpy(), rtol=1e-4, atol=1e-7)


def test_per_sample_grads_matches_pytorch():
    torch = _torch()
    torch.manual_seed(0)
    tp, cp = load_program("per_sample_grads", "torch"), load_program("per_sample_grads")
    tm, cm = tp.SimpleCNN(), cp.SimpleCNN()
    cm.load_state_dict({k: clgrad.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    data, targets = tp.make_data(3)
    tg = tp.ft_per_sample_grads_of(tm, data, targets)
    cg = cp.ft_per_sample_grads_of(cm, clgrad.tensor(data.numpy()),
                                   clgrad.tensor(targets.numpy()))
    assert list(cg) == list(tg)
    for k in tg:
        np.testing.assert_allclose(cg[k].numpy(), tg[k].numpy(), rtol=1e-4, atol=1e-6)


# -- "Jacobians, Hessians, hvp, vhp, and more" ------------------------------------------------

def _predict_np(w, b, x):
    return np.tanh(w.astype(np.float64) @ x + b)


def _jac_np(w, b, x):
    """d tanh(W x + b) / dx = diag(1 - y^2) W."""
    y = _predict_np(w, b, x)
    return (1 - y ** 2)[:, None] * w


def test_jacobians_tutorial_first_order_parts(capsys):
    prog = load_program("jacobians_hessians")
    jac, ft_jac, jw, jb, (w, b, x) = prog.jacobians(D=6)
    w, b, x = w.numpy(), b.numpy(), x.numpy()
    y = _predict_np(w, b, x)
    np.testing.assert_allclose(jac.numpy(), _jac_np(w, b, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ft_jac.numpy(), jac.numpy(), rtol=1e-6, atol=1e-7)
    expect_w = np.zeros((6, 6, 6))  # d y_i / d W_jk = (1 - y_i^2) [i == j] x_k
    for i in range(6):
        expect_w[i, i] = (1 - y[i] ** 2) * x
    np.testing.assert_allclose(jw.numpy(), expect_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jb.numpy(), np.diag(1 - y ** 2), rtol=1e-5, atol=1e-6)
    assert "clgrad.Size([6, 6])" in capsys.readouterr().out
    fwd, rev = prog.reverse_vs_forward(Din=5, Dout=3)
    np.testing.assert_array_equal(fwd.numpy(), rev.numpy())
    bj, (w, b, x) = prog.batch_jacobian(batch_size=3, Din=4, Dout=5)
    assert tuple(bj.shape) == (3, 5, 4)
    for n in range(3):
        np.testing.assert_allclose(bj[n].numpy(), _jac_np(w.numpy(), b.numpy(), x[n].numpy()),
                                   rtol=1e-5, atol=1e-6)


def _hess_np(w, b, x):
    """d^2 y_i / dx_j dx_k = -2 y_i (1 - y_i^2) W_ij W_ik."""
    y = _predict_np(w, b, x)
    return (-2 * y * (1 - y ** 2))[:, None, None] * w[:, :, None] * w[:, None, :]


@needs_create_graph
def test_jacobians_tutorial_hessians_and_hvp(capsys):
    prog = load_program("jacobians_hessians")
    h, (w, b, x) = prog.hessians(Din=5, Dout=3)
    np.testing.assert_allclose(h.numpy(), _hess_np(w.numpy(), b.numpy(), x.numpy()),
                               rtol=1e-4, atol=1e-6)
    bh, (w, b, x) = prog.batch_hessian(batch_size=2, Din=4, Dout=3)
    assert tuple(bh.shape) == (2, 3, 4, 4)
    for n in range(2):
        np.testing.assert_allclose(bh[n].numpy(), _hess_np(w.numpy(), b.numpy(), x[n].numpy()),
                                   rtol=1e-4, atol=1e-6)
    r, x, t = prog.hvps(n=7)
    np.testing.assert_allclose(r.numpy(), -np.sin(x.numpy()) * t.numpy(), rtol=1e-5, atol=1e-6)


def test_jacobians_tutorial_matches_pytorch():
    torch = _torch()
    cp, tp = load_program("jacobians_hessians"), load_program("jacobians_hessians", "torch")
    _, _, jw, jb, (w, b, x) = cp.jacobians(D=5)
    tw, tb, tx = (torch.tensor(a.numpy()) for a in (w, b, x))
    ew, eb, ex = torch.func.jacrev(tp.predict, argnums=(0, 1, 2))(tw, tb, tx)
    cx = cp.jacrev(cp.predict, argnums=2)(w, b, x)
    for c, t in ((jw, ew), (jb, eb), (cx, ex)):
        np.testing.assert_allclose(c.numpy(), t.numpy(), rtol=1e-5, atol=1e-7)
