"""Optimizers and schedulers against NumPy re-implementations of PyTorch's update equations.

Parameters are float64 non-contiguous views (transposed, with an offset) so the fused kernels
are checked on strided operands; gradients depend on the current parameters, so a wrong update
in one step shows in every later one.
"""
import collections
import math

import numpy as np
import pytest

import clgrad
from clgrad import optim
from clgrad.runtime import launch_count
from clgrad.optim import lr_scheduler

STEPS = 6


def _grad_fn(p):
    """A gradient that depends on the parameters (of the loss sum(p^4/4 - p^2/4 + c p))."""
    c = np.linspace(-0.5, 0.5, p.size).reshape(p.shape)
    return p ** 3 - 0.5 * p + c


# -- NumPy references (PyTorch's torch.optim single-tensor equations) ---------------------------
def _g(p, maximize):
    return -_grad_fn(p) if maximize else _grad_fn(p)


def ref_sgd(p, steps, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
            maximize=False):
    p, buf, out = p.copy(), None, []
    for _ in range(steps):
        d = _g(p, maximize) + weight_decay * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
        out.append(p.copy())
    return out


def ref_adam(p, steps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
             decoupled=False, amsgrad=False, maximize=False):
    p, m, v, out = p.copy(), np.zeros_like(p), np.zeros_like(p), []
    vmax = np.zeros_like(p)
    b1, b2 = betas
    for t in range(1, steps + 1):
        g = _g(p, maximize)
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / math.sqrt(1 - b2 ** t) + eps
        p = p - lr / (1 - b1 ** t) * m / denom
        out.append(p.copy())
    return out


def ref_adagrad(p, steps, lr=1e-2, lr_decay=0.0, weight_decay=0.0,
                initial_accumulator_value=0.0, eps=1e-10, maximize=False):
    p, out = p.copy(), []
    acc = np.full_like(p, initial_accumulator_value)
    for t in range(1, steps + 1):
        g = _g(p, maximize) + weight_decay * p
        acc = acc + g * g
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(acc) + eps)
        out.append(p.copy())
    return out


def ref_adadelta(p, steps, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    p, sq, acc, out = p.copy(), np.zeros_like(p), np.zeros_like(p), []
    for _ in range(steps):
        g = _g(p, maximize) + weight_decay * p
        sq = rho * sq + (1 - rho) * g * g
        delta = np.sqrt(acc + eps) / np.sqrt(sq + eps) * g
        acc = rho * acc + (1 - rho) * delta * delta
        p = p - lr * delta
        out.append(p.copy())
    return out


def ref_rmsprop(p, steps, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                centered=False, maximize=False):
    p, sq, ga, buf, out = p.copy(), np.zeros_like(p), np.zeros_like(p), np.zeros_like(p), []
    for _ in range(steps):
        g = _g(p, maximize) + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = np.sqrt(sq - ga * ga) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
        out.append(p.copy())
    return out


CASES = [
    ("sgd", optim.SGD, dict(lr=0.1), ref_sgd),
    ("sgd_wd", optim.SGD, dict(lr=0.1, weight_decay=0.05), ref_sgd),
    ("momentum", optim.SGD, dict(lr=0.05, momentum=0.9), ref_sgd),
    ("dampening", optim.SGD, dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.01),
     ref_sgd),
    ("nesterov", optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.02),
     ref_sgd),
    ("adam", optim.Adam, dict(lr=0.01), ref_adam),
    ("adam_l2", optim.Adam, dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
     ref_adam),
    ("adamw", optim.AdamW, dict(lr=0.01, weight_decay=0.1),
     lambda p, s, **kw: ref_adam(p, s, decoupled=True, **kw)),
    ("sgd_maximize", optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=0.1, maximize=True),
     ref_sgd),
    ("adam_amsgrad", optim.Adam, dict(lr=0.05, betas=(0.5, 0.9), amsgrad=True), ref_adam),
    ("adam_amsgrad_max", optim.Adam, dict(lr=0.05, weight_decay=0.1, amsgrad=True,
                                          maximize=True), ref_adam),
    ("adamw_amsgrad", optim.AdamW, dict(lr=0.05, betas=(0.6, 0.8), weight_decay=0.1,
                                        amsgrad=True),
     lambda p, s, **kw: ref_adam(p, s, decoupled=True, **kw)),
    ("adagrad", optim.Adagrad, dict(lr=0.1), ref_adagrad),
    ("adagrad_all", optim.Adagrad, dict(lr=0.1, lr_decay=0.3, weight_decay=0.2,
                                        initial_accumulator_value=0.5, eps=1e-3, maximize=True),
     ref_adagrad),
    ("adadelta", optim.Adadelta, dict(), ref_adadelta),
    ("adadelta_all", optim.Adadelta, dict(lr=0.5, rho=0.7, eps=1e-4, weight_decay=0.1,
                                          maximize=True), ref_adadelta),
    ("rmsprop", optim.RMSprop, dict(lr=0.01), ref_rmsprop),
    ("rmsprop_wd_momentum", optim.RMSprop, dict(lr=0.01, alpha=0.9, eps=1e-6,
                                                weight_decay=0.1, momentum=0.8), ref_rmsprop),
    ("rmsprop_centered", optim.RMSprop, dict(lr=0.01, alpha=0.8, centered=True), ref_rmsprop),
    ("rmsprop_centered_momentum", optim.RMSprop, dict(lr=0.01, alpha=0.8, momentum=0.5,
                                                      centered=True, maximize=True),
     ref_rmsprop),
]


def _strided_leaf(values):
    """A float64 leaf whose layout is a transposed view at an offset of a bigger buffer."""
    rows, cols = values.shape
    big = np.zeros((cols + 1, rows + 2))
    big[1:, 2:] = values.T
    t = clgrad.tensor(big, dtype=clgrad.float64)[1:, 2:].t().detach()
    assert not t.is_contiguous() and t.storage_offset() > 0
    return t.requires_grad_(True)


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=[c[0] for c in CASES])
def test_trajectory_matches_numpy(name, cls, kwargs, ref):
    p0 = np.random.default_rng(1).uniform(-1.5, 1.5, (5, 7))
    p = _strided_leaf(p0)
    opt = cls([p], **kwargs)
    expected = ref(p0, STEPS, **kwargs)
    for step in range(STEPS):
        p.grad = clgrad.tensor(_grad_fn(p.detach().numpy()), dtype=clgrad.float64)
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), expected[step], rtol=1e-12, atol=1e-13,
                                   err_msg=f"{name}, step {step + 1}")


def test_references_exercise_their_variants():
    """The amsgrad maximum and the centered/momentum branches change the trajectories."""
    p0 = np.random.default_rng(1).uniform(-1.5, 1.5, (5, 7))
    pairs = [(ref_adam(p0, STEPS, lr=0.05, betas=(0.5, 0.9), amsgrad=True),
              ref_adam(p0, STEPS, lr=0.05, betas=(0.5, 0.9))),
             (ref_rmsprop(p0, STEPS, alpha=0.8, centered=True), ref_rmsprop(p0, STEPS, alpha=0.8)),
             (ref_adagrad(p0, STEPS, lr=0.1, lr_decay=0.3), ref_adagrad(p0, STEPS, lr=0.1))]
    for a, b in pairs:
        assert np.abs(a[-1] - b[-1]).max() > 1e-4


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=[c[0] for c in CASES])
def test_nan_gradient_gives_nan_parameter(name, cls, kwargs, ref):
    p = clgrad.zeros(4, dtype=clgrad.float64, requires_grad=True)
    with clgrad.no_grad():
        p.copy_(clgrad.tensor([0.5, -0.5, 1.0, 2.0], dtype=clgrad.float64))
    opt = cls([p], **kwargs)
    p.grad = clgrad.tensor([0.1, float("nan"), 0.2, 0.3], dtype=clgrad.float64)
    opt.step()
    p.grad = clgrad.tensor([0.1, 0.2, 0.2, 0.3], dtype=clgrad.float64)
    opt.step()  # state that saw the NaN keeps it (PyTorch: nothing skips or clamps)
    got = p.detach().numpy()
    assert np.isnan(got[1]) and np.isfinite(got[[0, 2, 3]]).all(), got


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=[c[0] for c in CASES])
def test_trajectory_matches_torch(name, cls, kwargs, ref):
    torch = pytest.importorskip("torch")
    p0 = np.random.default_rng(5).uniform(-1.5, 1.5, (3, 4))
    p, tp = _strided_leaf(p0), torch.tensor(p0, requires_grad=True)
    opt, topt = cls([p], **kwargs), getattr(torch.optim, cls.__name__)([tp], **kwargs)
    for _ in range(STEPS):
        p.grad = clgrad.tensor(_grad_fn(p.detach().numpy()), dtype=clgrad.float64)
        tp.grad = torch.tensor(_grad_fn(tp.detach().numpy()))
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-12, atol=1e-13)


def test_adam_l2_and_adamw_decay_differ():
    p0 = np.random.default_rng(2).uniform(-1, 1, (4, 3))
    l2 = ref_adam(p0, 3, lr=0.01, weight_decay=0.5)[-1]
    dec = ref_adam(p0, 3, lr=0.01, weight_decay=0.5, decoupled=True)[-1]
    assert np.abs(l2 - dec).max() > 1e-3  # the references really tell the two apart
    for cls, want in ((optim.Adam, l2), (optim.AdamW, dec)):
        p = clgrad.tensor(p0, dtype=clgrad.float64, requires_grad=True)
        opt = cls([p], lr=0.01, weight_decay=0.5)
        for _ in range(3):
            p.grad = clgrad.tensor(_grad_fn(p.detach().numpy()), dtype=clgrad.float64)
            opt.step()
        np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=[c[0] for c in CASES])
def test_float32_trajectory_stays_near_the_float64_reference(name, cls, kwargs, ref):
    p0 = np.random.default_rng(9).uniform(-1, 1, (300,))
    p = clgrad.tensor(p0.astype(np.float32), requires_grad=True)
    opt = cls([p], **kwargs)
    for _ in range(4):
        p.grad = clgrad.tensor(_grad_fn(p.detach().numpy().astype(np.float64)).astype(np.float32))
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), ref(p0, 4, **kwargs)[-1], rtol=1e-4, atol=2e-5)


def test_float32_update_matches_float64_reference():
    p0 = np.random.default_rng(3).uniform(-1, 1, (300,))
    p = clgrad.tensor(p0.astype(np.float32), requires_grad=True)
    opt = optim.Adam([p], lr=0.01)
    for _ in range(4):
        p.grad = clgrad.tensor(_grad_fn(p.detach().numpy().astype(np.float64)).astype(np.float32))
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), ref_adam(p0, 4, lr=0.01)[-1], rtol=1e-4,
                               atol=1e-5)


_GPU = clgrad.default_device().kind != "cpu"


@pytest.mark.parametrize("cls,kwargs,launches", [
    (optim.SGD, dict(lr=0.1, momentum=0.9, foreach=False), 3),
    (optim.Adam, dict(lr=0.1), 1 if _GPU else 3),
    (optim.SGD, dict(lr=0.1, momentum=0.9), 1 if _GPU else 3),
    (optim.SGD, dict(lr=0.1, momentum=0.9, foreach=True), 1),
    (optim.AdamW, dict(lr=0.1, fused=True), 1), (optim.Adam, dict(lr=0.1, foreach=False), 3),
    (optim.AdamW, dict(lr=0.1, amsgrad=True), 3), (optim.Adagrad, dict(lr_decay=0.1), 3),
    (optim.Adadelta, dict(), 3), (optim.RMSprop, dict(momentum=0.9, centered=True), 3)])
def test_launches_per_step(cls, kwargs, launches):
    """One fused launch per parameter, or one per 8 contiguous parameters for SGD/Adam(W)
    with foreach=True or fused=True, and with foreach left at None on GPUs (PyTorch's
    multi-tensor default on CUDA; not with amsgrad)."""
    ps = [clgrad.randn(3, 4, requires_grad=True), clgrad.randn(5, requires_grad=True),
          clgrad.randn(2, 2, 2, requires_grad=True)]
    for p in ps:
        p.grad = clgrad.ones_like(p)
    opt = cls(ps, **kwargs)
    opt.step()  # first step allocates state
    before = launch_count()
    opt.step()
    assert launch_count() - before == launches


def _steps(opt, params, n):
    for _ in range(n):
        for p in params:
            p.grad = clgrad.tensor(_grad_fn(p.detach().numpy()), dtype=clgrad.float64)
        opt.step()


def test_param_groups_use_their_own_hyperparameters():
    a0, b0 = np.full((3,), 1.0), np.full((2,), 2.0)
    a = clgrad.tensor(a0, dtype=clgrad.float64, requires_grad=True)
    b = clgrad.tensor(b0, dtype=clgrad.float64, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[0]["momentum"] == 0
    _steps(opt, (a, b), 3)
    np.testing.assert_allclose(a.detach().numpy(), ref_sgd(a0, 3, lr=0.1)[-1], rtol=1e-12)
    np.testing.assert_allclose(b.detach().numpy(), ref_sgd(b0, 3, lr=0.5, momentum=0.9)[-1],
                               rtol=1e-12)


class RunningMeanSGD(optim.Optimizer):
    """A custom optimizer written as PyTorch's docs show: state made on first sight of p."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @clgrad.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["grad_sum"] = clgrad.zeros_like(p)
                state["step"] += 1
                state["grad_sum"].add_(p.grad)
                p.sub_(state["grad_sum"] * (group["lr"] / state["step"]))


def test_state_is_a_defaultdict_for_custom_optimizers():
    a = clgrad.tensor([1.0, 2.0], dtype=clgrad.float64, requires_grad=True)
    opt = RunningMeanSGD([a], lr=0.5)
    assert isinstance(opt.state, collections.defaultdict) and opt.state[a] == {}
    for g in ([1.0, 2.0], [3.0, 0.0]):
        a.grad = clgrad.tensor(g, dtype=clgrad.float64)
        opt.step()
    # step 1: a -= 0.5 * [1, 2]; step 2: a -= 0.5 * mean([1, 2], [3, 0]) = 0.5 * [2, 1]
    np.testing.assert_allclose(a.detach().numpy(), [-0.5, 0.5], rtol=1e-12)
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 2 and sd["state"][0]["grad_sum"].tolist() == [4.0, 2.0]
    b = clgrad.tensor([-0.5, 0.5], dtype=clgrad.float64, requires_grad=True)
    resumed = RunningMeanSGD([b], lr=0.5)
    resumed.load_state_dict(sd)
    assert isinstance(resumed.state, collections.defaultdict)
    assert resumed.state[b]["step"] == 2 and resumed.state[b]["grad_sum"].tolist() == [4.0, 2.0]
    b.grad = clgrad.tensor([2.0, 1.0], dtype=clgrad.float64)
    resumed.step()  # mean of [1, 2], [3, 0], [2, 1] is [2, 1]
    np.testing.assert_allclose(b.detach().numpy(), [-1.5, 0.0], rtol=1e-12)


def test_sgd_lr_defaults_to_1e_3():
    a = clgrad.tensor([1.0, -2.0], dtype=clgrad.float64, requires_grad=True)
    opt = optim.SGD([a])  # PyTorch >= 2.2
    assert opt.defaults["lr"] == 1e-3 and opt.param_groups[0]["lr"] == 1e-3
    a.grad = clgrad.tensor([10.0, 20.0], dtype=clgrad.float64)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.99, -2.02], rtol=1e-12)


def test_step_skips_parameters_without_grad_and_zero_grad():
    a = clgrad.ones(3, requires_grad=True)
    b = clgrad.ones(3, requires_grad=True)
    opt = optim.SGD([a, b], lr=1.0)
    a.grad = clgrad.full((3,), 0.5)
    opt.step()
    assert a.tolist() == [0.5] * 3 and b.tolist() == [1.0] * 3
    opt.zero_grad(set_to_none=False)
    assert a.grad.tolist() == [0.0] * 3 and b.grad is None
    opt.zero_grad()
    assert a.grad is None


def test_closure_is_evaluated_with_grad():
    w = clgrad.tensor([2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    with clgrad.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 4.0 and w.item() == 1.0  # 2 - 0.25 * 4


@pytest.mark.parametrize("cls,kwargs", [
    (optim.SGD, dict(lr=0.05, momentum=0.9, nesterov=True)),
    (optim.AdamW, dict(lr=0.02, weight_decay=0.1)),
    (optim.Adam, dict(lr=0.02, amsgrad=True, maximize=True)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.2, initial_accumulator_value=0.1)),
    (optim.Adadelta, dict(lr=0.5, rho=0.8, weight_decay=0.01)),
    (optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True))])
def test_state_dict_round_trip_through_a_checkpoint(tmp_path, cls, kwargs):
    p0 = np.random.default_rng(4).uniform(-1, 1, (4, 5))
    p = clgrad.tensor(p0, dtype=clgrad.float64, requires_grad=True)
    opt = cls([p], **kwargs)

    def run(param, optimizer, steps):
        for _ in range(steps):
            param.grad = clgrad.tensor(_grad_fn(param.detach().numpy()), dtype=clgrad.float64)
            optimizer.step()
    run(p, opt, 3)
    clgrad.save({"p": p.detach(), "opt": opt.state_dict()}, tmp_path / "ckpt.safetensors")
    ck = clgrad.load(tmp_path / "ckpt.safetensors")
    q = ck["p"].requires_grad_(True)
    opt2 = cls([q], lr=123.0)
    opt2.load_state_dict(ck["opt"])
    assert opt2.param_groups[0]["lr"] == kwargs["lr"]
    run(p, opt, 2)
    run(q, opt2, 2)
    np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())


def test_state_keys_are_pytorchs():
    def keys(opt):
        p = opt.param_groups[0]["params"][0]
        p.grad = clgrad.ones_like(p)
        opt.step()
        return sorted(opt.state_dict()["state"][0])
    def new():
        return [clgrad.ones(2, requires_grad=True)]
    assert keys(optim.Adam(new(), amsgrad=True)) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq",
                                                      "step"]
    assert keys(optim.Adagrad(new())) == ["step", "sum"]
    assert keys(optim.Adadelta(new())) == ["acc_delta", "square_avg", "step"]
    assert keys(optim.RMSprop(new())) == ["square_avg", "step"]
    assert keys(optim.RMSprop(new(), momentum=0.9, centered=True)) == [
        "grad_avg", "momentum_buffer", "square_avg", "step"]
    group = optim.RMSprop(new(), alpha=0.9).param_groups[0]
    assert {k: group[k] for k in ("lr", "alpha", "eps", "weight_decay", "momentum", "centered",
                                  "maximize")} == dict(lr=1e-2, alpha=0.9, eps=1e-8,
                                                       weight_decay=0, momentum=0,
                                                       centered=False, maximize=False)


def test_add_param_group_uses_defaults_and_its_own_values():
    a0, b0 = np.full((3,), 1.0), np.full((2,), -2.0)
    for cls, kw, ref in ((optim.Adagrad, dict(lr_decay=0.5), ref_adagrad),
                         (optim.RMSprop, dict(momentum=0.5), ref_rmsprop)):
        a = clgrad.tensor(a0, dtype=clgrad.float64, requires_grad=True)
        b = clgrad.tensor(b0, dtype=clgrad.float64, requires_grad=True)
        opt = cls([a], lr=0.1)
        opt.add_param_group({"params": b, **kw})
        assert opt.param_groups[1]["lr"] == 0.1
        _steps(opt, (a, b), 3)
        np.testing.assert_allclose(a.detach().numpy(), ref(a0, 3, lr=0.1)[-1], rtol=1e-12)
        np.testing.assert_allclose(b.detach().numpy(), ref(b0, 3, lr=0.1, **kw)[-1], rtol=1e-12)
        with pytest.raises(ValueError, match="more than one"):
            opt.add_param_group({"params": [a]})


def test_load_state_dict_copies_and_accepts_old_str_keys():
    p = clgrad.ones(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = clgrad.ones(3)
    opt.step()
    sd = opt.state_dict()
    assert list(sd["state"]) == [0] and sd["param_groups"][0]["params"] == [0]  # PyTorch's
    sd["state"] = {str(k): v for k, v in sd["state"].items()}  # what clgrad wrote before
    opt2 = optim.SGD([clgrad.ones(3, requires_grad=True)], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    buf2 = next(iter(opt2.state.values()))["momentum_buffer"]
    assert buf2._storage is not opt.state[p]["momentum_buffer"]._storage
    assert buf2.tolist() == [1.0] * 3


def test_load_state_dict_rejects_other_layouts():
    opt = optim.SGD([clgrad.ones(3, requires_grad=True)], lr=0.1)
    other = optim.SGD([clgrad.ones(3, requires_grad=True), clgrad.ones(2, requires_grad=True)],
                      lr=0.1)
    with pytest.raises(ValueError, match="parameter group 0 of 2 parameters"):
        opt.load_state_dict(other.state_dict())
    two = optim.SGD([{"params": [clgrad.ones(1, requires_grad=True)]},
                     {"params": [clgrad.ones(1, requires_grad=True)]}], lr=0.1)
    with pytest.raises(ValueError, match="2 parameter groups"):
        opt.load_state_dict(two.state_dict())


@pytest.mark.parametrize("make,match", [
    (lambda p: optim.SGD([p], lr=-1), "lr >= 0"),
    (lambda p: optim.SGD([p], lr=0.1, nesterov=True), "Nesterov"),
    (lambda p: optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
    (lambda p: optim.Optimizer([p], {"lr": optim.optimizer.required}),
     "required optimization parameter lr"),  # (SGD's lr defaults to 1e-3 since PyTorch 2.2)
    (lambda p: optim.Adam([p], betas=(0.9, 1.0)), "betas"),
    (lambda p: optim.Adam([p], eps=-1), "eps"),
    (lambda p: optim.AdamW([p], weight_decay=-0.1), "weight_decay"),
    (lambda p: optim.SGD([], lr=0.1), "empty parameter list"),
    (lambda p: optim.SGD([p, p], lr=0.1), "more than one"),
    (lambda p: optim.Adagrad([p], lr_decay=-1), "lr_decay >= 0"),
    (lambda p: optim.Adagrad([p], initial_accumulator_value=-1), "initial_accumulator_value"),
    (lambda p: optim.Adadelta([p], rho=1.5), "rho in"),
    (lambda p: optim.RMSprop([p], alpha=-0.1), "alpha >= 0"),
    (lambda p: optim.RMSprop([p], momentum=-0.1), "momentum >= 0"),
])
def test_bad_arguments_raise_value_error(make, match):
    with pytest.raises(ValueError, match=match):
        make(clgrad.ones(2, requires_grad=True))


def test_non_leaf_and_set_raise_type_error():
    p = clgrad.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="non-leaf"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="ordered"):
        optim.SGD([{"params": {p}}], lr=0.1)


# -- schedulers -------------------------------------------------------------------------------
def _lrs(sched, epochs):
    out = [sched.get_last_lr()]
    for _ in range(epochs):
        sched.optimizer.step()
        sched.step()
        out.append(sched.get_last_lr())
    return out


def test_step_lr():
    opt = optim.SGD([{"params": [clgrad.ones(1, requires_grad=True)]},
                     {"params": [clgrad.ones(1, requires_grad=True)], "lr": 1.0}], lr=0.1)
    lrs = _lrs(lr_scheduler.StepLR(opt, step_size=3, gamma=0.5), 8)
    want = [[0.1 * 0.5 ** (e // 3), 1.0 * 0.5 ** (e // 3)] for e in range(9)]
    np.testing.assert_allclose(lrs, want, rtol=1e-15)
    assert opt.param_groups[1]["lr"] == want[-1][1]


def test_cosine_annealing_lr():
    opt = optim.Adam([clgrad.ones(1, requires_grad=True)], lr=0.4)
    lrs = _lrs(lr_scheduler.CosineAnnealingLR(opt, T_max=5, eta_min=0.1), 10)
    want = [[0.1 + 0.3 * (1 + math.cos(math.pi * e / 5)) / 2] for e in range(11)]
    np.testing.assert_allclose(lrs, want, rtol=1e-14)
    assert lrs[5] == pytest.approx([0.1]) and lrs[10] == pytest.approx([0.4])


def test_scheduler_state_dict_resumes():
    def make():
        opt = optim.SGD([clgrad.ones(1, requires_grad=True)], lr=1.0)
        return opt, lr_scheduler.CosineAnnealingLR(opt, T_max=7)
    opt, sched = make()
    _lrs(sched, 3)
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in saved
    opt2, sched2 = make()
    opt2.load_state_dict(saved_opt)
    sched2.load_state_dict(saved)
    np.testing.assert_allclose(_lrs(sched2, 2), _lrs(sched, 2), rtol=0)


def test_scheduler_resume_needs_initial_lr():
    opt = optim.SGD([clgrad.ones(1, requires_grad=True)], lr=1.0)
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(opt, step_size=2, last_epoch=4)
    with pytest.raises(ValueError, match="step_size"):
        lr_scheduler.StepLR(opt, step_size=0)


def test_load_state_dict_takes_a_step_saved_as_a_tensor():
    """PyTorch saves ``step`` as a float tensor; it must come back as a count."""
    p = clgrad.tensor(np.array([0.5, -1.0]), dtype=clgrad.float64, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    _steps(opt, (p,), 2)
    sd = opt.state_dict()
    sd["state"][0]["step"] = clgrad.tensor(2.0)
    q = clgrad.tensor(p.detach().numpy(), dtype=clgrad.float64, requires_grad=True)
    opt2 = optim.Adam([q], lr=0.1)
    opt2.load_state_dict(sd)
    assert opt2.state[q]["step"] == 2
    _steps(opt, (p,), 1)
    _steps(opt2, (q,), 1)
    np.testing.assert_array_equal(q.detach().numpy(), p.detach().numpy())


def test_custom_scheduler_on_the_old_base_name():
    class Halving(lr_scheduler._LRScheduler):
        def get_lr(self):
            return [b * 0.5 ** self.last_epoch for b in self.base_lrs]
    opt = optim.SGD([clgrad.ones(1, requires_grad=True)], lr=1.0)
    assert _lrs(Halving(opt), 3) == [[1.0], [0.5], [0.25], [0.125]]


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=[c[0] for c in CASES])
def test_resume_from_a_torch_optimizer_state_dict(name, cls, kwargs, ref):
    """A state dict written by torch.optim (int keys, float tensor steps, torch-only group
    keys) continues the same trajectory in clgrad."""
    torch = pytest.importorskip("torch")
    p0 = np.random.default_rng(6).uniform(-1.5, 1.5, (3, 4))
    tp = torch.tensor(p0, requires_grad=True)
    topt = getattr(torch.optim, cls.__name__)([tp], **kwargs)

    def torch_steps(n):
        for _ in range(n):
            tp.grad = torch.tensor(_grad_fn(tp.detach().numpy()))
            topt.step()
    torch_steps(3)
    sd = topt.state_dict()
    host = {"state": {k: {n: v.numpy() if torch.is_tensor(v) else v for n, v in s.items()}
                      for k, s in sd["state"].items()},
            "param_groups": sd["param_groups"]}
    p = clgrad.tensor(tp.detach().numpy(), dtype=clgrad.float64, requires_grad=True)
    opt = cls([p], **kwargs)
    opt.load_state_dict(host)
    torch_steps(3)
    _steps(opt, (p,), 3)
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-12, atol=1e-13)


# -- optimizer kernels on the CONTIG build (issue 23, helper h8) -------------------------------
def test_sgd_momentum_on_a_contiguous_view_at_an_offset_matches_torch():
    """A parameter that is a dense view starting inside a bigger storage: the CONTIG build
    indexes it as offset + i; three steps of SGD with momentum and weight decay against
    torch, and the storage around the view untouched."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    base_np = rng.standard_normal(1000).astype(np.float32)
    grads = [rng.standard_normal((30, 20)).astype(np.float32) for _ in range(3)]
    base = clgrad.from_numpy(base_np)
    p = base[100:700].view(30, 20).detach().requires_grad_()
    tp = torch.tensor(base_np[100:700].reshape(30, 20), requires_grad=True)
    opt = clgrad.optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=5e-4)
    topt = torch.optim.SGD([tp], lr=0.1, momentum=0.9, weight_decay=5e-4)
    for g in grads:
        p.grad = clgrad.from_numpy(g)
        tp.grad = torch.from_numpy(g)
        opt.step()
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-6, atol=1e-6)
    out = base.numpy()
    np.testing.assert_array_equal(out[:100], base_np[:100])
    np.testing.assert_array_equal(out[700:], base_np[700:])


# -- optimizer state dicts keyed by int, as PyTorch's (issue 24, item 5) ------------------------
_TORCH_CASES = [("sgd_momentum", optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=0.01)),
                ("adam", optim.Adam, dict(lr=0.01, betas=(0.8, 0.99))),
                ("adamw", optim.AdamW, dict(lr=0.01, weight_decay=0.1))]


def _pair(torch, cls, kwargs):
    rng = np.random.default_rng(11)
    p0 = [rng.uniform(-1.5, 1.5, (3, 4)), rng.uniform(-1.5, 1.5, (5,))]
    cps = [clgrad.tensor(a, dtype=clgrad.float64, requires_grad=True) for a in p0]
    tps = [torch.tensor(a, requires_grad=True) for a in p0]
    return cps, cls(cps, **kwargs), tps, getattr(torch.optim, cls.__name__)(tps, **kwargs)


def _torch_steps(torch, topt, tps, n):
    for _ in range(n):
        for p in tps:
            p.grad = torch.tensor(_grad_fn(p.detach().numpy()))
        topt.step()


@pytest.mark.parametrize("name,cls,kwargs", _TORCH_CASES, ids=[c[0] for c in _TORCH_CASES])
@pytest.mark.parametrize("via", ["memory", "pt_file"])
def test_torch_loads_a_clgrad_optimizer_state_dict(name, cls, kwargs, via, tmp_path):
    """clgrad's state dict (int keys) in PyTorch's load_state_dict: the state arrives (it was
    silently dropped with str keys) and both continue on the same trajectory."""
    torch = pytest.importorskip("torch")
    cps, opt, tps, topt = _pair(torch, cls, kwargs)
    _steps(opt, cps, 3)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1]
    if via == "pt_file":
        clgrad.save(sd, tmp_path / "opt.pt")
        tsd = torch.load(tmp_path / "opt.pt", weights_only=True)
    else:
        tsd = {"state": {k: {n: torch.tensor(v.numpy()) if isinstance(v, clgrad.Tensor)
                             else v for n, v in s.items()} for k, s in sd["state"].items()},
               "param_groups": sd["param_groups"]}
    with torch.no_grad():
        for t, c in zip(tps, cps):
            t.copy_(torch.tensor(c.detach().numpy()))
    topt.load_state_dict(tsd)
    assert len(topt.state) == 2
    for t, c in zip(tps, cps):
        for k, v in opt.state[c].items():
            tv = topt.state[t][k]
            if k == "step":
                assert float(tv) == v == 3
            else:
                np.testing.assert_array_equal(tv.numpy(), v.numpy())
    _steps(opt, cps, 3)
    _torch_steps(torch, topt, tps, 3)
    for t, c in zip(tps, cps):
        np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name,cls,kwargs", _TORCH_CASES, ids=[c[0] for c in _TORCH_CASES])
def test_clgrad_loads_a_torch_saved_optimizer_state_dict(name, cls, kwargs, tmp_path):
    """torch.save of a torch.optim state dict -> clgrad.load -> load_state_dict: the same
    state values, int keys kept, and the same trajectory after; then back out through
    clgrad.save and into a fresh torch optimizer."""
    torch = pytest.importorskip("torch")
    cps, opt, tps, topt = _pair(torch, cls, kwargs)
    _torch_steps(torch, topt, tps, 3)
    torch.save(topt.state_dict(), tmp_path / "t.pt")
    sd = clgrad.load(tmp_path / "t.pt")
    assert sorted(sd["state"]) == [0, 1]
    with clgrad.no_grad():
        for t, c in zip(tps, cps):
            c.copy_(clgrad.tensor(t.detach().numpy(), dtype=clgrad.float64))
    opt.load_state_dict(sd)
    for t, c in zip(tps, cps):
        assert set(opt.state[c]) == set(topt.state[t])
        for k, tv in topt.state[t].items():
            if k == "step":
                assert opt.state[c][k] == int(tv.item()) == 3
            else:
                np.testing.assert_array_equal(opt.state[c][k].numpy(), tv.numpy())
    clgrad.save(opt.state_dict(), tmp_path / "c.pt")
    _steps(opt, cps, 3)
    _torch_steps(torch, topt, tps, 3)
    for t, c in zip(tps, cps):
        np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-13)
    _, _, tps2, topt2 = _pair(torch, cls, kwargs)  # the clgrad file back into torch
    topt2.load_state_dict(torch.load(tmp_path / "c.pt", weights_only=True))
    for t2 in tps2:
        assert set(topt2.state[t2]) == set(topt.state[tps[0]])


@pytest.mark.parametrize("suffix", [".safetensors", ".pt"])
def test_optimizer_state_round_trips_with_int_keys_and_old_str_keys_load(suffix, tmp_path):
    p = clgrad.tensor(np.array([0.5, -1.0, 2.0]), dtype=clgrad.float64, requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    _steps(opt, (p,), 2)
    clgrad.save({"opt": opt.state_dict()}, tmp_path / f"new{suffix}")
    old = opt.state_dict()
    old["state"] = {str(k): v for k, v in old["state"].items()}  # clgrad's former layout
    clgrad.save({"opt": old}, tmp_path / f"old{suffix}")
    new = clgrad.load(tmp_path / f"new{suffix}")["opt"]
    assert list(new["state"]) == [0]
    for f in ("new", "old"):
        q = clgrad.tensor(p.detach().numpy(), dtype=clgrad.float64, requires_grad=True)
        opt2 = optim.Adam([q], lr=0.1)
        opt2.load_state_dict(clgrad.load(tmp_path / f"{f}{suffix}")["opt"])
        assert opt2.state[q]["step"] == 2
        np.testing.assert_array_equal(opt2.state[q]["exp_avg"].numpy(),
                                      opt.state[p]["exp_avg"].numpy())
        _steps(opt2, (q,), 1)
        ref = clgrad.tensor(p.detach().numpy(), dtype=clgrad.float64, requires_grad=True)
        opt3 = optim.Adam([ref], lr=0.1)
        opt3.load_state_dict(opt.state_dict())
        _steps(opt3, (ref,), 1)
        np.testing.assert_array_equal(q.detach().numpy(), ref.detach().numpy())
    with pytest.raises(ValueError, match="expected parameter indices"):
        opt.load_state_dict({"state": {"first": {}}, "param_groups": old["param_groups"]})


# -- multi-tensor launches (foreach / fused): planned per layout (issue 34) --------------------
_MULTI_CASES = [(optim.SGD, dict(lr=0.05, momentum=0.9, weight_decay=0.01, nesterov=True)),
                (optim.SGD, dict(lr=0.05, weight_decay=0.01, maximize=True)),
                (optim.SGD, dict(lr=0.05, momentum=0.8, dampening=0.3)),
                (optim.Adam, dict(lr=0.01, weight_decay=0.1)),
                (optim.AdamW, dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.05, maximize=True))]


def _multi_params(device=None):
    """Parameters that exercise every branch of the multi-tensor planner: 10 contiguous float32
    ones (two launches of MULTI), two float64 ones (a launch of their own), a transposed one
    and an empty one (the one-launch path) and a dense view at an offset of a bigger storage;
    float values from a fixed seed."""
    rng = np.random.default_rng(7)
    shapes = [(3, 4), (5,), (257,), (1,), (2, 2, 2), (17,), (1025,), (6, 3), (9,), (3, 3, 3)]
    vals = [rng.uniform(-1.5, 1.5, s) for s in shapes]
    ps = [clgrad.tensor(v, dtype=clgrad.float32, device=device) for v in vals]
    ps += [clgrad.tensor(rng.uniform(-1.5, 1.5, s), dtype=clgrad.float64, device=device)
           for s in ((4, 5), (33,))]
    ps.append(clgrad.tensor(rng.uniform(-1.5, 1.5, (4, 6)), dtype=clgrad.float32,
                            device=device).t())
    ps.append(clgrad.zeros(0, device=device))
    base = clgrad.tensor(rng.uniform(-1.5, 1.5, 200), dtype=clgrad.float32, device=device)
    ps.append(base[50:110].view(6, 10))
    return [p.detach().requires_grad_() for p in ps]


def _multi_grads(ps, step):
    """Gradients of the current values (``_grad_fn``); at step 2 the first parameter gets none
    (Adam's step counts then differ) and the second a dense view at an offset of a bigger
    storage (another layout: another plan)."""
    for i, p in enumerate(ps):
        g = _grad_fn(p.detach().numpy().astype(np.float64))
        if step == 2 and i == 0:
            p.grad = None
        elif step == 2 and i == 1:
            big = clgrad.zeros(g.size + 3, dtype=p.dtype, device=p.device)
            view = big[3:].view(p.shape)
            view.copy_(clgrad.tensor(g, dtype=p.dtype, device=p.device))
            p.grad = view
        else:
            p.grad = clgrad.tensor(g, dtype=p.dtype, device=p.device)


def _state_arrays(opt, ps):
    return [{k: v.numpy().copy() if isinstance(v, clgrad.Tensor) else v
             for k, v in opt.state.get(p, {}).items()} for p in ps]


@pytest.mark.parametrize("cls,kwargs", _MULTI_CASES,
                         ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(_MULTI_CASES)])
def test_multi_tensor_steps_give_the_one_launch_bits(cls, kwargs):
    """foreach=True (planned multi-tensor launches) against foreach=False (one launch per
    parameter, checked against NumPy above): the same bits of every parameter and state
    entry after each of 5 steps, over parameters of two dtypes, more than MULTI of them, some
    the multi kernels cannot take, a step without one gradient and a gradient of another
    layout; the float64 parameters also against the NumPy reference (they never skip)."""
    runs = []
    for foreach in (True, False):
        ps = _multi_params()
        opt = cls(ps, foreach=foreach, **kwargs)
        trace = []
        for step in range(5):
            _multi_grads(ps, step)
            opt.step()
            trace.append(([p.detach().numpy().copy() for p in ps], _state_arrays(opt, ps)))
        runs.append((ps, trace))
    (ps, multi), (_, single) = runs
    for step, ((pm, sm), (p1, s1)) in enumerate(zip(multi, single)):
        for i, (a, b) in enumerate(zip(pm, p1)):
            np.testing.assert_array_equal(a, b, err_msg=f"step {step}, parameter {i}")
        for i, (a, b) in enumerate(zip(sm, s1)):
            assert a.keys() == b.keys(), (step, i)
            for k in a:
                np.testing.assert_array_equal(a[k], b[k], err_msg=f"step {step}, {i}, {k}")
    p0 = _multi_params()
    ref = ref_sgd if cls is optim.SGD else (
        lambda p, s, **kw: ref_adam(p, s, decoupled=cls is optim.AdamW, **kw))
    for i in (10, 11):
        want = ref(p0[i].detach().numpy(), 5, **kwargs)[-1]
        np.testing.assert_allclose(multi[-1][0][i], want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls,kwargs", _MULTI_CASES[::3],
                         ids=[c.__name__ for c, _ in _MULTI_CASES[::3]])
def test_multi_tensor_launches_per_device(cls, kwargs):
    """One group's parameters on two devices (a second Device of its own context): a launch
    per device and dtype, and the one-launch bits on both."""
    from clgrad.runtime import Device
    d0 = clgrad.default_device()
    other = Device(d0.cl_device, d0.platform_index, d0.device_index)
    runs = []
    for foreach in (True, False):
        ps = _multi_params()[:3] + _multi_params(device=other)[:2]
        opt = cls(ps, foreach=foreach, **kwargs)
        for step in range(3):
            _multi_grads(ps, 0)
            before = launch_count()
            opt.step()
            launches = launch_count() - before
        runs.append(([p.detach().numpy() for p in ps], launches))
    (multi, n_multi), (single, n_single) = runs
    assert (n_multi, n_single) == (2, 5)
    for a, b in zip(multi, single):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sgd_momentum_follows_hyperparameters_changed_between_steps(dtype):
    """The scalar arguments are converted once per dtype and values (optim/sgd.py): every
    change of a group's value between steps, and ints, bools and NumPy floats for it, still
    reach the kernel (NumPy's update, PyTorch's formula, step by step)."""
    dev = clgrad.default_device()
    if dtype == "float64" and not dev.fp64:
        pytest.skip("no float64 on this device")
    rng = np.random.default_rng(3)
    pn = rng.standard_normal(7)
    p = clgrad.tensor(pn, dtype=getattr(clgrad, dtype), requires_grad=True)
    opt = clgrad.optim.SGD([p], lr=0.1, momentum=0.9)
    group = opt.param_groups[0]
    buf = None
    steps = [dict(), dict(lr=0.05), dict(lr=1, momentum=0.5), dict(weight_decay=0.01),
             dict(dampening=0.25), dict(nesterov=True, dampening=0), dict(maximize=True),
             dict(lr=np.float64(0.02), maximize=False), dict(lr=0.1, momentum=True)]
    for change in steps:
        group.update(change)
        gn = rng.standard_normal(7)
        p.grad = clgrad.tensor(gn, dtype=p.dtype)
        opt.step()
        g = -gn if group["maximize"] else gn
        d = g + group["weight_decay"] * pn
        buf = d if buf is None else group["momentum"] * buf + (1 - group["dampening"]) * d
        d = d + group["momentum"] * buf if group["nesterov"] else buf
        pn = pn - float(group["lr"]) * d
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(p.detach().numpy(), pn, rtol=tol, atol=tol)


@pytest.mark.parametrize("make,ref", [
    (lambda ps: clgrad.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.01),
     lambda p, n: ref_sgd(p, n, 0.05, 0.9, weight_decay=0.01)),
    (lambda ps: clgrad.optim.SGD(ps, lr=0.05), lambda p, n: ref_sgd(p, n, 0.05)),
    (lambda ps: clgrad.optim.Adam(ps, lr=0.01, weight_decay=0.01),
     lambda p, n: ref_adam(p, n, 0.01, weight_decay=0.01)),
    (lambda ps: clgrad.optim.Adam(ps, lr=0.01, amsgrad=True),
     lambda p, n: ref_adam(p, n, 0.01, amsgrad=True)),
])
def test_kept_update_plans_follow_layouts_shapes_and_dtypes(make, ref):
    """The per-parameter update launches are kept per layout (ops/_util.launch_1d_kept):
    parameters of one shape and of others, float32 and float64, and gradients given
    contiguous or as transposed views (the strided launch) all follow NumPy's update, step
    after step (a plan reused with another layout would move the wrong elements)."""
    dev = clgrad.default_device()
    rng = np.random.default_rng(4)
    dts = ("float32", "float64") if dev.fp64 else ("float32",)
    starts = [(rng.standard_normal(s), dt) for dt in dts for s in ((3, 5), (3, 5), (5, 3), (7,))]
    ps = [clgrad.tensor(a, dtype=getattr(clgrad, dt), requires_grad=True) for a, dt in starts]
    opt = make(ps)
    steps = 4
    for k in range(steps):
        for i, p in enumerate(ps):
            gn = _grad_fn(p.detach().numpy().astype(np.float64))
            g = clgrad.tensor(gn.T.copy() if (i + k) % 2 and gn.ndim == 2 else gn, dtype=p.dtype)
            p.grad = g.t() if (i + k) % 2 and gn.ndim == 2 else g  # contiguous or transposed
        opt.step()
    for p, (a, dt) in zip(ps, starts):
        tol = 1e-4 if dt == "float32" else 1e-10
        np.testing.assert_allclose(p.detach().numpy(), ref(a, steps)[-1], rtol=tol, atol=tol)


@pytest.mark.parametrize("name, kwargs, keys", [
    ("RMSprop", dict(foreach=True, capturable=False),
     {"alpha", "capturable", "centered", "differentiable", "eps", "foreach", "lr", "maximize",
      "momentum", "weight_decay"}),
    ("Adagrad", dict(foreach=True, fused=None),
     {"differentiable", "eps", "foreach", "fused", "initial_accumulator_value", "lr",
      "lr_decay", "maximize", "weight_decay"}),
    ("Adadelta", dict(foreach=True, capturable=False),
     {"capturable", "differentiable", "eps", "foreach", "lr", "maximize", "rho",
      "weight_decay"}),
    # nanoGPT: AdamW(..., fused=True) on CUDA; PyTorch 2.13's keys
    ("Adam", dict(fused=True), {"amsgrad", "betas", "capturable", "decoupled_weight_decay",
                                "differentiable", "eps", "foreach", "fused", "lr", "maximize",
                                "weight_decay"}),
    ("AdamW", dict(foreach=False, fused=None),
     {"amsgrad", "betas", "capturable", "decoupled_weight_decay", "differentiable", "eps",
      "foreach", "fused", "lr", "maximize", "weight_decay"}),
])
def test_adaptive_optimizers_take_pytorchs_execution_flags(name, kwargs, keys):
    """milesial's U-Net: optim.RMSprop(..., foreach=True) (a TypeError in clgrad before);
    the flags join the defaults as PyTorch's and change no value."""
    g = np.random.default_rng(0).standard_normal(5)
    out = []
    for kw in ({}, kwargs):
        p = clgrad.nn.Parameter(clgrad.tensor(np.linspace(-1.0, 1.0, 5)))
        opt = getattr(clgrad.optim, name)([p], lr=0.1, **kw)
        assert set(opt.defaults) == keys == set(opt.param_groups[0]) - {"params"}
        assert all(opt.defaults[k] == v for k, v in kw.items())
        for _ in range(3):
            p.grad = clgrad.tensor(g)
            opt.step()
        out.append(p.detach().numpy())
    np.testing.assert_array_equal(out[0], out[1])
    with pytest.raises(NotImplementedError, match=f"{name}: differentiable=True"):
        getattr(clgrad.optim, name)([p], differentiable=True)


def test_adam_decoupled_weight_decay_is_adamw():
    """PyTorch 2.13's Adam(decoupled_weight_decay=True) is AdamW (its AdamW's defaults carry
    the flag True): the same bits as AdamW; False keeps the L2 penalty (by hand below); a
    param group's own value counts, as a loaded PyTorch state dict sets it."""
    g = np.random.default_rng(1).standard_normal((3, 6))
    x0 = np.linspace(-1.0, 2.0, 6)

    def run(cls, **kw):
        p = clgrad.nn.Parameter(clgrad.tensor(x0))
        opt = cls([p], lr=0.1, weight_decay=0.5, **kw)
        for row in g:
            p.grad = clgrad.tensor(row)
            opt.step()
        return p.detach().numpy(), opt

    adamw, opt_w = run(clgrad.optim.AdamW)
    dec, opt_d = run(clgrad.optim.Adam, decoupled_weight_decay=True)
    l2, opt_l = run(clgrad.optim.Adam)
    np.testing.assert_array_equal(dec, adamw)
    assert opt_w.defaults["decoupled_weight_decay"] is True
    assert opt_d.defaults["decoupled_weight_decay"] is True
    assert opt_l.defaults["decoupled_weight_decay"] is False
    # by hand, float64: one step of each from x0 with g[0] (m, v from zero, t = 1)
    p = clgrad.nn.Parameter(clgrad.tensor(x0))
    opt = clgrad.optim.Adam([p], lr=0.1, weight_decay=0.5)
    opt.param_groups[0]["decoupled_weight_decay"] = True        # as load_state_dict sets it
    p.grad = clgrad.tensor(g[0])
    opt.step()
    y = x0 * (1 - 0.1 * 0.5)
    m, v = 0.1 * g[0], 0.001 * g[0] ** 2
    want = y - 0.1 / 0.1 * m / (np.sqrt(v) / np.sqrt(0.001) + 1e-8)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12, atol=1e-14)
    assert not np.allclose(l2, adamw)
    torch = pytest.importorskip("torch")
    t = torch.tensor(x0, requires_grad=True)
    topt = torch.optim.Adam([t], lr=0.1, weight_decay=0.5, decoupled_weight_decay=True)
    for row in g:
        t.grad = torch.tensor(row)
        topt.step()
    np.testing.assert_allclose(dec, t.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_step_pre_and_post_hooks():
    p = clgrad.nn.Parameter(clgrad.tensor([1.0, 2.0], dtype=clgrad.float64))
    p.grad = clgrad.tensor([0.5, -1.0], dtype=clgrad.float64)
    opt = optim.SGD([p], lr=0.1)
    calls = []

    def pre(o, args, kwargs):
        calls.append(("pre", o is opt, args, dict(kwargs)))

    def post(o, args, kwargs):
        calls.append(("post", p.detach().numpy().tolist()))
    h1, h2 = opt.register_step_pre_hook(pre), opt.register_step_post_hook(post)
    opt.step()
    assert calls == [("pre", True, (), {}), ("post", [0.95, 2.1])]
    h1.remove()
    h2.remove()
    opt.step()
    assert len(calls) == 2
    np.testing.assert_allclose(p.detach().numpy(), [0.9, 2.2])

    seen = []

    def swap_closure(o, args, kwargs):  # a pre-hook's (args, kwargs) replace step's
        return (), {"closure": lambda: seen.append(1) or 7.0}
    h = opt.register_step_pre_hook(swap_closure)
    assert opt.step() == 7.0 and seen == [1]
    h.remove()
    opt.register_step_pre_hook(lambda o, a, k: "bad")
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()
    with pytest.raises(TypeError):
        opt.register_step_post_hook(3)


def test_step_hooks_run_once_for_a_subclass_step_calling_super():
    class Counting(optim.SGD):
        def step(self, closure=None):
            self.n = getattr(self, "n", 0) + 1
            return super().step(closure)
    p = clgrad.nn.Parameter(clgrad.tensor([1.0]))
    p.grad = clgrad.tensor([1.0])
    opt = Counting([p], lr=1.0)
    pre, post = [], []
    opt.register_step_pre_hook(lambda o, a, k: pre.append(1))
    opt.register_step_post_hook(lambda o, a, k: post.append(1))
    opt.step()
    assert (opt.n, len(pre), len(post)) == (1, 1, 1)
    np.testing.assert_allclose(p.detach().numpy(), [0.0])
