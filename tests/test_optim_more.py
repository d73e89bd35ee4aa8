"""NAdam, RAdam, Adamax, Rprop, ASGD, Adafactor: float64 NumPy re-implementations of PyTorch's
single-tensor update equations (no torch needed), PyTorch trajectories, state dicts both ways
and PyTorch's ValueError messages.

Tolerances: float64 trajectories agree with PyTorch's to 1e-12 (measured: <= 2e-14; NAdam's
mu_product and ASGD's eta/mu are rounded to float32 as PyTorch's 0-d tensors hold them, so
the references round them too). float32: each step differs from PyTorch's by 1-3 ulp (its
vectorised CPU kernels contract to FMAs); over 8 steps of the cubic test loss the largest
measured difference was 3e-6 (NAdam), so atol=1e-5.
"""
import numpy as np
import pytest

import clgrad
from clgrad import optim

STEPS = 8
f32 = np.float32


def _grad_fn(p):
    """A gradient that depends on the parameters (of the loss sum(p^4/4 - p^2/4 + c p))."""
    c = np.linspace(-0.5, 0.5, p.size).reshape(p.shape)
    return p ** 3 - 0.5 * p + c


def _lerp(a, b, w):
    return a + w * (b - a) if w < 0.5 else b - (b - a) * (1 - w)


# -- NumPy references ---------------------------------------------------------------------------
def ref_nadam(p, steps, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    p, m, v, prod, out = p.copy(), np.zeros_like(p), np.zeros_like(p), 1.0, []
    b1, b2 = betas
    for t in range(1, steps + 1):
        g = -_grad_fn(p) if maximize else _grad_fn(p)
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        prod = float(f32(prod) * f32(mu))  # PyTorch's float32 0-d mu_product
        m = _lerp(m, g, 1 - b1)
        v = b2 * v + (1 - b2) * g * g
        d = np.sqrt(v / (1 - b2 ** t)) + eps
        p = p + (-lr * (1 - mu) / (1 - prod)) * (g / d)
        p = p + (-lr * mu_next / (1 - prod * mu_next)) * (m / d)
        out.append(p.copy())
    return out


def ref_radam(p, steps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
              decoupled_weight_decay=False, maximize=False):
    p, m, v, out = p.copy(), np.zeros_like(p), np.zeros_like(p), []
    b1, b2 = betas
    rho_inf = 2 / (1 - b2) - 1
    for t in range(1, steps + 1):
        g = -_grad_fn(p) if maximize else _grad_fn(p)
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = _lerp(m, g, 1 - b1)
        v = b2 * v + (1 - b2) * g * g
        bc2 = 1 - b2 ** t
        rho_t = rho_inf - 2 * t * b2 ** t / bc2
        u = m / (1 - b1 ** t) * lr
        if rho_t > 5:
            r = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            u = u * (bc2 ** 0.5 / (np.sqrt(v) + eps)) * r ** 0.5
        p = p - u
        out.append(p.copy())
    return out


def ref_adamax(p, steps, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
               maximize=False):
    p, m, u, out = p.copy(), np.zeros_like(p), np.zeros_like(p), []
    b1, b2 = betas
    for t in range(1, steps + 1):
        g = (-_grad_fn(p) if maximize else _grad_fn(p)) + weight_decay * p
        m = _lerp(m, g, 1 - b1)
        u = np.maximum(u * b2, np.abs(g) + eps)
        p = p + (-lr / (1 - b1 ** t)) * (m / u)
        out.append(p.copy())
    return out


def ref_rprop(p, steps, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    p, prev, out = p.copy(), np.zeros_like(p), []
    step = np.full_like(p, lr)
    for _ in range(steps):
        g = -_grad_fn(p) if maximize else _grad_fn(p)
        s = np.sign(g * prev)
        f = np.where(s > 0, etas[1], np.where(s < 0, etas[0], 1.0))
        step = np.clip(step * f, *step_sizes)
        g = np.where(f == etas[0], 0.0, g)
        p = p - np.sign(g) * step
        prev = g
        out.append(p.copy())
    return out


def ref_asgd(p, steps, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0,
             maximize=False, averages=False):
    """The parameters after each step (the averages ``ax`` with averages=True)."""
    p, ax, eta, mu, out, axs = p.copy(), np.zeros_like(p), float(f32(lr)), 1.0, [], []
    for t in range(1, steps + 1):
        g = (-_grad_fn(p) if maximize else _grad_fn(p)) + weight_decay * p
        p = p * (1 - lambd * eta)
        p = p - eta * g
        ax = ax + (p - ax) * mu if mu != 1 else p.copy()
        eta = float(f32(lr / (1 + lambd * lr * t) ** alpha))  # float32 0-d tensors
        mu = float(f32(1 / max(1, t - t0)))
        out.append(p.copy())
        axs.append(ax.copy())
    return axs if averages else out


def ref_adafactor(p, steps, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                  weight_decay=0.0, maximize=False):
    p, out = p.copy(), []
    eps1 = np.finfo(p.dtype).eps if eps[0] is None else eps[0]
    row = np.zeros(p.shape[:-1] + (1,)) if p.ndim > 1 else None
    col = np.zeros(p.shape[:-2] + (1, p.shape[-1])) if p.ndim > 1 else None
    var = np.zeros_like(p)
    for t in range(1, steps + 1):
        g = -_grad_fn(p) if maximize else _grad_fn(p)
        b = float(t) ** beta2_decay
        alpha = max(eps[1], np.linalg.norm(p) / p.size ** 0.5) * min(lr, 1 / t ** 0.5)
        p = p * (1 - lr * weight_decay)
        if p.ndim > 1:
            row = _lerp(row, (g * g).mean(-1, keepdims=True), b)
            col = _lerp(col, (g * g).mean(-2, keepdims=True), b)
            est = row @ col / np.maximum(row.mean(-2, keepdims=True), eps1)
        else:
            est = var = _lerp(var, g * g, b)
        u = g / np.sqrt(np.maximum(est, eps1 * eps1))
        p = p - alpha / max(1.0, np.linalg.norm(u) / (u.size ** 0.5 * d)) * u
        out.append(p.copy())
    return out


CASES = [
    ("nadam", optim.NAdam, dict(lr=0.05), ref_nadam),
    ("nadam_l2_maximize", optim.NAdam, dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01,
                                            maximize=True), ref_nadam),
    ("nadamw", optim.NAdam, dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True,
                                 betas=(0.8, 0.95)), ref_nadam),
    ("radam", optim.RAdam, dict(lr=0.05), ref_radam),
    ("radam_l2_maximize", optim.RAdam, dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1,
                                            maximize=True), ref_radam),
    ("radamw", optim.RAdam, dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1,
                                 decoupled_weight_decay=True), ref_radam),
    ("adamax", optim.Adamax, dict(lr=0.05, weight_decay=0.1), ref_adamax),
    ("adamax_maximize", optim.Adamax, dict(lr=0.05, betas=(0.5, 0.9), maximize=True),
     ref_adamax),
    ("rprop", optim.Rprop, dict(lr=0.05), ref_rprop),
    ("rprop_bounds_maximize", optim.Rprop, dict(lr=0.05, etas=(0.3, 1.5),
                                                step_sizes=(1e-3, 0.2), maximize=True),
     ref_rprop),
    ("asgd", optim.ASGD, dict(lr=0.05, weight_decay=0.1), ref_asgd),
    ("asgd_averaging", optim.ASGD, dict(lr=0.05, lambd=0.01, alpha=0.6, t0=2,
                                        maximize=True), ref_asgd),
    ("adafactor", optim.Adafactor, dict(lr=0.05), ref_adafactor),
    ("adafactor_wd_clip", optim.Adafactor, dict(lr=0.05, weight_decay=0.1, d=1.5,
                                                eps=(1e-5, 1e-3), maximize=True),
     ref_adafactor),
]
IDS = [c[0] for c in CASES]


def _strided_leaf(values):
    """A float64 leaf whose layout is a transposed view at an offset of a bigger buffer."""
    rows, cols = values.shape
    big = np.zeros((cols + 1, rows + 2))
    big[1:, 2:] = values.T
    t = clgrad.tensor(big, dtype=clgrad.float64)[1:, 2:].t().detach()
    assert not t.is_contiguous() and t.storage_offset() > 0
    return t.requires_grad_(True)


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=IDS)
def test_trajectory_matches_numpy(name, cls, kwargs, ref):
    p0 = np.random.default_rng(1).uniform(-1.5, 1.5, (5, 7))
    p = _strided_leaf(p0)
    opt = cls([p], **kwargs)
    expected = ref(p0, STEPS, **kwargs)
    for step in range(STEPS):
        p.grad = clgrad.tensor(_grad_fn(p.numpy()), dtype=clgrad.float64)
        opt.step()
        np.testing.assert_allclose(p.numpy(), expected[step], rtol=1e-12, atol=1e-13,
                                   err_msg=f"{name}, step {step + 1}")


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=IDS)
def test_trajectory_of_a_vector_and_a_3d_parameter_matches_numpy(name, cls, kwargs, ref):
    """1-d (Adafactor's unfactored variance) and 3-d (batched factors) parameters."""
    rng = np.random.default_rng(2)
    for shape in [(6,), (2, 3, 4)]:
        p0 = rng.uniform(-1.5, 1.5, shape)
        p = clgrad.tensor(p0, dtype=clgrad.float64, requires_grad=True)
        opt = cls([p], **kwargs)
        for _ in range(STEPS):
            p.grad = clgrad.tensor(_grad_fn(p.numpy()), dtype=clgrad.float64)
            opt.step()
        np.testing.assert_allclose(p.numpy(), ref(p0, STEPS, **kwargs)[-1], rtol=1e-12,
                                   atol=1e-13, err_msg=f"{name} {shape}")


def test_references_exercise_their_variants():
    """Each flag changes the reference trajectory (so the cases above test something)."""
    p0 = np.random.default_rng(1).uniform(-1.5, 1.5, (5, 7))
    pairs = [(ref_nadam(p0, 4, lr=0.05, weight_decay=0.1),
              ref_nadam(p0, 4, lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
             (ref_radam(p0, 8, lr=0.05, betas=(0.8, 0.9)), ref_radam(p0, 8, lr=0.05)),
             (ref_asgd(p0, 6, lr=0.05, t0=2, averages=True),
              ref_asgd(p0, 6, lr=0.05, averages=True)),
             (ref_rprop(p0, 6, lr=0.05, step_sizes=(1e-3, 0.055)), ref_rprop(p0, 6, lr=0.05))]
    for a, b in pairs:
        assert np.abs(a[-1] - b[-1]).max() > 1e-6


@pytest.mark.parametrize("kwargs", [dict(lr=0.05), dict(lr=0.05, lambd=0.01, alpha=0.6, t0=2)])
def test_asgd_average_matches_numpy(kwargs):
    p0 = np.random.default_rng(4).uniform(-1.5, 1.5, (5, 7))
    p = _strided_leaf(p0)
    opt = optim.ASGD([p], **kwargs)
    expected = ref_asgd(p0, STEPS, averages=True, **kwargs)
    for step in range(STEPS):
        p.grad = clgrad.tensor(_grad_fn(p.numpy()), dtype=clgrad.float64)
        opt.step()
        np.testing.assert_allclose(opt.state[p]["ax"].numpy(), expected[step], rtol=1e-12,
                                   atol=1e-13)


@pytest.mark.parametrize("dtype,atol", [("float64", 1e-12), ("float32", 1e-5)])
@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=IDS)
def test_trajectory_matches_torch(name, cls, kwargs, ref, dtype, atol):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    p0 = [rng.uniform(-1.5, 1.5, s).astype(dtype) for s in [(3, 4), (5,), (2, 3, 4)]]
    ps = [clgrad.tensor(a, dtype=getattr(clgrad, dtype), requires_grad=True) for a in p0]
    tps = [torch.tensor(a, requires_grad=True) for a in p0]
    groups = [{"params": ps[:2]}, {"params": ps[2:], "lr": 0.02}]
    tgroups = [{"params": tps[:2]}, {"params": tps[2:], "lr": 0.02}]
    opt, topt = cls(groups, **kwargs), getattr(torch.optim, cls.__name__)(tgroups, **kwargs)
    for _ in range(STEPS):
        for p, tp in zip(ps, tps):
            g = _grad_fn(tp.detach().numpy().astype(np.float64)).astype(dtype)
            p.grad, tp.grad = clgrad.tensor(g, dtype=getattr(clgrad, dtype)), torch.tensor(g)
        opt.step()
        topt.step()
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=0, atol=atol)
        for k, tv in topt.state[tp].items():
            v = opt.state[p][k]
            if isinstance(v, clgrad.Tensor):
                np.testing.assert_allclose(v.numpy(), tv.numpy(), rtol=1e-4, atol=atol)
            else:
                assert float(tv) == v, k


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=IDS)
def test_nan_gradient(name, cls, kwargs, ref):
    """As PyTorch: NaN reaches the parameter through the arithmetic, except Rprop, whose
    sign(NaN) is 0 (the element stays put). (Adafactor's NaN norm meets Python's max(1, nan),
    which is 1: the other elements move as PyTorch's do.)"""
    p = clgrad.tensor([0.5, -0.5, 1.0, 2.0], dtype=clgrad.float64, requires_grad=True)
    opt = cls([p], **kwargs)
    p.grad = clgrad.tensor([0.1, float("nan"), 0.2, 0.3], dtype=clgrad.float64)
    opt.step()
    got = p.numpy()
    if cls is optim.Rprop:
        assert got[1] == -0.5 and np.isfinite(got).all()
    else:
        assert np.isnan(got[1]) and np.isfinite(got[[0, 2, 3]]).all(), got


# -- state dicts, both ways ---------------------------------------------------------------------
def _steps(opt, ps, n):
    for _ in range(n):
        for p in ps:
            p.grad = clgrad.tensor(_grad_fn(p.numpy()), dtype=p.dtype)
        opt.step()


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


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=IDS)
def test_state_keys_and_group_keys_are_pytorchs(name, cls, kwargs, ref):
    torch = pytest.importorskip("torch")
    cps, opt, tps, topt = _pair(torch, cls, kwargs)
    _steps(opt, cps, 2)
    _torch_steps(torch, topt, tps, 2)
    for c, t in zip(cps, tps):
        assert set(opt.state[c]) == set(topt.state[t])
    assert set(opt.param_groups[0]) == set(topt.param_groups[0])


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=IDS)
def test_torch_loads_a_clgrad_checkpoint(name, cls, kwargs, ref, tmp_path):
    """clgrad.save of clgrad's state dict -> torch.load -> torch's load_state_dict: the same
    state, then the same trajectory."""
    torch = pytest.importorskip("torch")
    cps, opt, tps, topt = _pair(torch, cls, kwargs)
    _steps(opt, cps, 3)
    clgrad.save(opt.state_dict(), tmp_path / "c.pt")
    with torch.no_grad():
        for t, c in zip(tps, cps):
            t.copy_(torch.tensor(c.numpy()))
    topt.load_state_dict(torch.load(tmp_path / "c.pt", weights_only=True))
    for t, c in zip(tps, cps):
        assert float(topt.state[t]["step"]) == 3
    _steps(opt, cps, 3)
    _torch_steps(torch, topt, tps, 3)
    for t, c in zip(tps, cps):
        np.testing.assert_allclose(c.numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=IDS)
def test_clgrad_loads_a_torch_checkpoint(name, cls, kwargs, ref, tmp_path):
    """torch.save of torch's state dict -> clgrad.load -> load_state_dict: step an int, the
    scalar states floats, the tensors equal; then the same trajectory."""
    torch = pytest.importorskip("torch")
    cps, opt, tps, topt = _pair(torch, cls, kwargs)
    _torch_steps(torch, topt, tps, 3)
    torch.save(topt.state_dict(), tmp_path / "t.pt")
    with clgrad.no_grad():
        for t, c in zip(tps, cps):
            c.copy_(clgrad.tensor(t.detach().numpy(), dtype=clgrad.float64))
    opt.load_state_dict(clgrad.load(tmp_path / "t.pt"))
    for t, c in zip(tps, cps):
        assert set(opt.state[c]) == set(topt.state[t])
        for k, tv in topt.state[t].items():
            v = opt.state[c][k]
            if k == "step":
                assert v == 3 and isinstance(v, int)
            elif tv.dim() == 0 and k != "step" and cls is not optim.Adafactor:
                assert isinstance(v, float) and v == tv.item()
            else:
                np.testing.assert_array_equal(v.numpy(), tv.numpy())
    _steps(opt, cps, 3)
    _torch_steps(torch, topt, tps, 3)
    for t, c in zip(tps, cps):
        np.testing.assert_allclose(c.numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=IDS)
def test_state_dict_round_trip_resumes_the_trajectory(name, cls, kwargs, ref, tmp_path):
    p0 = np.random.default_rng(3).uniform(-1.5, 1.5, (4, 3))
    p = clgrad.tensor(p0, dtype=clgrad.float64, requires_grad=True)
    opt = cls([p], **kwargs)
    _steps(opt, (p,), 3)
    clgrad.save(opt.state_dict(), tmp_path / "o.pt")
    q = clgrad.tensor(p.numpy(), dtype=clgrad.float64, requires_grad=True)
    opt2 = cls([q], **kwargs)
    opt2.load_state_dict(clgrad.load(tmp_path / "o.pt"))
    _steps(opt, (p,), 3)
    _steps(opt2, (q,), 3)
    np.testing.assert_array_equal(p.numpy(), q.numpy())
    np.testing.assert_allclose(p.numpy(), ref(p0, 6, **kwargs)[-1], rtol=1e-12, atol=1e-13)


# -- hyperparameter checks ----------------------------------------------------------------------
BAD = [
    (optim.NAdam, dict(lr=-1.0), "Invalid learning rate: -1.0"),
    (optim.NAdam, dict(eps=-1e-8), "Invalid epsilon value: -1e-08"),
    (optim.NAdam, dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (optim.NAdam, dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (optim.NAdam, dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (optim.NAdam, dict(momentum_decay=-0.1), "Invalid momentum_decay value: -0.1"),
    (optim.RAdam, dict(lr=-1.0), "Invalid learning rate: -1.0"),
    (optim.RAdam, dict(betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (optim.Adamax, dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    (optim.Adamax, dict(eps=-1.0), "Invalid epsilon value: -1.0"),
    (optim.Rprop, dict(lr=-0.1), "Invalid learning rate: -0.1"),
    (optim.Rprop, dict(etas=(1.2, 0.5)), "Invalid eta values: 1.2, 0.5"),
    (optim.ASGD, dict(lr=-0.1), "Invalid learning rate: -0.1"),
    (optim.ASGD, dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (optim.Adafactor, dict(lr=-0.1), "Learning rate should be >= 0 but is: -0.1"),
    (optim.Adafactor, dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    (optim.Adafactor, dict(eps=(-1.0, 1e-3)), "epsilon1 should be >= 0 but is: -1.0"),
    (optim.Adafactor, dict(eps=(None, -1.0)), "epsilon2 should be >= 0 but is: -1.0"),
    (optim.Adafactor, dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    (optim.Adafactor, dict(weight_decay=-1.0), "weight_decay should be >= 0 but is: -1.0"),
]


@pytest.mark.parametrize("cls,kwargs,msg", BAD)
def test_bad_hyperparameters_raise_pytorchs_value_error(cls, kwargs, msg):
    with pytest.raises(ValueError) as info:
        cls([clgrad.zeros(2, requires_grad=True)], **kwargs)
    assert str(info.value) == msg
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(ValueError) as tinfo:
        getattr(torch.optim, cls.__name__)([torch.zeros(2, requires_grad=True)], **kwargs)
    assert str(tinfo.value) == msg


@pytest.mark.parametrize("cls", [optim.NAdam, optim.RAdam, optim.Adamax, optim.Rprop,
                                 optim.ASGD])
def test_differentiable_is_refused(cls):
    with pytest.raises(NotImplementedError):
        cls([clgrad.zeros(2, requires_grad=True)], differentiable=True)


def test_param_groups_use_their_own_hyperparameters():
    a = clgrad.tensor([1.0, -2.0], dtype=clgrad.float64, requires_grad=True)
    b = clgrad.tensor([0.5, 3.0], dtype=clgrad.float64, requires_grad=True)
    opt = optim.Rprop([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    a.grad = clgrad.tensor([1.0, -1.0], dtype=clgrad.float64)
    b.grad = clgrad.tensor([1.0, -1.0], dtype=clgrad.float64)
    opt.step()
    np.testing.assert_array_equal(a.numpy(), [0.9, -1.9])
    np.testing.assert_array_equal(b.numpy(), [0.0, 3.5])
