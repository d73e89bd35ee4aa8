"""clgrad.linalg (vector_norm, matrix_norm, norm) and Tensor.norm: values against NumPy's
np.linalg.norm in float64, no overflow by scaling, gradients by float64 finite differences and
PyTorch's documented zero gradient where the norm is 0."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck
from strided import strided

INF = float("inf")
RNG = np.random.default_rng(12)
A = RNG.normal(size=(3, 4, 5))


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, INF, -INF, 0, -1])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_vector_norm_matches_numpy(ord, dim, keepdim):
    got = clgrad.linalg.vector_norm(strided(A), ord, dim, keepdim)
    axes = tuple(range(A.ndim)) if dim is None else dim if isinstance(dim, tuple) else (dim,)
    a = np.abs(A)
    if ord == INF:
        ref = a.max(axis=axes, keepdims=keepdim)
    elif ord == -INF:
        ref = a.min(axis=axes, keepdims=keepdim)
    elif ord == 0:
        ref = (A != 0).sum(axis=axes, keepdims=keepdim).astype(float)
    else:
        ref = (a ** ord).sum(axis=axes, keepdims=keepdim) ** (1.0 / ord)
    assert got.shape == np.shape(ref)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)


@pytest.mark.parametrize("dtype", [clgrad.float32, clgrad.float64])
def test_norm_does_not_overflow(dtype):
    big = 1e20 if dtype is clgrad.float32 else 1e200
    for fn in (clgrad.linalg.vector_norm, clgrad.norm, lambda t: t.norm(),
               lambda t: clgrad.linalg.norm(t)):
        got = fn(clgrad.tensor([big, big], dtype=dtype)).item()
        np.testing.assert_allclose(got, np.sqrt(2.0) * big, rtol=1e-6)
    tiny = 1e-30 if dtype is clgrad.float32 else 1e-300     # no underflow to 0 either
    got = clgrad.linalg.vector_norm(clgrad.tensor([tiny, tiny], dtype=dtype), 3).item()
    np.testing.assert_allclose(got, 2 ** (1 / 3) * tiny, rtol=1e-5)
    x = clgrad.tensor([INF, 1.0], dtype=dtype)
    assert clgrad.linalg.vector_norm(x).item() == INF
    assert np.isnan(clgrad.linalg.vector_norm(clgrad.tensor([float("nan"), 1.0])).item())
    assert clgrad.linalg.vector_norm(clgrad.zeros(0)).item() == 0


@pytest.mark.parametrize("ord", [2, 3, 1, INF])
def test_norm_gradient_is_zero_at_zero(ord):
    """PyTorch: 0, not nan, at an all-zero input and at a zero row among non-zero rows."""
    x = clgrad.zeros(2, 3, requires_grad=True)
    clgrad.linalg.vector_norm(x, ord).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))
    x = clgrad.tensor([[0.0, 0.0], [3.0, -4.0]], requires_grad=True)
    clgrad.linalg.vector_norm(x, ord, dim=1).sum().backward()
    a = np.array([3.0, -4.0])
    n = (np.abs(a) ** ord).sum() ** (1 / ord) if ord != INF else 4.0
    want = np.sign(a) * (np.abs(a) / n) ** (ord - 1) if ord != INF else [0, -1]
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0], want], rtol=1e-6)
    x = clgrad.zeros(3, requires_grad=True)
    x.norm().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


@pytest.mark.parametrize("ord", [2, 3, 1.5])
def test_norm_gradcheck(ord):
    leaf = clgrad.tensor(A[:2, :3].T.copy(), requires_grad=True)
    assert gradcheck(lambda t: clgrad.linalg.vector_norm(t.T, ord, dim=1), [leaf])
    assert gradcheck(lambda t: clgrad.linalg.vector_norm(t * 1e150, ord) * 1e-150, [leaf])


def test_matrix_norms_match_numpy():
    m = A[0]
    for ord in ["fro", 1, -1, INF, -INF, 2, -2, "nuc"]:
        got = clgrad.linalg.norm(strided(m), ord)
        np.testing.assert_allclose(got.numpy(), np.linalg.norm(m, ord), rtol=1e-12)
        got = clgrad.linalg.matrix_norm(strided(A), ord, dim=(2, 0), keepdim=True)
        ref = np.linalg.norm(A.transpose(1, 2, 0), ord, axis=(1, 2))
        assert got.shape == (1, 4, 1)
        np.testing.assert_allclose(got.numpy().reshape(4), ref, rtol=1e-12)
    np.testing.assert_allclose(clgrad.linalg.norm(strided(A)).numpy(), np.linalg.norm(A),
                               rtol=1e-12)
    np.testing.assert_allclose(clgrad.linalg.norm(strided(A), dim=(0, 1)).numpy(),
                               np.linalg.norm(A, axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(clgrad.norm(strided(A), "fro").numpy(), np.linalg.norm(A),
                               rtol=1e-12)


def test_norm_errors():
    m = clgrad.ones(2, 2)
    with pytest.raises(ValueError, match="'bad'"):
        clgrad.linalg.matrix_norm(m, "bad")
    with pytest.raises(ValueError, match="1D or 2D"):
        clgrad.linalg.norm(clgrad.ones(2, 2, 2), 2)
    with pytest.raises(ValueError, match="'bad'"):
        clgrad.norm(m, "bad")
    with pytest.raises(RuntimeError, match="floating point"):
        clgrad.linalg.vector_norm(clgrad.tensor([1, 2]))
    got = clgrad.linalg.vector_norm(clgrad.tensor([3, 4]), dtype=clgrad.float64)
    assert got.dtype == clgrad.float64 and got.item() == 5.0


def test_vector_norm_below_one_has_zero_gradient_at_zeros():
    """p < 1: d/dx_i of (sum |x|^p)^(1/p) is sign(x_i) |x_i|^(p-1) n^(1-p), whose 0 * inf at
    x_i = 0 is 0 (PyTorch's), not NaN. Hand values for p = 0.5, x = [0, 1, 4]: n = 9,
    grads 0, (1/1)^(-0.5)*... = sqrt(n)/sqrt(1) = 3, sqrt(9)/sqrt(4) = 1.5."""
    x = clgrad.tensor([0.0, 1.0, 4.0], requires_grad=True)
    clgrad.linalg.vector_norm(x, 0.5).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 3.0, 1.5], rtol=1e-6)
