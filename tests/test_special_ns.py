"""clgrad.special (PyTorch's torch.special) and its own functions (clgrad/ops/special.py):
entr, erfcx, ndtr, log_ndtr, ndtri, i0e, i1, i1e, xlog1py, zeta, polygamma, mvlgamma.

Oracles: float64 references computed here in Python (series, continued fractions, exact
squares through fractions.Fraction, Newton inversion; every one independent of the kernels'
methods or of their parameters), known closed forms (zeta(2) = pi^2 / 6, polygamma at 1 and
1/2), float32 ulp bounds against them, float64 gradchecks on non-contiguous views, and PyTorch
2.14 where importable (special values, dtypes, gradients, errors; those tests skip without
it)."""
import math
from fractions import Fraction

import numpy as np
import pytest

import clgrad
import clgrad.special as S
from clgrad.autograd import gradcheck
from strided import strided

NAN, INF = math.nan, math.inf
F16, F32, F64, BF16 = clgrad.float16, clgrad.float32, clgrad.float64, clgrad.bfloat16
PI = math.pi
ZETA3 = 1.2020569031595942854  # Apery's constant


# -- float64 references ------------------------------------------------------------------------
def _exp_sq(x, c=1):
    """exp(c x^2) with c x^2 exact (h + l, l from Fractions): no error growing with x^2."""
    v = Fraction(x) ** 2 * Fraction(c)
    h = float(v)
    return math.exp(h) * (1 + float(v - Fraction(h)))


def _erfcx(x):
    """exp(x^2) erfc(x): math.erfc below 3, the continued fraction (200 terms) above."""
    if x < 0:
        return 2 * _exp_sq(x) - _erfcx(-x) if x > -26.6 else INF
    if x < 3:
        return _exp_sq(x) * math.erfc(x)
    f = x
    for k in range(200, 0, -1):
        f = x + k * 0.5 / f
    return 1 / (math.sqrt(PI) * f)


def _half_sq(x):
    """x^2 / 2 in float64, exactly rounded (Fractions)."""
    return float(Fraction(x) ** 2 / 2)


def _ndtr(x):
    """erfc(-x / sqrt 2) / 2 as erfcx(-x / sqrt 2) exp(-x^2 / 2), x^2 / 2 exact."""
    if x > 0:
        return 1 - _ndtr(-x)
    return 0.5 * _erfcx(-x / math.sqrt(2)) * _exp_sq(x, Fraction(-1, 2))


def _log_ndtr(x):
    if x < -1:
        return math.log(0.5 * _erfcx(-x / math.sqrt(2))) - _half_sq(x)
    return math.log1p(-_ndtr(-x))


def _mills(x):
    """phi(x) / ndtr(x), log_ndtr's derivative: below -5 z + 1 / (z + 2 / (z + 3 / ...)),
    z = -x (Laplace's continued fraction of the Mills ratio, 400 terms)."""
    if x < -5:
        f = -x
        for k in range(400, 0, -1):
            f = -x + k / f
        return f
    return math.exp(-_half_sq(x) - _log_ndtr(x)) / math.sqrt(2 * PI)


def _ndtri(p):
    """The x with ndtr(x) = p: Newton's method on log_ndtr (p <= 1/2; 1 - p above)."""
    if p > 0.5:
        return -_ndtri(1 - p)
    x = -math.sqrt(-2 * math.log(p)) if p < 0.3 else 0.0
    for _ in range(100):
        step = (_log_ndtr(x) - math.log(p)) / _mills(x)
        x -= step
        if abs(step) <= 1e-17 * max(1.0, abs(x)):
            break
    return x


_B2K = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
        Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510)]  # B_2 .. B_16


def _zeta(s, q):
    """The Hurwitz zeta function: 40 terms, then Euler-Maclaurin with B_2 .. B_16 (q > 0)."""
    s, q = float(s), float(q)  # (np.vectorize passes NumPy ints: their products wrap)
    if q <= 0:  # (s an integer here) the terms with q + k <= 0, then q + m > 0
        m = math.ceil(-q) + 1
        return sum((q + k) ** -s for k in range(m)) + _zeta(s, q + m)
    n = 40
    a = q + n
    total = math.fsum((q + k) ** -s for k in range(n))
    tail = a ** (1 - s) / (s - 1) + 0.5 * a ** -s
    rising = s  # s (s + 1) ... (s + 2j - 2)
    for j, b in enumerate(_B2K, 1):
        tail += float(b) / math.factorial(2 * j) * rising * a ** (-s - 2 * j + 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return total + tail


def _polygamma(n, x):
    return (-1) ** (n + 1) * math.factorial(n) * _zeta(n + 1, x)


def _bessel_i(n, x, scaled=False):
    """I_n(x) (e^-|x| I_n(x) when scaled): the power series (positive terms, math.fsum) up to
    |x| = 40, the asymptotic series beyond."""
    a = abs(x)
    if a <= 40:
        q, t, terms, k = a * a / 4, (a / 2) ** n / math.factorial(n), [], 0
        while t > 1e-300 and (k < 5 or t > 1e-18 * sum(terms[-3:])):
            terms.append(t)
            k += 1
            t *= q / (k * (k + n))
        v = math.fsum(terms) * (math.exp(-a) if scaled else 1.0)
    else:
        s, t, mu = 1.0, 1.0, 4 * n * n
        for k in range(1, 60):
            t *= -(mu - (2 * k - 1) ** 2) / (k * 8 * a)
            s += t
        v = s / math.sqrt(2 * PI * a) * (1.0 if scaled else math.exp(a))
    return -v if n == 1 and x < 0 else v


def _entr(x):
    return -x * math.log(x) if x > 0 else 0.0 if x == 0 else -INF


def _vec(f):
    return lambda a, *rest: np.vectorize(f, otypes=[np.float64])(a, *rest)


# (name, reference, domain, float64 rtol, float32 ulp bound); ndtri near p = 1/2 (results near
# 0) is compared with an absolute tolerance too: the reference's own error there is ~1e-17
UNARY = [
    ("entr", _vec(_entr), (0.01, 6.0), 1e-14, 4),
    ("erfcx", _vec(_erfcx), (-5.0, 30.0), 2e-14, 8),
    ("ndtr", _vec(_ndtr), (-12.0, 6.0), 1e-14, 4),
    ("log_ndtr", _vec(_log_ndtr), (-60.0, 6.0), 2e-14, 8),
    ("ndtri", _vec(_ndtri), (1e-6, 0.999), 1e-14, 8),
    ("i0e", _vec(lambda x: _bessel_i(0, x, True)), (-60.0, 60.0), 1e-14, 8),
    ("i1", _vec(lambda x: _bessel_i(1, x)), (-12.0, 12.0), 1e-14, 8),
    ("i1e", _vec(lambda x: _bessel_i(1, x, True)), (-60.0, 60.0), 1e-14, 8),
]
ROWS = [pytest.param(*row, id=row[0]) for row in UNARY]
LOW = {"entr", "ndtr", "i0e", "i1", "i1e"}  # float16 and bfloat16 kernels (PyTorch's)


def _domain(rng, lo, hi, shape):
    return rng.uniform(lo, hi, shape)


# -- unary: values -----------------------------------------------------------------------------
@pytest.mark.parametrize("name, ref, dom, rtol, ulp32", ROWS)
def test_unary_float64_values_on_views_and_sizes(name, ref, dom, rtol, ulp32):
    fn = getattr(S, name)
    rng = np.random.default_rng(1)
    a = _domain(rng, *dom, (3, 5))
    atol = 1e-16 if name == "ndtri" else 1e-300
    np.testing.assert_allclose(fn(strided(a)).numpy(), ref(a), rtol=rtol, atol=atol)
    for n in (0, 1, 257):
        v = _domain(rng, *dom, (n,))
        np.testing.assert_allclose(fn(clgrad.tensor(v)).numpy(), ref(v), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name, ref, dom, rtol, ulp32", ROWS)
def test_unary_float32_ulp_and_float16(name, ref, dom, rtol, ulp32):
    """float32 within the row's ulp of the float64 value of its input; float16 (where
    PyTorch has it) computed in float and rounded once: within half an ulp and a bit."""
    fn = getattr(S, name)
    rng = np.random.default_rng(2)
    x32 = _domain(rng, *dom, 3000).astype(np.float32)
    got = fn(clgrad.tensor(x32))
    assert got.dtype is F32
    want = ref(x32.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got.numpy() - want) / ulp) <= ulp32
    if name not in LOW:
        if clgrad.default_device().fp16:
            with pytest.raises(NotImplementedError, match=f'"{name}_(cpu|cuda)" not '
                                                          f"implemented for 'Half'"):
                fn(clgrad.tensor([0.5], dtype=F16))
        with pytest.raises(NotImplementedError, match="'BFloat16'"):
            fn(clgrad.tensor([0.5], dtype=BF16))
        return
    b = clgrad.tensor(x32[:9], dtype=BF16)
    got = fn(b)
    assert got.dtype is BF16
    np.testing.assert_array_equal(got.float().numpy(), fn(b.float()).to(BF16).float().numpy())
    if not clgrad.default_device().fp16:
        return
    x16 = _domain(rng, max(dom[0], -9.0), min(dom[1], 9.0), 1000).astype(np.float16)
    got = fn(clgrad.tensor(x16))
    assert got.dtype is F16
    want = ref(x16.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
    assert np.max(np.abs(got.numpy().astype(np.float64) - want) / ulp) <= 0.51


@pytest.mark.parametrize("name", [r[0] for r in UNARY])
def test_unary_integer_and_bool_inputs_give_the_default_dtype(name):
    fn = getattr(S, name)
    i = clgrad.tensor([0, 1, 2, 3])
    assert fn(i).dtype is F32 and fn(clgrad.tensor([True, False])).dtype is F32
    np.testing.assert_array_equal(fn(i).numpy(), fn(i.float()).numpy(), strict=False)
    clgrad.set_default_dtype(F64)
    try:
        assert fn(i).dtype is F64
    finally:
        clgrad.set_default_dtype(F32)


def test_far_tails_and_known_values():
    """What a formula through the central functions loses: log_ndtr where ndtr underflows,
    ndtri of tiny p (erfinv(2p - 1) is -inf there), erfcx where erfc underflows."""
    for dt in (F32, F64):
        got = S.log_ndtr(clgrad.tensor([-40.0, -20.0, -1e3], dtype=dt)).numpy()
        np.testing.assert_allclose(got, [_log_ndtr(-40.0), _log_ndtr(-20.0), _log_ndtr(-1e3)],
                                   rtol=1e-6 if dt is F32 else 1e-15)
        assert abs(got[0] + 804.6084420137538) < 1e-3
        got = S.ndtri(clgrad.tensor([1e-30, 1e-10, 0.5, 1 - 2 ** -20], dtype=dt)).numpy()
        np.testing.assert_allclose(got, [_ndtri(1e-30), _ndtri(1e-10), 0.0,
                                         _ndtri(1 - 2 ** -20)], rtol=1e-6 if dt is F32 else
                                   1e-15, atol=0)
        assert abs(got[0] + 11.464024688443613) < 1e-5
        got = S.erfcx(clgrad.tensor([10.0, 1e3, 1e10, 1e30], dtype=dt)).numpy()
        np.testing.assert_allclose(got, [_erfcx(10.0), _erfcx(1e3), 1 / (1e10 * math.sqrt(PI)),
                                         1 / (1e30 * math.sqrt(PI))],
                                   rtol=1e-6 if dt is F32 else 1e-15)
    p = np.array([1e-300, 1e-200, 1e-100, 1e-50, 1e-20, 3e-15, 0.01, 0.2, 0.7, 0.95])
    np.testing.assert_allclose(S.ndtri(clgrad.tensor(p, dtype=F64)).numpy(),
                               [_ndtri(v) for v in p], rtol=2e-15)
    np.testing.assert_allclose(S.ndtri(clgrad.tensor([1e-37, 1e-45], dtype=F32)).numpy(),
                               [_ndtri(float(np.float32(1e-37))),
                                _ndtri(float(np.float32(1e-45)))], rtol=1e-6)
    x = np.array([-37.0, -30.0, -10.0, -3.0, -1.0, 0.0, 1.0, 5.0, 8.0])  # ndtr's left tail
    np.testing.assert_allclose(S.ndtr(clgrad.tensor(x, dtype=F64)).numpy(),
                               [_ndtr(v) for v in x], rtol=1e-14)


_X = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0]
SPECIAL = {  # PyTorch 2.14's (measured) at _X
    "entr": [NAN, -INF, -INF, 0.0, 0.0, -0.0, -INF],
    "erfcx": [NAN, 0.0, INF, 1.0, 1.0, None, None],
    "ndtr": [NAN, 1.0, 0.0, 0.5, 0.5, None, None],
    "log_ndtr": [NAN, -0.0, -INF, None, None, None, None],
    "ndtri": [NAN, NAN, NAN, -INF, -INF, INF, NAN],
    "i0e": [NAN, 0.0, 0.0, 1.0, 1.0, None, None],
    "i1": [NAN, NAN, NAN, 0.0, 0.0, None, None],
    "i1e": [NAN, 0.0, -0.0, 0.0, 0.0, None, None],
}


def _same(got, want):
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1, got) == math.copysign(1, want)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_unary_special_values(name, dtype):
    got = getattr(S, name)(clgrad.tensor(_X, dtype=dtype)).numpy()
    for x, g, w in zip(_X, got.tolist(), SPECIAL[name]):
        assert w is None or _same(g, w), (name, x, g, w)


# -- unary: gradients --------------------------------------------------------------------------
GRAD_DOMAIN = {"entr": (0.05, 4.0), "erfcx": (-3.0, 8.0), "ndtr": (-5.0, 5.0),
               "log_ndtr": (-30.0, 5.0), "ndtri": (0.01, 0.99), "i0e": (0.1, 20.0),
               "i1": (-6.0, 6.0), "i1e": (0.1, 20.0)}


@pytest.mark.parametrize("name", sorted(GRAD_DOMAIN))
def test_unary_gradients_on_views(name):
    fn = getattr(S, name)
    lo, hi = GRAD_DOMAIN[name]
    a = _domain(np.random.default_rng(4), lo, hi, (4, 3))
    if name in ("i0e", "i1e"):
        a = a * np.sign(np.random.default_rng(5).uniform(-1, 1, a.shape))  # both signs
    leaf = clgrad.tensor(np.ascontiguousarray(a.T), requires_grad=True)
    assert gradcheck(lambda t: fn(t.t()), (leaf,), rtol=1e-5)


def test_gradients_at_special_points():
    def grad(fn, v):
        x = clgrad.tensor(v, dtype=F64, requires_grad=True)
        fn(x).sum().backward()
        return x.grad.numpy()
    g = grad(S.entr, [0.0, -1.0, 1.0])
    assert g[0] == INF and math.isnan(g[1]) and g[2] == -1.0
    for f in (S.i1, S.i1e):
        assert grad(f, [0.0, -0.0])[0] == 0.5
    assert grad(S.i0e, [0.0])[0] == 0.0
    # log_ndtr: the Mills ratio, accurate far into the left tail (no cancellation)
    np.testing.assert_allclose(grad(S.log_ndtr, [-40.0, -200.0, 30.0, 40.0]),
                               [_mills(-40.0), _mills(-200.0), _mills(30.0), 0.0], rtol=1e-13,
                               atol=1e-320)
    np.testing.assert_allclose(grad(S.ndtri, [1e-30, 0.5]),
                               [math.sqrt(2 * PI) * math.exp(_ndtri(1e-30) ** 2 / 2),
                                math.sqrt(2 * PI)], rtol=1e-13)


def test_gradients_against_pytorch():
    torch = pytest.importorskip("torch")
    pts = {"entr": [0.5, 2.0, 1e-3], "erfcx": [-1.0, 0.0, 0.5, 30.0],
           "ndtr": [-1.0, 0.0, 0.5, 30.0], "log_ndtr": [-40.0, -1.0, 0.5, 30.0],
           "ndtri": [1e-30, 0.3, 0.5], "i0e": [-1.0, 0.0, 0.5, 30.0],
           "i1": [-1.0, 0.0, 0.5, 30.0], "i1e": [-1.0, 0.0, 0.5, 30.0]}
    for name, v in pts.items():
        tx, cx = torch.tensor(v, dtype=torch.float64, requires_grad=True), \
            clgrad.tensor(v, dtype=F64, requires_grad=True)
        getattr(torch.special, name)(tx).sum().backward()
        getattr(S, name)(cx).sum().backward()
        np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, err_msg=name)


@pytest.mark.parametrize("name", [r[0] for r in UNARY])
def test_unary_against_pytorch(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    lo, hi = UNARY[[r[0] for r in UNARY].index(name)][2]
    x = np.concatenate([rng.uniform(lo, hi, 200), _X, [0.25, 0.75, 1.5, -1.5, 1e-3]])
    if name == "ndtr":  # PyTorch's (1 + erf(x / sqrt 2)) / 2 loses the left tail: float32
        x = x[~(x < -1)]  # ndtr(-5) is off by 4 %, 0 from -6 on; float64 0 from about -8.3
    for np_dt in (np.float32, np.float64):
        v = x.astype(np_dt)
        got = getattr(S, name)(clgrad.tensor(v)).numpy()
        want = getattr(torch.special, name)(torch.tensor(v)).numpy()
        # float32: PyTorch's erfcx rounds x^2 in exp(x^2) (1e-6 off at x = -4.9); the ulp
        # test above bounds ours against the float64 reference
        np.testing.assert_allclose(got, want, rtol=1e-5 if np_dt is np.float32 else 1e-13,
                                   atol=1e-300, err_msg=name)
    assert str(getattr(torch.special, name)(torch.tensor([1, 2])).dtype)[6:] == \
        str(getattr(S, name)(clgrad.tensor([1, 2])).dtype)[7:]


# -- xlog1py -----------------------------------------------------------------------------------
def test_xlog1py_values_numbers_and_special_points():
    rng = np.random.default_rng(6)
    a, b = rng.uniform(-3, 3, (3, 4)), rng.uniform(-0.9, 3, (4, 3))
    np.testing.assert_allclose(S.xlog1py(strided(a), strided(b).t()).numpy(),
                               a * np.log1p(b.T), rtol=1e-14)
    np.testing.assert_allclose(S.xlog1py(2.0, clgrad.tensor(b)).numpy(), 2 * np.log1p(b),
                               rtol=1e-14)
    np.testing.assert_allclose(S.xlog1py(clgrad.tensor(a), 3).numpy(), a * math.log(4),
                               rtol=1e-14)
    got = S.xlog1py(clgrad.tensor([0.0, 0.0, 0.0, 1.0, 0.0]),
                    clgrad.tensor([-1.0, -2.0, NAN, -1.0, INF])).numpy()
    assert got[0] == 0 and got[1] == 0 and math.isnan(got[2]) and got[3] == -INF \
        and got[4] == 0
    assert S.xlog1py(clgrad.tensor([1, 2]), clgrad.tensor([1, 2])).dtype is F32
    h = S.xlog1py(clgrad.tensor([1.0, 2.0], dtype=BF16), clgrad.tensor([1.0, 2.0], dtype=BF16))
    assert h.dtype is BF16
    if clgrad.default_device().fp16:
        h = S.xlog1py(clgrad.tensor([1.0, 2.0], dtype=F16), clgrad.tensor([1.0, 2.0], dtype=F16))
        assert h.dtype is F16
        np.testing.assert_allclose(h.numpy(), [math.log(2), 2 * math.log(3)], rtol=1e-3)


def test_xlog1py_gradients():
    rng = np.random.default_rng(7)
    a, b = rng.uniform(-3, 3, (3, 4)), rng.uniform(-0.5, 3, (4, 3))
    assert gradcheck(lambda s, t: S.xlog1py(s, t.t()), (
        clgrad.tensor(a, requires_grad=True), clgrad.tensor(b, requires_grad=True)))
    assert gradcheck(lambda s: S.xlog1py(s, 2.0), (clgrad.tensor(a, requires_grad=True),))
    assert gradcheck(lambda t: S.xlog1py(1.5, t), (clgrad.tensor(b, requires_grad=True),))
    # PyTorch 2.14's (measured): 0 for input where input is 0 and other <= -1
    x = clgrad.tensor([0.0, 0.0, 0.0, 2.0, 1.0], dtype=F64, requires_grad=True)
    y = clgrad.tensor([-1.0, -2.0, 1.0, 1.0, -1.0], dtype=F64, requires_grad=True)
    S.xlog1py(x, y).sum().backward()
    gx, gy = x.grad.numpy(), y.grad.numpy()
    np.testing.assert_array_equal(gx, [0.0, 0.0, math.log(2), math.log(2), -INF])
    assert math.isnan(gy[0]) and gy[1] == 0 and gy[2] == 0 and gy[3] == 1 and gy[4] == INF


# -- zeta and polygamma ------------------------------------------------------------------------
def test_zeta_known_values_and_reference():
    s = clgrad.tensor([2.0, 4.0, 3.0, 2.0, 3.0, 6.0], dtype=F64)
    q = clgrad.tensor([1.0, 1.0, 1.0, 0.5, 0.5, 1.0], dtype=F64)
    want = [PI ** 2 / 6, PI ** 4 / 90, ZETA3, PI ** 2 / 2, 7 * ZETA3, PI ** 6 / 945]
    np.testing.assert_allclose(S.zeta(s, q).numpy(), want, rtol=1e-15)
    np.testing.assert_allclose(S.zeta(s.float(), q.float()).numpy(), want, rtol=3e-7)
    rng = np.random.default_rng(8)
    a, b = rng.uniform(1.1, 12, (3, 5)), rng.uniform(0.05, 30, (5, 3))
    want = np.vectorize(_zeta)(a, b.T)
    np.testing.assert_allclose(S.zeta(strided(a), strided(b).t()).numpy(), want, rtol=5e-14)
    got = S.zeta(clgrad.tensor(a, dtype=F32), clgrad.tensor(b.T, dtype=F32)).numpy()
    want32 = np.vectorize(_zeta)(a.astype(np.float32).astype(np.float64),
                                 b.T.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(got, want32, rtol=2e-6)
    np.testing.assert_allclose(S.zeta(3.0, clgrad.tensor(b, dtype=F64)).numpy(),
                               np.vectorize(_zeta)(3.0, b), rtol=5e-14)
    np.testing.assert_allclose(S.zeta(clgrad.tensor(a, dtype=F64), 2.0).numpy(),
                               np.vectorize(_zeta)(a, 2.0), rtol=5e-14)
    assert S.zeta(clgrad.tensor([2, 3]), clgrad.tensor([1, 2])).dtype is F32


def test_zeta_special_values():
    """PyTorch 2.14's (Cephes'), but q = +inf and s = +inf: their limits (PyTorch: NaN)."""
    s = [1.0, 0.5, 2.0, 2.0, 2.0, 2.5, NAN, 2.0, INF, INF, INF]
    q = [1.0, 1.0, 0.0, -1.0, -1.5, -1.5, 1.0, INF, 2.0, 1.0, 0.5]
    got = S.zeta(clgrad.tensor(s, dtype=F64), clgrad.tensor(q, dtype=F64)).numpy().tolist()
    want = [INF, NAN, INF, INF, 1 / 2.25 + 4 + PI ** 2 / 2, NAN, NAN, 0.0, 0.0, 1.0, INF]
    for g, w in zip(got, want):
        assert (math.isnan(g) and math.isnan(w)) or g == pytest.approx(w, rel=1e-14), (g, w)


def test_zeta_gradient_and_errors():
    rng = np.random.default_rng(9)
    a, b = rng.uniform(1.5, 5, (3, 4)), rng.uniform(0.5, 4, (4, 3))
    sa = clgrad.tensor(a)
    assert gradcheck(lambda t: S.zeta(sa, t.t()), (clgrad.tensor(b, requires_grad=True),))
    assert gradcheck(lambda t: S.zeta(2.5, t), (clgrad.tensor(b, requires_grad=True),))
    x = clgrad.tensor([2.0, 3.0], requires_grad=True)
    out = S.zeta(x, clgrad.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="the derivative for 'zeta' is not implemented"):
        out.sum().backward()
    for dt in (F16, BF16):
        if dt is F16 and not clgrad.default_device().fp16:
            continue  # (this device has no float16)
        with pytest.raises(NotImplementedError, match='"zeta_(cpu|cuda)" not implemented'):
            S.zeta(clgrad.tensor([2.0], dtype=dt), clgrad.tensor([1.0], dtype=dt))
    with pytest.raises(TypeError):
        S.zeta(2.0, 3.0)


def test_polygamma_known_values_recurrence_and_reference():
    x = clgrad.tensor([1.0, 0.5], dtype=F64)
    np.testing.assert_allclose(clgrad.polygamma(1, x).numpy(), [PI ** 2 / 6, PI ** 2 / 2],
                               rtol=1e-15)
    np.testing.assert_allclose(clgrad.polygamma(2, x).numpy(), [-2 * ZETA3, -14 * ZETA3],
                               rtol=1e-15)
    np.testing.assert_allclose(clgrad.polygamma(3, x).numpy(), [PI ** 4 / 15, PI ** 4],
                               rtol=1e-15)
    np.testing.assert_allclose(clgrad.polygamma(0, x).numpy(),
                               [-0.5772156649015329, -0.5772156649015329 - 2 * math.log(2)],
                               rtol=1e-15)
    rng = np.random.default_rng(10)
    v = rng.uniform(0.05, 20, (3, 4))
    for n in (2, 3, 4, 7, 12):
        want = np.vectorize(_polygamma)(n, v)
        np.testing.assert_allclose(clgrad.polygamma(n, strided(v)).numpy(), want, rtol=5e-14)
        np.testing.assert_allclose(strided(v).polygamma(n).numpy(), want, rtol=5e-14)
        got = clgrad.polygamma(n, clgrad.tensor(v, dtype=F32)).numpy()
        want32 = np.vectorize(_polygamma)(n, v.astype(np.float32).astype(np.float64))
        np.testing.assert_allclose(got, want32, rtol=2e-6)
    # negative non-integers: psi^(n)(x) = psi^(n)(x + m) - (-1)^n n! sum_k (x + k)^-(n+1)
    for n, xv in ((2, -1.5), (3, -2.25), (4, -0.3)):
        m = 3
        want = _polygamma(n, xv + m) - (-1) ** n * math.factorial(n) * sum(
            (xv + k) ** -(n + 1) for k in range(m))
        got = clgrad.polygamma(n, clgrad.tensor([xv], dtype=F64)).item()
        assert got == pytest.approx(want, rel=1e-13)


def test_polygamma_special_values_dtypes_and_errors():
    x = clgrad.tensor([NAN, INF, -INF, 0.0, -2.0], dtype=F64)
    for n in (2, 3):
        got = clgrad.polygamma(n, x).numpy()
        assert math.isnan(got[0]) and got[1] == 0.0  # (PyTorch: NaN at +inf)
        assert got[2] == got[3] == got[4] == (INF if n % 2 else -INF)
    assert clgrad.polygamma(2, clgrad.tensor([1, 2])).dtype is F32
    b = clgrad.polygamma(2, clgrad.tensor([1.0, 2.0], dtype=BF16))
    assert b.dtype is BF16
    np.testing.assert_allclose(b.float().numpy(), [-2.404, -0.4041], rtol=1e-2)
    if clgrad.default_device().fp16:
        h = clgrad.polygamma(3, clgrad.tensor([1.0, 2.0], dtype=F16))
        assert h.dtype is F16
        np.testing.assert_allclose(h.numpy(), [PI ** 4 / 15, PI ** 4 / 15 - 6], rtol=1e-3)
    with pytest.raises(RuntimeError, match=r"^polygamma\(n, x\) does not support negative n\.$"):
        clgrad.polygamma(-1, clgrad.ones(2))
    with pytest.raises(TypeError, match=r"^polygamma\(\): argument 'n' \(position 1\) must be "
                                        r"int, not float$"):
        clgrad.polygamma(1.5, clgrad.ones(2))
    with pytest.raises(TypeError, match=r"argument 'input' \(position 2\) must be Tensor"):
        clgrad.polygamma(1, np.ones(2))


def test_polygamma_gradients_inplace_and_out():
    rng = np.random.default_rng(11)
    a = rng.uniform(0.3, 6, (4, 3))
    for n in (0, 1, 2, 3):
        assert gradcheck(lambda t, n=n: clgrad.polygamma(n, t.t()),
                         (clgrad.tensor(np.ascontiguousarray(a.T), requires_grad=True),))
    x = clgrad.tensor(a)
    want = clgrad.polygamma(2, x).numpy()
    assert x.polygamma_(2) is x
    np.testing.assert_array_equal(x.numpy(), want)
    out = clgrad.empty(4, 3, dtype=F64)
    assert S.polygamma(3, clgrad.tensor(a), out=out) is out
    np.testing.assert_array_equal(out.numpy(), clgrad.polygamma(3, clgrad.tensor(a)).numpy())


# -- mvlgamma / multigammaln -------------------------------------------------------------------
def _mvlgamma(x, p):
    return math.fsum([math.lgamma(x - j / 2) for j in range(p)]) + p * (p - 1) / 4 * \
        math.log(PI)


def test_mvlgamma_values_gradients_and_forms():
    rng = np.random.default_rng(12)
    a = rng.uniform(2.6, 9, (3, 4))
    for p in (1, 2, 5):
        want = np.vectorize(_mvlgamma)(a, p)
        np.testing.assert_allclose(S.multigammaln(strided(a), p).numpy(), want, rtol=1e-14)
        np.testing.assert_allclose(clgrad.mvlgamma(strided(a), p=p).numpy(), want, rtol=1e-14)
        np.testing.assert_allclose(strided(a).mvlgamma(p).numpy(), want, rtol=1e-14)
        got = S.multigammaln(clgrad.tensor(a, dtype=F32), p).numpy()
        np.testing.assert_allclose(got, np.vectorize(_mvlgamma)(
            a.astype(np.float32).astype(np.float64), p), rtol=1e-6)
        assert gradcheck(lambda t, p=p: S.multigammaln(t.t(), p),
                         (clgrad.tensor(np.ascontiguousarray(a.T), requires_grad=True),))
    x = clgrad.tensor(a)
    assert x.mvlgamma_(3) is x
    np.testing.assert_allclose(x.numpy(), np.vectorize(_mvlgamma)(a, 3), rtol=1e-14)
    assert S.multigammaln(clgrad.tensor([3, 4]), 2).dtype is F32
    assert S.multigammaln(clgrad.tensor([3.0], dtype=BF16), 2).dtype is BF16
    # PyTorch 2.14 checks no x > (p - 1) / 2: lgamma's values below it (inf at its poles)
    got = S.multigammaln(clgrad.tensor([1.0, 0.4], dtype=F64), 3).numpy()
    assert got[0] == INF and got[1] == pytest.approx(_mvlgamma(0.4, 3), rel=1e-14)


def test_mvlgamma_errors():
    with pytest.raises(RuntimeError, match="^p has to be greater than or equal to 1$"):
        S.multigammaln(clgrad.ones(2), 0)
    with pytest.raises(RuntimeError, match="^The input tensor may not be a boolean tensor.$"):
        clgrad.mvlgamma(clgrad.tensor([True]), 1)
    with pytest.raises(TypeError, match=r"^mvlgamma\(\): argument 'p' \(position 2\) must be "
                                        r"int, not float$"):
        clgrad.mvlgamma(clgrad.ones(2), 1.5)


# -- the face ----------------------------------------------------------------------------------
def test_the_face_names_aliases_and_missing_names():
    assert clgrad.special is S and "special" in clgrad.__all__
    assert set(S.__all__) == {n for n in vars(S) if not n.startswith("_")
                              and callable(getattr(S, n))}
    same = {"psi": "digamma", "expit": "sigmoid", "gammaln": "lgamma",
            "multigammaln": "mvlgamma", "digamma": "digamma", "erf": "erf", "erfc": "erfc",
            "erfinv": "erfinv", "exp2": "exp2", "expm1": "expm1", "i0": "i0",
            "log1p": "log1p", "logit": "logit", "logsumexp": "logsumexp", "round": "round",
            "sinc": "sinc", "xlogy": "xlogy", "polygamma": "polygamma",
            "softmax": "softmax", "log_softmax": "log_softmax"}
    x = clgrad.tensor([[0.3, 0.6], [0.2, 0.9]], dtype=F64)
    for name, top in same.items():
        args = {"polygamma": (2, x), "multigammaln": (x + 2, 2), "logsumexp": (x, 1),
                "softmax": (x, 1), "log_softmax": (x, 1), "xlogy": (x, x)}.get(name, (x,))
        np.testing.assert_array_equal(getattr(S, name)(*args).numpy(),
                                      getattr(clgrad, top)(*args).numpy(), err_msg=name)
    for name in ("bessel_j0", "airy_ai", "gammainc", "chebyshev_polynomial_t",
                 "spherical_bessel_j0", "modified_bessel_k0"):  # (tests/test_special_families)
        assert name in S.__all__ and name in S.__doc__
    with pytest.raises(AttributeError, match="torch.special.not_a_function is not implemented"):
        S.not_a_function


def test_the_face_checks_arguments_and_takes_out():
    with pytest.raises(TypeError, match=r"^entr\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not numpy\.ndarray$"):
        S.entr(np.ones(2))
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor"):
        S.multigammaln(np.ones(2), 1)
    x = clgrad.tensor([0.5, 2.0])
    for name in ("entr", "erfcx", "ndtr", "log_ndtr", "i0e", "i1", "i1e", "expit", "psi",
                 "gammaln", "sinc", "i0"):
        out = clgrad.empty(2)
        assert getattr(S, name)(x, out=out) is out
        np.testing.assert_array_equal(out.numpy(), getattr(S, name)(x).numpy())
    out = clgrad.empty(2)
    assert S.xlog1py(x, x, out=out) is out and S.zeta(x + 1, x, out=out) is out
    assert S.ndtri(clgrad.tensor([0.5, 0.25]), out=out) is out
    with pytest.raises(TypeError):
        S.softmax(x, 0, out=out)  # (PyTorch's special.softmax takes no out= either)


def test_the_face_matches_pytorchs_names():
    torch = pytest.importorskip("torch")
    import inspect
    provided = set(S.__all__)
    theirs = {n for n in dir(torch.special) if not n.startswith("_")
              and inspect.isbuiltin(getattr(torch.special, n)) or
              (not n.startswith("_") and callable(getattr(torch.special, n))
               and n not in ("Tensor",))}
    assert provided <= theirs
    for n in sorted(theirs - provided):
        assert n in S.__doc__, n  # every name left out is listed as not provided


def test_special_values_against_pytorch():
    torch = pytest.importorskip("torch")
    v = [-2.0, -1.5, -0.0, 0.0, 0.5, 1.0, 3.0, NAN]
    for n in (0, 1, 2, 3, 5):
        got = clgrad.polygamma(n, clgrad.tensor(v, dtype=F64)).numpy()
        want = torch.polygamma(n, torch.tensor(v, dtype=torch.float64)).numpy()
        ok = np.isclose(got, want, rtol=1e-13, equal_nan=True)
        # trigamma at the negative integers: ours inf (sinpi), PyTorch's 1.6e32 (sin(pi x))
        ok |= (n == 1) & np.isin(v, [-2.0]) & (got == INF)
        assert ok.all(), (n, got, want)
    s = torch.tensor([1.0, 0.5, 2.0, 2.0, 2.0, 3.0, 2.5], dtype=torch.float64)
    q = torch.tensor([1.0, 1.0, 0.0, -1.0, -1.5, -1.5, -1.5], dtype=torch.float64)
    np.testing.assert_allclose(
        S.zeta(clgrad.tensor(s.numpy()), clgrad.tensor(q.numpy())).numpy(),
        torch.special.zeta(s, q).numpy(), rtol=1e-13)
    t = torch.tensor([2.5, 4.0, 7.5], dtype=torch.float64, requires_grad=True)
    c = clgrad.tensor([2.5, 4.0, 7.5], dtype=F64, requires_grad=True)
    torch.special.multigammaln(t, 3).sum().backward()
    S.multigammaln(c, 3).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=1e-13)
    for n in (1, 2, 4):
        t.grad = None
        c.grad = None
        torch.polygamma(n, t).sum().backward()
        clgrad.polygamma(n, c).sum().backward()
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    tq = torch.tensor([1.5, 2.0], dtype=torch.float64, requires_grad=True)
    cq = clgrad.tensor([1.5, 2.0], dtype=F64, requires_grad=True)
    torch.special.zeta(torch.tensor([2.0, 3.0], dtype=torch.float64), tq).sum().backward()
    S.zeta(clgrad.tensor([2.0, 3.0], dtype=F64), cq).sum().backward()
    np.testing.assert_allclose(cq.grad.numpy(), tq.grad.numpy(), rtol=1e-13)
