"""selu, celu, softsign, tanhshrink, softshrink, hardshrink, threshold, glu, softmin, rrelu,
gumbel_softmax; cosine_similarity, pairwise_distance; the margin, embedding, Poisson and
Gaussian losses; their nn.Modules.

Oracles: NumPy float64 hand formulas (PyTorch's documented ones) for values, and
``clgrad.autograd.gradcheck`` (float64 central differences, full Jacobian columns) for the
gradients (CASES); PyTorch itself where importable (values and gradients).
"""
import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from tests.test_gradcheck_ops import strided_leaf

f64 = clgrad.float64
RNG = np.random.default_rng(7)
ALPHA, SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _x(*shape):
    """Values kept 0.05 away from the kinks at 0, +-0.5 (the tables' lambd and threshold)."""
    v = RNG.uniform(-2.5, 2.5, size=shape)
    for k in (0.0, 0.5, -0.5):
        v = np.where(np.abs(v - k) < 0.05, k + 0.1, v)
    return v


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _logsig(v):
    return np.minimum(v, 0) - np.log1p(np.exp(-np.abs(v)))


# -- pointwise activations: (op, NumPy value, NumPy derivative) --------------------------------
POINTWISE = {
    "selu": (lambda x: F.selu(x), lambda v: SCALE * np.where(v > 0, v, ALPHA * np.expm1(v)),
             lambda v: SCALE * np.where(v > 0, 1, ALPHA * np.exp(v))),
    "celu": (lambda x: F.celu(x, 0.7), lambda v: np.where(v > 0, v, 0.7 * np.expm1(v / 0.7)),
             lambda v: np.where(v > 0, 1, np.exp(v / 0.7))),
    "softsign": (F.softsign, lambda v: v / (1 + np.abs(v)), lambda v: 1 / (1 + np.abs(v)) ** 2),
    "tanhshrink": (F.tanhshrink, lambda v: v - np.tanh(v), lambda v: np.tanh(v) ** 2),
    "softshrink": (lambda x: F.softshrink(x, 0.5),
                   lambda v: np.where(v > 0.5, v - 0.5, np.where(v < -0.5, v + 0.5, 0)),
                   lambda v: (np.abs(v) > 0.5) * 1.0),
    "hardshrink": (lambda x: F.hardshrink(x, 0.5), lambda v: np.where(np.abs(v) > 0.5, v, 0),
                   lambda v: (np.abs(v) > 0.5) * 1.0),
    "threshold": (lambda x: F.threshold(x, 0.5, -2.0), lambda v: np.where(v > 0.5, v, -2.0),
                  lambda v: (v > 0.5) * 1.0),
    "rrelu_eval": (lambda x: F.rrelu(x, 0.1, 0.3), lambda v: np.where(v > 0, v, 0.2 * v),
                   lambda v: np.where(v > 0, 1, 0.2)),
}


@pytest.mark.parametrize("name", sorted(POINTWISE))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_pointwise_values_and_gradients_against_numpy(name, dtype):
    fn, f, df = POINTWISE[name]
    v = _x(3, 5)
    x = strided_leaf(v)
    if dtype == "float32":
        x = x.detach().float().requires_grad_()
    y = fn(x)
    g = RNG.normal(size=v.shape)
    y.backward(clgrad.tensor(g, dtype=x.dtype))
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(y.detach().numpy(), f(v), rtol=tol, atol=tol)
    np.testing.assert_allclose(x.grad.numpy(), g * df(v), rtol=tol, atol=tol)


def test_kinks_and_nan_follow_pytorch():
    x = clgrad.tensor([-0.5, 0.5, 0.0, float("nan")], dtype=f64, requires_grad=True)
    F.softshrink(x, 0.5).sum().backward()
    assert np.isnan(F.softshrink(x, 0.5).detach().numpy()[3])
    np.testing.assert_array_equal(x.grad.numpy()[:3], [0, 0, 0])
    x.grad = None
    F.hardshrink(x, 0.5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[:3], [0, 0, 0])
    assert np.isnan(F.hardshrink(x, 0.5).detach().numpy()[3])
    y = F.threshold(x, 0.5, 9.0).detach().numpy()
    np.testing.assert_array_equal(y[:3], [9, 9, 9])
    assert np.isnan(y[3])
    x.grad = None
    F.selu(x).sum().backward()  # the exp branch at 0 (PyTorch's elu_backward)
    np.testing.assert_allclose(x.grad.numpy()[2], SCALE * ALPHA)


def test_inplace_variants_write_self():
    v = _x(4, 3)
    cases = [(clgrad.selu_, lambda t: F.selu(t), ()),
             (clgrad.celu_, lambda t: F.celu(t, 2.0), (2.0,)),
             (clgrad.threshold_, lambda t: F.threshold(t, 0.5, -1.0), (0.5, -1.0)),
             (clgrad.rrelu_, lambda t: F.rrelu(t), ())]
    for fn_, ref, args in cases:
        t = clgrad.tensor(v)
        assert fn_(t, *args) is t
        np.testing.assert_allclose(t.numpy(), ref(clgrad.tensor(v)).numpy(), rtol=1e-6)
    t = clgrad.tensor(v)
    assert F.selu(t, inplace=True) is t and F.celu(t, inplace=True) is t
    assert F.threshold(t, 0.0, 1.0, True) is t and F.rrelu(t, inplace=True, training=True) is t
    # gradients through an in-place write of a non-leaf
    x = strided_leaf(v)
    y = x * 1.0
    F.threshold_(y, 0.5, -1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (v > 0.5) * 1.0)


def test_top_level_and_method_faces():
    x = clgrad.tensor(_x(5))
    for name in ("selu", "celu", "threshold", "rrelu", "hardshrink", "cosine_similarity",
                 "pairwise_distance", "margin_ranking_loss", "hinge_embedding_loss",
                 "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss"):
        assert name in clgrad.__all__ and name in F.__all__, name
    np.testing.assert_array_equal(x.hardshrink(1.0).numpy(), F.hardshrink(x, 1.0).numpy())


def test_glu_and_softmin():
    v = _x(4, 6)
    y = F.glu(clgrad.tensor(v), 1).numpy()
    np.testing.assert_allclose(y, v[:, :3] * _sig(v[:, 3:]), rtol=1e-12)
    y0 = F.glu(clgrad.tensor(v), 0).numpy()
    np.testing.assert_allclose(y0, v[:2] * _sig(v[2:]), rtol=1e-12)
    e = np.exp(-v - (-v).max(1, keepdims=True))
    np.testing.assert_allclose(F.softmin(clgrad.tensor(v), 1).numpy(),
                               e / e.sum(1, keepdims=True), rtol=1e-12)
    s32 = F.softmin(clgrad.tensor(v), 1, dtype=clgrad.float32)
    assert s32.dtype is clgrad.float32
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(clgrad.tensor(_x(3, 5)))
    with pytest.raises(RuntimeError, match="scalars"):
        F.glu(clgrad.tensor(1.0))


def test_rrelu_training_draws_slopes_and_differentiates_through_them():
    v = -np.abs(_x(200)) - 0.1
    x = clgrad.tensor(v, requires_grad=True)
    clgrad.manual_seed(3)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    slope = y.detach().numpy() / v
    assert slope.min() >= 0.1 and slope.max() <= 0.3 and slope.std() > 0.03
    np.testing.assert_allclose(x.grad.numpy(), slope, rtol=1e-12)
    clgrad.manual_seed(3)
    np.testing.assert_array_equal(F.rrelu(x, 0.1, 0.3, training=True).detach().numpy(),
                                  y.detach().numpy())
    pos = clgrad.tensor(np.abs(v))
    np.testing.assert_array_equal(F.rrelu(pos, training=True).numpy(), np.abs(v))
    m = nn.RReLU(0.1, 0.3)
    m.eval()
    np.testing.assert_allclose(m(x).detach().numpy(), 0.2 * v, rtol=1e-12)
    with pytest.raises(RuntimeError, match="lower"):
        F.rrelu(x, 0.5, 0.1, training=True)


def test_gumbel_softmax():
    v = _x(8, 5)
    x = clgrad.tensor(v, requires_grad=True)
    y = F.gumbel_softmax(x, tau=0.5)
    np.testing.assert_allclose(y.detach().numpy().sum(1), 1.0, rtol=1e-12)
    clgrad.manual_seed(1)
    soft = F.gumbel_softmax(x, tau=0.5)
    clgrad.manual_seed(1)
    hard = F.gumbel_softmax(x, tau=0.5, hard=True)
    h = hard.detach().numpy()
    np.testing.assert_allclose(h.sum(1), 1.0)
    assert set(np.unique(np.round(h, 12))) <= {0.0, 1.0}
    np.testing.assert_array_equal(h.argmax(1), soft.detach().numpy().argmax(1))
    g = RNG.normal(size=v.shape)
    (hard * clgrad.tensor(g)).sum().backward()  # straight-through: the soft sample's gradient
    gh = x.grad.numpy().copy()
    x.grad = None
    (soft * clgrad.tensor(g)).sum().backward()
    np.testing.assert_allclose(gh, x.grad.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.warns(UserWarning, match="eps"):
        F.gumbel_softmax(x, eps=1e-3)


# -- distances ---------------------------------------------------------------------------------
def test_cosine_similarity_and_pairwise_distance_against_numpy():
    a, b = _x(4, 6), _x(1, 6)
    a[0] *= 1e-4  # a norm below eps: clamped
    y = F.cosine_similarity(clgrad.tensor(a), clgrad.tensor(b), dim=1, eps=1e-2).numpy()
    n1 = np.maximum(np.linalg.norm(a, axis=1), 1e-2)
    n2 = np.maximum(np.linalg.norm(b, axis=1), 1e-2)
    np.testing.assert_allclose(y, (a * b).sum(1) / (n1 * n2), rtol=1e-12)
    y0 = clgrad.cosine_similarity(clgrad.tensor(a), clgrad.tensor(a[::-1].copy()), 0).numpy()
    np.testing.assert_allclose(y0, (a * a[::-1]).sum(0) / np.linalg.norm(a, axis=0) /
                               np.linalg.norm(a[::-1], axis=0), rtol=1e-12)
    for p in (1.0, 2.0, 3.0, float("inf")):
        d = F.pairwise_distance(clgrad.tensor(a), clgrad.tensor(b), p).numpy()
        np.testing.assert_allclose(d, np.linalg.norm(a - b + 1e-6, ord=p, axis=-1), rtol=1e-12)
    assert F.pairwise_distance(clgrad.tensor(a), clgrad.tensor(b), keepdim=True).shape == (4, 1)
    assert tuple(nn.PairwiseDistance()(clgrad.tensor(a[0]), clgrad.tensor(b[0])).shape) == ()
    with pytest.raises(RuntimeError, match="floating point"):
        F.cosine_similarity(clgrad.ones(2, 3, dtype=clgrad.int64),
                            clgrad.ones(2, 3, dtype=clgrad.int64))


def test_cosine_similarity_gradient_of_a_clamped_norm_is_pytorchs():
    """PyTorch clamps the norms under no_grad: the norm's gradient is taken unclamped."""
    a, b = np.array([[1e-5, 0.0]]), np.array([[2e-5, 1e-5]])
    x1 = clgrad.tensor(a, requires_grad=True)
    F.cosine_similarity(x1, clgrad.tensor(b), 1, 1e-3).sum().backward()
    # d/dx1 of x1 . x2 / (c1 c2) with c = max(n, eps), the norm's derivative x1 / n1
    c1, c2, n1 = 1e-3, 1e-3, np.linalg.norm(a)
    want = b / (c1 * c2) - (a * b).sum() / (c1 ** 2 * c2) * a / n1
    np.testing.assert_allclose(x1.grad.numpy(), want, rtol=1e-10)


# -- losses: NumPy per-element formulas (PyTorch's docs) ----------------------------------------
def _red(v, reduction):
    return v if reduction == "none" else v.mean() if reduction == "mean" else v.sum()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_against_numpy(reduction):
    x1, x2, x3 = _x(4, 6), _x(4, 6), _x(4, 6)
    y = np.sign(_x(4, 6))
    yv = np.array([1.0, -1.0, 1.0, -1.0])
    T = clgrad.tensor
    kw = {"reduction": reduction}

    def check(got, want):
        np.testing.assert_allclose(got.detach().numpy(), _red(want, reduction), rtol=1e-10,
                                   atol=1e-12)
    check(F.margin_ranking_loss(T(x1), T(x2), T(y), 0.3, **kw),
          np.maximum(0, -y * (x1 - x2) + 0.3))
    check(F.hinge_embedding_loss(T(x1), T(y), 0.7, **kw),
          np.where(y == 1, x1, np.maximum(0, 0.7 - x1)))
    check(F.soft_margin_loss(T(x1), T(y), **kw), np.log1p(np.exp(-y * x1)))
    lab, w = (y > 0) * 1.0, np.abs(_x(6))
    check(F.multilabel_soft_margin_loss(T(x1), T(lab), T(w), **kw),
          -(w * (lab * _logsig(x1) + (1 - lab) * _logsig(-x1))).mean(1))
    cos = (x1 * x2).sum(1) / np.sqrt(((x1 ** 2).sum(1) + 1e-12) * ((x2 ** 2).sum(1) + 1e-12))
    check(F.cosine_embedding_loss(T(x1), T(x2), T(yv), 0.2, **kw),
          np.where(yv == 1, 1 - cos, np.maximum(0, cos - 0.2)))

    def dist(a, b, p=2):
        return np.linalg.norm(a - b + 1e-6, ord=p, axis=-1)
    check(F.triplet_margin_loss(T(x1), T(x2), T(x3), 1.5, **kw),
          np.maximum(0, 1.5 + dist(x1, x2) - dist(x1, x3)))
    check(F.triplet_margin_loss(T(x1), T(x2), T(x3), 1.5, p=1, swap=True, **kw),
          np.maximum(0, 1.5 + dist(x1, x2, 1) - np.minimum(dist(x1, x3, 1), dist(x2, x3, 1))))
    cnt = np.floor(np.abs(x2) * 3)
    check(F.poisson_nll_loss(T(x1), T(cnt), **kw), np.exp(x1) - cnt * x1)
    with np.errstate(divide="ignore", invalid="ignore"):
        st = np.where(cnt > 1, cnt * np.log(cnt) - cnt + 0.5 * np.log(2 * np.pi * cnt), 0)
    check(F.poisson_nll_loss(T(np.abs(x1)), T(cnt), log_input=False, full=True, **kw),
          np.abs(x1) - cnt * np.log(np.abs(x1) + 1e-8) + st)
    var = np.abs(x3)
    check(F.gaussian_nll_loss(T(x1), T(x2), T(var), eps=0.1, **kw),
          0.5 * (np.log(np.maximum(var, 0.1)) + (x1 - x2) ** 2 / np.maximum(var, 0.1)))
    check(F.gaussian_nll_loss(T(x1), T(x2), T(var[:, 0]), full=True, **kw),
          0.5 * (np.log(var[:, :1]) + (x1 - x2) ** 2 / var[:, :1] + np.log(2 * np.pi)))
    check(F.gaussian_nll_loss(T(x1), T(x2), 0.5, **kw),
          0.5 * (np.log(0.5) + (x1 - x2) ** 2 / 0.5))
    t = np.array([0, 5, 2, 2])
    wc = np.abs(_x(6))
    for p in (1, 2):
        z = np.maximum(0, 0.7 - x1[np.arange(4), t][:, None] + x1) ** p
        z[np.arange(4), t] = 0
        check(F.multi_margin_loss(T(x1), T(t), p, 0.7, T(wc), **kw),
              (z * wc[t][:, None]).sum(1) / 6)


CASES = {  # gradcheck (float64): fn, input specs (shape, or (shape, "pos"))
    "selu": (lambda x: F.selu(x), [(3, 4)]),
    "celu": (lambda x: F.celu(x, 0.7), [(3, 4)]),
    "softsign": (lambda x: F.softsign(x), [(3, 4)]),
    "tanhshrink": (lambda x: F.tanhshrink(x), [(3, 4)]),
    "softshrink": (lambda x: F.softshrink(x, 0.5), [(3, 4)]),
    "hardshrink": (lambda x: F.hardshrink(x, 0.5), [(3, 4)]),
    "threshold": (lambda x: F.threshold(x, 0.5, -1.0), [(3, 4)]),
    "rrelu": (lambda x: F.rrelu(x, 0.1, 0.3), [(3, 4)]),
    "glu": (lambda x: F.glu(x, 1), [(3, 4)]),
    "selu_": (lambda x: clgrad.selu_(x * 1.0), [(3, 4)]),
    "celu_": (lambda x: clgrad.celu_(x * 1.0, 1.5), [(3, 4)]),
    "threshold_": (lambda x: clgrad.threshold_(x * 1.0, 0.5, 3.0), [(3, 4)]),
    "rrelu_": (lambda x: clgrad.rrelu_(x * 1.0, 0.1, 0.3), [(3, 4)]),
    "softmin": (lambda x: F.softmin(x, 1), [(3, 4)]),
    "cosine_similarity": (lambda a, b: F.cosine_similarity(a, b, 1), [(3, 4), (1, 4)]),
    "pairwise_distance": (lambda a, b: F.pairwise_distance(a, b, 3.0), [(3, 4), (3, 4)]),
    "margin_ranking_loss": (lambda a, b: F.margin_ranking_loss(
        a, b, clgrad.tensor([[1.0, -1, 1, -1]] * 3, dtype=f64), 0.1), [(3, 4), (3, 4)]),
    "hinge_embedding_loss": (lambda a: F.hinge_embedding_loss(
        a, clgrad.tensor([[1.0, -1, 1, -1]] * 3, dtype=f64), 0.6, reduction="sum"), [(3, 4)]),
    "soft_margin_loss": (lambda a: F.soft_margin_loss(
        a, clgrad.tensor([[1.0, -1, 1, -1]] * 3, dtype=f64)), [(3, 4)]),
    "multilabel_soft_margin_loss": (lambda a, w: F.multilabel_soft_margin_loss(
        a, clgrad.tensor([[1.0, 0, 1, 0]] * 3, dtype=f64), w), [(3, 4), ((4,), "pos")]),
    "cosine_embedding_loss": (lambda a, b: F.cosine_embedding_loss(
        a, b, clgrad.tensor([1.0, -1, -1], dtype=f64), -0.5), [(3, 4), (3, 4)]),
    "triplet_margin_loss": (lambda a, p, n: F.triplet_margin_loss(a, p, n, 3.0, swap=True),
                            [(3, 4), (3, 4), (3, 4)]),
    "poisson_nll_loss": (lambda a, t: F.poisson_nll_loss(a, t, log_input=False, full=True),
                         [((3, 4), "pos"), ((3, 4), "pos")]),
    "gaussian_nll_loss": (lambda a, t, v: F.gaussian_nll_loss(a, t, v, full=True),
                          [(3, 4), (3, 4), ((3, 1), "pos")]),
    "multi_margin_loss": (lambda a, w: F.multi_margin_loss(
        a, clgrad.tensor([0, 3, 1]), 2, 0.5, w), [(3, 4), ((4,), "pos")]),
}


def _leaf(spec):
    shape, kind = spec if isinstance(spec[-1], str) else (spec, "normal")
    v = RNG.uniform(0.5, 2.5, size=shape) if kind == "pos" else _x(*shape)
    return strided_leaf(v)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, specs = CASES[name]
    assert gradcheck(fn, [_leaf(s) for s in specs])


# -- errors ------------------------------------------------------------------------------------
def test_bad_arguments_raise():
    x = clgrad.tensor(_x(3, 4))
    t = clgrad.tensor([1.0, -1.0, 1.0])
    with pytest.raises(RuntimeError, match="alpha cannot be 0"):
        F.celu(x, 0.0)
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(x, -1.0)
    with pytest.raises(TypeError, match="floating point"):
        F.selu(clgrad.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="same dimension"):
        F.margin_ranking_loss(x, x, t)
    with pytest.raises(ValueError, match="reduction"):
        F.soft_margin_loss(x, x, reduction="avg")
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input"):
        F.cosine_embedding_loss(x[0], x[0], t)
    with pytest.raises(RuntimeError, match="multi-target"):
        F.cosine_embedding_loss(x, x, x)
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_loss(x, x, x, margin=0.0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_loss(x, x, x[0])
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, x, -1.0)
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, x, x)
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(x, x, clgrad.ones(2, 2))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(x, clgrad.tensor([0, 1, 2]), p=3)
    with pytest.raises(ValueError, match="one-dimensional"):
        F.multi_margin_loss(x, clgrad.tensor([0, 1, 2]), weight=x)
    with pytest.raises(IndexError, match="out of range"):
        F.multi_margin_loss(x, clgrad.tensor([0, 1, 4]))
    with pytest.raises(ValueError, match="margin"):
        nn.TripletMarginLoss(margin=-1.0)


def test_legacy_size_average_and_reduce():
    x, y = clgrad.tensor(_x(3, 4)), clgrad.tensor(np.sign(_x(3, 4)))
    with pytest.warns(UserWarning):
        s = F.soft_margin_loss(x, y, size_average=False)
    np.testing.assert_allclose(s.numpy(), F.soft_margin_loss(x, y, reduction="sum").numpy())
    with pytest.warns(UserWarning):
        assert F.hinge_embedding_loss(x, y, reduce=False).shape == (3, 4)
    assert nn.SoftMarginLoss(reduce=False).reduction == "none"


# -- modules -----------------------------------------------------------------------------------
def test_modules_call_their_functions_and_print_as_pytorch():
    x = clgrad.tensor(_x(4, 6))
    y = clgrad.tensor(np.sign(_x(4, 6)))
    pairs = [(nn.SELU(), F.selu(x)), (nn.CELU(0.5), F.celu(x, 0.5)),
             (nn.Softsign(), F.softsign(x)), (nn.Tanhshrink(), F.tanhshrink(x)),
             (nn.Softshrink(0.3), F.softshrink(x, 0.3)),
             (nn.Hardshrink(0.3), F.hardshrink(x, 0.3)),
             (nn.Threshold(0.1, 2.0), F.threshold(x, 0.1, 2.0)), (nn.GLU(0), F.glu(x, 0)),
             (nn.Softmin(1), F.softmin(x, 1))]
    for m, want in pairs:
        np.testing.assert_array_equal(m(x).numpy(), want.numpy())
    np.testing.assert_array_equal(nn.CosineSimilarity(0)(x, y).numpy(),
                                  F.cosine_similarity(x, y, 0).numpy())
    np.testing.assert_array_equal(nn.PairwiseDistance(1.0)(x, y).numpy(),
                                  F.pairwise_distance(x, y, 1.0).numpy())
    two = [(nn.HingeEmbeddingLoss(0.5), F.hinge_embedding_loss(x, y, 0.5)),
           (nn.SoftMarginLoss(reduction="sum"), F.soft_margin_loss(x, y, reduction="sum")),
           (nn.MultiLabelSoftMarginLoss(), F.multilabel_soft_margin_loss(x, (y > 0).double())),
           (nn.PoissonNLLLoss(), F.poisson_nll_loss(x, y.abs())),
           (nn.MultiMarginLoss(p=2), F.multi_margin_loss(x, clgrad.tensor([0, 1, 2, 3]), 2))]
    for m, want in two:
        b = (y > 0).double() if isinstance(m, nn.MultiLabelSoftMarginLoss) else y.abs() if \
            isinstance(m, nn.PoissonNLLLoss) else clgrad.tensor([0, 1, 2, 3]) if isinstance(
                m, nn.MultiMarginLoss) else y
        np.testing.assert_array_equal(m(x, b).numpy(), want.numpy())
    np.testing.assert_array_equal(nn.MarginRankingLoss(0.2)(x, x * 2, y).numpy(),
                                  F.margin_ranking_loss(x, x * 2, y, 0.2).numpy())
    t = clgrad.tensor([1.0, -1, 1, -1])
    np.testing.assert_array_equal(nn.CosineEmbeddingLoss(0.1)(x, y, t).numpy(),
                                  F.cosine_embedding_loss(x, y, t, 0.1).numpy())
    np.testing.assert_array_equal(nn.TripletMarginLoss(swap=True)(x, y, x * 2).numpy(),
                                  F.triplet_margin_loss(x, y, x * 2, swap=True).numpy())
    np.testing.assert_array_equal(nn.GaussianNLLLoss(full=True)(x, y, x.abs()).numpy(),
                                  F.gaussian_nll_loss(x, y, x.abs(), full=True).numpy())
    reprs = {nn.Softshrink(): "Softshrink(0.5)", nn.Threshold(0.1, 20): "Threshold(threshold=0.1, "
             "value=20)", nn.GLU(): "GLU(dim=-1)", nn.Softmin(1): "Softmin(dim=1)",
             nn.RReLU(): "RReLU(lower=0.125, upper=0.3333333333333333)",
             nn.CELU(2.0, True): "CELU(alpha=2.0, inplace=True)", nn.SELU(): "SELU()",
             nn.PairwiseDistance(): "PairwiseDistance()"}
    for m, want in reprs.items():
        assert repr(m) == want


# -- PyTorch itself as the oracle (skipped without torch) --------------------------------------
TORCH_CASES = {
    "selu": (lambda F, t: F.selu(t[0]), [(4, 6)], ()),
    "celu": (lambda F, t: F.celu(t[0], 0.7), [(4, 6)], ()),
    "softshrink": (lambda F, t: F.softshrink(t[0], 0.4), [(4, 6)], ()),
    "glu": (lambda F, t: F.glu(t[0], 1), [(4, 6)], ()),
    "softmin": (lambda F, t: F.softmin(t[0], 0), [(4, 6)], ()),
    "rrelu": (lambda F, t: F.rrelu(t[0], 0.2, 0.4), [(4, 6)], ()),
    "cosine_similarity": (lambda F, t: F.cosine_similarity(t[0] * 0.01, t[1], 1, 0.05),
                          [(4, 6), (1, 6)], ()),
    "pairwise_distance": (lambda F, t: F.pairwise_distance(t[0], t[1], 1.5, keepdim=True),
                          [(4, 6), (6,)], ()),
    "margin_ranking_loss": (lambda F, t: F.margin_ranking_loss(t[0], t[1], t[2].sign(), 0.3),
                            [(4, 6), (4, 6), (4, 6)], (2,)),
    "hinge_embedding_loss": (lambda F, t: F.hinge_embedding_loss(t[0], t[1].sign(), 0.7,
                                                                 reduction="none"),
                             [(4, 6), (4, 6)], (1,)),
    "soft_margin_loss": (lambda F, t: F.soft_margin_loss(t[0], t[1].sign(), reduction="sum"),
                         [(4, 6), (4, 6)], (1,)),
    "multilabel_soft_margin_loss": (lambda F, t: F.multilabel_soft_margin_loss(
        t[0], (t[1] > 0).double(), t[2].abs()), [(4, 6), (4, 6), (6,)], (1,)),
    "cosine_embedding_loss": (lambda F, t: F.cosine_embedding_loss(
        t[0], t[1], t[2][:, 0].sign(), 0.1, reduction="none"), [(4, 6), (4, 6), (4, 6)], (2,)),
    "triplet_margin_loss": (lambda F, t: F.triplet_margin_loss(t[0], t[1], t[2], 2.0, 3,
                                                               swap=True),
                            [(4, 6), (4, 6), (4, 6)], ()),
    "poisson_nll_loss": (lambda F, t: F.poisson_nll_loss(t[0].abs(), (t[1] * 3).abs().floor(),
                                                         False, True, reduction="none"),
                         [(4, 6), (4, 6)], (1,)),
    "gaussian_nll_loss": (lambda F, t: F.gaussian_nll_loss(t[0], t[1], t[2].abs(), eps=0.2),
                          [(4, 6), (4, 6), (4, 1)], ()),
}


@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_pytorch(name):
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    fn, shapes, nograd = TORCH_CASES[name]
    arrays = [_x(*s) for s in shapes]
    tt = [torch.tensor(a, requires_grad=i not in nograd) for i, a in enumerate(arrays)]
    ct = [clgrad.tensor(a, requires_grad=i not in nograd) for i, a in enumerate(arrays)]
    yt, yc = fn(TF, tt), fn(F, ct)
    R = RNG.normal(size=tuple(yt.shape))
    (yt * torch.tensor(R)).sum().backward()
    (yc * clgrad.tensor(R)).sum().backward()
    np.testing.assert_allclose(yc.detach().numpy(), yt.detach().numpy(), rtol=1e-9, atol=1e-12)
    for a, b in zip(tt, ct):
        if a.requires_grad:  # (celu: PyTorch's backward takes 1/alpha in float32)
            np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-6, atol=1e-12)


def test_multi_margin_loss_against_pytorch():
    torch = pytest.importorskip("torch")
    v, t, w = _x(4, 6), np.array([0, 5, 2, 2]), np.abs(_x(6))
    for p in (1, 2):
        xt = torch.tensor(v, requires_grad=True)
        xc = clgrad.tensor(v, requires_grad=True)
        yt = torch.nn.functional.multi_margin_loss(xt, torch.tensor(t), p, 0.7, torch.tensor(w))
        yc = F.multi_margin_loss(xc, clgrad.tensor(t), p, 0.7, clgrad.tensor(w))
        yt.backward()
        yc.backward()
        np.testing.assert_allclose(yc.item(), yt.item(), rtol=1e-12)
        np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-14)
