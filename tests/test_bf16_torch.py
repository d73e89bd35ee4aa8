"""bfloat16 models against PyTorch's own bfloat16 (skipped where torch is not installed): the
same weights and batch in both, a whole forward and backward, and an autocast('cpu') step.
Both compute each op in float32 and round its result to bfloat16; they may round at
different places inside an op (PyTorch's CPU kernels round some intermediates), so values
agree to a few bfloat16 ulps of each tensor's scale, not bit for bit: the bound below is
2^-5 of the tensor's largest |value| (4 ulps of bfloat16's 2^-7 relative spacing)."""
import numpy as np
import pytest

import clgrad

torch = pytest.importorskip("torch")

TOL = 2.0 ** -5


def _close(got, want, what):
    got = np.asarray(got, np.float64)
    want = want.detach().float().numpy().astype(np.float64)
    scale = max(float(np.abs(want).max()), 1e-6)
    err = float(np.abs(got - want).max())
    assert err <= TOL * scale, f"{what}: max error {err:.3g} > {TOL} x {scale:.3g}"


def _pair(seed=0):
    def build(nn):
        # (no bias before the BatchNorm: in training its gradient is 0 up to rounding noise)
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                             nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, stride=2, groups=2),
                             nn.GELU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(16, 10), nn.LogSoftmax(1))
    mc, mt = build(clgrad.nn), build(torch.nn)
    rng = np.random.default_rng(seed)
    for (kc, pc), (kt, pt) in zip(mc.state_dict().items(), mt.state_dict().items()):
        assert kc == kt
        if pc.dtype.is_floating_point:
            v = rng.standard_normal(tuple(pc.shape)).astype(np.float32) * 0.3
            if kc.endswith("running_var"):
                v = np.abs(v) + 0.5
            pc.copy_(clgrad.tensor(v))
            with torch.no_grad():
                pt.copy_(torch.tensor(v))
    x = rng.standard_normal((4, 3, 12, 12)).astype(np.float32)
    y = rng.integers(0, 10, 4)
    return mc, mt, x, y


@pytest.mark.parametrize("train", [True, False])
def test_bfloat16_cnn_forward_backward_matches_pytorch(train):
    mc, mt, x, y = _pair()
    mc.bfloat16().train(train)
    mt.bfloat16().train(train)
    xc = clgrad.tensor(x).bfloat16().requires_grad_(True)
    xt = torch.tensor(x).bfloat16().requires_grad_(True)
    oc, ot = mc(xc), mt(xt)
    assert oc.dtype is clgrad.bfloat16
    _close(oc.float().detach().numpy(), ot, "output")
    lc = clgrad.nn.functional.nll_loss(oc, clgrad.tensor(y))
    lt = torch.nn.functional.nll_loss(ot, torch.tensor(y))
    assert lc.dtype is clgrad.bfloat16
    _close(lc.float().item(), lt, "loss")
    lc.backward()
    lt.backward()
    _close(xc.grad.float().numpy(), xt.grad, "grad of the input")
    for (name, pc), pt in zip(mc.named_parameters(), mt.parameters()):
        assert pc.grad.dtype is clgrad.bfloat16, name
        _close(pc.grad.float().numpy(), pt.grad, f"grad of {name}")
    if train:
        bn_c, bn_t = mc[1], mt[1]
        _close(bn_c.running_mean.float().numpy(), bn_t.running_mean, "running_mean")
        _close(bn_c.running_var.float().numpy(), bn_t.running_var, "running_var")


def test_autocast_cpu_step_matches_pytorch():
    """PyTorch's CPU autocast (bfloat16) over a float32 model, one SGD step."""
    if clgrad.default_device().type != "cpu":  # (PyTorch's: it leaves other devices' ops)
        pytest.skip("autocast('cpu') lowers CPU tensors only; the default device is a GPU")
    mc, mt, x, y = _pair(1)
    oc_, ot_ = (clgrad.optim.SGD(mc.parameters(), lr=0.1, momentum=0.9),
                torch.optim.SGD(mt.parameters(), lr=0.1, momentum=0.9))
    with clgrad.autocast("cpu"):
        lc = clgrad.nn.functional.nll_loss(mc(clgrad.tensor(x)), clgrad.tensor(y))
    with torch.autocast("cpu"):
        lt = torch.nn.functional.nll_loss(mt(torch.tensor(x)), torch.tensor(y))
    assert lc.dtype is clgrad.float32 and lt.dtype is torch.float32
    _close(lc.item(), lt, "loss")
    lc.backward()
    lt.backward()
    for (name, pc), pt in zip(mc.named_parameters(), mt.parameters()):
        assert pc.grad.dtype is clgrad.float32, name
        _close(pc.grad.numpy(), pt.grad, f"grad of {name}")
    oc_.step()
    ot_.step()
    for (name, pc), pt in zip(mc.named_parameters(), mt.parameters()):
        _close(pc.detach().numpy(), pt, f"{name} after the step")


def test_bfloat16_elementwise_and_reductions_match_pytorch():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 7)).astype(np.float32) * 3
    b = rng.standard_normal((5, 7)).astype(np.float32)
    ac, bc = clgrad.tensor(a).bfloat16(), clgrad.tensor(b).bfloat16()
    at, bt = torch.tensor(a).bfloat16(), torch.tensor(b).bfloat16()
    cases = [("a + b", lambda A, B, m: A + B), ("a * b", lambda A, B, m: A * B),
             ("a / b", lambda A, B, m: A / B), ("a + 0.1", lambda A, B, m: A + 0.1),
             ("exp", lambda A, B, m: (A / 4).exp()), ("tanh", lambda A, B, m: A.tanh()),
             ("sum", lambda A, B, m: A.sum(1)), ("mean", lambda A, B, m: A.mean()),
             ("max", lambda A, B, m: A.max(0)[0]), ("softmax", lambda A, B, m: A.softmax(1)),
             ("matmul", lambda A, B, m: A @ B.t()), ("cumsum", lambda A, B, m: A.cumsum(1))]
    for name, f in cases:
        got, want = f(ac, bc, clgrad), f(at, bt, torch)
        assert got.dtype is clgrad.bfloat16, name
        _close(got.float().numpy(), want, name)
