"""lerp (torch.lerp, Tensor.lerp, lerp_) bit for bit against PyTorch's formula
(aten/src/ATen/native/Lerp.h): |w| < 0.5 ? a + w (b - a) : b - (b - a)(1 - w), each branch
one fused multiply-add, as PyTorch's vectorised CPU kernel (cpu/LerpKernel.cpp lerp_vec:
fmadd(w, b - a, a) or fmadd(w - 1, b - a, b)) and its CUDA kernel compute it. The oracle is
that formula in NumPy: float32 with the fused multiply-add's one rounding done exactly
(``fma32``: the product is exact in float64, the sum's error kept by TwoSum and the result
rounded to odd, so the rounding to float32 is correct), checked against exact rational
arithmetic; where w (b - a) and (b - a)(1 - w) are exact (w = 0.5, 0.75, 1, ...) the formula
with separate roundings gives the same bits, and it is checked too. PyTorch itself, where it
is importable, must agree bit for bit (forward) and in the gradients."""
from fractions import Fraction

import numpy as np
import pytest

import clgrad
from clgrad import dtypes
from clgrad.autograd import gradcheck, gradgradcheck

F32 = np.float32
RNG = np.random.default_rng(7)
# weights whose products with b - a are exact (the one-sided a + w (b - a) is not PyTorch's
# there), and weights that are not (PyTorch's one rounding, not two)
EXACT_W = [0.5, 0.75, 1.0, 1.5, 2.0, -1.0, 0.25, 0.0]
INEXACT_W = [0.1, 0.3, 0.49999997, 0.50000006, 0.7, 0.9, 1.7, -0.3, -0.5, -2.5, 3.1]


def fma32(x, y, z):
    """x * y + z rounded once to float32 (float32 arrays in)."""
    x, y, z = (np.asarray(v, F32).astype(np.float64) for v in (x, y, z))
    p = x * y  # exact: 24 + 24 bits
    s = p + z
    bp = s - z
    e = (p - bp) + (z - (s - bp))  # TwoSum: p + z == s + e exactly
    even = (s.view(np.int64) & 1) == 0
    s = np.where((e != 0) & even & np.isfinite(s),
                 np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)  # round to odd
    with np.errstate(over="ignore"):
        return s.astype(F32)


def lerp_fma(a, b, w):
    """PyTorch's lerp in float32, each branch one fused multiply-add."""
    a, b, w = (np.asarray(v, F32) for v in (a, b, w))
    d = b - a
    w = np.broadcast_to(w, d.shape)
    return np.where(np.abs(w) < 0.5, fma32(w, d, a), fma32(w - F32(1), d, b))


def lerp_separate(a, b, w):
    """PyTorch's formula with each operation rounded to float32 (equal to lerp_fma where the
    products are exact)."""
    a, b, w = (np.asarray(v, F32) for v in (a, b, w))
    d = b - a
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(np.abs(w) < 0.5, a + w * d, b - d * (F32(1) - w))


def one_sided(a, b, w):
    a, b, w = (np.asarray(v, F32) for v in (a, b, w))
    return a + w * (b - a)


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    scale = 2.0 ** rng.integers(-8, 9, n)  # magnitudes apart, so b - a rounds
    a = (rng.standard_normal(n) * scale).astype(F32)
    b = (rng.standard_normal(n) * scale[::-1]).astype(F32)
    return a, b


def _strided(arr):
    """``arr`` (1-D) as a non-contiguous clgrad view: every other element of a buffer with a
    leading offset."""
    buf = np.zeros(2 * arr.size + 3, arr.dtype)
    buf[3::2] = arr
    return clgrad.tensor(buf)[3::2]


def _bits(x):
    return np.asarray(x).view(np.uint32 if np.asarray(x).dtype == F32 else np.uint64)


def test_the_oracle_rounds_once_exactly():
    a, b = _data(400, seed=1)
    w = RNG.uniform(-2, 3, 400).astype(F32)
    got = lerp_fma(a, b, w)
    for i in range(400):
        d = F32(b[i] - a[i])
        ww, base = (w[i], a[i]) if abs(w[i]) < 0.5 else (F32(w[i] - 1), b[i])
        exact = Fraction(float(ww)) * Fraction(float(d)) + Fraction(float(base))
        near = F32(float(exact))  # nearest float32 (or a neighbour, double rounding)
        cands = [near, np.nextafter(near, F32(np.inf)), np.nextafter(near, F32(-np.inf))]
        best = min(abs(Fraction(float(c)) - exact) for c in cands)
        assert abs(Fraction(float(got[i])) - exact) == best, i


@pytest.mark.parametrize("w", EXACT_W + INEXACT_W)
@pytest.mark.parametrize("n", [1, 5, 257, 4099])
def test_number_weight_float32_bits(w, n):
    a, b = _data(n, seed=n)
    want = lerp_fma(a, b, F32(w))
    for ta, tb in ((clgrad.tensor(a), clgrad.tensor(b)), (_strided(a), _strided(b))):
        got = clgrad.lerp(ta, tb, w).numpy()
        np.testing.assert_array_equal(_bits(got), _bits(want))
        np.testing.assert_array_equal(_bits(ta.lerp(tb, w).numpy()), _bits(want))
    if w in EXACT_W:
        np.testing.assert_array_equal(_bits(lerp_separate(a, b, F32(w))), _bits(want))
    if w >= 0.5 and n > 200:  # the one-sided form is an ulp off here (what this fixes)
        assert np.count_nonzero(one_sided(a, b, F32(w)) != want) > n // 20


def test_weight_one_gives_end_and_zero_gives_start_exactly():
    a, b = _data(1025, seed=3)
    ta, tb = clgrad.tensor(a), clgrad.tensor(b)
    np.testing.assert_array_equal(_bits(clgrad.lerp(ta, tb, 1.0).numpy()), _bits(b))
    np.testing.assert_array_equal(_bits(clgrad.lerp(ta, tb, 0.0).numpy()), _bits(a))
    ones, zeros = clgrad.ones(1025), clgrad.zeros(1025)
    np.testing.assert_array_equal(_bits(clgrad.lerp(ta, tb, ones).numpy()), _bits(b))
    np.testing.assert_array_equal(_bits(clgrad.lerp(ta, tb, zeros).numpy()), _bits(a))
    assert np.count_nonzero(one_sided(a, b, F32(1)) != b) > 100  # a + (b - a) is not b


def test_tensor_weight_float32_bits_with_broadcasting():
    a, b = _data(6 * 257, seed=4)
    a, b = a.reshape(6, 257), b.reshape(6, 257)
    w = RNG.uniform(-1.5, 2.5, (6, 1)).astype(F32)
    w[:4, 0] = [0.5, 0.75, 1.0, -0.5]
    wr = RNG.choice(np.array(EXACT_W + INEXACT_W, F32), 257)
    ta, tb = clgrad.tensor(a), clgrad.tensor(b)
    got = clgrad.lerp(ta, tb, clgrad.tensor(w)).numpy()
    np.testing.assert_array_equal(_bits(got), _bits(lerp_fma(a, b, w)))
    got = clgrad.lerp(ta, tb, clgrad.tensor(wr)).numpy()  # weight (257,) broadcast over rows
    np.testing.assert_array_equal(_bits(got), _bits(lerp_fma(a, b, wr)))
    # transposed operands, a stride-0 start
    at, bt = clgrad.tensor(a.T.copy()).t(), clgrad.tensor(b.T.copy()).t()
    got = clgrad.lerp(at, bt, clgrad.tensor(w)).numpy()
    np.testing.assert_array_equal(_bits(got), _bits(lerp_fma(a, b, w)))
    row = clgrad.tensor(a[:1])
    got = clgrad.lerp(row, tb, clgrad.tensor(w)).numpy()
    np.testing.assert_array_equal(_bits(got), _bits(lerp_fma(a[:1], b, w)))


def test_float64_rounds_once():
    if not clgrad.default_device().fp64:
        pytest.skip("the device lacks cl_khr_fp64")
    rng = np.random.default_rng(5)
    a = rng.standard_normal(300) * 2.0 ** rng.integers(-20, 21, 300)
    b = rng.standard_normal(300)
    w = rng.choice(np.array(EXACT_W + INEXACT_W + [1 / 3, 0.6, -0.7]), 300)
    got = clgrad.lerp(clgrad.tensor(a), clgrad.tensor(b), clgrad.tensor(w)).numpy()
    for i in range(300):
        d = b[i] - a[i]
        ww, base = (w[i], a[i]) if abs(w[i]) < 0.5 else (w[i] - 1, b[i])
        exact = Fraction(ww) * Fraction(d) + Fraction(base)
        assert got[i] == float(exact), i  # float() of a Fraction rounds correctly
    got = clgrad.lerp(clgrad.tensor(a), clgrad.tensor(b), 0.7).numpy()
    want = [float(Fraction(-0.30000000000000004) * Fraction(b[i] - a[i]) + Fraction(b[i]))
            for i in range(300)]  # (0.7 - 1 in float64)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("low", ["float16", "bfloat16"])
def test_half_types_compute_in_float32_and_round_once(low, request):
    if low == "float16":
        request.getfixturevalue("fp16")  # skipped where the device lacks cl_khr_fp16 (PoCL)
    dt = getattr(clgrad, low)
    a, b = _data(1000, seed=6)
    w = RNG.uniform(-1.5, 2.5, 1000).astype(F32)
    ta, tb, tw = (clgrad.tensor(v).to(dt) for v in (a, b, w))
    a, b, w = (t.float().numpy() for t in (ta, tb, tw))  # the values as stored

    def rounded(x):
        if low == "float16":
            return x.astype(np.float16).astype(F32)
        return dtypes.bf16_to_float32(dtypes.to_bf16_bits(x))
    got = clgrad.lerp(ta, tb, tw)
    assert got.dtype is dt
    np.testing.assert_array_equal(got.float().numpy(), rounded(lerp_fma(a, b, w)))
    got = clgrad.lerp(ta, tb, 0.7).float().numpy()
    np.testing.assert_array_equal(got, rounded(lerp_fma(a, b, F32(0.7))))


def test_special_values():
    inf, nan = np.inf, np.nan
    a = np.array([0.0, 0.0, -inf, 1.0, nan, 2.0, 0.0], F32)
    b = np.array([inf, inf, inf, nan, 1.0, 2.0, -0.0], F32)
    w = np.array([0.3, 1.0, 0.5, 0.2, 0.8, nan, 0.75], F32)
    got = clgrad.lerp(clgrad.tensor(a), clgrad.tensor(b), clgrad.tensor(w)).numpy()
    with np.errstate(invalid="ignore"):
        want = lerp_fma(a, b, w)
    np.testing.assert_array_equal(got, want)
    # inf, NaN (0 * inf), NaN (inf - inf), NaN, NaN, NaN (the weight), -0.0 + 0.25 * (-0.0)
    assert got[0] == inf and np.isnan(got[1:6]).all() and got[6] == 0.0


# -- gradients ------------------------------------------------------------------------------
def test_gradients_are_pytorchs_formulas():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    w, g = rng.uniform(-1, 2, (3, 4)), rng.standard_normal((3, 4))
    ta, tb, tw = (clgrad.tensor(v, requires_grad=True) for v in (a, b, w))
    clgrad.lerp(ta, tb, tw).backward(clgrad.tensor(g))
    np.testing.assert_array_equal(ta.grad.numpy(), g * (1 - w))
    np.testing.assert_array_equal(tb.grad.numpy(), g * w)
    np.testing.assert_array_equal(tw.grad.numpy(), g * (b - a))
    ta, tb = (clgrad.tensor(v, requires_grad=True) for v in (a, b))
    clgrad.lerp(ta, tb, 0.7).backward(clgrad.tensor(g))
    np.testing.assert_array_equal(ta.grad.numpy(), g * (1 - 0.7))
    np.testing.assert_array_equal(tb.grad.numpy(), g * 0.7)


@pytest.mark.parametrize("weight", ["number", "tensor", "0-dim"])
def test_gradcheck_with_broadcasting(weight):
    rng = np.random.default_rng(9)
    a = clgrad.tensor(rng.standard_normal((3, 1, 4)), requires_grad=True)
    b = clgrad.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    if weight == "number":
        for w in (0.2, 0.5, 0.75, 1.3, -0.4):
            assert gradcheck(lambda x, y: clgrad.lerp(x, y, w), (a, b))
            assert gradgradcheck(lambda x, y: clgrad.lerp(x, y, w), (a, b))
        return
    shape = (1, 5, 1) if weight == "tensor" else ()
    w = clgrad.tensor(rng.uniform(-1, 2, shape), requires_grad=True)
    assert gradcheck(clgrad.lerp, (a, b, w))
    assert gradgradcheck(clgrad.lerp, (a, b, w))


def test_in_place_forms():
    a, b = _data(257, seed=10)
    x = clgrad.tensor(a)
    assert x.lerp_(clgrad.tensor(b), 0.75) is x
    np.testing.assert_array_equal(_bits(x.numpy()), _bits(lerp_fma(a, b, F32(0.75))))
    w = RNG.uniform(0, 1, 257).astype(F32)
    x = clgrad.tensor(a)
    x.lerp_(clgrad.tensor(b), clgrad.tensor(w))
    np.testing.assert_array_equal(_bits(x.numpy()), _bits(lerp_fma(a, b, w)))
    # autograd through lerp_ of a non-leaf: the weight's gradient reads the old value
    rng = np.random.default_rng(11)
    a64, b64, w64 = rng.standard_normal(5), rng.standard_normal(5), rng.uniform(0, 1, 5)
    ta, tw = (clgrad.tensor(v, requires_grad=True) for v in (a64, w64))
    y = ta * 1.0
    y.lerp_(clgrad.tensor(b64), tw)
    y.sum().backward()
    np.testing.assert_array_equal(ta.grad.numpy(), 1 - w64)
    np.testing.assert_array_equal(tw.grad.numpy(), b64 - a64)


def test_errors():
    x = clgrad.ones(3)
    with pytest.raises(RuntimeError, match="expected dtype"):
        clgrad.lerp(x, clgrad.ones(3, dtype=clgrad.float64), 0.5)
    with pytest.raises(TypeError, match="weight"):
        clgrad.lerp(x, x, [0.5])
    with pytest.raises(TypeError, match="not implemented for 'Long'"):
        clgrad.lerp(clgrad.tensor([1]), clgrad.tensor([2]), 0.5)


# -- against PyTorch ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_bits_and_gradients_match_pytorch(dtype):
    torch = pytest.importorskip("torch")
    if torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("PyTorch's CPU kernels without FMA round twice")
    if dtype == "float64" and not clgrad.default_device().fp64:
        pytest.skip("the device lacks cl_khr_fp64")
    if dtype == "float16" and not clgrad.default_device().fp16:
        pytest.skip("the device lacks cl_khr_fp16")
    a, b = _data(1031, seed=12)
    a[:6] = [0.0, 0.0, -np.inf, 1.0, np.nan, 2.0]
    b[:6] = [np.inf, np.inf, np.inf, np.nan, 1.0, 2.0]
    w = RNG.choice(np.array(EXACT_W + INEXACT_W, F32), 1031)
    w[5] = np.nan
    mods = {}
    for m in (clgrad, torch):
        dt = getattr(m, dtype)
        mods[m] = [m.tensor(v.astype(np.float64)).to(dt).requires_grad_() for v in (a, b, w)]
    outs = {}
    for m, (ta, tb, tw) in mods.items():
        outs[m] = [m.lerp(ta, tb, tw), m.lerp(ta, tb, 0.7), ta.lerp(tb, 0.5), ta.lerp(tb, 1.0),
                   m.lerp(ta, tb, -0.3), m.lerp(ta, tb, tw[7])]  # (0-dim weight)
    for c, t in zip(outs[clgrad], outs[torch]):
        assert str(c.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(c.detach().float().numpy(), t.detach().float().numpy())
    g = RNG.standard_normal(1031).astype(F32)
    fin = np.isfinite(a) & np.isfinite(b) & np.isfinite(w)
    for m in (clgrad, torch):
        for t in mods[m]:
            t.grad = None
        gm = m.tensor(g).to(getattr(m, dtype))
        sum(((o * gm)[m.tensor(fin)]).sum() for o in outs[m]).backward()
    # each gradient sums six outputs' terms in the tensor's dtype: five roundings, in another
    # order than PyTorch's, so bfloat16 (8 significant bits) may end up to 4 ulps (2**-5
    # relative) from PyTorch's; PoCL's runtime gave 2 ulps at 5 of 1031 elements
    rtol = {"float32": 1e-6, "float64": 1e-14, "bfloat16": 2.0 ** -5}.get(dtype, 1e-2)
    for c, t in zip(mods[clgrad], mods[torch]):
        np.testing.assert_allclose(c.grad.float().numpy(), t.grad.float().numpy(), rtol=rtol,
                                   atol={"float32": 1e-6, "float64": 1e-14}.get(dtype, 1e-2))
