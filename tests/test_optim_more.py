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
        p.grad = clgrad.tensor(_grad_fn(p.detach().numpy()), dtype=clgrad.float64)
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), expected[step], rtol=1e-12, atol=1e-13,
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
            p.grad = clgrad.tensor(_grad_fn(p.detach().numpy()), dtype=clgrad.float64)
            opt.step()
        np.testing.assert_allclose(p.detach().numpy(), ref(p0, STEPS, **kwargs)[-1], rtol=1e-12,
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
        p.grad = clgrad.tensor(_grad_fn(p.detach().numpy()), dtype=clgrad.float64)
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
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=0, atol=atol)
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
    got = p.detach().numpy()
    if cls is optim.Rprop:
        assert got[1] == -0.5 and np.isfinite(got).all()
    else:
        assert np.isnan(got[1]) and np.isfinite(got[[0, 2, 3]]).all(), got


# -- state dicts, both ways ---------------------------------------------------------------------
def _steps(opt, ps, n):
    for _ in range(n):
        for p in ps:
            p.grad = clgrad.tensor(_grad_fn(p.detach().numpy()), dtype=p.dtype)
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
            t.copy_(torch.tensor(c.detach().numpy()))
    topt.load_state_dict(torch.load(tmp_path / "c.pt", weights_only=True))
    for t, c in zip(tps, cps):
        assert float(topt.state[t]["step"]) == 3
    _steps(opt, cps, 3)
    _torch_steps(torch, topt, tps, 3)
    for t, c in zip(tps, cps):
        np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-13)


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
        np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name,cls,kwargs,ref", CASES, ids=IDS)
def test_state_dict_round_trip_resumes_the_trajectory(name, cls, kwargs, ref, tmp_path):
    p0 = np.random.default_rng(3).uniform(-1.5, 1.5, (4, 3))
    p = clgrad.tensor(p0, dtype=clgrad.float64, requires_grad=True)
    opt = cls([p], **kwargs)
    _steps(opt, (p,), 3)
    clgrad.save(opt.state_dict(), tmp_path / "o.pt")
    q = clgrad.tensor(p.detach().numpy(), dtype=clgrad.float64, requires_grad=True)
    opt2 = cls([q], **kwargs)
    opt2.load_state_dict(clgrad.load(tmp_path / "o.pt"))
    _steps(opt, (p,), 3)
    _steps(opt2, (q,), 3)
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    np.testing.assert_allclose(p.detach().numpy(), ref(p0, 6, **kwargs)[-1], rtol=1e-12, atol=1e-13)


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
    np.testing.assert_array_equal(a.detach().numpy(), [0.9, -1.9])
    np.testing.assert_array_equal(b.detach().numpy(), [0.0, 3.5])


# -- CyclicLR -----------------------------------------------------------------------------------
def _cyclic_hand(n, base, top, up, down, scale):
    """Hand form of Smith's triangle: cycle c, position x in [0, 1) of the cycle."""
    total = up + down
    c = n // total + 1
    k = n % total
    s = k / up if k <= up else (total - k) / down
    return base + (top - base) * s * scale(c, n)


CYCLIC = [
    (dict(mode="triangular"), lambda c, n: 1.0),
    (dict(mode="triangular2"), lambda c, n: 1 / 2 ** (c - 1)),
    (dict(mode="exp_range", gamma=0.9), lambda c, n: 0.9 ** n),
]


@pytest.mark.parametrize("kwargs,scale", CYCLIC, ids=[c[0]["mode"] for c in CYCLIC])
def test_cyclic_lr_matches_the_hand_formula(kwargs, scale):
    p = clgrad.zeros(2, requires_grad=True)
    opt = optim.SGD([p], lr=1.0, momentum=0.9)
    sched = optim.lr_scheduler.CyclicLR(opt, 0.1, 1.0, step_size_up=3, step_size_down=5,
                                        **kwargs)
    for n in range(20):
        assert opt.param_groups[0]["lr"] == pytest.approx(
            _cyclic_hand(n, 0.1, 1.0, 3, 5, scale), rel=1e-12)
        mom = 0.9 - (0.9 - 0.8) * (_cyclic_hand(n, 0.0, 1.0, 3, 5, scale))
        assert opt.param_groups[0]["momentum"] == pytest.approx(mom, rel=1e-12)
        opt.step()
        sched.step()


def _torch_pair_opt(torch, cls_name, kwargs, groups=2):
    ps = [clgrad.zeros(2, requires_grad=True) for _ in range(groups)]
    tps = [torch.zeros(2, requires_grad=True) for _ in range(groups)]
    opt = getattr(optim, cls_name)([{"params": [p]} for p in ps], **kwargs)
    topt = getattr(torch.optim, cls_name)([{"params": [p]} for p in tps], **kwargs)
    return opt, topt


@pytest.mark.parametrize("opt_name,opt_kwargs", [("SGD", dict(lr=0.1, momentum=0.9)),
                                                 ("Adam", dict(lr=0.1)),
                                                 ("NAdam", dict(lr=0.1))])
@pytest.mark.parametrize("kwargs", [
    dict(base_lr=0.01, max_lr=0.1, step_size_up=4),
    dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3, step_size_down=6,
         mode="triangular2", base_momentum=[0.7, 0.75], max_momentum=0.95),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=2, mode="exp_range", gamma=0.95),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: 0.5 ** x,
         scale_mode="iterations"),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: 1 / x,
         cycle_momentum=False),
], ids=["triangular", "triangular2_groups", "exp_range", "scale_fn_iterations",
        "scale_fn_cycle_no_momentum"])
def test_cyclic_lr_matches_torch(opt_name, opt_kwargs, kwargs):
    torch = pytest.importorskip("torch")
    opt, topt = _torch_pair_opt(torch, opt_name, opt_kwargs)
    s = optim.lr_scheduler.CyclicLR(opt, **kwargs)
    ts = torch.optim.lr_scheduler.CyclicLR(topt, **kwargs)
    for _ in range(25):
        assert s.get_last_lr() == ts.get_last_lr()
        for g, tg in zip(opt.param_groups, topt.param_groups):
            assert g["lr"] == tg["lr"]
            if "momentum" in tg:
                assert g["momentum"] == tg["momentum"]
            else:
                assert tuple(g["betas"]) == tuple(tg["betas"])
        opt.step()
        topt.step()
        s.step()
        ts.step()


def test_cyclic_lr_errors_and_state_dict_resume():
    p = clgrad.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        optim.lr_scheduler.CyclicLR(optim.SGD([p], lr=0.1), 0.01, 0.1, mode="sine")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        optim.lr_scheduler.CyclicLR(optim.Rprop([p]), 0.01, 0.1)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    s = optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=3, mode="triangular2")
    for _ in range(5):
        s.step()
    sd = s.state_dict()
    lrs = [s.step() or s.get_last_lr() for _ in range(6)]
    opt2 = optim.SGD([clgrad.zeros(2, requires_grad=True)], lr=0.1, momentum=0.9)
    s2 = optim.lr_scheduler.CyclicLR(opt2, 0.01, 0.1, step_size_up=3, mode="triangular2")
    s2.load_state_dict(sd)
    assert [s2.step() or s2.get_last_lr() for _ in range(6)] == lrs


def test_every_torch_scheduler_exists():
    torch = pytest.importorskip("torch")
    from torch.optim import lr_scheduler as tls
    names = [n for n in dir(tls) if n[0].isupper() and isinstance(getattr(tls, n), type) and
             issubclass(getattr(tls, n), tls.LRScheduler)]
    missing = [n for n in names if not hasattr(optim.lr_scheduler, n)]
    assert not missing
    # every optimizer class (Muon aside: not in this task)
    assert not [n for n in torch.optim.__all__ if n[0].isupper() and not hasattr(optim, n)
                and n != "Muon"]


# -- swa_utils ----------------------------------------------------------------------------------
def _nets(torch):
    """A clgrad and a torch Linear+BatchNorm1d+Linear with the same weights."""
    rng = np.random.default_rng(7)
    w1, b1, w2, b2 = (rng.standard_normal(s) for s in [(4, 3), (4,), (2, 4), (2,)])
    net = clgrad.nn.Sequential(clgrad.nn.Linear(3, 4), clgrad.nn.BatchNorm1d(4),
                               clgrad.nn.Linear(4, 2))
    tnet = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                               torch.nn.Linear(4, 2))
    for m, tm in [(net, tnet)]:
        with clgrad.no_grad(), torch.no_grad():
            for a, ta, v in zip([m[0].weight, m[0].bias, m[2].weight, m[2].bias],
                                [tm[0].weight, tm[0].bias, tm[2].weight, tm[2].bias],
                                [w1, b1, w2, b2]):
                a.copy_(clgrad.tensor(v.astype(np.float32)))
                ta.copy_(torch.tensor(v.astype(np.float32)))
    return net, tnet


def _perturb(net, tnet, torch, k):
    with clgrad.no_grad(), torch.no_grad():
        for p, tp in zip(net.parameters(), tnet.parameters()):
            d = np.full(tuple(tp.shape), 0.1 * (k + 1), dtype=np.float32)
            p.add_(clgrad.tensor(d))
            tp.add_(torch.tensor(d))
        for b, tb in zip(net.buffers(), tnet.buffers()):
            if tb.dtype.is_floating_point:
                b.add_(clgrad.tensor(np.full(tuple(tb.shape), 0.5 * k, dtype=np.float32)))
                tb.add_(torch.full(tuple(tb.shape), 0.5 * k))


@pytest.mark.parametrize("how", ["swa", "ema_multi", "ema_avg_fn", "ema_multi_buffers"])
def test_averaged_model_matches_torch(how):
    torch = pytest.importorskip("torch")
    from torch.optim import swa_utils as tsu
    from clgrad.optim import swa_utils as csu
    net, tnet = _nets(torch)
    kw = {"swa": ({}, {}),
          "ema_multi": (dict(multi_avg_fn=csu.get_ema_multi_avg_fn(0.9)),
                        dict(multi_avg_fn=tsu.get_ema_multi_avg_fn(0.9))),
          "ema_avg_fn": (dict(avg_fn=csu.get_ema_avg_fn(0.8)),
                         dict(avg_fn=tsu.get_ema_avg_fn(0.8))),
          # (not the SWA multi fn with buffers: torch's raises on num_batches_tracked)
          "ema_multi_buffers": (dict(multi_avg_fn=csu.get_ema_multi_avg_fn(0.7),
                                     use_buffers=True),
                                dict(multi_avg_fn=tsu.get_ema_multi_avg_fn(0.7),
                                     use_buffers=True))}[how]
    avg, tavg = csu.AveragedModel(net, **kw[0]), tsu.AveragedModel(tnet, **kw[1])
    for k in range(4):
        _perturb(net, tnet, torch, k)
        avg.update_parameters(net)
        tavg.update_parameters(tnet)
    assert int(avg.n_averaged.item()) == int(tavg.n_averaged) == 4
    sd, tsd = avg.state_dict(), tavg.state_dict()
    assert list(sd) == list(tsd)
    for k, v in tsd.items():
        np.testing.assert_allclose(sd[k].numpy(), v.numpy(), rtol=1e-6, atol=1e-6, err_msg=k)
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    avg.eval()
    tavg.eval()
    np.testing.assert_allclose(avg(clgrad.tensor(x)).detach().numpy(),
                               tavg(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_averaged_model_swa_is_the_mean_without_torch():
    from clgrad.optim import swa_utils as csu
    net = clgrad.nn.Linear(2, 1)
    avg = csu.AveragedModel(net)
    seen = []
    for k in range(5):
        with clgrad.no_grad():
            net.weight.copy_(clgrad.tensor([[float(k), 2.0 * k]]))
        seen.append(net.weight.detach().numpy().copy())
        avg.update_parameters(net)
    np.testing.assert_allclose(avg.module.weight.detach().numpy(), np.mean(seen, axis=0), rtol=1e-6)
    with pytest.raises(ValueError):
        csu.AveragedModel(net, avg_fn=csu.get_swa_avg_fn(),
                          multi_avg_fn=csu.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match="Invalid decay value 1.5"):
        csu.get_ema_multi_avg_fn(1.5)


def test_update_bn_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.optim import swa_utils as tsu
    from clgrad.optim import swa_utils as csu
    net, tnet = _nets(torch)
    rng = np.random.default_rng(3)
    batches = [rng.standard_normal((6, 3)).astype(np.float32) for _ in range(4)]
    net.eval()
    tnet.eval()
    csu.update_bn([(clgrad.tensor(b), 0) for b in batches], net)
    tsu.update_bn([(torch.tensor(b), 0) for b in batches], tnet)
    assert not net.training and net[1].momentum == tnet[1].momentum == 0.1
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(net[1], name).numpy(),
                                   getattr(tnet[1], name).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [dict(swa_lr=0.05, anneal_epochs=4),
                                    dict(swa_lr=[0.05, 0.2], anneal_epochs=3,
                                         anneal_strategy="linear"),
                                    dict(swa_lr=0.05, anneal_epochs=0)])
def test_swalr_matches_torch(kwargs):
    torch = pytest.importorskip("torch")
    from torch.optim import swa_utils as tsu
    from clgrad.optim import swa_utils as csu
    opt, topt = _torch_pair_opt(torch, "SGD", dict(lr=0.5))
    s, ts = csu.SWALR(opt, **kwargs), tsu.SWALR(topt, **kwargs)
    for _ in range(8):
        assert s.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        opt.step()
        topt.step()
        s.step()
        ts.step()


def test_swalr_hand_values_and_errors():
    from clgrad.optim import swa_utils as csu
    opt = optim.SGD([clgrad.zeros(1, requires_grad=True)], lr=1.0)
    s = csu.SWALR(opt, swa_lr=0.0, anneal_epochs=2, anneal_strategy="linear")
    got = [s.get_last_lr()[0]]
    for _ in range(3):
        s.step()
        got.append(s.get_last_lr()[0])
    assert got == pytest.approx([1.0, 0.5, 0.0, 0.0])
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        csu.SWALR(opt, 0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        csu.SWALR(opt, 0.1, anneal_epochs=-1)
