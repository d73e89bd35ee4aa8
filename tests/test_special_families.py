"""torch.special's Bessel functions, incomplete gamma functions and orthogonal polynomials
(clgrad/ops/bessel.py, gamma.py, polynomial.py; kernels/bessel.cl, gamma.cl, polynomial.cl).

Oracles, float64, computed here without the kernels' methods: integral representations by
composite Gauss-Legendre quadrature (J_n, Y_n, I_n, K_n: DLMF 10.9.1, 10.9.7, 10.32.3,
10.32.9), Airy's Maclaurin series in exact fractions (DLMF 9.4.1), the incomplete gamma
function's power series and continued fraction summed in Python floats (DLMF 8.11.4, 8.9.2),
the polynomials' three-term recurrences in exact fractions (DLMF 18.9); float32 ulp bounds
against them; float64 gradchecks on non-contiguous views; PyTorch 2.14 where importable
(values, special points, dtypes, errors; those tests skip without it).
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import clgrad
import clgrad.special as S
from clgrad.autograd import gradcheck
from strided import strided

NAN, INF, PI = math.nan, math.inf, math.pi
F16, F32, F64, BF16 = clgrad.float16, clgrad.float32, clgrad.float64, clgrad.bfloat16
_GL_X, _GL_W = np.polynomial.legendre.leggauss(24)


# -- float64 references ------------------------------------------------------------------------
def _quad(f, a, b, pieces=64):
    """The integral of the vectorised f over [a, b]: Gauss-Legendre, 24 nodes per piece."""
    edges = np.linspace(a, b, pieces + 1)
    mid, half = (edges[1:] + edges[:-1]) / 2, (edges[1:] - edges[:-1]) / 2
    t = (mid[:, None] + half[:, None] * _GL_X[None, :]).ravel()
    return math.fsum((f(t) * np.repeat(half, len(_GL_X)) * np.tile(_GL_W, pieces)).tolist())


def _bessel_j(n, x):
    """J_n(x) = (1/pi) int_0^pi cos(n t - x sin t) dt (DLMF 10.9.2)."""
    return _quad(lambda t: np.cos(n * t - x * np.sin(t)), 0.0, PI, 32) / PI


def _tail_end(x):
    """Where e^(-x sinh t) (or cosh) has fallen below 1e-300: asinh(700 / x) (+ 1)."""
    return math.asinh(700.0 / x) + 1.0


def _bessel_y(n, x):
    """Y_n(x) = (1/pi) int_0^pi sin(x sin t - n t) dt
    - (1/pi) int_0^inf (e^(nt) + (-1)^n e^(-nt)) e^(-x sinh t) dt (DLMF 10.9.7)."""
    a = _quad(lambda t: np.sin(x * np.sin(t) - n * t), 0.0, PI, 32)
    b = _quad(lambda t: (np.exp(n * t) + (-1) ** n * np.exp(-n * t)) * np.exp(-x * np.sinh(t)),
              0.0, _tail_end(x), 256)
    return (a - b) / PI


def _bessel_i(n, x):
    """I_n(x) = (1/pi) int_0^pi e^(x cos t) cos(n t) dt (DLMF 10.32.3, integer n)."""
    return _quad(lambda t: np.exp(x * np.cos(t)) * np.cos(n * t), 0.0, PI, 32) / PI


def _bessel_k(n, x, scaled=False):
    """K_n(x) = int_0^inf e^(-x cosh t) cosh(n t) dt (DLMF 10.32.9); e^x K_n(x) when scaled
    (the exponent e^(-x (cosh t - 1)): no overflow)."""
    s = x if scaled else 0.0
    return _quad(lambda t: np.exp(s - x * np.cosh(t)) * np.cosh(n * t), 0.0,
                 _tail_end(x), 256)


_AI_C1 = Fraction("0.35502805388781723926")  # Ai(0), DLMF 9.2.3 (Cephes' c1)
_AI_C2 = Fraction("0.25881940379280679840")  # -Ai'(0), DLMF 9.2.4 (Cephes' c2)


def _airy_ai(x):
    """Ai(x) = c1 f(x) - c2 g(x), the Maclaurin series (DLMF 9.4.1) summed exactly in
    fractions until the terms are below 1e-40 (|x| <= 6: the constants' 20 digits leave
    ~1e-16 after the cancellation)."""
    z, f, g = Fraction(x) ** 3, Fraction(1), Fraction(x)
    tf, tg, k = Fraction(1), Fraction(x), 0
    while abs(tf) + abs(tg) > Fraction(1, 10 ** 40):
        k += 3
        tf = tf * z / ((k - 1) * k)
        tg = tg * z / (k * (k + 1))
        f += tf
        g += tg
    return float(_AI_C1 * f - _AI_C2 * g)


def _spherical_j0(x):
    return math.sin(x) / x if x else 1.0


def _igam_series(a, x):
    """P(a, x) by DLMF 8.11.4: x^a e^-x / Gamma(a + 1) sum_k x^k / ((a+1) ... (a+k))."""
    terms, t, k = [1.0], 1.0, 0
    while t > 1e-18 * terms[0] and k < 100000:
        k += 1
        t *= x / (a + k)
        terms.append(t)
    return math.exp(a * math.log(x) - x - math.lgamma(a + 1)) * math.fsum(terms)


def _igamc_cf(a, x):
    """Q(a, x) by the continued fraction DLMF 8.9.2 (modified Lentz)."""
    b, c = x + 1 - a, 1e300
    d = 1 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2
        d = an * d + b or 1e-300
        c = b + an / c or 1e-300
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-17:
            break
    return math.exp(a * math.log(x) - x - math.lgamma(a)) * h


def _igamma(a, x):
    """P(a, x): the series below a + 1, else 1 - Q."""
    return _igam_series(a, x) if x < a + 1 else 1 - _igamc_cf(a, x)


def _igammac(a, x):
    return 1 - _igam_series(a, x) if x < a + 1 else _igamc_cf(a, x)


def _recurrence(kind, x, n):
    """p_n(x) by its three-term recurrence in exact fractions (DLMF 18.9.1, Table 18.9.1)."""
    x = Fraction(x)
    if kind.startswith("shifted_"):
        kind, x = kind[len("shifted_"):], 2 * x - 1
    if n < 0:
        return 0.0
    first = {"t": x, "u": 2 * x, "v": 2 * x - 1, "w": 2 * x + 1, "h": 2 * x, "he": x,
             "l": 1 - x, "p": x}[kind]
    p, q = Fraction(1), first
    if n == 0:
        return 1.0
    for k in range(1, n):
        if kind in "tuvw":
            p, q = q, 2 * x * q - p
        elif kind == "h":
            p, q = q, 2 * x * q - 2 * k * p
        elif kind == "he":
            p, q = q, x * q - k * p
        elif kind == "l":
            p, q = q, ((2 * k + 1 - x) * q - k * p) / (k + 1)
        else:
            p, q = q, ((2 * k + 1) * x * q - k * p) / (k + 1)
    return float(q)


def _vec(f):
    return lambda *args: np.vectorize(f, otypes=[np.float64])(*args)


# -- Bessel functions: values ------------------------------------------------------------------
# (name, reference, domain, float64 tolerance, float32 ulp bound, oscillating): an
# oscillating function's error is measured against max(|f|, scale) (near its zeros the
# relative error of any float evaluation is unbounded): scale 0.1, and 1 / sqrt(x) beyond 5
BESSEL = [
    ("bessel_j0", _vec(lambda x: _bessel_j(0, x)), (-30.0, 30.0), 1e-14, 16, True),
    ("bessel_j1", _vec(lambda x: _bessel_j(1, x)), (-30.0, 30.0), 1e-14, 32, True),
    ("bessel_y0", _vec(lambda x: _bessel_y(0, x)), (0.1, 30.0), 1e-14, 40, True),
    ("bessel_y1", _vec(lambda x: _bessel_y(1, x)), (0.1, 30.0), 1e-14, 32, True),
    ("modified_bessel_i0", _vec(lambda x: _bessel_i(0, x)), (-30.0, 30.0), 1e-14, 8, False),
    ("modified_bessel_i1", _vec(lambda x: _bessel_i(1, x)), (-30.0, 30.0), 1e-14, 8, False),
    ("modified_bessel_k0", _vec(lambda x: _bessel_k(0, x)), (0.01, 40.0), 2e-15, 6, False),
    ("modified_bessel_k1", _vec(lambda x: _bessel_k(1, x)), (0.01, 40.0), 2e-15, 6, False),
    ("scaled_modified_bessel_k0", _vec(lambda x: _bessel_k(0, x, True)), (0.01, 200.0), 1e-14,
     6, False),
    ("scaled_modified_bessel_k1", _vec(lambda x: _bessel_k(1, x, True)), (0.01, 200.0), 1e-14,
     6, False),
    ("spherical_bessel_j0", _vec(_spherical_j0), (-30.0, 30.0), 1e-15, 2, True),
    ("airy_ai", _vec(_airy_ai), (-6.0, 6.0), 2e-14, 64, True),
]
BESSEL_ROWS = [pytest.param(*row, id=row[0]) for row in BESSEL]


def _scale(x, want, oscillating):
    if not oscillating:
        return np.abs(want)
    return np.maximum(np.abs(want), np.minimum(0.1, 1 / np.sqrt(np.abs(x) + 1e-300)))


@pytest.mark.parametrize("name, ref, dom, tol64, ulp32, osc", BESSEL_ROWS)
def test_bessel_float64_values_on_views_and_sizes(name, ref, dom, tol64, ulp32, osc):
    fn = getattr(S, name)
    rng = np.random.default_rng(1)
    a = rng.uniform(*dom, (7, 9))
    got, want = fn(strided(a)).numpy(), ref(a)
    assert np.max(np.abs(got - want) / _scale(a, want, osc)) <= tol64
    for n in (0, 1, 257):
        v = rng.uniform(*dom, (n,))
        got = fn(clgrad.tensor(v)).numpy()
        assert got.shape == (n,) and got.dtype == np.float64
        if n:
            assert np.max(np.abs(got - ref(v)) / _scale(v, ref(v), osc)) <= tol64


@pytest.mark.parametrize("name, ref, dom, tol64, ulp32, osc", BESSEL_ROWS)
def test_bessel_float32_ulp_dtypes_and_no_half(name, ref, dom, tol64, ulp32, osc):
    """float32 within the row's ulp of the float64 value at its input (of the scale, for the
    oscillating ones); integers compute in the default dtype; float16 and bfloat16 raise
    (PyTorch's NotImplementedError)."""
    fn = getattr(S, name)
    x32 = np.random.default_rng(2).uniform(*dom, 600).astype(np.float32)
    got = fn(clgrad.tensor(x32))
    assert got.dtype is F32
    want = ref(x32.astype(np.float64))
    ulp = np.spacing(_scale(x32, want, osc).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got.numpy() - want) / ulp) <= ulp32
    ints = fn(clgrad.tensor([1, 2, 3]))
    assert ints.dtype is F32
    np.testing.assert_allclose(ints.numpy(), ref(np.array([1.0, 2.0, 3.0])), rtol=1e-6)
    for dt, word in ((F16, "Half"), (BF16, "BFloat16")):
        if dt is F16 and not clgrad.default_device().fp16:
            continue  # (this device has no float16)
        with pytest.raises(NotImplementedError, match=f'"{name}_(cpu|cuda)" not implemented '
                                                      f"for '{word}'"):
            fn(clgrad.tensor([0.5], dtype=dt))


def test_bessel_special_values():
    """Poles, domains, infinities and NaN (PyTorch 2.14's values, checked by experiment)."""
    x = clgrad.tensor([0.0, -1.0, INF, -INF, NAN], dtype=F64)
    v = {n: getattr(S, n)(x).numpy() for n in S.__all__ if "bessel" in n or n == "airy_ai"}
    assert v["bessel_j0"][0] == 1.0 and v["bessel_j1"][0] == 0.0
    assert v["bessel_y0"][0] == -INF and math.isnan(v["bessel_y0"][1])
    assert v["bessel_y1"][0] == -INF and math.isnan(v["bessel_y1"][1])
    for n in ("modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
              "scaled_modified_bessel_k1"):
        assert v[n][0] == INF and math.isnan(v[n][1]) and v[n][2] == 0.0, n
    assert v["modified_bessel_i0"][0] == 1.0 and v["modified_bessel_i1"][0] == 0.0
    j0 = v["spherical_bessel_j0"]
    assert list(j0[[0, 2, 3]]) == [1.0, 0.0, 0.0]
    # sin(-1) / -1: the runtime's double sin, within OpenCL's 4-ulp bound for it (PoCL on AMD
    # Zen 3 is 1 ulp below the correctly rounded sin(1))
    assert abs(j0[1] - math.sin(1.0)) <= 4 * math.ulp(math.sin(1.0))
    assert math.isnan(v["airy_ai"][2]) and math.isnan(v["airy_ai"][3])
    # J, Y at +-inf: NaN (PyTorch's: cos(inf)); NaN in, NaN out everywhere
    for n, row in v.items():
        assert math.isnan(row[4]), n
    assert np.isnan(v["bessel_j0"][2:4]).all() and math.isnan(v["bessel_y1"][2])
    assert S.airy_ai(clgrad.tensor([200.0], dtype=F64)).item() == 0.0


# -- Bessel functions: gradients -----------------------------------------------------------------
GRAD_DOMAIN = {"bessel_j0": (-8.0, 8.0), "bessel_j1": (-8.0, 8.0), "bessel_y0": (0.3, 8.0),
               "bessel_y1": (0.3, 8.0), "modified_bessel_i0": (-5.0, 5.0),
               "modified_bessel_i1": (-5.0, 5.0), "modified_bessel_k0": (0.2, 6.0),
               "modified_bessel_k1": (0.2, 6.0), "scaled_modified_bessel_k0": (0.2, 30.0),
               "scaled_modified_bessel_k1": (0.2, 30.0), "spherical_bessel_j0": (-8.0, 8.0)}


@pytest.mark.parametrize("name", sorted(GRAD_DOMAIN))
def test_bessel_gradients_on_views(name):
    """d/dx against float64 central differences (DLMF 10.6.3: J0' = -J1, J1' = J0 - J1/x;
    10.29.3: I0' = I1, K0' = -K1 ...)."""
    fn = getattr(S, name)
    a = np.random.default_rng(4).uniform(*GRAD_DOMAIN[name], (4, 3))
    leaf = clgrad.tensor(np.ascontiguousarray(a.T), requires_grad=True)
    assert gradcheck(lambda t: fn(t.t()), (leaf,), rtol=1e-5)


def test_bessel_gradients_at_zero_and_the_ones_not_implemented():
    def grad(fn, v):
        x = clgrad.tensor(v, dtype=F64, requires_grad=True)
        fn(x).sum().backward()
        return x.grad.numpy()
    np.testing.assert_allclose(grad(S.bessel_j1, [0.0]), [0.5])
    np.testing.assert_allclose(grad(S.modified_bessel_i1, [0.0]), [0.5])
    np.testing.assert_allclose(grad(S.spherical_bessel_j0, [0.0, 1e-9]), [0.0, -1e-9 / 3])
    np.testing.assert_allclose(grad(S.bessel_j0, [2.0]), [-_bessel_j(1, 2.0)], rtol=1e-14)
    x = clgrad.tensor([0.5], dtype=F64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'airy_ai' is not "
                                                  "implemented"):
        S.airy_ai(x).sum().backward()


# -- incomplete gamma ----------------------------------------------------------------------------
def _gamma_grid(rng, n):
    a = np.exp(rng.uniform(math.log(0.01), math.log(200.0), n))
    return a, a * np.exp(rng.uniform(-2.0, 2.0, n))


@pytest.mark.parametrize("name, ref", [("gammainc", _igamma), ("gammaincc", _igammac)])
def test_incomplete_gamma_values(name, ref):
    """float64 within 3e-13 relative of the reference (whose own error, math.lgamma's
    rounding times the exponent, is about that where the result is far below 1); float32
    within 32 ulp: the prefactor's exponent (up to ~a / 2) is taken in double on a device
    with fp64, as this test's float64 half needs (in float it gave 257 ulp at a = 160 on
    Intel's AVX2 runtime); 6 ulp for P and 16 for Q measured on Intel's and PoCL's."""
    fn = getattr(S, name)
    rng = np.random.default_rng(7)
    a, x = _gamma_grid(rng, 1500)
    want = _vec(ref)(a, x)
    got = fn(clgrad.tensor(a), clgrad.tensor(x)).numpy()
    keep = want > 1e-300
    assert np.max(np.abs(got - want)[keep] / want[keep]) <= 3e-13
    a32, x32 = a.astype(np.float32), x.astype(np.float32)
    want = _vec(ref)(a32.astype(np.float64), x32.astype(np.float64))
    got = fn(clgrad.tensor(a32), clgrad.tensor(x32)).numpy()
    keep = want > 1e-37
    ulp = np.spacing(want[keep].astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[keep] - want[keep]) / ulp) <= 32
    # views and broadcasting: a (3, 1) view against x (4,)
    av, xv = np.array([[0.5], [2.0], [30.0]]), np.array([0.1, 1.0, 3.0, 40.0])
    got = fn(strided(np.repeat(av, 2, 1))[:, :1], clgrad.tensor(xv)).numpy()
    np.testing.assert_allclose(got, _vec(ref)(av, xv), rtol=1e-14)


def test_incomplete_gamma_identities_and_special_values():
    a = clgrad.tensor([0.5, 1.0, 3.0, 25.0], dtype=F64)
    x = clgrad.tensor([0.7, 2.0, 0.4, 26.0], dtype=F64)
    p, q = S.gammainc(a, x).numpy(), S.gammaincc(a, x).numpy()
    np.testing.assert_allclose(p + q, 1.0, rtol=1e-15)
    np.testing.assert_allclose(p[:2], [math.erf(math.sqrt(0.7)), 1 - math.exp(-2.0)],
                               rtol=1e-15)  # P(1/2, x) = erf(sqrt x), P(1, x) = 1 - e^-x
    a = clgrad.tensor([0.0, 0.0, 1.0, INF, INF, 1.0, -1.0, 1.0, NAN, 1.0])
    x = clgrad.tensor([0.0, 1.0, 0.0, 1.0, INF, INF, 1.0, -1.0, 1.0, NAN])
    p = clgrad.igamma(a, x).numpy()
    q = clgrad.igammac(a, x).numpy()
    np.testing.assert_array_equal(p, [NAN, 1, 0, 0, NAN, 1, NAN, NAN, NAN, NAN])
    np.testing.assert_array_equal(q, [NAN, 0, 1, 1, NAN, 0, NAN, NAN, NAN, NAN])


def test_incomplete_gamma_faces_dtypes_and_errors():
    a, x = clgrad.tensor([1.5, 2.0]), clgrad.tensor([1.0, 3.0])
    want = clgrad.igamma(a, x).numpy()
    np.testing.assert_array_equal(a.igamma(x).numpy(), want)
    np.testing.assert_array_equal(S.gammainc(a, x).numpy(), want)
    np.testing.assert_array_equal(a.igammac(x).numpy(), S.gammaincc(a, x).numpy())
    b = a.clone()
    assert b.igamma_(x) is b
    np.testing.assert_array_equal(b.numpy(), want)
    b = a.clone()
    b.igammac_(x)
    np.testing.assert_allclose(b.numpy(), 1 - want, rtol=1e-6)
    out = clgrad.empty(2, dtype=F64)
    clgrad.igamma(a, x, out=out)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-7)
    assert clgrad.igamma(clgrad.tensor([1, 2]), x).dtype is F32   # promoted
    assert clgrad.igamma(a.double(), x).dtype is F64
    with pytest.raises(NotImplementedError, match="\"igamma_(cpu|cuda)\" not implemented for "
                                                  "'Long'"):
        clgrad.igamma(clgrad.tensor([1, 2]), clgrad.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"argument 'other' \(position 2\) must be Tensor, "
                                        r"not float"):
        clgrad.igamma(a, 2.0)
    with pytest.raises(TypeError, match=r"argument 'input' \(position 1\) must be Tensor"):
        S.gammainc(2.0, a)
    for dt in (F16, BF16):  # computed in float, rounded once (PyTorch's too)
        if dt is F16 and not clgrad.default_device().fp16:
            continue  # (this device has no float16)
        got = clgrad.igamma(a.to(dt), x.to(dt))
        assert got.dtype is dt
        np.testing.assert_allclose(got.float().numpy(), want, rtol=8e-3)


def test_incomplete_gamma_gradients():
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) against central differences; the input's
    derivative raises (PyTorch's NotImplementedError and message)."""
    rng = np.random.default_rng(9)
    a = rng.uniform(0.5, 6.0, (3, 4))
    x = rng.uniform(0.2, 8.0, (4, 3))
    for fn in (S.gammainc, S.gammaincc):
        leaf = clgrad.tensor(x, requires_grad=True)
        assert gradcheck(lambda t: fn(clgrad.tensor(a), t.t()), (leaf,), rtol=1e-5)
    xa = clgrad.tensor([2.0], dtype=F64, requires_grad=True)
    g, = clgrad.autograd.grad(S.gammainc(clgrad.tensor([3.0], dtype=F64), xa), xa)
    np.testing.assert_allclose(g.numpy(), [4.0 * math.exp(-2.0) / 2.0], rtol=1e-14)
    for fn, word in ((clgrad.igamma, "igamma"), (clgrad.igammac, "igammac")):
        t = clgrad.tensor([2.0], dtype=F64, requires_grad=True)
        with pytest.raises(NotImplementedError, match=f"the derivative for '{word}: input' is "
                                                      f"not implemented"):
            fn(t, clgrad.tensor([1.0], dtype=F64)).sum().backward()


# -- orthogonal polynomials ----------------------------------------------------------------------
POLY = {"chebyshev_polynomial_t": "t", "chebyshev_polynomial_u": "u",
        "chebyshev_polynomial_v": "v", "chebyshev_polynomial_w": "w",
        "shifted_chebyshev_polynomial_t": "shifted_t", "shifted_chebyshev_polynomial_u":
        "shifted_u", "shifted_chebyshev_polynomial_v": "shifted_v",
        "shifted_chebyshev_polynomial_w": "shifted_w", "hermite_polynomial_h": "h",
        "hermite_polynomial_he": "he", "laguerre_polynomial_l": "l",
        "legendre_polynomial_p": "p"}
_NS = [-2, 0, 1, 2, 3, 5, 6, 7, 8, 9, 12, 25]


def _poly_grid(name):
    lo, hi = (-0.2, 1.2) if name.startswith("shifted") else (-1.3, 1.3)
    if name.startswith("laguerre"):
        lo, hi = -2.0, 6.0
    xs = np.concatenate([np.linspace(lo, hi, 29), [0.0, 0.5, 1.0, -1.0]])
    x, n = np.meshgrid(xs, np.array(_NS, dtype=np.float64))
    return x, n


@pytest.mark.parametrize("name", sorted(POLY))
def test_polynomial_values_against_exact_recurrences(name):
    """float64 within 3e-14 of max(|p|, n, 1) (the closed forms of large n
    inside (-1, 1) carry n eps of acos's error); float32 within 40 ulp of that scale."""
    fn, kind = getattr(S, name), POLY[name]
    x, n = _poly_grid(name)
    want = np.vectorize(lambda a, k: _recurrence(kind, a, int(k)), otypes=[np.float64])(x, n)
    scale = np.maximum(np.abs(want), np.maximum(1.0, n))  # T_n, U_n ... are O(n) inside
    got = fn(strided(x), clgrad.tensor(n)).numpy()
    assert np.max(np.abs(got - want) / scale) <= 3e-14
    got32 = fn(clgrad.tensor(x.astype(np.float32)), clgrad.tensor(n.astype(np.float32)))
    assert got32.dtype is F32
    want32 = np.vectorize(lambda a, k: _recurrence(kind, a, int(k)), otypes=[np.float64])(
        x.astype(np.float32).astype(np.float64), n)
    ulp = np.spacing(np.maximum(np.abs(want32), np.maximum(1.0, n)).astype(np.float32))
    assert np.max(np.abs(got32.numpy() - want32) / ulp) <= 40


@pytest.mark.parametrize("name", sorted(POLY))
def test_polynomial_arguments_and_conventions(name):
    """n a number or a tensor (broadcast), x a number; n truncated; n < 0, NaN or inf give 0;
    integers give the default dtype; float16/bfloat16 raise; no derivative (NotImplementedError
    at backward)."""
    fn, kind = getattr(S, name), POLY[name]
    x = clgrad.tensor([[0.25], [0.75]], dtype=F64)
    n = clgrad.tensor([0.0, 3.0, 4.0], dtype=F64)
    want = np.array([[_recurrence(kind, v, k) for k in (0, 3, 4)] for v in (0.25, 0.75)])
    np.testing.assert_allclose(fn(x, n).numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(fn(x, 3).numpy()[:, 0], want[:, 1], rtol=1e-14)
    np.testing.assert_allclose(fn(x, 3.9).numpy()[:, 0], want[:, 1], rtol=1e-14)
    np.testing.assert_allclose(fn(0.25, n).numpy(), want[0], rtol=1e-6)
    assert fn(0.25, n).dtype is F64
    got = fn(clgrad.tensor([0.3, 0.3, 0.3, 0.3], dtype=F64),
             clgrad.tensor([-1.0, NAN, INF, -INF], dtype=F64)).numpy()
    np.testing.assert_array_equal(got, [0.0, 0.0, 0.0, 0.0])
    assert fn(clgrad.tensor([1, 2]), clgrad.tensor([2, 3])).dtype is F32
    assert math.isnan(fn(clgrad.tensor([NAN]), 3).item())
    for dt, word in ((F16, "Half"), (BF16, "BFloat16")):
        if dt is F16 and not clgrad.default_device().fp16:
            continue  # (this device has no float16)
        with pytest.raises(NotImplementedError, match=f"'{word}'"):
            fn(clgrad.tensor([0.5], dtype=dt), 2)
    with pytest.raises(TypeError):
        fn(0.5, 2)
    leaf = clgrad.tensor([0.5], dtype=F64, requires_grad=True)
    with pytest.raises(NotImplementedError, match=f"the derivative for '{name}' is not "
                                                  f"implemented"):
        fn(leaf, 3).sum().backward()


def test_polynomial_limits_and_ends():
    # Hermite: NaN above n = 128 (float32) / 512 (float64), PyTorch's limits (below them the
    # values overflow early: H_128(x) is beyond float32's range)
    h = S.hermite_polynomial_h(clgrad.tensor([0.5, 0.5]), clgrad.tensor([20.0, 129.0]))
    assert math.isfinite(h.numpy()[0]) and math.isnan(h.numpy()[1])
    h = S.hermite_polynomial_he(clgrad.tensor([0.5, 0.5], dtype=F64), clgrad.tensor([200, 513]))
    assert math.isfinite(h.numpy()[0]) and math.isnan(h.numpy()[1])
    # exact values at the ends, large n (the closed forms are not used there)
    x = clgrad.tensor([1.0, -1.0], dtype=F64)
    assert list(S.chebyshev_polynomial_u(x, 101).numpy()) == [102.0, -102.0]
    assert list(S.chebyshev_polynomial_v(x, 100).numpy()) == [1.0, 201.0]
    assert list(S.chebyshev_polynomial_w(x, 100).numpy()) == [201.0, 1.0]
    assert list(S.legendre_polynomial_p(x, 7).numpy()) == [1.0, -1.0]
    assert list(S.shifted_chebyshev_polynomial_t(clgrad.tensor([1.0, 0.0]), 9).numpy()) == \
        [1.0, -1.0]
    assert S.laguerre_polynomial_l(clgrad.tensor([0.0]), 50).item() == 1.0
    # |x| > 1: the recurrence, growing (T_10(2) = 262087; cosh(10 acosh 2))
    assert S.chebyshev_polynomial_t(clgrad.tensor([2.0], dtype=F64), 10).item() == 262087.0


# -- PyTorch 2.14 ------------------------------------------------------------------------------
def test_values_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-40, 40, 400), [0.0, 1e-7, 2.0, 2.09, 5.0, 8.32, 100.0,
                                                    INF, -INF, NAN, -1.0]])
    for name, *_ in BESSEL:
        got = getattr(S, name)(clgrad.tensor(x)).numpy()
        want = getattr(torch.special, name)(torch.tensor(x)).numpy()
        # PyTorch's J0, J1, Y0, Y1 and Ai drop the leading 1 of Cephes' p1evl denominators:
        # off by up to 6e-6 relative near x = 5 (kernels/bessel.cl); clgrad's are the ones
        # the quadratures above check to 1e-14
        rtol = 1e-5 if name.startswith(("bessel_", "airy")) else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-14, err_msg=name)
    xp = np.linspace(-1.5, 1.5, 31)
    for name in POLY:
        for k in (-1, 0, 1, 4, 7, 10, 30):
            got = getattr(S, name)(clgrad.tensor(xp), k).numpy()
            want = getattr(torch.special, name)(torch.tensor(xp), k).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * max(k, 1),
                                       err_msg=f"{name} n={k}")
    a, xg = _gamma_grid(rng, 300)
    a = np.concatenate([a, [0.0, 0.0, 1.0, INF, 1.0, -1.0]])
    xg = np.concatenate([xg, [0.0, 1.0, 0.0, 1.0, INF, 1.0]])
    for name in ("igamma", "igammac"):
        got = getattr(clgrad, name)(clgrad.tensor(a), clgrad.tensor(xg)).numpy()
        want = getattr(torch, name)(torch.tensor(a), torch.tensor(xg)).numpy()
        # PyTorch's uniform asymptotic expansion (a > 20 near x) is good to ~2e-9 relative
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-300, err_msg=name)
