"""bfloat16 through the elementwise, in-place, numeric, activation and dropout ops.

Oracle: NumPy float64 on the bfloat16-rounded inputs, its result rounded to bfloat16
(``dtypes.to_bf16_bits``); gradients: the float64 derivative (central differences of the same
float64 function, away from kinks) at those inputs, rounded likewise. clgrad computes in float32
and rounds once, so it may differ from the oracle by one bfloat16 ulp where the float32 value
lies next to a rounding boundary.
"""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import dtypes

BF, F32, BOOL = clgrad.bfloat16, clgrad.float32, clgrad.bool

# Avoids the kinks of relu/hardtanh/relu6/hardswish/hardsigmoid (0, +-1, +-3, 6) and ties of
# floor/round, so the float64 derivative is the gradient on both sides.
X = [-3.7, -2.5, -1.3, -0.7, -0.1, 0.05, 0.3, 0.9, 1.7, 2.6, 3.4, 5.2]
Y = [1.3, -0.6, 2.1, -0.7, 0.45, -2.2, 1.9, 0.5, -0.35, 3.3, 1.1, -1.6]  # no zeros
POS = [0.07, 0.2, 0.5, 0.8, 1.1, 1.6, 2.3, 3.1, 4.4, 7.5, 12.0, 30.0]


def rbf(v) -> np.ndarray:
    """``v`` rounded to bfloat16, as float64."""
    return dtypes.bf16_to_float32(dtypes.to_bf16_bits(v)).astype(np.float64)


def bt(v, requires_grad=False):
    return clgrad.tensor(np.asarray(v, np.float32), dtype=BF, requires_grad=requires_grad)


def close_bf16(got, ref, what=""):
    """``got`` (a bfloat16 tensor) equals ``ref`` (float64, not yet rounded) rounded to
    bfloat16 within one bfloat16 ulp: |got - r| <= 2**-7 |r| + 1e-5 (an ulp is at most 2**-7
    of the value; the 1e-5 floor covers the float32 kernels' own error on results near 0,
    e.g. sin near a root). NaN exactly where ref is NaN; infinities equal."""
    assert got.dtype is BF, (what, got.dtype)
    g = got._values().astype(np.float64)
    r = rbf(ref)
    assert g.shape == r.shape, what
    assert np.array_equal(np.isnan(g), np.isnan(r)), (what, g, r)
    with np.errstate(invalid="ignore"):  # (inf - inf)
        ok = np.isnan(r) | (g == r) | (np.abs(g - r) <= 2.0 ** -7 * np.abs(r) + 1e-5)
    assert ok.all(), (what, g[~ok], r[~ok])


def dnum(f, x):
    """The float64 derivative of the elementwise ``f`` at ``x`` (central differences)."""
    h = 1e-6 * np.maximum(1.0, np.abs(x))
    return (f(x + h) - f(x - h)) / (2 * h)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_erf = np.vectorize(math.erf)


def _softplus(x):
    return np.log1p(np.exp(x))


UNARY = {  # name: (clgrad op, float64 oracle, domain, differentiable)
    "neg": (clgrad.neg, np.negative, X, True),
    "abs": (clgrad.abs, np.abs, X, True),
    "exp": (clgrad.exp, np.exp, X, True),
    "log": (clgrad.log, np.log, POS, True),
    "sqrt": (clgrad.sqrt, np.sqrt, POS, True),
    "rsqrt": (clgrad.rsqrt, lambda x: 1 / np.sqrt(x), POS, True),
    "tanh": (clgrad.tanh, np.tanh, X, True),
    "sigmoid": (clgrad.sigmoid, _sigmoid, X, True),
    "relu": (clgrad.relu, lambda x: np.maximum(x, 0), X, True),
    "sin": (clgrad.sin, np.sin, X, True),
    "cos": (clgrad.cos, np.cos, X, True),
    "square": (clgrad.square, np.square, X, True),
    "reciprocal": (clgrad.reciprocal, lambda x: 1 / x, X, True),
    "sign": (clgrad.sign, np.sign, X, True),
    "floor": (clgrad.floor, np.floor, X, False),
    "ceil": (clgrad.ceil, np.ceil, X, False),
    "round": (clgrad.round, np.round, X + [-2.5, 0.5, 1.5], False),  # ties to even
    "log1p": (clgrad.log1p, np.log1p, [-0.9, -0.5, 1e-3] + POS, True),
    "expm1": (clgrad.expm1, np.expm1, X + [1e-3, -2e-4], True),
    # activations (clgrad/ops/activation.py)
    "gelu": (F.gelu, lambda x: x * 0.5 * (1 + _erf(x / math.sqrt(2))), X, True),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), lambda x: 0.5 * x * (1 + np.tanh(
        math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))), X, True),
    "silu": (F.silu, lambda x: x * _sigmoid(x), X, True),
    "elu": (lambda t: F.elu(t, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x)), X, True),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, X, True),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, X, True),
    "softplus": (F.softplus, _softplus, X, True),
    "softplus_beta": (lambda t: F.softplus(t, beta=2.0, threshold=5.0),
                      lambda x: np.where(2 * x > 5, x, _softplus(2 * x) / 2), X, True),
    "mish": (F.mish, lambda x: x * np.tanh(_softplus(x)), X, True),
    "logsigmoid": (F.logsigmoid, lambda x: -_softplus(-x), X + [-120.0], True),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6), X + [6.5], True),
    "hardtanh": (lambda t: F.hardtanh(t, -2.0, 1.5), lambda x: np.clip(x, -2.0, 1.5), X, True),
    "leaky_relu": (lambda t: F.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x), X,
                   True),
    "prelu": (lambda t: F.prelu(t, bt([0.25])), lambda x: np.where(x > 0, x, 0.25 * x), X, True),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_values_and_grad(name):
    op, ref, dom, diff = UNARY[name]
    x = rbf(dom)
    t = bt(dom, requires_grad=diff)
    out = op(t)
    close_bf16(out, ref(x), name)
    if not diff:
        assert not out.requires_grad
        return
    out.backward(clgrad.ones(out.shape, dtype=BF))
    close_bf16(t.grad, dnum(ref, x), name + " grad")


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid", "relu", "sin", "abs",
                                  "neg", "floor", "round", "gelu", "silu", "elu", "softplus",
                                  "mish", "relu6", "hardtanh", "leaky_relu", "hardswish"])
def test_unary_nan_and_inf(name):
    """NaN in, NaN out; the infinities give what float32 gives (its kernels' limits)."""
    op = UNARY[name][0]
    v = [math.nan, math.inf, -math.inf, 1.5]
    got = op(bt(v))
    assert math.isnan(got._values()[0]), name
    close_bf16(got, op(clgrad.tensor(v)).numpy().astype(np.float64), name)


BINARY = {  # name: (clgrad op, float64 oracle, d/da, d/db)
    "pow": (clgrad.pow, np.power, lambda a, b: b * a ** (b - 1), lambda a, b: a ** b * np.log(a)),
    # (X and Y tie at index 3: each side gets half, PyTorch's)
    "maximum": (clgrad.maximum, np.maximum, lambda a, b: (a > b) + 0.5 * (a == b),
                lambda a, b: (b > a) + 0.5 * (a == b)),
    "minimum": (clgrad.minimum, np.minimum, lambda a, b: (a < b) + 0.5 * (a == b),
                lambda a, b: (b < a) + 0.5 * (a == b)),
    "atan2": (clgrad.atan2, np.arctan2, lambda a, b: b / (a * a + b * b),
              lambda a, b: -a / (a * a + b * b)),
    "remainder": (clgrad.remainder, np.mod, lambda a, b: np.ones_like(a),
                  lambda a, b: -np.floor(a / b)),
    "fmod": (clgrad.fmod, np.fmod, lambda a, b: np.ones_like(a), lambda a, b: -np.trunc(a / b)),
    "floor_divide": (clgrad.floor_divide, lambda a, b: np.floor(a / b), None, None),
}


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_values_and_grads(name):
    op, ref, da, db = BINARY[name]
    av = POS if name == "pow" else X
    a, b = rbf(av), rbf(Y)
    ta, tb = bt(av, da is not None), bt(Y, da is not None)
    out = op(ta, tb)
    close_bf16(out, ref(a, b), name)
    # a bfloat16 tensor with a Python number: bfloat16; with a float32 tensor: float32
    if name not in ("maximum", "minimum"):  # (tensors only: PyTorch's TypeError)
        close_bf16(op(bt(av), 1.75), ref(a, 1.75), name + " number")
    mixed = op(bt(av), clgrad.tensor(np.float32(Y)))
    assert mixed.dtype is F32
    np.testing.assert_allclose(mixed.numpy(), ref(a, np.float32(Y).astype(np.float64)),
                               rtol=2e-6, atol=1e-6)
    if da is not None:
        out.backward(clgrad.ones(out.shape, dtype=BF))
        close_bf16(ta.grad, da(a, b), name + " grad a")
        close_bf16(tb.grad, db(a, b), name + " grad b")


def test_pow_number_exponents_and_nan():
    a = rbf(X)
    for e in (2, 3, 0.5, -1.0):
        with np.errstate(invalid="ignore"):
            close_bf16(clgrad.pow(bt(X), e), np.power(a, e), f"pow {e}")
    close_bf16(clgrad.maximum(bt([math.nan, 1.0]), bt([0.0, math.nan])), np.array([np.nan] * 2))
    close_bf16(clgrad.atan2(bt([math.nan]), bt([1.0])), np.array([np.nan]))


@pytest.mark.parametrize("op, ref", [(clgrad.eq, np.equal), (clgrad.ne, np.not_equal),
                                     (clgrad.lt, np.less), (clgrad.le, np.less_equal),
                                     (clgrad.gt, np.greater), (clgrad.ge, np.greater_equal)])
def test_comparisons(op, ref):
    av = X[:6] + [0.3, math.nan, 1.0]
    bv = Y[:6] + [0.30078125, 1.0, math.nan]  # 0.3 rounds to bfloat16 0.30078125: equal
    a, b = rbf(av), rbf(bv)
    for got, want in [(op(bt(av), bt(bv)), ref(a, b)), (op(bt(av), 0.5), ref(a, 0.5)),
                      (op(bt(av), clgrad.tensor(np.float32(bv))), ref(a, np.float32(bv)))]:
        assert got.dtype is BOOL
        np.testing.assert_array_equal(got.numpy(), want)


def test_logical_ops():
    av, bv = [0.0, 1.5, -0.0, math.nan, 2.0], [3.0, 0.0, 0.0, 0.0, -1.0]
    a, b = np.array(av) != 0, np.array(bv) != 0  # NaN is true
    for got, want in [(clgrad.logical_and(bt(av), bt(bv)), a & b),
                      (clgrad.logical_or(bt(av), bt(bv)), a | b),
                      (clgrad.logical_xor(bt(av), bt(bv)), a ^ b),
                      (clgrad.logical_not(bt(av)), ~a)]:
        assert got.dtype is BOOL
        np.testing.assert_array_equal(got.numpy(), want)


def test_where_and_masked_fill():
    cond = np.array(X) > 0.5
    a, b = rbf(X), rbf(Y)
    ta, tb = bt(X, True), bt(Y, True)
    out = clgrad.where(clgrad.tensor(cond), ta, tb)
    close_bf16(out, np.where(cond, a, b))
    out.backward(clgrad.ones(out.shape, dtype=BF))
    close_bf16(ta.grad, cond * 1.0)
    close_bf16(tb.grad, ~cond * 1.0)
    close_bf16(clgrad.where(clgrad.tensor(cond), bt(X), 0.3), np.where(cond, a, 0.3))
    mixed = clgrad.where(clgrad.tensor(cond), bt(X), clgrad.tensor(np.float32(Y)))
    assert mixed.dtype is F32
    np.testing.assert_array_equal(mixed.numpy(), np.where(cond, a, np.float32(Y)))
    tx = bt(X, True)
    out = tx.masked_fill(clgrad.tensor(cond), 2.7)
    close_bf16(out, np.where(cond, 2.7, a))
    out.backward(clgrad.ones(out.shape, dtype=BF))
    close_bf16(tx.grad, ~cond * 1.0)
    close_bf16(bt(X).masked_fill(clgrad.tensor(cond), clgrad.tensor(-1.3)),
               np.where(cond, -1.3, a))


def test_clamp():
    a, lo, hi = rbf(X), rbf(Y), rbf(np.array(Y) + 1.0)
    t = bt(X, True)
    out = clgrad.clamp(t, -1.2, 2.4)
    close_bf16(out, np.clip(a, -1.2, 2.4))
    out.backward(clgrad.ones(out.shape, dtype=BF))
    close_bf16(t.grad, ((a > -1.2) & (a < 2.4)) * 1.0)
    close_bf16(clgrad.clamp(bt(X), min=0.3), np.maximum(a, 0.3))
    close_bf16(clgrad.clamp(bt([math.nan, 5.0]), max=1.0), np.array([np.nan, 1.0]))
    t, tlo, thi = bt(X, True), bt(Y, True), bt(np.array(Y) + 1.0, True)
    out = clgrad.clamp(t, tlo, thi)
    close_bf16(out, np.minimum(np.maximum(a, lo), hi))
    out.backward(clgrad.ones(out.shape, dtype=BF))
    close_bf16(t.grad, ((a >= lo) & (a <= hi)) * 1.0)
    close_bf16(tlo.grad, (a < lo) * 1.0)
    close_bf16(thi.grad, (a > hi) * 1.0)
    mixed = clgrad.clamp(bt(X), clgrad.tensor(np.float32(Y)))
    assert mixed.dtype is F32
    np.testing.assert_array_equal(mixed.numpy(), np.maximum(a, np.float32(Y)))


def test_numeric():
    v = [math.nan, math.inf, -math.inf, 1.5, -0.0, 3e38]
    x = np.array(v)
    for op, ref in [(clgrad.isnan, np.isnan), (clgrad.isinf, np.isinf),
                    (clgrad.isfinite, np.isfinite)]:
        got = op(bt(v))
        assert got.dtype is BOOL
        np.testing.assert_array_equal(got.numpy(), ref(rbf(x)))
    t = bt(v, True)
    out = clgrad.nan_to_num(t)
    big = clgrad.finfo(BF).max  # bfloat16's own largest, not float32's (that rounds to inf)
    close_bf16(out, np.array([0.0, big, -big, 1.5, 0.0, rbf(3e38)]))
    assert np.isfinite(out._values()).all()
    out.backward(clgrad.ones(out.shape, dtype=BF))
    close_bf16(t.grad, np.isfinite(x) * 1.0)
    close_bf16(clgrad.nan_to_num(bt(v), nan=2.0, posinf=7.0, neginf=-8.0),
               np.array([2.0, 7.0, -8.0, 1.5, 0.0, rbf(3e38)]))
    a, b = [1.0, 1.0, math.nan, math.inf, 2.0], [1.0078125, 1.03, math.nan, math.inf, -2.0]
    np.testing.assert_array_equal(clgrad.isclose(bt(a), bt(b), rtol=1e-2).numpy(),
                                  [True, False, False, True, False])
    np.testing.assert_array_equal(clgrad.isclose(bt(a), bt(b), equal_nan=True).numpy(),
                                  [False, False, True, True, False])
    assert clgrad.isclose(bt([0.3]), clgrad.tensor([0.3]), rtol=0, atol=1e-3).item()
    assert clgrad.allclose(bt(X), bt(X)) and clgrad.equal(bt(X), bt(X))
    assert not clgrad.equal(bt([math.nan]), bt([math.nan]))


def test_dropout():
    x = np.linspace(0.5, 3.0, 4000)
    p = 0.3
    clgrad.manual_seed(7)
    t = bt(x, True)
    out = F.dropout(t, p, True)
    kept = out._values() != 0
    assert 0.6 < kept.mean() < 0.8
    close_bf16(out, np.where(kept, rbf(x) / (1 - p), 0.0))
    out.backward(clgrad.ones(out.shape, dtype=BF))
    close_bf16(t.grad, np.where(kept, 1 / (1 - p), 0.0))
    clgrad.manual_seed(7)  # float32's mask for the same seed: the same mask
    np.testing.assert_array_equal(F.dropout(clgrad.tensor(np.float32(x)), p).numpy() != 0, kept)
    e = bt(x)
    assert F.dropout(e, p, training=False) is e
    assert F.dropout(bt(x), 1.0)._values().max() == 0
    d2 = F.dropout2d(bt(np.ones((2, 8, 3, 3))), 0.5)
    v = d2._values()
    assert d2.dtype is BF and set(np.unique(v)) <= {0.0, 2.0}
    assert (v.min(axis=(2, 3)) == v.max(axis=(2, 3))).all()  # whole channels


# -- in place ---------------------------------------------------------------------------------
INPLACE = {  # name: (write into self, float64 oracle of the written values)
    "add_": (lambda s: s.add_(bt(Y)), lambda a: a + rbf(Y)),
    "add_number": (lambda s: s.add_(2), lambda a: a + 2),
    "sub_alpha": (lambda s: s.sub_(bt(Y), alpha=2), lambda a: a - 2 * rbf(Y)),
    "mul_number": (lambda s: s.mul_(2.5), lambda a: a * 2.5),
    "div_": (lambda s: s.div_(bt(Y)), lambda a: a / rbf(Y)),
    "iadd_float32": (lambda s: s.__iadd__(clgrad.tensor(np.float32(Y))),
                     lambda a: a + np.float32(Y)),
    "pow_": (lambda s: s.pow_(2), np.square),
    "relu_": (lambda s: s.relu_(), lambda a: np.maximum(a, 0)),
    "exp_": (lambda s: s.exp_(), np.exp),
    "sigmoid_": (lambda s: s.sigmoid_(), _sigmoid),
    "tanh_": (lambda s: s.tanh_(), np.tanh),
    "neg_": (lambda s: s.neg_(), np.negative),
    "abs_": (lambda s: s.abs_(), np.abs),
    "clamp_": (lambda s: s.clamp_(-1, 1.5), lambda a: np.clip(a, -1, 1.5)),
    "clamp_tensor": (lambda s: s.clamp_(min=bt(Y)), lambda a: np.maximum(a, rbf(Y))),
    "maximum_": (lambda s: s.maximum_(bt(Y)), lambda a: np.maximum(a, rbf(Y))),
    "masked_fill_": (lambda s: s.masked_fill_(clgrad.tensor(np.array(X) > 1), 0.3),
                     lambda a: np.where(a > 1, 0.3, a)),
    "fill_": (lambda s: s.fill_(3.3), lambda a: np.full_like(a, 3.3)),
    "zero_": (lambda s: s.zero_(), np.zeros_like),
    "copy_float32": (lambda s: s.copy_(clgrad.tensor(np.float32(Y) / 3)),
                     lambda a: np.float32(Y) / np.float32(3)),
    "relu6_inplace": (lambda s: F.relu6(s, inplace=True), lambda a: np.clip(a, 0, 6)),
    "hardtanh_inplace": (lambda s: F.hardtanh(s, inplace=True), lambda a: np.clip(a, -1, 1)),
    "leaky_relu_inplace": (lambda s: F.leaky_relu(s, 0.1, inplace=True),
                           lambda a: np.where(a > 0, a, 0.1 * a)),
    "elu_inplace": (lambda s: F.elu(s, inplace=True), lambda a: np.where(a > 0, a, np.expm1(a))),
    "silu_inplace": (lambda s: F.silu(s, inplace=True), lambda a: a * _sigmoid(a)),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_bf16_self(name):
    write, ref = INPLACE[name]
    s = bt(X)
    v0 = s._version
    assert write(s) is s
    assert s.dtype is BF and s._version == v0 + 1
    close_bf16(s, ref(rbf(X)), name)
    # through a view: the base holds the written values, the rest unchanged
    base = bt(np.tile(X, 2))
    view = base.reshape(2, 12)[1]
    write(view)
    b = base._values()
    np.testing.assert_array_equal(b[:12], rbf(X))
    close_bf16(base[12:], ref(rbf(X)), name + " view")


def test_inplace_float32_self_bf16_other():
    for write, ref in [(lambda s: s.add_(bt(Y)), lambda a: a + rbf(Y)),
                       (lambda s: s.mul_(bt(Y)), lambda a: a * rbf(Y)),
                       (lambda s: s.clamp_(max=bt(Y)), lambda a: np.minimum(a, rbf(Y))),
                       (lambda s: s.copy_(bt(Y)), lambda a: rbf(Y))]:
        s = clgrad.tensor(np.float32(X))
        assert write(s) is s and s.dtype is F32
        np.testing.assert_allclose(s.numpy(), ref(np.float32(X).astype(np.float64)),
                                   rtol=2e-7)


def test_inplace_autograd():
    w = bt(X, True)
    for write in (lambda t: t.add_(1), lambda t: t.relu_(), lambda t: t.fill_(0),
                  lambda t: t.zero_(), lambda t: t.copy_(t.detach() * 2), lambda t: t.clamp_(0, 1)):
        with pytest.raises(RuntimeError, match="leaf Variable"):
            write(w)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            write(w[2:5])
    with clgrad.no_grad():
        w.mul_(1.0)  # optimizer-style updates work
    a = rbf(X)
    h = w * 1
    h.relu_()
    h.mul_(bt(Y))
    h[1:4].exp_()
    assert h.dtype is BF and h.grad_fn is not None
    h.backward(clgrad.ones(h.shape, dtype=BF))
    want = (a > 0) * rbf(Y)
    want[1:4] = np.exp(np.maximum(a[1:4], 0) * rbf(Y)[1:4]) * want[1:4]
    close_bf16(w.grad, want)
    # a float32 tensor saved by its op, written with bfloat16 values: backward raises (PyTorch)
    w32 = clgrad.tensor(np.float32(X), requires_grad=True)
    y = (w32 * 1).exp()
    y.add_(bt(Y))
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        y.backward(clgrad.ones(y.shape))
    z = w32 * 1
    y = z * z
    z.copy_(bt(Y))
    with pytest.raises(RuntimeError, match="modified by an inplace"):
        y.backward(clgrad.ones(y.shape))


def test_inplace_after_bf16_op_keeps_forward_values():
    """A bfloat16 op saves its float32 operands (ew.via_float32), not self: a later write
    into its bfloat16 input leaves the gradient that of the forward's values (PyTorch
    raises here instead: sin saved the input it wrote)."""
    w = bt(X, True)
    h = w * 1
    y = clgrad.sin(h)
    h.add_(1)
    y.backward(clgrad.ones(y.shape, dtype=BF))
    close_bf16(w.grad, np.cos(rbf(X)))


def test_overlapping_view_gradient_after_write():
    w = bt([0.5, -1.0, 2.0, 3.0, 1.5, 0.25], True)
    h = w * 1
    v = h.as_strided((2, 3), (1, 1))  # overlapping elements
    h.add_(1)
    (v * 3).backward(clgrad.ones((2, 3), dtype=BF))
    assert w.grad.dtype is BF
    np.testing.assert_array_equal(w.grad._values(), [3, 6, 6, 3, 0, 0])


def test_numpy_array_operand():
    """bfloat16 with a NumPy array: PyTorch's promotion (NumPy has no bfloat16)."""
    for ints in (np.array([1, 2, 3]), np.array([1, 2, 3], np.uint8)):
        close_bf16(bt(POS[:3]) ** ints, rbf(POS[:3]) ** np.array([1, 2, 3]))
    got = bt(X[:3]) ** np.float32([1, 2, 3])
    assert got.dtype is F32
    np.testing.assert_allclose(got.numpy(), rbf(X[:3]) ** np.array([1, 2, 3]), rtol=1e-6)


def test_never_computes_on_bits():
    """An op without a bfloat16 path raises (device.py) rather than reading the ushort bits
    as integers: every op above went through float32; bitwise ops refuse floats."""
    with pytest.raises(TypeError):
        clgrad.bitwise_and(bt([1.0]), bt([1.0]))
    with pytest.raises(TypeError):
        ~bt([1.0])
