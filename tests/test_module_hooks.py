"""Module call hooks (forward pre/post with kwargs and always_call, full backward pre/post,
the global ones, handles): PyTorch's call order and replacement rules, checked against torch
where installed and against NumPy values everywhere."""
import warnings

import numpy as np
import pytest

import clgrad


def _lists(gs):
    return [None if g is None else g.tolist() for g in gs]


def _scenario(torch):
    """One program on ``torch`` (clgrad or PyTorch); returns the log of what the hooks saw."""
    log = []
    lin = torch.nn.Linear(3, 2)
    head = torch.nn.Linear(2, 1)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[1., 2., 3.], [4., 5., 6.]]))
        lin.bias.copy_(torch.tensor([0.5, -0.5]))
        head.weight.copy_(torch.tensor([[1., -2.]]))
        head.bias.zero_()
    seq = torch.nn.Sequential(lin, torch.nn.ReLU(), head)
    handles = [
        lin.register_forward_pre_hook(lambda m, a: log.append(("pre", len(a))) or (a[0] * 2,)),
        lin.register_forward_pre_hook(lambda m, a, k: log.append(("prekw", sorted(k))),
                                      with_kwargs=True, prepend=True),
        lin.register_forward_hook(lambda m, a, o: log.append(("fwd", o.tolist())) or o + 1),
        lin.register_forward_hook(lambda m, a, k, o: log.append(("fwdkw", o.tolist())),
                                  with_kwargs=True),
        lin.register_full_backward_pre_hook(
            lambda m, go: log.append(("bpre", _lists(go))) or (go[0] * 3,)),
        lin.register_full_backward_hook(
            lambda m, gi, go: log.append(("bfull", _lists(gi), _lists(go)))),
        lin.register_full_backward_hook(lambda m, gi, go: (gi[0] * 10,)),
    ]
    x = torch.tensor([[1., 0., -1.], [0.5, 0.5, 0.5]], requires_grad=True)
    seq(x).sum().backward()
    log.append(("xgrad", x.grad.tolist()))
    for h in handles:
        h.remove()
        h.remove()  # idempotent
    log.append(("after", seq(x).tolist()))
    names = []
    g = torch.nn.modules.module.register_module_forward_hook(
        lambda m, a, o: names.append(type(m).__name__))
    seq(x)
    g.remove()
    seq(x)
    log.append(("global", names))
    return log


def test_hooks_order_and_replacement_numpy():
    """Torch-free: the values the hooks see and the gradient they change, by hand."""
    log = _scenario(clgrad)
    W, b = np.array([[1., 2., 3.], [4., 5., 6.]]), np.array([0.5, -0.5])
    x = np.array([[1., 0., -1.], [0.5, 0.5, 0.5]])
    z = (2 * x) @ W.T + b                       # the pre-hook doubled the input
    relu = (z + 1) > 0                          # the first forward hook added 1
    go = relu * np.array([1., -2.])             # d sum(head(relu(.))) / d lin's output
    gi = (3 * go) @ W                           # the backward pre-hook tripled grad_output
    assert [e[0] for e in log] == ["prekw", "pre", "fwd", "fwdkw", "bpre", "bfull", "xgrad",
                                   "after", "global"]
    np.testing.assert_allclose(log[2][1], z)
    np.testing.assert_allclose(log[3][1], z + 1)
    np.testing.assert_allclose(log[4][1][0], go)
    np.testing.assert_allclose(log[5][1][0], gi)
    np.testing.assert_allclose(log[5][2][0], 3 * go)
    np.testing.assert_allclose(log[6][1], 2 * 10 * gi)  # x -> 2x, then the last hook's x10
    np.testing.assert_allclose(log[7][1], (np.maximum(x @ W.T + b, 0) @ [1., -2.])[:, None])
    assert log[8][1] == ["Linear", "ReLU", "Linear", "Sequential"]


def test_hooks_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _scenario(clgrad) == _scenario(torch)


def test_forward_hook_always_call_and_pre_hook_errors():
    torch = pytest.importorskip("torch")

    def run(t):
        log = []

        class Bad(t.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        bad = Bad()
        bad.register_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True)
        bad.register_forward_hook(lambda m, a, o: log.append(("not", o)))
        with pytest.raises(ValueError, match="boom"):
            bad(t.ones(1))
        lin = t.nn.Linear(3, 1)
        lin.register_forward_pre_hook(lambda m, a, k: 5, with_kwargs=True)
        with pytest.raises(RuntimeError) as info:
            lin(t.ones(1, 3))
        log.append(str(info.value))
        lin2 = t.nn.Linear(3, 1)
        lin2.register_full_backward_hook(
            lambda m, gi, go: log.append(("noinput", gi, [tuple(g.shape) for g in go])))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lin2(t.ones(2, 3)).sum().backward()
        log.append(any("no inputs require gradients" in str(x.message) for x in w))
        return log

    assert run(clgrad) == run(torch)
    assert run(clgrad) == [("always", None), "forward pre-hook must return None or a tuple of "
                           "(new_args, new_kwargs), but got 5.", ("noinput", (None,), [(2, 1)]),
                           True]


def test_hooked_batchnorm_relu_pair_is_not_fused():
    """Sequential fuses BatchNorm2d+ReLU; a hook on either must still see its call."""
    seen = []
    seq = clgrad.nn.Sequential(clgrad.nn.BatchNorm2d(2), clgrad.nn.ReLU())
    seq[0].register_forward_hook(lambda m, a, o: seen.append(o.detach().numpy().copy()))
    x = clgrad.tensor(np.arange(16.0, dtype=np.float32).reshape(1, 2, 2, 4) - 8)
    out = seq(x).detach().numpy()
    xn = x.numpy()
    mean, var = xn.mean((0, 2, 3), keepdims=True), xn.var((0, 2, 3), keepdims=True)
    np.testing.assert_allclose(seen[0], (xn - mean) / np.sqrt(var + 1e-5), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, np.maximum(seen[0], 0), rtol=1e-6)


def test_hook_registration_errors():
    lin, other = clgrad.nn.Linear(2, 2), clgrad.nn.Linear(2, 2)
    assert len(lin._forward_hooks) == 0 and len(lin._backward_hooks) == 0  # PyTorch's dicts
    h = lin.register_forward_hook(lambda m, a, o: None, always_call=True)
    assert list(lin._forward_hooks) == [h.id] and list(lin._forward_hooks_always_called) == [h.id]
    assert len(other._forward_hooks) == 0
    h.remove()
    assert len(lin._forward_hooks) == 0 and len(lin._forward_hooks_always_called) == 0
    with pytest.raises(TypeError, match="register_forward_hook: expected a callable hook, "
                                        "got int"):
        lin.register_forward_hook(3)
    with pytest.raises(NotImplementedError, match="register_full_backward_hook"):
        lin.register_backward_hook(lambda *a: None)


def _several_inputs(t):
    """A module of a tensor, a number and a tensor without grad (and a keyword), with two
    outputs: what the full backward hooks see, and a grad_input replaced."""
    class M(t.nn.Module):
        def forward(self, x, k, y, scale=1.0):
            return x * k * scale + y, 1.0 * x.sum()

    log = []
    m = M()
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", _lists(go))))
    m.register_full_backward_hook(
        lambda mod, gi, go: log.append(("full", _lists(gi), _lists(go))) or (gi[0] * 2, None,
                                                                                None))
    m.register_forward_hook(lambda mod, a, kw, o: log.append(("fkw", sorted(kw), len(a))),
                            with_kwargs=True)
    x = t.tensor([1.0, 2.0], requires_grad=True)
    y = t.tensor([3.0, 4.0])
    a, _ = m(x, 3, y, scale=2.0)
    a.sum().backward()
    log.append(("xgrad", x.grad.tolist()))
    x.grad = None
    a, b = m(x, 3, y)
    (a.sum() + b).backward()
    log.append(("xgrad", x.grad.tolist()))
    return log


def test_backward_hooks_with_several_inputs_and_outputs():
    log = _several_inputs(clgrad)
    # d sum(x*3*2 + y)/dx = 6; the hook doubles it; y (no grad) shows zeros, 3 shows None;
    # the second output got no gradient in the first backward (None), 1.0 in the second
    assert log == [("fkw", ["scale"], 3), ("pre", [[1.0, 1.0], None]),
                   ("full", [[6.0, 6.0], None, [0.0, 0.0]], [[1.0, 1.0], None]),
                   ("xgrad", [12.0, 12.0]), ("fkw", [], 3), ("pre", [[1.0, 1.0], 1.0]),
                   ("full", [[4.0, 4.0], None, [0.0, 0.0]], [[1.0, 1.0], 1.0]),
                   ("xgrad", [8.0, 8.0])]
    torch = pytest.importorskip("torch")
    assert _several_inputs(torch) == log
