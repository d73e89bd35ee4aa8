"""isnan/isinf/isfinite, nan_to_num, isclose/allclose/equal against NumPy on strided views."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from strided import strided

SPECIAL = np.array([[0.0, -0.0, 1.5, np.nan], [np.inf, -np.inf, -2.0, 1e30]])


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite"])
@pytest.mark.parametrize("dtype", [clgrad.float32, clgrad.float64])
def test_predicates_match_numpy(name, dtype):
    x = strided(SPECIAL, dtype)
    host = SPECIAL.astype(dtype.np)
    out = getattr(clgrad, name)(x)
    assert out.dtype is clgrad.bool
    np.testing.assert_array_equal(out.numpy(), getattr(np, name)(host))
    np.testing.assert_array_equal(getattr(x, name)().numpy(), getattr(np, name)(host))


def test_predicates_on_integers():
    x = clgrad.tensor([[1, 2], [3, 4]])
    assert not clgrad.isnan(x).any().item() and not clgrad.isinf(x).any().item()
    assert clgrad.isfinite(x).all().item() and clgrad.isfinite(x).shape == (2, 2)


@pytest.mark.parametrize("kw", [{}, dict(nan=1.0, posinf=2.0, neginf=-3.0), dict(nan=-7.0)])
def test_nan_to_num_matches_numpy(kw):
    x = strided(SPECIAL)
    np.testing.assert_array_equal(clgrad.nan_to_num(x, **kw).numpy(),
                                  np.nan_to_num(SPECIAL, **kw))
    f = strided(SPECIAL, clgrad.float32)
    np.testing.assert_array_equal(f.nan_to_num(**kw).numpy(),
                                  np.nan_to_num(SPECIAL.astype(np.float32), **kw))
    y = clgrad.tensor(SPECIAL, dtype=clgrad.float64)
    y.nan_to_num_(**kw)
    np.testing.assert_array_equal(y.numpy(), np.nan_to_num(SPECIAL, **kw))


def test_nan_to_num_gradient_passes_only_where_finite():
    x = clgrad.tensor(SPECIAL, dtype=clgrad.float64, requires_grad=True)
    (clgrad.nan_to_num(x) * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * np.isfinite(SPECIAL))
    z = clgrad.tensor([[0.3, -1.0], [2.0, 0.5]], dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: clgrad.nan_to_num(t.t()), (z,))


A = np.array([1.0, 1.0, np.inf, np.inf, np.nan, 0.0, 1e-9, 100.0])
B = np.array([1.0 + 1e-6, 1.1, np.inf, -np.inf, np.nan, 1e-9, 0.0, 100.001])


@pytest.mark.parametrize("kw", [{}, dict(rtol=0.2), dict(atol=1e-3, equal_nan=True),
                                dict(rtol=0.0, atol=0.0)])
def test_isclose_matches_numpy(kw):
    np.testing.assert_array_equal(clgrad.isclose(strided(A), strided(B), **kw).numpy(),
                                  np.isclose(A, B, **kw))
    assert clgrad.allclose(strided(A[:2]), strided(B[:2]), **kw) == np.allclose(A[:2], B[:2],
                                                                                 **kw)
    x = clgrad.tensor(A, dtype=clgrad.float64)
    assert x.allclose(x, equal_nan=True) and not x.allclose(x)
    np.testing.assert_array_equal(x.isclose(1.0).numpy(), np.isclose(A, 1.0))


def test_isclose_broadcasts_and_integers():
    a = clgrad.tensor([[1, 2, 3]])
    b = clgrad.tensor([[1], [3]])
    np.testing.assert_array_equal(clgrad.isclose(a, b).numpy(), [[1, 0, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="rtol"):
        clgrad.isclose(a, b, rtol=-1)


def test_equal():
    x = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert clgrad.equal(x, x.clone()) and x.equal(x.t().t())
    assert not clgrad.equal(x, x.t()) and not clgrad.equal(x, x[:1])
    n = clgrad.tensor([float("nan")])
    assert not clgrad.equal(n, n)
