"""clgrad.linalg's decompositions and solvers (clgrad/ops/decomp.py): inv, det, slogdet, logdet,
solve, cholesky, qr, eigh, eigvalsh, svd, svdvals, pinv, matrix_rank, lstsq, matrix_power with
n < 0, and their torch.* / Tensor.* faces. Oracles: NumPy float64 values and reconstructions
(A = QR, A = U S Vh, A V = V diag(w)), gradients by float64 central differences along random
directions (symmetric ones for the ops that read one triangle), batched inputs, the errors;
PyTorch itself where importable."""
import numpy as np
import pytest

import clgrad
from clgrad import linalg as LA

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.normal(size=shape)


def wellcond(*shape):
    """Square matrices with a dominant diagonal (invertible, well conditioned)."""
    n = shape[-1]
    return rand(*shape) + 3 * np.eye(n)


def spd(*shape):
    a = rand(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def sym(*shape):
    a = rand(*shape)
    return a + np.swapaxes(a, -1, -2)


def t64(a, grad=False):
    return clgrad.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def check_grad(f, a, symmetric=False, h=1e-6, rtol=1e-6, **kw):
    """The gradient of sum(W * f(A)) (W fixed random weights) against central differences
    along two random directions (symmetric ones where f reads one triangle)."""
    A = t64(a, grad=True)
    out = f(A)
    W = rand(*out.shape)
    (out * t64(W)).sum().backward()
    g = A.grad.numpy()
    for _ in range(2):
        E = rand(*a.shape)
        if symmetric:
            E = E + np.swapaxes(E, -1, -2)
        fp = (f(t64(a + h * E)).numpy() * W).sum()
        fm = (f(t64(a - h * E)).numpy() * W).sum()
        fd = (fp - fm) / (2 * h)
        np.testing.assert_allclose((g * E).sum(), fd, rtol=rtol, atol=1e-7, **kw)


# -- values against NumPy ---------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (2, 1, 5, 5)])
def test_inv_det_slogdet_values(shape):
    a = wellcond(*shape)
    a[..., 0, :] *= -1  # some negative determinants
    np.testing.assert_allclose(LA.inv(t64(a)).numpy(), np.linalg.inv(a), rtol=1e-10)
    np.testing.assert_allclose(clgrad.inverse(t64(a)).numpy(), np.linalg.inv(a), rtol=1e-10)
    np.testing.assert_allclose(t64(a).inverse().numpy(), np.linalg.inv(a), rtol=1e-10)
    for d in (LA.det(t64(a)), clgrad.det(t64(a)), t64(a).det()):
        assert d.shape == shape[:-2]
        np.testing.assert_allclose(d.numpy(), np.linalg.det(a), rtol=1e-10)
    s, ld = np.linalg.slogdet(a)
    res = LA.slogdet(t64(a))
    assert type(res).__name__ == "slogdet" and res._fields == ("sign", "logabsdet")
    np.testing.assert_array_equal(res.sign.numpy(), s)
    np.testing.assert_allclose(res.logabsdet.numpy(), ld, rtol=1e-10)
    np.testing.assert_allclose(clgrad.slogdet(t64(a)).logabsdet.numpy(), ld, rtol=1e-10)
    want = np.where(s < 0, np.nan, ld)
    np.testing.assert_allclose(clgrad.logdet(t64(a)).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(t64(a).logdet().numpy(), want, rtol=1e-10)


def test_float32_results_keep_the_dtype():
    a = wellcond(3, 3).astype(np.float32)
    for fn in (LA.inv, LA.det, LA.svdvals, LA.pinv, lambda t: LA.cholesky(t @ t.mT)):
        out = fn(clgrad.tensor(a))
        assert out.dtype is clgrad.float32
    np.testing.assert_allclose(LA.inv(clgrad.tensor(a)).numpy(), np.linalg.inv(a), rtol=1e-5)


def test_singular_det_and_slogdet():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert LA.det(t64(a)).item() == 0
    s, ld = LA.slogdet(t64(a))
    assert s.item() == 0 and ld.item() == -np.inf


@pytest.mark.parametrize("ashape,bshape", [((4, 4), (4, 2)), ((3, 4, 4), (3, 4, 1)),
                                           ((3, 4, 4), (4, 2)), ((4, 4), (2, 4, 3)),
                                           ((4, 4), (4,)), ((3, 4, 4), (3, 4))])
def test_solve_values(ashape, bshape):
    a, b = wellcond(*ashape), rand(*bshape)
    x = LA.solve(t64(a), t64(b)).numpy()
    if len(bshape) == 1 or bshape == ashape[:-1]:
        want = np.linalg.solve(a, b[..., None])[..., 0]
    else:
        want = np.linalg.solve(a, b)
    assert x.shape == want.shape
    np.testing.assert_allclose(x, want, rtol=1e-10, atol=1e-12)


def test_solve_left_false():
    a, b = wellcond(2, 4, 4), rand(2, 3, 4)
    x = LA.solve(t64(a), t64(b), left=False).numpy()
    np.testing.assert_allclose(x @ a, b, atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_cholesky_values(shape):
    a = spd(*shape)
    L = LA.cholesky(t64(a)).numpy()
    np.testing.assert_allclose(L, np.linalg.cholesky(a), rtol=1e-12)
    np.testing.assert_allclose(L @ np.swapaxes(L, -1, -2), a, rtol=1e-12)
    U = LA.cholesky(t64(a), upper=True).numpy()
    np.testing.assert_allclose(U, np.swapaxes(L, -1, -2), rtol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 5, 3)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_reconstructs(shape, mode):
    a = rand(*shape)
    Q, R = LA.qr(t64(a), mode)
    m, n = shape[-2:]
    k = min(m, n)
    r = R.numpy()
    assert np.allclose(np.tril(r, -1), 0)
    if mode == "r":
        assert Q.numel() == 0 and r.shape == shape[:-2] + (k, n)
        np.testing.assert_allclose(np.abs(r), np.abs(np.linalg.qr(a, mode="r")), rtol=1e-10)
        return
    q = Q.numpy()
    cols = k if mode == "reduced" else m
    assert q.shape == shape[:-2] + (m, cols) and r.shape == shape[:-2] + (cols, n)
    np.testing.assert_allclose(q @ r, a, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(cols),
                                                                          q.shape[:-2] +
                                                                          (cols, cols)),
                               atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 5), (2, 3, 3)])
@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigh_values(shape, UPLO):
    a = sym(*shape)
    tri = np.tril(a) if UPLO == "L" else np.triu(a)
    garbage = tri + (np.triu(rand(*shape), 1) if UPLO == "L" else np.tril(rand(*shape), -1))
    w, V = LA.eigh(t64(garbage), UPLO)
    w, v = w.numpy(), V.numpy()
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a), rtol=1e-10, atol=1e-12)
    assert np.all(np.diff(w, axis=-1) >= 0)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], atol=1e-10)
    np.testing.assert_allclose(LA.eigvalsh(t64(garbage), UPLO).numpy(), w, rtol=1e-12)
    assert LA.eigh(t64(a))._fields == ("eigenvalues", "eigenvectors")


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_reconstructs(shape, full):
    a = rand(*shape)
    U, S, Vh = LA.svd(t64(a), full_matrices=full)
    u, s, vh = U.numpy(), S.numpy(), Vh.numpy()
    m, n = shape[-2:]
    k = min(m, n)
    assert u.shape[-2:] == ((m, m) if full else (m, k))
    assert vh.shape[-2:] == ((n, n) if full else (k, n))
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a,
                               atol=1e-12)
    np.testing.assert_allclose(LA.svdvals(t64(a)).numpy(), s, rtol=1e-12)


def test_pinv_rank_lstsq():
    a = rand(2, 6, 4)
    np.testing.assert_allclose(LA.pinv(t64(a)).numpy(), np.linalg.pinv(a), rtol=1e-10)
    low = rand(6, 2) @ rand(2, 4)
    np.testing.assert_allclose(LA.pinv(t64(low)).numpy(), np.linalg.pinv(low), atol=1e-10)
    r = LA.matrix_rank(t64(np.stack([low, a[0]])))
    assert r.dtype is clgrad.int64 and r.tolist() == [2, 4]
    assert LA.matrix_rank(t64(low), atol=1e-3).item() == 2
    assert LA.matrix_rank(t64(np.diag([1.0, 1e-3, 1e-9])), rtol=1e-6).item() == 2
    b = rand(2, 6, 3)
    res = LA.lstsq(t64(a), t64(b))
    want = np.linalg.lstsq(a[0], b[0], rcond=None)
    np.testing.assert_allclose(res.solution.numpy()[0], want[0], rtol=1e-10)
    np.testing.assert_allclose(res.residuals.numpy()[0], want[1], rtol=1e-10)
    assert res.rank.tolist() == [4, 4]
    v = LA.lstsq(t64(a[0]), t64(b[0, :, 0])).solution
    np.testing.assert_allclose(v.numpy(), want[0][:, 0], rtol=1e-10)


def test_matrix_power_negative():
    a = wellcond(2, 3, 3)
    want = np.linalg.matrix_power(np.linalg.inv(a), 3)
    np.testing.assert_allclose(LA.matrix_power(t64(a), -3).numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(clgrad.matrix_power(t64(a), -1).numpy(), np.linalg.inv(a),
                               rtol=1e-10)
    check_grad(lambda A: LA.matrix_power(A, -2), a)


# -- gradients --------------------------------------------------------------------------------
def test_grad_inv_det_slogdet_logdet():
    a = wellcond(2, 3, 3)
    check_grad(LA.inv, a)
    check_grad(LA.det, a)
    check_grad(lambda A: LA.slogdet(A).logabsdet, a)
    check_grad(clgrad.logdet, spd(3, 3))


def test_grad_det_singular():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])
    check_grad(LA.det, a)


def test_grad_solve():
    a, b = wellcond(2, 3, 3), rand(2, 3, 2)
    check_grad(lambda A: LA.solve(A, t64(b)), a)
    check_grad(lambda B: LA.solve(t64(a), B), b)
    check_grad(lambda B: LA.solve(t64(a[0]), B), b)        # broadcast A: gB per batch
    check_grad(lambda A: LA.solve(A, t64(b)), a[0])        # broadcast A: gA summed
    check_grad(lambda A: LA.solve(A, t64(b[0, :, 0])), a[0])  # a vector
    c = rand(2, 3)
    check_grad(lambda A: LA.solve(A, t64(c), left=False), a[0])
    check_grad(lambda B: LA.solve(t64(a[0]), B, left=False), c)


@pytest.mark.parametrize("upper", [False, True])
def test_grad_cholesky(upper):
    check_grad(lambda A: LA.cholesky(A, upper=upper), spd(2, 4, 4), symmetric=True)


def test_grad_eigh():
    a = sym(2, 4, 4)
    check_grad(lambda A: LA.eigh(A).eigenvalues, a, symmetric=True)
    check_grad(LA.eigvalsh, a, symmetric=True)
    check_grad(lambda A: LA.eigh(A).eigenvectors ** 2, a, symmetric=True, rtol=1e-5)
    check_grad(lambda A: LA.eigh(A).eigenvalues + (LA.eigh(A).eigenvectors ** 2).sum(-2),
               a, symmetric=True, rtol=1e-5)


def test_grad_svdvals_pinv_lstsq():
    a = rand(2, 5, 3)
    check_grad(LA.svdvals, a)
    check_grad(lambda A: LA.svd(A).S, a)
    check_grad(LA.pinv, a, rtol=1e-5)
    check_grad(LA.pinv, rand(3, 5), rtol=1e-5)
    b = rand(5, 2)
    check_grad(lambda A: LA.lstsq(A, t64(b)).solution, a[0], rtol=1e-5)


def test_unimplemented_gradients_raise_at_backward():
    A = t64(rand(4, 3), grad=True)
    for out, name in ((LA.qr(A).Q, "qr"), (LA.qr(A).R, "qr"), (LA.svd(A).U, "svd"),
                      (LA.svd(A).Vh, "svd")):
        with pytest.raises(NotImplementedError, match=name):
            out.sum().backward()
    LA.svd(A).S.sum().backward()  # S alone is fine
    assert A.grad is not None


# -- errors -----------------------------------------------------------------------------------
def test_errors():
    sing = t64(np.array([[1.0, 2.0], [2.0, 4.0]]))
    assert issubclass(LA.LinAlgError, RuntimeError)
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.inv(sing)
    with pytest.raises(LA.LinAlgError, match=r"Batch element 1"):
        LA.inv(t64(np.stack([np.eye(2), sing.numpy()])))
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.solve(sing, t64(rand(2, 1)))
    with pytest.raises(LA.LinAlgError, match="minor of order 2 is not positive-definite"):
        LA.cholesky(t64(np.array([[1.0, 2.0], [2.0, 1.0]])))
    with pytest.raises(RuntimeError, match="square"):
        LA.inv(t64(rand(2, 3)))
    with pytest.raises(RuntimeError, match="square"):
        LA.det(t64(rand(2, 3)))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        LA.det(t64(rand(3)))
    with pytest.raises(RuntimeError, match="floating"):
        LA.inv(clgrad.tensor([[1, 2], [3, 4]]))
    if clgrad.default_device().fp16:  # (a device without cl_khr_fp16 has no float16)
        with pytest.raises(RuntimeError, match="Low precision"):
            LA.inv(clgrad.tensor(np.eye(2), dtype=clgrad.float16))
    with pytest.raises(ValueError, match="mode"):
        LA.qr(t64(rand(2, 2)), "bogus")
    with pytest.raises(RuntimeError, match="UPLO"):
        LA.eigh(t64(sym(2, 2)), "X")
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        LA.solve(t64(wellcond(3, 3)), t64(rand(4, 2)))
    with pytest.raises(TypeError, match="Tensor"):
        LA.inv(np.eye(2))


# -- PyTorch ----------------------------------------------------------------------------------
def test_against_pytorch():
    torch = pytest.importorskip("torch")
    a, b = wellcond(2, 4, 4), rand(2, 4, 3)
    s, r = spd(2, 4, 4), rand(5, 3)
    T = torch.tensor
    pairs = [
        (LA.inv(t64(a)), torch.linalg.inv(T(a))),
        (LA.det(t64(a)), torch.linalg.det(T(a))),
        (LA.slogdet(t64(a)).logabsdet, torch.linalg.slogdet(T(a)).logabsdet),
        (clgrad.logdet(t64(a)), torch.logdet(T(a))),
        (LA.solve(t64(a), t64(b)), torch.linalg.solve(T(a), T(b))),
        (LA.solve(t64(a), t64(b[..., 0])), torch.linalg.solve(T(a), T(b[..., 0]))),
        (LA.cholesky(t64(s)), torch.linalg.cholesky(T(s))),
        (LA.qr(t64(r)).R, torch.linalg.qr(T(r)).R),
        (LA.qr(t64(r), "complete").Q, torch.linalg.qr(T(r), "complete").Q),
        (LA.eigvalsh(t64(s)), torch.linalg.eigvalsh(T(s))),
        (LA.svdvals(t64(r)), torch.linalg.svdvals(T(r))),
        (LA.pinv(t64(r)), torch.linalg.pinv(T(r))),
        (LA.matrix_rank(t64(r)), torch.linalg.matrix_rank(T(r))),
        (LA.lstsq(t64(r), t64(rand(5, 2))).solution, None),
        (LA.matrix_power(t64(a), -2), torch.linalg.matrix_power(T(a), -2)),
    ]
    for got, want in pairs:
        if want is not None:
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)
    # gradients
    for f, tf, x in ((LA.inv, torch.linalg.inv, a), (LA.det, torch.linalg.det, a),
                     (LA.cholesky, torch.linalg.cholesky, s),
                     (lambda A: LA.eigh(A).eigenvectors ** 2,
                      lambda A: torch.linalg.eigh(A).eigenvectors ** 2, s),
                     (LA.svdvals, torch.linalg.svdvals, r), (LA.pinv, torch.linalg.pinv, r)):
        A = t64(x, grad=True)
        f(A).sum().backward()
        tA = T(x, requires_grad=True)
        tf(tA).sum().backward()
        np.testing.assert_allclose(A.grad.numpy(), tA.grad.numpy(), rtol=1e-7, atol=1e-10)
    with pytest.raises(torch.linalg.LinAlgError) as e:
        torch.linalg.cholesky(T([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(LA.LinAlgError) as c:
        LA.cholesky(t64([[1.0, 2.0], [2.0, 1.0]]))
    assert str(c.value) == str(e.value)


def test_spectral_and_nuclear_norms():
    a = rand(2, 4, 3)
    for ord in (2, -2, "nuc"):
        want = np.linalg.norm(a, ord, axis=(-2, -1))
        np.testing.assert_allclose(LA.matrix_norm(t64(a), ord).numpy(), want, rtol=1e-12)
        got = LA.matrix_norm(t64(np.moveaxis(a, 0, -1)), ord, dim=(0, 1), keepdim=True)
        assert got.shape == (1, 1, 2)
        np.testing.assert_allclose(got.numpy().ravel(), want, rtol=1e-12)
        check_grad(lambda A, ord=ord: LA.matrix_norm(A, ord), a)
    np.testing.assert_allclose(clgrad.norm(t64(a[0]), "nuc").item(),
                               np.linalg.norm(a[0], "nuc"), rtol=1e-12)
    np.testing.assert_allclose(t64(a).norm("nuc", dim=(1, 2)).numpy(),
                               np.linalg.norm(a, "nuc", axis=(1, 2)), rtol=1e-12)
    with pytest.raises(RuntimeError, match="2-tuple"):
        clgrad.norm(t64(a), "nuc")


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    a = wellcond(2, 4, 4) + rand(2, 4, 4)  # garbage in the other triangle: not read
    tri = np.triu(a) if upper else np.tril(a)
    if unit:
        tri = tri - np.diagonal(tri, 0, -2, -1)[..., None] * np.eye(4) + np.eye(4)
    b = rand(2, 4, 3) if left else rand(2, 3, 4)
    x = LA.solve_triangular(t64(a), t64(b), upper=upper, left=left, unitriangular=unit)
    np.testing.assert_allclose(tri @ x.numpy() if left else x.numpy() @ tri, b, atol=1e-12)
    A = t64(a, grad=True)
    LA.solve_triangular(A, t64(b), upper=upper, left=left, unitriangular=unit).sum().backward()
    g = A.grad.numpy()
    keep = np.triu(np.ones((4, 4)), 1 if unit else 0) if upper else np.tril(np.ones((4, 4)),
                                                                           -1 if unit else 0)
    assert np.all(g[..., keep == 0] == 0)  # the gradient lies in the triangle read
    check_grad(lambda A: LA.solve_triangular(A, t64(b), upper=upper, left=left,
                                             unitriangular=unit), a)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    s, b = spd(2, 4, 4), rand(2, 4, 2)
    L = np.linalg.cholesky(s)
    F = np.swapaxes(L, -1, -2) if upper else L
    x = clgrad.cholesky_solve(t64(b), t64(F), upper)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(s, b), rtol=1e-10)
    np.testing.assert_allclose(t64(b).cholesky_solve(t64(F), upper).numpy(), x.numpy())
    np.testing.assert_allclose(clgrad.cholesky_inverse(t64(F), upper).numpy(),
                               np.linalg.inv(s), rtol=1e-10)
    check_grad(lambda B: clgrad.cholesky_solve(B, t64(F), upper), b)
    check_grad(lambda F: clgrad.cholesky_solve(t64(b), F, upper), F)


def test_legacy_svd_pinverse():
    a = rand(2, 5, 3)
    U, S, V = clgrad.svd(t64(a))
    assert type(clgrad.svd(t64(a))).__name__ == "svd"
    np.testing.assert_allclose((U.numpy() * S.numpy()[..., None, :]) @ np.swapaxes(V.numpy(),
                                                                               -1, -2), a,
                               atol=1e-12)
    U, S, V = t64(a).svd(some=False)
    assert U.shape == (2, 5, 5) and V.shape == (2, 3, 3)
    U, S, V = clgrad.svd(t64(a), compute_uv=False)
    assert U.shape == (2, 5, 5) and not U.numpy().any() and V.shape == (2, 3, 3)
    np.testing.assert_allclose(clgrad.pinverse(t64(a)).numpy(), np.linalg.pinv(a), rtol=1e-10)
    np.testing.assert_allclose(t64(a).pinverse().numpy(), np.linalg.pinv(a), rtol=1e-10)


def test_legacy_and_triangular_against_pytorch():
    torch = pytest.importorskip("torch")
    a, s, b = rand(2, 5, 3), spd(2, 4, 4), rand(2, 4, 2)
    T = torch.tensor
    L = np.linalg.cholesky(s)
    pairs = [(clgrad.svd(t64(a)).S, torch.svd(T(a)).S),
             (clgrad.pinverse(t64(a)), torch.pinverse(T(a))),
             (clgrad.cholesky_solve(t64(b), t64(L)), torch.cholesky_solve(T(b), T(L))),
             (clgrad.cholesky_inverse(t64(L[0])), torch.cholesky_inverse(T(L[0]))),
             (LA.solve_triangular(t64(s), t64(b), upper=True),
              torch.linalg.solve_triangular(T(s), T(b), upper=True))]
    for got, want in pairs:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)
    A, tA = t64(s, grad=True), T(s, requires_grad=True)
    LA.solve_triangular(A, t64(b), upper=False).sum().backward()
    torch.linalg.solve_triangular(tA, T(b), upper=False).sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), tA.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_multi_dot_values_shapes_and_grad():
    A, B, C = RNG.standard_normal((2, 5)), RNG.standard_normal((5, 3)), RNG.standard_normal((3, 4))
    v, w = RNG.standard_normal(2), RNG.standard_normal(4)
    t = [clgrad.tensor(m, requires_grad=True) for m in (A, B, C)]
    out = LA.multi_dot(t)
    np.testing.assert_allclose(out.detach().numpy(), A @ B @ C, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(t[0].grad.numpy(), np.ones((2, 4)) @ (B @ C).T, rtol=1e-12)
    tv, tw = clgrad.tensor(v), clgrad.tensor(w)
    r = LA.multi_dot([tv, t[0].detach(), t[1].detach(), t[2].detach(), tw])
    assert r.shape == () and np.isclose(r.item(), v @ A @ B @ C @ w)
    assert LA.multi_dot((tv, t[0].detach())).shape == (5,)
    np.testing.assert_allclose(LA.multi_dot([t[1].detach(), t[2].detach(), tw]).numpy(),
                               B @ C @ w, rtol=1e-12)
    with pytest.raises(RuntimeError, match="at least 2"):
        LA.multi_dot([t[0]])
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        LA.multi_dot([t[0], t[2]])
    with pytest.raises(RuntimeError, match="must be 2D"):
        LA.multi_dot([t[0], tv, t[1]])


def test_inv_ex_info_and_values():
    A = np.array([[[2.0, 1.0], [1.0, 3.0]], [[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]]])
    inv, info = LA.inv_ex(clgrad.tensor(A))
    assert info.dtype is clgrad.int32 and info.numpy().tolist() == [0, 2, 1]
    np.testing.assert_allclose(inv.numpy()[0], np.linalg.inv(A[0]), rtol=1e-12)
    assert np.isnan(inv.numpy()[1:]).all()
    x = clgrad.tensor(A[0], requires_grad=True)
    inv0, info0 = LA.inv_ex(x)
    assert info0.shape == () and info0.item() == 0
    inv0.sum().backward()
    ai = np.linalg.inv(A[0])
    np.testing.assert_allclose(x.grad.numpy(), -ai.T @ np.ones((2, 2)) @ ai.T, rtol=1e-12)
    with pytest.raises(clgrad.linalg.LinAlgError, match="singular"):
        LA.inv_ex(clgrad.tensor(A), check_errors=True)
