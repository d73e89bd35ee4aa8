"""Elementwise special functions and small math ops (clgrad/ops/special.py): erfinv, erfc,
lgamma, digamma, logaddexp, logaddexp2, hypot, xlogy, trunc/fix, frac, signbit, copysign,
deg2rad, rad2deg, clamp_min, clamp_max, float_power, is_floating_point, is_nonzero.

Oracles: NumPy / math in float64 (erfinv: the inverse of math.erf / math.erfc by bisection and
Newton steps in float64; digamma: central differences of math.lgamma; hand formulas), float64
gradchecks on strided views, and PyTorch where importable (those tests skip without it)."""
import math

import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from strided import strided

NAN, INF = math.nan, math.inf
F64 = clgrad.float64


def _erfinv_ref(y):
    """erfinv in float64: bisection of erf (|y| <= 0.5) or erfc (the tails, where 1 - |y| is
    exact) then three Newton steps (bisection alone has absolute, not relative, precision)."""
    y = np.asarray(y, np.float64)
    out = np.empty_like(y)
    for i, v in enumerate(y.ravel()):
        a = abs(v)
        if a >= 1:
            out.flat[i] = math.copysign(INF, v) if a == 1 else NAN
            continue
        t, lo, hi = 1.0 - a, 0.0, 6.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if (math.erf(mid) < a) if a <= 0.5 else (math.erfc(mid) > t):
                lo = mid
            else:
                hi = mid
        x = 0.5 * (lo + hi)
        for _ in range(3):
            d = 2 / math.sqrt(math.pi) * math.exp(-x * x)
            x = x - (math.erf(x) - a) / d if a <= 0.5 else x + (math.erfc(x) - t) / d
        out.flat[i] = math.copysign(x, v)
    return out


def _digamma_ref(x):
    """d/dx lgamma(x) by central differences of math.lgamma at x + n >= 2 (relative error
    ~1e-10), brought back by the recurrence digamma(x) = digamma(x + 1) - 1 / x."""
    x = np.asarray(x, np.float64)
    shift = np.maximum(0, np.ceil(2 - x)).astype(int)
    lg = np.vectorize(math.lgamma)
    z = x + shift
    h = 1e-5 * z
    out = (lg(z + h) - lg(z - h)) / (2 * h)
    for i in np.ndindex(x.shape):
        out[i] -= sum(1 / (x[i] + k) for k in range(shift[i]))
    return out


# -- erfinv --------------------------------------------------------------------------------------
def test_erfinv_error_bound_float64_and_float32():
    """The bound the docstring states: float64 within 1e-14 relative, float32 within 4 ulp,
    over (-1, 1) with the tails down to 1 - |y| = 2^-53 (float64) and 2^-24 (float32)."""
    rng = np.random.default_rng(0)
    tails = 1 - 10.0 ** -rng.uniform(1, 15.9, 300)
    y64 = np.concatenate([rng.uniform(-1, 1, 1000), tails, -tails, [1 - 2.0 ** -53, 1e-300,
                                                                     -1e-30, 0.5, -0.5]])
    got = clgrad.erfinv(clgrad.tensor(y64)).numpy()
    ref = _erfinv_ref(y64)
    assert np.max(np.abs(got - ref) / np.abs(ref)) < 1e-14
    y32 = np.concatenate([rng.uniform(-1, 1, 1000),
                          1 - 2.0 ** -24 * rng.integers(1, 2 ** 20, 200),
                          [1 - 2.0 ** -24, -(1 - 2.0 ** -24), 1e-30]]).astype(np.float32)
    got32 = clgrad.erfinv(clgrad.tensor(y32)).numpy()
    assert got32.dtype == np.float32
    ref32 = _erfinv_ref(y32.astype(np.float64))
    ulp = np.spacing(np.abs(ref32).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got32 - ref32) / ulp) <= 4


def test_erfinv_special_values_ints_views_and_erf_roundtrip():
    y = clgrad.tensor([0.0, -0.0, 1.0, -1.0, 1.5, -2.0, NAN])
    out = clgrad.erfinv(y).numpy()
    assert out[0] == 0 and not np.signbit(out[0]) and out[1] == 0 and np.signbit(out[1])
    assert out[2] == INF and out[3] == -INF and np.isnan(out[4:]).all()
    i = clgrad.erfinv(clgrad.tensor([0, 1]))
    assert i.dtype is clgrad.float32 and i.numpy().tolist() == [0.0, INF]
    a = np.random.default_rng(1).uniform(-0.99, 0.99, (4, 6))
    x = strided(a)
    np.testing.assert_allclose(x.erfinv().numpy(), _erfinv_ref(a), rtol=1e-14)
    np.testing.assert_allclose(clgrad.erf(clgrad.erfinv(clgrad.tensor(a))).numpy(), a,
                               rtol=1e-14)


def test_erfinv_gradient_and_trunc_normal_idiom():
    a = np.random.default_rng(2).uniform(-0.9, 0.9, (3, 4))
    assert gradcheck(lambda t: clgrad.erfinv(t.t()), (clgrad.tensor(a, requires_grad=True),))
    x = clgrad.tensor(a, requires_grad=True)
    clgrad.erfinv(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), math.sqrt(math.pi) / 2 *
                               np.exp(_erfinv_ref(a) ** 2), rtol=1e-12)
    # timm's / PyTorch's trunc_normal_: uniform_ in [cdf(a), cdf(b)] mapped through erfinv_
    clgrad.manual_seed(3)
    mean, std, lo, hi = 0.5, 2.0, -1.0, 3.0
    cdf = lambda v: (1 + math.erf((v - mean) / std / math.sqrt(2))) / 2  # noqa: E731
    t = clgrad.empty(20000)
    with clgrad.no_grad():
        t.uniform_(2 * cdf(lo) - 1, 2 * cdf(hi) - 1)
        r = t.erfinv_()
        t.mul_(std * math.sqrt(2.0)).add_(mean)
        t.clamp_(min=lo, max=hi)
    assert r is t and t.dtype is clgrad.float32
    v = t.numpy()
    assert v.min() >= lo and v.max() <= hi
    # the truncated normal's mean: mean + std (phi(alpha) - phi(beta)) / Z
    al, be = (lo - mean) / std, (hi - mean) / std
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    want = mean + std * (phi(al) - phi(be)) / (cdf(hi) - cdf(lo))
    assert abs(v.mean() - want) < 4 * v.std() / math.sqrt(v.size)


def test_erfinv_half_and_bfloat16_compute_in_float():
    y = np.linspace(-0.95, 0.95, 39)
    if clgrad.default_device().fp16:  # (a device without cl_khr_fp16 has no float16)
        h = clgrad.erfinv(clgrad.tensor(y, dtype=clgrad.float16))
        assert h.dtype is clgrad.float16
        ref = _erfinv_ref(y.astype(np.float16).astype(np.float64))
        np.testing.assert_allclose(h.numpy().astype(np.float64), ref, rtol=1e-3, atol=1e-3)
    yb = clgrad.tensor(y, dtype=clgrad.bfloat16)
    b = clgrad.erfinv(yb)
    assert b.dtype is clgrad.bfloat16  # float32's result rounded once
    np.testing.assert_array_equal(b.float().numpy(), clgrad.erfinv(yb.float()).to(
        clgrad.bfloat16).float().numpy())


# -- erfc, lgamma, digamma -----------------------------------------------------------------------
def test_erfc_lgamma_digamma_values():
    x = np.array([-3.0, -0.5, 1e-3, 0.5, 1.0, 2.5, 7.0, 26.0])
    np.testing.assert_allclose(clgrad.erfc(clgrad.tensor(x)).numpy(),
                               [math.erfc(v) for v in x], rtol=1e-13)
    np.testing.assert_allclose(strided(x[None].repeat(2, 0)).erfc().numpy()[0],
                               [math.erfc(v) for v in x], rtol=1e-13)
    g = np.array([-2.5, -0.5, 1e-3, 0.5, 1.0, 2.0, 3.7, 30.0, 1e5])
    np.testing.assert_allclose(clgrad.lgamma(clgrad.tensor(g)).numpy(),
                               [math.lgamma(v) for v in g], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(clgrad.lgamma(clgrad.tensor(g, dtype=clgrad.float32)).numpy(),
                               [math.lgamma(v) for v in g], rtol=2e-6, atol=2e-6)
    d = np.array([-2.5, -0.3, 0.01, 0.5, 1.0, 3.7, 9.5, 10.0, 12.0, 250.0])
    np.testing.assert_allclose(clgrad.digamma(clgrad.tensor(d)).numpy(), _digamma_ref(d),
                               rtol=1e-8)
    np.testing.assert_allclose(clgrad.digamma(clgrad.tensor(d, dtype=clgrad.float32)).numpy(),
                               _digamma_ref(d), rtol=1e-5)
    assert clgrad.digamma(clgrad.tensor([1.0], dtype=F64)).item() == pytest.approx(
        -0.5772156649015329, rel=1e-15)


def test_erfc_lgamma_digamma_special_values_and_dtypes():
    e = clgrad.erfc(clgrad.tensor([-INF, INF, NAN])).numpy()
    assert e[0] == 2 and e[1] == 0 and np.isnan(e[2])
    lg = clgrad.lgamma(clgrad.tensor([0.0, -0.0, -1.0, -2.0, INF, -INF, 1.0, 2.0])).numpy()
    assert (lg[:6] == INF).all() and (lg[6:] == 0).all()
    dg = clgrad.digamma(clgrad.tensor([0.0, -0.0, -1.0, -3.0, INF, NAN])).numpy()
    assert dg[0] == -INF and dg[1] == INF and np.isnan(dg[2:4]).all() and dg[4] == INF
    assert np.isnan(dg[5])
    for fn in (clgrad.erfc, clgrad.lgamma, clgrad.digamma):
        out = fn(clgrad.tensor([1, 2]))
        assert out.dtype is clgrad.float32
        assert fn(clgrad.tensor([True])).dtype is clgrad.float32
        assert fn(clgrad.tensor([1.0], dtype=clgrad.bfloat16)).dtype is clgrad.bfloat16
        with pytest.raises(TypeError):
            fn([1.0])


def test_erfc_lgamma_digamma_gradients():
    a = np.random.default_rng(4).uniform(0.3, 3.0, (3, 4))
    for fn in (clgrad.erfc, clgrad.lgamma, clgrad.digamma):
        assert gradcheck(lambda t: fn(t.t()), (clgrad.tensor(a, requires_grad=True),))
    neg = np.array([-2.7, -1.2, -0.4, 0.2])
    assert gradcheck(clgrad.digamma, (clgrad.tensor(neg, requires_grad=True),))
    assert gradcheck(clgrad.lgamma, (clgrad.tensor(neg, requires_grad=True),))
    x = clgrad.tensor(a, requires_grad=True)
    clgrad.lgamma(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), _digamma_ref(a), rtol=1e-8)


# -- binary: logaddexp, logaddexp2, hypot, xlogy, copysign -------------------------------------
def test_binary_values_against_numpy_with_broadcast_and_views():
    rng = np.random.default_rng(5)
    a, b = rng.uniform(-30, 30, (4, 5)), rng.uniform(-30, 30, (5,))
    ta, tb = strided(a), clgrad.tensor(b)
    for fn, ref in ((clgrad.logaddexp, np.logaddexp), (clgrad.logaddexp2, np.logaddexp2),
                    (clgrad.hypot, np.hypot), (clgrad.copysign, np.copysign)):
        np.testing.assert_allclose(fn(ta, tb).numpy(), ref(a, b), rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(getattr(ta, fn.__name__)(tb).numpy(), ref(a, b),
                                   rtol=1e-14)
    big = clgrad.tensor([1000.0, -1000.0, 1e300], dtype=F64)
    np.testing.assert_allclose(clgrad.logaddexp(big, big).numpy(),
                               np.logaddexp([1e3, -1e3, 1e300], [1e3, -1e3, 1e300]))
    np.testing.assert_allclose(clgrad.hypot(big, big).numpy(), np.hypot(big.numpy(),
                                                                          big.numpy()))
    p, q = rng.uniform(0, 3, (3, 4)), rng.uniform(0.1, 3, (3, 4))
    np.testing.assert_allclose(clgrad.xlogy(strided(p), clgrad.tensor(q)).numpy(),
                               p * np.log(q), rtol=1e-14)


def test_binary_special_values():
    inf = clgrad.tensor([INF, -INF, INF, NAN, 1.0, -INF])
    other = clgrad.tensor([INF, -INF, -INF, 1.0, NAN, 2.0])
    for fn, ref in ((clgrad.logaddexp, np.logaddexp), (clgrad.logaddexp2, np.logaddexp2)):
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(fn(inf, other).numpy(), ref(inf.numpy(),
                                                                     other.numpy()))
    # xlogy: 0 * log(0) = 0, 0 * log(inf) = 0, x * log(NaN) = NaN, NaN * log(y) = NaN
    x = clgrad.tensor([0.0, 0.0, 0.0, 2.0, NAN, 1.0, 3.0])
    y = clgrad.tensor([0.0, INF, NAN, NAN, 2.0, 0.0, -1.0])
    out = clgrad.xlogy(x, y).numpy()
    assert out[:2].tolist() == [0.0, 0.0] and np.isnan(out[2:5]).all()
    assert out[5] == -INF and np.isnan(out[6])
    # copysign reads the sign bit: -0.0 and a negative NaN
    c = clgrad.copysign(clgrad.tensor([1.0, 1.0, 2.0]), clgrad.tensor([-0.0, 0.0, -NAN]))
    assert c.numpy().tolist() == [-1.0, 1.0, -2.0]
    h = clgrad.hypot(clgrad.tensor([INF, NAN, 0.0]), clgrad.tensor([NAN, INF, -0.0])).numpy()
    assert h.tolist() == [INF, INF, 0.0]


def test_binary_dtypes_numbers_and_errors():
    i = clgrad.tensor([1, 2, 3])
    f = clgrad.tensor([1.0, 2.0, 3.0])
    assert clgrad.xlogy(i, i).dtype is clgrad.float32
    assert clgrad.copysign(i, -1).dtype is clgrad.float32
    np.testing.assert_allclose(clgrad.copysign(i, -1).numpy(), [-1, -2, -3])
    np.testing.assert_allclose(clgrad.xlogy(2.0, f).numpy(), 2 * np.log([1, 2, 3]), rtol=1e-6)
    np.testing.assert_allclose(clgrad.xlogy(f, 2).numpy(), np.array([1, 2, 3]) * np.log(2),
                               rtol=1e-6)
    assert clgrad.hypot(f, i).dtype is clgrad.float32  # a float operand: promoted
    for fn in (clgrad.logaddexp, clgrad.logaddexp2, clgrad.hypot):
        with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
            fn(i, i)
        with pytest.raises(ValueError):
            fn(clgrad.ones(2, 3), clgrad.ones(4))
        with pytest.raises(TypeError):
            fn(f, [1.0])
    bf = clgrad.tensor([1.0, -2.0], dtype=clgrad.bfloat16)
    for fn in (clgrad.logaddexp, clgrad.hypot, clgrad.xlogy, clgrad.copysign):
        out = fn(bf, bf)
        assert out.dtype is clgrad.bfloat16
        ref = fn(bf.float(), bf.float()).to(clgrad.bfloat16).float().numpy()
        np.testing.assert_array_equal(out.float().numpy(), ref)


def test_binary_gradients():
    rng = np.random.default_rng(6)
    a, b = rng.uniform(-2, 2, (3, 4)), rng.uniform(-2, 2, (4,))
    for fn in (clgrad.logaddexp, clgrad.logaddexp2, clgrad.hypot):
        assert gradcheck(lambda x, y: fn(x.t().t(), y),
                         (clgrad.tensor(a, requires_grad=True),
                          clgrad.tensor(b, requires_grad=True)))
    p, q = rng.uniform(0.2, 2, (3, 4)), rng.uniform(0.2, 2, (4,))
    assert gradcheck(lambda x, y: clgrad.xlogy(x, y), (clgrad.tensor(p, requires_grad=True),
                                                       clgrad.tensor(q, requires_grad=True)))
    assert gradcheck(lambda x, y: clgrad.copysign(x, y),
                     (clgrad.tensor(a, requires_grad=True), clgrad.tensor(b)))
    # PyTorch's formulas at the edges (2.14): xlogy's input grad is log(y), 0 where x = 0 and
    # y <= 0 (at x = 0, y = 2 it is log 2); copysign's is 0 at input 0, other's grad zero
    x = clgrad.tensor([0.0, 2.0, 0.0, 0.0], dtype=F64, requires_grad=True)
    y = clgrad.tensor([0.0, 3.0, 2.0, -1.0], dtype=F64, requires_grad=True)
    clgrad.xlogy(x, y).sum().backward()
    assert x.grad.numpy().tolist() == [0.0, math.log(3.0), math.log(2.0), 0.0]
    assert np.isnan(y.grad.numpy()[0]) and y.grad.numpy()[1] == pytest.approx(2 / 3)
    assert y.grad.numpy()[2:].tolist() == [0.0, 0.0]  # x / y with x = 0 (-0.0 == 0.0)
    u = clgrad.tensor([0.0, -2.0], dtype=F64, requires_grad=True)
    v = clgrad.tensor([-1.0, 1.0], dtype=F64, requires_grad=True)
    clgrad.copysign(u, v).sum().backward()
    assert u.grad.numpy().tolist() == [0.0, -1.0] and v.grad.numpy().tolist() == [0.0, 0.0]


def test_binary_inplace_variants():
    a = np.array([3.0, -4.0, 0.5])
    for name, ref in (("hypot", np.hypot(a, 2.0)), ("xlogy", a * np.log(2.0)),
                      ("copysign", np.copysign(a, 2.0))):
        t = clgrad.tensor(a.copy())
        assert getattr(t, name + "_")(clgrad.tensor([2.0])) is t
        np.testing.assert_allclose(t.numpy(), ref, rtol=1e-14)


# -- rounding, sign, angles, clamps ---------------------------------------------------------------
def test_trunc_fix_frac_signbit_values():
    a = np.array([-2.5, -1.0, -0.7, -0.0, 0.0, 0.3, 1.0, 7.9, 1e20])
    x = clgrad.tensor(a)
    for fn in (clgrad.trunc, clgrad.fix, clgrad.Tensor.trunc, clgrad.Tensor.fix):
        np.testing.assert_array_equal(fn(x).numpy(), np.trunc(a))
    np.testing.assert_array_equal(np.signbit(clgrad.trunc(x).numpy()), np.signbit(np.trunc(a)))
    np.testing.assert_array_equal(clgrad.frac(x).numpy(), a - np.trunc(a))
    np.testing.assert_array_equal(strided(a[None].repeat(2, 0)).frac().numpy()[1],
                                  a - np.trunc(a))
    special = clgrad.tensor([INF, -INF, NAN, -NAN])
    assert np.isnan(clgrad.frac(special).numpy()).all()
    np.testing.assert_array_equal(clgrad.trunc(special).numpy()[:2], [INF, -INF])
    sb = clgrad.signbit(clgrad.tensor([-1.0, -0.0, 0.0, 2.0, -INF, NAN, -NAN]))
    assert sb.dtype is clgrad.bool
    assert sb.numpy().tolist() == np.signbit([-1.0, -0.0, 0.0, 2.0, -INF, NAN, -NAN]).tolist()
    assert clgrad.signbit(clgrad.tensor([-3, 0, 5])).numpy().tolist() == [True, False, False]
    assert clgrad.signbit(clgrad.tensor([3, 0], dtype=clgrad.uint8)).numpy().tolist() == \
        [False, False]
    assert clgrad.signbit(clgrad.tensor([True])).numpy().tolist() == [False]
    assert clgrad.signbit(clgrad.tensor([-1.0, 1.0], dtype=clgrad.bfloat16)).numpy().tolist() \
        == [True, False]


def test_trunc_frac_dtypes_grads_and_inplace():
    i = clgrad.tensor([3, -4])
    ti = clgrad.trunc(i)
    assert ti.dtype is clgrad.int64 and ti.numpy().tolist() == [3, -4]
    ti += 1  # a copy, not an alias of i
    assert i.numpy().tolist() == [3, -4]
    with pytest.raises(NotImplementedError, match="'Bool'"):
        clgrad.trunc(clgrad.tensor([True]))
    with pytest.raises(NotImplementedError, match="'Long'"):
        clgrad.frac(i)
    x = clgrad.tensor([1.5, -2.25], dtype=F64, requires_grad=True)
    y = clgrad.trunc(x)
    assert y.requires_grad  # PyTorch's TruncBackward0: a zero gradient
    (y.sum() + clgrad.frac(x).sum()).backward()
    assert x.grad.numpy().tolist() == [1.0, 1.0]
    t = clgrad.tensor([1.5, -2.25])
    assert t.trunc_() is t and t.numpy().tolist() == [1.0, -2.0]
    t = clgrad.tensor([1.5, -2.25])
    assert t.fix_() is t and t.numpy().tolist() == [1.0, -2.0]
    t = clgrad.tensor([1.5, -2.25])
    assert t.frac_() is t and t.numpy().tolist() == [0.5, -0.25]


def test_deg2rad_rad2deg_and_clamps():
    a = np.array([-180.0, 0.0, 45.0, 720.0])
    np.testing.assert_allclose(clgrad.deg2rad(clgrad.tensor(a)).numpy(), np.deg2rad(a),
                               rtol=1e-15)
    np.testing.assert_allclose(clgrad.rad2deg(clgrad.tensor(a)).numpy(), np.rad2deg(a),
                               rtol=1e-15)
    d = clgrad.deg2rad(clgrad.tensor([180, 90]))
    assert d.dtype is clgrad.float32
    np.testing.assert_allclose(d.numpy(), [math.pi, math.pi / 2], rtol=1e-7)
    t = clgrad.tensor(a.copy())
    assert t.deg2rad_() is t
    np.testing.assert_allclose(t.rad2deg_().numpy(), a, rtol=1e-15)
    x = clgrad.tensor(a, requires_grad=True)
    (clgrad.deg2rad(x).sum() + clgrad.rad2deg(x).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), math.pi / 180 + 180 / math.pi)
    v = clgrad.tensor([-1.0, 0.5, 3.0, NAN])
    np.testing.assert_array_equal(clgrad.clamp_min(v, 0.0).numpy(), [0.0, 0.5, 3.0, NAN])
    np.testing.assert_array_equal(clgrad.clamp_max(v, 1.0).numpy(), [-1.0, 0.5, 1.0, NAN])
    np.testing.assert_array_equal(v.clamp_min(clgrad.tensor([0.0, 1.0, 0.0, 0.0])).numpy(),
                                  [0.0, 1.0, 3.0, NAN])
    w = v.clone()
    assert w.clamp_max_(0.0) is w and w.numpy()[:3].tolist() == [-1.0, 0.0, 0.0]
    g = clgrad.tensor([-1.0, 2.0], requires_grad=True)
    clgrad.clamp_min(g, 0.0).sum().backward()
    assert g.grad.numpy().tolist() == [0.0, 1.0]


# -- float_power, predicates ----------------------------------------------------------------------
def test_float_power():
    dev = clgrad.tensor([1.0])._storage.device
    if not dev.fp64:
        with pytest.raises(RuntimeError, match="cl_khr_fp64"):
            clgrad.float_power(clgrad.tensor([2.0]), 2)
        return
    a = np.array([0.5, 2.0, 3.0])
    for x, e, ref in ((clgrad.tensor([2, 3]), 2, [4.0, 9.0]),
                      (clgrad.tensor(a, dtype=clgrad.float32), 0.5, np.sqrt(a.astype(
                          np.float32).astype(np.float64))),
                      (2, clgrad.tensor([1, 3]), [2.0, 8.0]),
                      (clgrad.tensor(a), clgrad.tensor([2, 1, 0]), a ** [2, 1, 0])):
        out = clgrad.float_power(x, e)
        assert out.dtype is F64
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-15)
    assert clgrad.tensor([2]).float_power(3).numpy().tolist() == [8.0]
    t = clgrad.tensor(a.copy())
    assert t.float_power_(2) is t and np.allclose(t.numpy(), a ** 2)
    with pytest.raises(RuntimeError, match="has dtype Float but the operation's result "
                       "requires dtype Double"):
        clgrad.tensor([1.0]).float_power_(2)
    with pytest.raises(TypeError):
        clgrad.float_power(2, 3)
    x = clgrad.tensor([0.5, 1.5], requires_grad=True)  # float32 leaf: grad through the cast
    clgrad.float_power(x, 3).sum().backward()
    assert x.grad.dtype is clgrad.float32
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([0.5, 1.5]) ** 2, rtol=1e-6)


def test_is_floating_point_and_is_nonzero():
    assert clgrad.is_floating_point(clgrad.tensor([1.0]))
    assert clgrad.is_floating_point(clgrad.tensor([1.0], dtype=clgrad.bfloat16))
    assert not clgrad.is_floating_point(clgrad.tensor([1]))
    with pytest.raises(TypeError):
        clgrad.is_floating_point(1.0)
    assert clgrad.is_nonzero(clgrad.tensor([2.0])) is True
    assert clgrad.is_nonzero(clgrad.tensor(0)) is False
    assert clgrad.is_nonzero(clgrad.tensor([[NAN]])) is True
    assert clgrad.tensor([False]).is_nonzero() is False
    with pytest.raises(RuntimeError, match="with no values is ambiguous"):
        clgrad.is_nonzero(clgrad.tensor([]))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        clgrad.is_nonzero(clgrad.tensor([1.0, 2.0]))


# -- against PyTorch -----------------------------------------------------------------------------
UNARY = ["erfinv", "erfc", "lgamma", "digamma", "trunc", "fix", "frac", "signbit", "deg2rad",
         "rad2deg"]
BINARY = ["logaddexp", "logaddexp2", "hypot", "xlogy", "copysign", "float_power"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_against_torch(name):
    torch = pytest.importorskip("torch")
    a = np.array([-3.5, -1.0, -0.99, -0.5, -0.0, 0.0, 0.25, 0.999, 1.0, 2.0, 11.5, INF, -INF,
                  NAN])
    for dt in ("float32", "float64"):
        got = getattr(clgrad, name)(clgrad.tensor(a, dtype=getattr(clgrad, dt)))
        want = getattr(torch, name)(torch.tensor(a, dtype=getattr(torch, dt)))
        assert got.dtype.name == str(want.dtype).split(".")[1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=4e-6 if dt == "float32"
                                   else 1e-13, atol=1e-6 if dt == "float32" else 1e-14)
    if name != "frac":
        got = getattr(clgrad, name)(clgrad.tensor([1, 3]))
        want = getattr(torch, name)(torch.tensor([1, 3]))
        assert str(want.dtype) == "torch." + got.dtype.name
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    if name in ("erfinv", "erfc", "lgamma", "digamma", "deg2rad", "rad2deg", "frac"):
        v = np.random.default_rng(7).uniform(0.1, 0.9, (3, 4))
        xc, xt = clgrad.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        getattr(clgrad, name)(xc).sum().backward()
        getattr(torch, name)(xt).sum().backward()
        # digamma's: trigamma, whose PyTorch form is 5e-10 off (clgrad's: tests/test_special_ns)
        np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(),
                                   rtol=1e-9 if name == "digamma" else 1e-10)


@pytest.mark.parametrize("name", BINARY)
def test_binary_against_torch(name):
    torch = pytest.importorskip("torch")
    a = np.array([[-2.0, 0.0, -0.0, 0.5, 3.0, INF, -INF, NAN, 1.0]])
    b = np.array([[0.0], [1.5], [-0.0], [INF], [NAN], [-2.0]])
    got = getattr(clgrad, name)(clgrad.tensor(a), clgrad.tensor(b))
    want = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
    assert str(want.dtype) == "torch." + got.dtype.name
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)
    num = ~np.isnan(want.numpy())  # (a NaN's sign is no one's contract)
    np.testing.assert_array_equal(np.signbit(got.numpy()[num]), np.signbit(want.numpy()[num]))
    ia, ib = np.array([1, 2, 3]), np.array([2])
    try:
        want = getattr(torch, name)(torch.tensor(ia), torch.tensor(ib))
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            getattr(clgrad, name)(clgrad.tensor(ia), clgrad.tensor(ib))
    else:
        got = getattr(clgrad, name)(clgrad.tensor(ia), clgrad.tensor(ib))
        assert str(want.dtype) == "torch." + got.dtype.name
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    p, q = np.random.default_rng(8).uniform(0.2, 2, (2, 3, 4))
    pc, qc = clgrad.tensor(p, requires_grad=True), clgrad.tensor(q, requires_grad=True)
    pt, qt = torch.tensor(p, requires_grad=True), torch.tensor(q, requires_grad=True)
    getattr(clgrad, name)(pc, qc).sum().backward()
    getattr(torch, name)(pt, qt).sum().backward()
    np.testing.assert_allclose(pc.grad.numpy(), pt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(qc.grad.numpy(), qt.grad.numpy(), rtol=1e-12)


def test_bfloat16_binary_ops_take_tensor_operands_as_bfloat16():
    """bfloat16 with an integer tensor: the tensor is loaded as bfloat16 (257 -> 256, ties to
    even), as every binary op's (PyTorch's); hand values: hypot(0.5, 256) rounds to 256,
    0.5 * log(256) = 2.7726 rounds to 2.765625."""
    x = clgrad.tensor([0.5, 3.0], dtype=clgrad.bfloat16)
    assert clgrad.xlogy(x, clgrad.tensor([257, 3]))[0].item() == 2.765625
    assert clgrad.hypot(x, clgrad.tensor([257, 1]).bfloat16())[0].item() == 256.0
