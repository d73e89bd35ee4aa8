"""NaN in gives NaN out, and the gradients of max-like reductions over tied values.

Oracles: NumPy (np.maximum / np.fmax differ exactly on NaN: NumPy's maximum propagates it, as
PyTorch), hand-computed values, and PyTorch's documented semantics where they differ from
NumPy (the gradient split among ties, argmax's first NaN, softmax of a row with +inf).
"""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from strided import strided

NAN, INF = float("nan"), float("inf")
DTYPES = [clgrad.float32, clgrad.float64]
X = np.array([[NAN, -1.0, 2.0], [0.5, NAN, -3.0]])


def same(got, want):
    """Values equal (to float32 rounding) with NaN exactly where NaN is wanted."""
    np.testing.assert_allclose(np.asarray(got.detach().numpy(), np.float64), np.asarray(want),
                               rtol=1e-6, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, fn, ref", [
    ("relu", clgrad.relu, lambda a: np.where(a < 0, 0.0, a)),
    ("F.relu", F.relu, lambda a: np.where(a < 0, 0.0, a)),
    ("Tensor.relu", lambda t: t.relu(), lambda a: np.where(a < 0, 0.0, a)),
    ("nn.ReLU", lambda t: clgrad.nn.ReLU()(t), lambda a: np.where(a < 0, 0.0, a)),
    ("leaky_relu", lambda t: F.leaky_relu(t, 0.1), lambda a: np.where(a < 0, 0.1 * a, a)),
    ("nn.LeakyReLU", lambda t: clgrad.nn.LeakyReLU(0.1)(t), lambda a: np.where(a < 0, 0.1 * a,
                                                                                a)),
    ("clamp scalar", lambda t: t.clamp(-0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5)),
    ("clamp min", lambda t: clgrad.clamp(t, min=0.0), lambda a: np.maximum(a, 0.0)),
    ("clamp max", lambda t: clgrad.clamp(t, max=0.0), lambda a: np.minimum(a, 0.0)),
])
def test_unary_nan_stays_nan(dtype, name, fn, ref):
    same(fn(strided(X, dtype)), ref(X))


def test_relu_inplace_keeps_nan():
    t = clgrad.tensor(X)
    F.relu(t, inplace=True)
    same(t, [[NAN, 0, 2], [0.5, NAN, 0]])
    t = clgrad.tensor(X)
    clgrad.nn.ReLU(inplace=True)(t)
    same(t, [[NAN, 0, 2], [0.5, NAN, 0]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, ref", [(clgrad.maximum, np.maximum),
                                     (clgrad.minimum, np.minimum)])
def test_maximum_minimum_nan_either_side(dtype, op, ref):
    a = np.array([NAN, 1.0, NAN, 2.0, -1.0])
    b = np.array([1.0, NAN, NAN, 3.0, -2.0])
    same(op(strided(a, dtype), strided(b, dtype)), ref(a, b))
    one = clgrad.tensor(1.0, dtype=dtype)                     # (a number: TypeError, torch)
    same(op(strided(a, dtype), one), ref(a, 1.0))             # tensor and 0-dim tensor
    same(op(one, strided(a, dtype)), ref(1.0, a))
    same(op(clgrad.tensor(1.0, dtype=dtype), clgrad.tensor(NAN, dtype=dtype)), NAN)


def test_maximum_gradient_at_nan_and_ties():
    """PyTorch: each side gets the gradient unless it loses; ties halve it; NaN: both get it."""
    a = clgrad.tensor([1.0, NAN, 2.0, 5.0], requires_grad=True)
    b = clgrad.tensor([NAN, 1.0, 2.0, 4.0], requires_grad=True)
    clgrad.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1, 1, 0.5, 1])
    np.testing.assert_array_equal(b.grad.numpy(), [1, 1, 0.5, 0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp_tensor_bounds_nan(dtype):
    x = np.array([NAN, -5.0, 5.0, 0.0, 1.0])
    lo = np.array([-1.0, -1.0, -1.0, NAN, -1.0])
    hi = np.array([1.0, 1.0, 1.0, 1.0, NAN])
    got = clgrad.clamp(strided(x, dtype), min=strided(lo, dtype), max=strided(hi, dtype))
    same(got, np.minimum(np.maximum(x, lo), hi))              # [nan, -1, 1, nan, nan]
    same(clgrad.clamp(strided(x, dtype), min=clgrad.tensor(0.0, dtype=dtype)),
         np.maximum(x, 0.0))


def test_clamp_scalar_nan_bound():
    same(clgrad.clamp(clgrad.tensor([1.0, -1.0]), min=NAN), [NAN, NAN])
    same(clgrad.clamp(clgrad.tensor([1.0, -1.0]), max=NAN), [NAN, NAN])
    same(clgrad.clamp(clgrad.tensor([1, -3, 7]), -1, 2), [1, -1, 2])   # integers unchanged


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_with_nan(dtype):
    x = np.array([[1.0, NAN, 3.0, NAN], [4.0, 2.0, 0.0, 1.0]])
    t = strided(x, dtype)
    same(t.max(), NAN)
    same(t.min(), NAN)
    same(clgrad.amax(t, 1), [NAN, 4])
    same(clgrad.amin(t, 1), [NAN, 0])
    same(clgrad.amax(t, (0, 1)), NAN)
    vals, idx = t.max(1)
    same(vals, [NAN, 4])
    np.testing.assert_array_equal(idx.numpy(), [1, 0])        # the first NaN (PyTorch)
    np.testing.assert_array_equal(t.min(1).indices.numpy(), [1, 2])
    np.testing.assert_array_equal(t.argmax(1).numpy(), [1, 0])
    np.testing.assert_array_equal(t.argmin(1).numpy(), [1, 2])
    assert t.argmax().item() == 1


def test_argmax_first_nan_over_long_rows():
    """Rows longer than a work-group: the tree must still report the first NaN."""
    x = np.arange(3000.0)
    x[[2900, 700, 1500]] = NAN
    assert clgrad.tensor(x).argmax().item() == 700
    assert clgrad.tensor(x).argmin().item() == 700
    assert clgrad.tensor(x).max(0).indices.item() == 700


def test_max_pool_nan():
    x = np.arange(16.0).reshape(1, 1, 4, 4)
    x[0, 0, 0, 1] = NAN
    got = F.max_pool2d(clgrad.tensor(x), 2)
    same(got, [[[[NAN, 7], [13, 15]]]])


@pytest.mark.parametrize("fn", [lambda t: t.max(), lambda t: clgrad.amax(t),
                                lambda t: clgrad.amax(t, 1), lambda t: clgrad.amax(t, (0, 1)),
                                lambda t: -clgrad.min(-t), lambda t: -clgrad.amin(-t, 1)])
def test_gradient_of_max_split_among_ties(fn):
    """PyTorch: max() (all elements), amax and amin split the gradient evenly over ties."""
    x = np.array([[1.0, 3.0, 3.0]])
    want = [[0, 0.5, 0.5]]
    leaf = clgrad.tensor(x.T.copy(), requires_grad=True)
    fn(leaf.T).sum().backward()                               # through a transposed view
    np.testing.assert_allclose(leaf.grad.numpy().T, want)


def test_gradient_split_per_row_and_keepdim():
    x = np.array([[2.0, 2.0, 2.0, 1.0], [0.0, 5.0, 1.0, 1.0]])
    leaf = clgrad.tensor(x, requires_grad=True)
    (clgrad.amax(leaf, 1, keepdim=True) * clgrad.tensor([[3.0], [1.0]])).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), [[1, 1, 1, 0], [0, 1, 0, 0]])
    leaf = clgrad.tensor(x, requires_grad=True)
    clgrad.amin(leaf, 0).sum().backward()                     # column 3 ties: 1 == 1
    np.testing.assert_allclose(leaf.grad.numpy(), [[0, 1, 0, 0.5], [1, 0, 1, 0.5]])


def test_gradient_of_max_dim_goes_to_returned_index():
    """PyTorch: max(dim)/min(dim), which return indices, send the gradient there only."""
    leaf = clgrad.tensor([[1.0, 3.0, 3.0]], requires_grad=True)
    leaf.max(1).values.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [[0, 1, 0]])
    leaf = clgrad.tensor([[2.0, 1.0, 1.0]], requires_grad=True)
    leaf.min(1).values.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [[0, 1, 0]])


def test_gradient_of_max_at_nan():
    """PyTorch: max() shares the gradient among the NaNs; amax's NaN gives a NaN gradient."""
    leaf = clgrad.tensor([1.0, NAN, NAN], requires_grad=True)
    leaf.max().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), [0, 0.5, 0.5])
    leaf = clgrad.tensor([[1.0, NAN], [1.0, 2.0]], requires_grad=True)
    clgrad.amax(leaf, 1).sum().backward()
    same(leaf.grad, [[NAN, NAN], [0, 1]])


@pytest.mark.parametrize("n", [3, 300])                       # one work item / a group per row
@pytest.mark.parametrize("fn", [F.softmax, F.log_softmax])
def test_softmax_row_with_inf_is_nan(n, fn):
    x = np.ones((3, n))
    x[0, 0] = INF
    x[1, 1] = -INF
    got = fn(clgrad.tensor(x), dim=1).numpy()
    assert np.isnan(got[0]).all()
    assert not np.isnan(got[1:]).any()
    e = np.exp(x[1:] - 1.0)
    ref = e / e.sum(1, keepdims=True)
    with np.errstate(divide="ignore"):                        # log(0) = -inf where x = -inf
        ref = ref if fn is F.softmax else np.log(ref)
    np.testing.assert_allclose(got[1:], ref, rtol=1e-6)


def test_cross_entropy_with_inf_logit_is_nan():
    x = clgrad.tensor([[INF, 1.0, 2.0], [0.0, 1.0, 2.0]], requires_grad=True)
    loss = F.cross_entropy(x, clgrad.tensor([1, 0]))
    assert np.isnan(loss.item())
    loss.backward()
    g = x.grad.numpy()
    assert np.isnan(g[0]).all()
    p = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(g[1], (p - [1, 0, 0]) / 2, rtol=1e-5)


def test_argmax_of_empty():
    got = clgrad.zeros(0, 3).argmax(1)
    assert got.shape == (0,) and got.dtype == clgrad.int64
    assert clgrad.zeros(0, 3).argmin(1, keepdim=True).shape == (0, 1)
    with pytest.raises(IndexError, match="dim 0 to have non-zero size"):
        clgrad.zeros(0, 3).argmax(0)
    with pytest.raises(IndexError, match="numel"):
        clgrad.zeros(0, 3).argmax()
    with pytest.raises(IndexError, match="dim 0 to have non-zero size"):
        clgrad.amax(clgrad.zeros(0, 3), 0)
    assert clgrad.amax(clgrad.zeros(0, 3), 1).shape == (0,)
    with pytest.raises(RuntimeError, match="numel"):
        clgrad.amax(clgrad.zeros(0, 3))


@pytest.mark.parametrize("n", [2, 5, 3000])
def test_sum_with_inf_is_inf(n):
    """The Kahan compensation must not turn inf into NaN (inf - inf)."""
    x = np.ones(n)
    x[1] = INF
    assert clgrad.tensor(x).sum().item() == INF
    assert clgrad.tensor(x, dtype=clgrad.float64).mean().item() == INF
    x[0] = -INF
    assert np.isnan(clgrad.tensor(x).sum().item())


def test_dropout_keeps_nan():
    """PyTorch multiplies by the mask: a dropped NaN is still NaN (NaN * 0)."""
    x = np.full(64, NAN)
    x[::2] = 1.0
    y = F.dropout(clgrad.tensor(x), 0.5).numpy()
    assert np.isnan(y[1::2]).all()
    assert set(np.unique(y[::2])) <= {0.0, 2.0}


@pytest.mark.parametrize("name", ["relu", "maximum", "clamp_t", "max", "amax", "amin", "max_dim",
                                  "norm", "softmax"])
def test_nan_and_ties_match_pytorch(name):
    """Extra cross-check of values and gradients against PyTorch, where it is installed."""
    torch = pytest.importorskip("torch")
    a = np.array([[NAN, 3.0, 3.0, -1.0], [2.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    b = np.array([[1.0, NAN, 3.0, 0.0], [2.0, 5.0, -1.0, NAN], [0.0, 1.0, NAN, 0.0]])
    fns = {"relu": lambda m, x, y: m.relu(x),
           "maximum": lambda m, x, y: m.maximum(x, y),
           "clamp_t": lambda m, x, y: m.clamp(x, min=y, max=y + 1),
           "max": lambda m, x, y: m.max(y),
           "amax": lambda m, x, y: m.amax(x, 1),
           "amin": lambda m, x, y: m.amin(y, 0),
           "max_dim": lambda m, x, y: m.max(x, 1).values,
           "norm": lambda m, x, y: m.linalg.vector_norm(m.where(x == x, x, 0 * x), dim=1),
           "softmax": lambda m, x, y: m.softmax(m.where(x == x, x, 0 * x + INF), 1)}
    outs = []
    for m, make in ((clgrad, lambda v: clgrad.tensor(v, requires_grad=True)),
                    (torch, lambda v: torch.tensor(v, requires_grad=True))):
        x, y = make(a), make(b)
        out = fns[name](m, x, y)
        out.sum().backward()
        grads = [t.grad.numpy() if t.grad is not None else None for t in (x, y)]
        outs.append((out.detach().numpy(), grads))
    (got, ggot), (want, gwant) = outs
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    for g, w in zip(ggot, gwant):
        if w is None:
            assert g is None or not np.any(g)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, equal_nan=True)


def test_clamp_tensor_bounds_gradient():
    """PyTorch's clamp: x gets it inside [min, max]; min where x < min < max; max where
    x > max or max < min (hand values; the last element has min > max)."""
    x = clgrad.tensor([-5.0, 5.0, 0.5, 2.0, NAN], requires_grad=True)
    lo = clgrad.tensor([0.0, 0.0, 0.0, 3.0, 0.0], requires_grad=True)
    hi = clgrad.tensor([1.0, 1.0, 1.0, 1.0, 1.0], requires_grad=True)
    out = clgrad.clamp(x, min=lo, max=hi)
    same(out, [0, 1, 0.5, 1, NAN])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(lo.grad.numpy(), [1, 0, 0, 0, 0])
    np.testing.assert_array_equal(hi.grad.numpy(), [0, 1, 0, 1, 0])
    x = clgrad.tensor([[1.0, -1.0]], requires_grad=True)      # a broadcast 0-dim bound
    b = clgrad.tensor(0.0, requires_grad=True)
    clgrad.clamp(x, min=b).sum().backward()
    assert b.grad.item() == 1.0 and x.grad.numpy().tolist() == [[1, 0]]


def test_relu_gradient_passes_at_nan():
    x = clgrad.tensor([NAN, 2.0, -1.0, 0.0], requires_grad=True)
    clgrad.relu(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 0, 0])   # PyTorch's threshold_backward
