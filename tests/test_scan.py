"""cumsum and cumprod against NumPy (float64) on strided views, integer promotion, gradients
by finite differences (cumprod with zeros), float32 accuracy of long running sums."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from strided import strided

OPS = [("cumsum", np.cumsum), ("cumprod", np.cumprod)]


@pytest.mark.parametrize("name,ref", OPS, ids=[o[0] for o in OPS])
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 5), 1),
                                       ((2, 3, 5), -1), ((2, 0, 3), 2), ((1, 257), 1)])
def test_scan_matches_numpy_on_strided_views(name, ref, shape, dim):
    a = np.random.default_rng(1).uniform(0.5, 1.5, shape) * np.where(
        np.random.default_rng(2).random(shape) < 0.3, -1, 1)
    x = strided(a)
    out = getattr(clgrad, name)(x, dim)
    np.testing.assert_allclose(out.numpy(), ref(a, axis=dim), rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(getattr(x, name)(dim).numpy(), ref(a, axis=dim), rtol=1e-13)


@pytest.mark.parametrize("name,ref", OPS, ids=[o[0] for o in OPS])
def test_integer_and_bool_scans_give_int64(name, ref):
    a = np.array([[3, -1, 2], [4, 0, 5]], dtype=np.int32)
    out = getattr(clgrad, name)(clgrad.tensor(a), 1)
    assert out.dtype is clgrad.int64 and out.tolist() == ref(a, axis=1).tolist()
    b = clgrad.tensor([True, False, True, True])
    assert clgrad.cumsum(b, 0).tolist() == [1, 1, 2, 3]
    f = getattr(clgrad, name)(clgrad.tensor(a), 0, dtype=clgrad.float64)
    assert f.dtype is clgrad.float64 and f.tolist() == ref(a, axis=0).tolist()
    assert getattr(clgrad, name)(clgrad.tensor(2.5), 0).item() == 2.5
    with pytest.raises(IndexError):
        getattr(clgrad, name)(clgrad.tensor(a), 2)


def test_gradients():
    a = np.array([[1.5, 0.0, -2.0, 0.5, 0.0], [1.0, 2.0, 3.0, 0.7, -0.2]])
    x = clgrad.tensor(a, dtype=clgrad.float64, requires_grad=True)
    assert gradcheck(lambda t: clgrad.cumsum(t.t(), 0), (x,))
    assert gradcheck(lambda t: clgrad.cumsum(t, 1)[:, ::2], (x,))
    assert gradcheck(lambda t: clgrad.cumprod(t, 1), (x,))  # zeros: one and two per row
    assert gradcheck(lambda t: clgrad.cumprod(t.t(), 0) * 3.0, (x,))
    clgrad.cumprod(x, 1).sum().backward()
    # hand values, row 1 of x = [1, 2, 3, .7, -.2]: d/dx0 sum_j prod_{k<=j} = 1 + 2 + 6 + 4.2 ...
    r = a[1]
    want0 = 1 + r[1] + r[1] * r[2] + r[1] * r[2] * r[3] + r[1] * r[2] * r[3] * r[4]
    assert x.grad[1, 0].item() == pytest.approx(want0, rel=1e-14)


def test_float32_cumsum_is_compensated():
    n = 100_000
    x = clgrad.full((n,), 0.1, dtype=clgrad.float32)
    got = clgrad.cumsum(x, 0).numpy().astype(np.float64)
    exact = np.arange(1, n + 1) * np.float64(np.float32(0.1))
    np.testing.assert_allclose(got, exact, rtol=2e-7)


def test_scans_match_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(5).normal(size=(3, 6))
    a[1, 2] = 0.0
    for name in ("cumsum", "cumprod"):
        t = torch.tensor(a, requires_grad=True)
        getattr(torch, name)(t, 1).pow(2).sum().backward()
        x = clgrad.tensor(a, dtype=clgrad.float64, requires_grad=True)
        (getattr(clgrad, name)(x, 1) ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
