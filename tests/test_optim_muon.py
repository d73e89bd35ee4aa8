"""torch.optim.Muon: trajectories against a NumPy float64 re-implementation written from
PyTorch's documented update (torch/optim/_muon.py: momentum by lerp, Newton-Schulz in
bfloat16 with float32 sums rounded once per op, decoupled weight decay, AdjustLR), and against
PyTorch 2.14 where importable; state dicts both ways.

The Newton-Schulz iteration runs in bfloat16 (as PyTorch's), so the oracle rounds to bfloat16
at the same points. The matrices here are small enough that every float32 sum of bfloat16
products is exact, so the sums' order cannot matter and the trajectories agree to float64's
last bits; for large matrices the float32 summation order (PyTorch's BLAS vs clgrad's GEMM)
flips a bfloat16 rounding now and then, which the quintic iteration amplifies.
"""
import math

import numpy as np
import pytest

import clgrad
from clgrad import optim

A, B, C = 3.4445, -4.7750, 2.0315


def f32(x):
    return np.asarray(x, np.float64).astype(np.float32).astype(np.float64)


def bf16(x):
    """float64 -> float32 -> bfloat16 (round to nearest even; c10's), back as float64."""
    u = np.asarray(x, np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    out = r.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.where(np.isnan(x), np.nan, out)


def ns_np(g, coeffs=(A, B, C), steps=5, eps=1e-7):
    """PyTorch's _zeropower_via_newtonschulz with its bfloat16 roundings: every op computed
    exactly (float64), rounded to float32 where PyTorch's opmath rounds, then to bfloat16."""
    a, b, c = coeffs
    x = bf16(g)
    tall = g.shape[0] > g.shape[1]
    if tall:
        x = x.T
    n = bf16(f32(np.sqrt(np.sum(x * x))))
    x = bf16(f32(x / max(n, bf16(eps))))
    for _ in range(steps):
        gram = bf16(f32(x @ x.T))
        upd = bf16(f32(f32(b * gram) + f32(c * f32(gram @ gram))))
        x = bf16(f32(f32(a * x) + f32(upd @ x)))
    return x.T if tall else x


def lerp_np(s, e, w):
    """PyTorch's lerp (aten/src/ATen/native/Lerp.h): two-sided by the weight."""
    return s + w * (e - s) if abs(w) < 0.5 else e - (e - s) * (1 - w)


def adjust_np(lr, fn, shape):
    a, b = shape
    return lr * {None: math.sqrt(max(1, a / b)), "original": math.sqrt(max(1, a / b)),
                 "match_rms_adamw": 0.2 * math.sqrt(max(a, b)),
                 "spectral_unclamped": math.sqrt(a / b)}[fn]


def muon_np(p, grads, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
            ns_coefficients=(A, B, C), eps=1e-7, ns_steps=5, adjust_lr_fn=None):
    """The trajectory of one parameter in float64 (Muon's documented update)."""
    p, buf, out = p.copy(), np.zeros_like(p), []
    for g in grads:
        buf = lerp_np(buf, g, 1 - momentum)
        u = lerp_np(g, buf, momentum) if nesterov else buf
        o = ns_np(u, ns_coefficients, ns_steps, eps)
        p = p * (1 - lr * weight_decay)
        p = p - adjust_np(lr, adjust_lr_fn, p.shape) * o
        out.append(p.copy())
    return out


def _run(p0, grads, dtype=clgrad.float64, **kw):
    p = clgrad.tensor(p0, dtype=dtype, requires_grad=True)
    opt = optim.Muon([p], **kw)
    out = []
    for g in grads:
        p.grad = clgrad.tensor(g, dtype=dtype)
        opt.step()
        out.append(p.detach().numpy().astype(np.float64))
    return out, opt, p


CONFIGS = [
    dict(),
    dict(nesterov=False, lr=0.02, weight_decay=0.01),
    dict(adjust_lr_fn="match_rms_adamw", lr=0.01),
    dict(adjust_lr_fn="spectral_unclamped", momentum=0.3),       # lerp's other branch
    dict(adjust_lr_fn="original", ns_steps=3, ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3),
]
SHAPES = [(4, 3), (3, 5), (6, 6), (1, 4), (5, 1)]


@pytest.mark.parametrize("shape", SHAPES)
def test_newton_schulz_matches_the_bf16_oracle(shape):
    g = np.random.default_rng(sum(shape)).standard_normal(shape)
    from clgrad.optim.muon import zeropower_via_newtonschulz
    got = zeropower_via_newtonschulz(clgrad.tensor(g), (A, B, C), 5, 1e-7)
    assert got.dtype is clgrad.bfloat16 and tuple(got.shape) == shape
    np.testing.assert_array_equal(got.float().numpy(), ns_np(g))
    # what it approximates: U V^T of the SVD, singular values pushed into ~[0.6, 1.2]
    s = np.linalg.svd(ns_np(g), compute_uv=False)
    assert np.all((s > 0.6) & (s < 1.25)), s


@pytest.mark.parametrize("kw", CONFIGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in
                                                                kw.items()) or "defaults")
@pytest.mark.parametrize("shape", [(4, 3), (3, 5)])
def test_float64_trajectory_matches_the_numpy_oracle(kw, shape):
    rng = np.random.default_rng(7)
    p0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(6)]
    got = _run(p0, grads, **kw)[0]
    for a, b in zip(got, muon_np(p0, grads, **kw)):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
    assert np.abs(got[-1] - p0).max() > 1e-3                      # it moved


def test_float32_trajectory_within_a_few_ulp():
    rng = np.random.default_rng(11)
    p0 = f32(rng.standard_normal((4, 3)))
    grads = [f32(rng.standard_normal((4, 3))) for _ in range(5)]
    got = _run(p0, grads, dtype=clgrad.float32, lr=0.01)[0]
    for a, b in zip(got, muon_np(p0, grads, lr=0.01)):
        np.testing.assert_allclose(a, b, rtol=4 * np.finfo(np.float32).eps, atol=1e-7)


def test_two_groups_zero_and_nan_gradients():
    rng = np.random.default_rng(5)
    p0, q0 = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    p = clgrad.tensor(p0, requires_grad=True)
    q = clgrad.tensor(q0, requires_grad=True)
    opt = optim.Muon([{"params": [p]}, {"params": [q], "lr": 0.05, "nesterov": False}])
    gp, gq = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    p.grad, q.grad = clgrad.tensor(gp), clgrad.tensor(gq)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), muon_np(p0, [gp])[0], rtol=1e-14)
    np.testing.assert_allclose(q.detach().numpy(), muon_np(q0, [gq], lr=0.05,
                                                           nesterov=False)[0], rtol=1e-14)
    z = clgrad.tensor(p0, requires_grad=True)                    # zero gradient: decay only
    zo = optim.Muon([z], lr=0.1, weight_decay=0.5)
    z.grad = clgrad.zeros(3, 4, dtype=clgrad.float64)
    zo.step()
    np.testing.assert_allclose(z.detach().numpy(), p0 * (1 - 0.05), rtol=1e-15)
    n = clgrad.tensor(p0, requires_grad=True)                    # NaN in, NaN out
    no = optim.Muon([n])
    gn = gp.copy()
    gn[1, 2] = np.nan
    n.grad = clgrad.tensor(gn)
    no.step()
    assert np.isnan(n.detach().numpy()).all()


def test_errors_are_pytorchs():
    p = clgrad.zeros(3, 4, requires_grad=True)
    with pytest.raises(ValueError, match=r"Muon only supports 2D parameters whereas we found a "
                                         r"parameter with size: torch.Size\(\[3\]\)"):
        optim.Muon([p, clgrad.zeros(3, requires_grad=True)])
    for kw, msg in [(dict(lr=-1.0), "Learning rate should be >= 0 but is: -1.0"),
                    (dict(momentum=-0.1), "momentum should be >= 0 but is: -0.1"),
                    (dict(weight_decay=-1), "weight decay should be >= 0 but is: -1"),
                    (dict(adjust_lr_fn="x"), "Adjust learning rate function x is not "
                                             "supported")]:
        with pytest.raises(ValueError, match=msg):
            optim.Muon([p], **kw)
    p.grad = clgrad.ones(3, 4)
    for kw, msg in [(dict(ns_steps=100), "Number of steps must be less than 100"),
                    (dict(ns_coefficients=(1.0, 2.0)), "exactly 3 values")]:
        with pytest.raises(ValueError, match=msg):
            optim.Muon([p], **kw).step()


def test_state_dict_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    p0 = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(6)]
    _, opt, p = _run(p0, grads[:3], lr=0.02)
    sd = opt.state_dict()
    assert set(sd["state"][0]) == {"momentum_buffer"}
    assert sd["param_groups"][0]["ns_coefficients"] == (A, B, C)
    clgrad.save(sd, tmp_path / "m.pt")
    q = clgrad.tensor(p.detach().numpy(), requires_grad=True)
    opt2 = optim.Muon([q], lr=0.02)
    opt2.load_state_dict(clgrad.load(tmp_path / "m.pt"))
    for g in grads[3:]:
        p.grad, q.grad = clgrad.tensor(g), clgrad.tensor(g)
        opt.step()
        opt2.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    np.testing.assert_allclose(p.detach().numpy(), muon_np(p0, grads, lr=0.02)[-1],
                               rtol=1e-14, atol=1e-15)


# -- PyTorch 2.14 ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", CONFIGS[:4], ids=["defaults", "plain", "rms", "spectral"])
def test_trajectory_matches_torch(dtype, kw):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    for shape in SHAPES:
        p0 = rng.standard_normal(shape).astype(dtype)
        grads = [rng.standard_normal(shape).astype(dtype) for _ in range(6)]
        got = _run(p0, grads, dtype=getattr(clgrad, dtype), **kw)[0]
        t = torch.tensor(p0, requires_grad=True)
        try:
            topt = torch.optim.Muon([t], **kw)
        except ValueError as e:  # PyTorch 2.11 and 2.13 refuse "spectral_unclamped"
            if "is not supported" not in str(e):
                raise
            pytest.skip(f"PyTorch {torch.__version__}: {e}")
        for g, mine in zip(grads, got):
            t.grad = torch.tensor(g)
            topt.step()
            want = t.detach().numpy().astype(np.float64)
            if dtype == "float64":
                np.testing.assert_allclose(mine, want, rtol=1e-14, atol=1e-15)
            else:
                np.testing.assert_allclose(mine, want, rtol=4 * np.finfo(np.float32).eps,
                                           atol=1e-7)


def test_state_dicts_load_both_ways_with_torch(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    p0 = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(6)]
    kw = dict(lr=0.02, adjust_lr_fn="match_rms_adamw")
    # clgrad -> torch
    _, opt, p = _run(p0, grads[:3], **kw)
    clgrad.save(opt.state_dict(), tmp_path / "c.pt")
    t = torch.tensor(p.detach().numpy(), requires_grad=True)
    topt = torch.optim.Muon([t], **kw)
    topt.load_state_dict(torch.load(tmp_path / "c.pt", weights_only=True))
    # torch -> clgrad
    t2 = torch.tensor(p0, requires_grad=True)
    topt2 = torch.optim.Muon([t2], **kw)
    for g in grads[:3]:
        t2.grad = torch.tensor(g)
        topt2.step()
    torch.save(topt2.state_dict(), tmp_path / "t.pt")
    q = clgrad.tensor(t2.detach().numpy(), requires_grad=True)
    qopt = optim.Muon([q], **kw)
    qopt.load_state_dict(clgrad.load(tmp_path / "t.pt"))
    np.testing.assert_array_equal(qopt.state[q]["momentum_buffer"].numpy(),
                                  topt2.state[t2]["momentum_buffer"].numpy())
    for g in grads[3:]:
        for x, o, mk in ((p, opt, clgrad.tensor), (q, qopt, clgrad.tensor),
                         (t, topt, torch.tensor), (t2, topt2, torch.tensor)):
            x.grad = mk(g)
            o.step()
    want = muon_np(p0, grads, **kw)[-1]
    for x in (p, q, t, t2):
        np.testing.assert_allclose(x.detach().numpy(), want, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("low", [clgrad.bfloat16, clgrad.float16])
def test_add_alpha_of_a_low_precision_tensor_is_taken_in_the_result_type(low):
    """Found with Muon (p.add_(bfloat16 update, alpha=-lr)): alpha * other is computed in the
    promoted dtype, as PyTorch's, not rounded to bfloat16 first."""
    if low is clgrad.float16 and not clgrad.default_device().fp16:
        pytest.skip("this device has no float16 (cl_khr_fp16)")
    other = clgrad.tensor([1.0078125, -3.0], dtype=low)          # exact in both
    for fn in (lambda a: a.add_(other, alpha=0.1), lambda a: clgrad.add(a, other, alpha=0.1),
               lambda a: a.sub_(other, alpha=0.1)):
        out = fn(clgrad.zeros(2, dtype=clgrad.float64))
        want = np.array([1.0078125, -3.0]) * 0.1                  # float64 products
        np.testing.assert_array_equal(np.abs(out.numpy()), np.abs(want))
