"""linalg.matrix_exp (torch.matrix_exp, Tensor.matrix_exp), linalg.householder_product
(torch.orgqr, Tensor.orgqr) and nn.utils.parametrizations.orthogonal's "matrix_exp" and
"householder" maps.

Oracles: float64 NumPy written here (a Taylor series summed to convergence with scaling and
squaring; expm(S) = Q diag(exp(w)) Q^T for symmetric S; closed forms for nilpotent, diagonal
and rotation generators; the product of the H_i built one by one; Q R = A and Q^T Q = I for the
Q of geqrf's output), float64 central finite differences for gradients (and Fréchet
derivatives from the exp of the block matrix [[A^T, G], [0, A^T]]), and PyTorch 2.14 where
importable (skipped without it).
"""
import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
from clgrad.nn.utils import parametrizations as PZ


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy().astype(np.float64)


def _t(a, dtype=clgrad.float64, grad=False):
    return clgrad.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


# -- float64 NumPy references -----------------------------------------------------------------
def expm_taylor(a):
    """exp(a) of one matrix: scaled to a 1-norm <= 1/2, the Taylor series summed until a term
    no longer changes the sum, squared back."""
    a = np.asarray(a, dtype=np.float64)
    norm = np.abs(a).sum(axis=0).max()
    s = max(0, int(np.ceil(np.log2(norm / 0.5)))) if norm > 0 else 0
    x = a / 2.0 ** s
    total = np.eye(len(a))
    term = np.eye(len(a))
    for k in range(1, 200):
        term = term @ x / k
        if not np.any(np.abs(term) > 1e-18 * np.abs(total).max()):
            break
        total = total + term
    for _ in range(s):
        total = total @ total
    return total


def expm_ref(a):
    a = np.asarray(a, dtype=np.float64)
    flat = a.reshape((-1,) + a.shape[-2:])
    return np.stack([expm_taylor(m) for m in flat]).reshape(a.shape)


def householder_ref(a, tau):
    """H_1 ... H_k [:, :n] of one matrix, each H_i = I - tau_i v_i v_i^T built explicitly."""
    m, n = a.shape
    q = np.eye(m)
    for i in range(len(tau)):
        v = np.zeros(m)
        v[i] = 1.0
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q[:, :n]


def _geqrf(a):
    """LAPACK geqrf of one matrix (NumPy's qr mode 'raw' returns it transposed)."""
    h, tau = np.linalg.qr(a, mode="raw")
    return h.T.copy(), tau


def _fd_grad(f, a, w, eps=1e-6):
    """d sum(w * f(a)) / da by float64 central differences."""
    g = np.zeros_like(a)
    for idx in np.ndindex(*a.shape):
        ap, am = a.copy(), a.copy()
        ap[idx] += eps
        am[idx] -= eps
        g[idx] = (np.sum(w * f(ap)) - np.sum(w * f(am))) / (2 * eps)
    return g


_RNG = np.random.default_rng(2026)


# -- matrix_exp: values -----------------------------------------------------------------------
@pytest.mark.parametrize("scale", [0.01, 0.5, 3.0, 12.0, 60.0])
def test_matrix_exp_float64_against_the_taylor_series(scale):
    a = _RNG.standard_normal((3, 5, 5)) * scale / 5
    out = _np(clgrad.linalg.matrix_exp(_t(a)))
    ref = expm_ref(a)
    for o, r in zip(out, ref):
        assert np.abs(o - r).max() <= 1e-13 * max(1.0, np.abs(r).max()) * (1 + scale)


def test_matrix_exp_batch_of_different_norms_scales_each_matrix():
    """One batch holding norms 0.001 .. 40: each gets its own number of squarings (a scaling
    shared by the batch would square the small ones too often)."""
    a = np.stack([_RNG.standard_normal((4, 4)) * c for c in (0.001, 0.3, 4.0, 40.0)])
    out = _np(clgrad.matrix_exp(_t(a)))
    ref = expm_ref(a)
    for o, r in zip(out, ref):
        np.testing.assert_allclose(o, r, rtol=1e-12, atol=1e-13 * np.abs(r).max())


def test_matrix_exp_float32_against_the_taylor_series():
    a = (_RNG.standard_normal((4, 6, 6)) * np.array([0.05, 1.0, 3.0, 8.0])[:, None, None])
    a32 = a.astype(np.float32)
    out = clgrad.linalg.matrix_exp(_t(a32, clgrad.float32))
    assert out.dtype is clgrad.float32
    ref = expm_ref(a32.astype(np.float64))
    for o, r in zip(_np(out), ref):
        assert np.abs(o - r).max() <= 2e-5 * np.abs(r).max()


def test_matrix_exp_of_symmetric_matrices_by_eigendecomposition():
    b = _RNG.standard_normal((2, 6, 6))
    s = (b + np.swapaxes(b, -1, -2)) * 1.5
    w, q = np.linalg.eigh(s)
    ref = q @ (np.exp(w)[..., :, None] * np.swapaxes(q, -1, -2))
    out = _np(clgrad.linalg.matrix_exp(_t(s)))
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())


def test_matrix_exp_closed_forms():
    # nilpotent (strictly upper triangular): the series stops at N^3 / 3!
    N = np.triu(_RNG.standard_normal((4, 4)) * 3, 1)
    ref = np.eye(4) + N + N @ N / 2 + N @ N @ N / 6
    np.testing.assert_allclose(_np(clgrad.matrix_exp(_t(N))), ref, rtol=1e-13, atol=1e-13)
    # diagonal: exp of the diagonal
    d = np.array([-30.0, -1.0, 0.0, 0.5, 7.0])
    np.testing.assert_allclose(_np(_t(np.diag(d)).matrix_exp()), np.diag(np.exp(d)),
                               rtol=1e-13, atol=1e-300)
    # rotation generators: exp([[0, -t], [t, 0]]) = [[cos t, -sin t], [sin t, cos t]]
    ts = np.array([0.0, 0.3, 2.0, 25.0])
    gens = np.zeros((4, 2, 2))
    gens[:, 0, 1], gens[:, 1, 0] = -ts, ts
    ref = np.stack([[[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]] for t in ts])
    np.testing.assert_allclose(_np(clgrad.linalg.matrix_exp(_t(gens))), ref, atol=1e-13)
    # 1 x 1: exp; empty batches and 0 x 0 matrices keep their shape
    np.testing.assert_allclose(_np(clgrad.linalg.matrix_exp(_t([[[2.0]], [[-1.0]]]))),
                               np.exp([[[2.0]], [[-1.0]]]), rtol=1e-15)
    assert clgrad.linalg.matrix_exp(clgrad.zeros(0, 3, 3)).shape == (0, 3, 3)
    assert clgrad.linalg.matrix_exp(clgrad.zeros(2, 0, 0)).shape == (2, 0, 0)


def test_matrix_exp_nan_and_inf_give_nan_for_their_matrix_only():
    a = np.stack([np.eye(3), np.eye(3), np.eye(3)]) * 0.5
    a[0, 1, 2] = np.nan
    a[1, 0, 0] = np.inf
    out = _np(clgrad.linalg.matrix_exp(_t(a)))
    assert np.isnan(out[0]).all() and np.isnan(out[1]).all()
    np.testing.assert_allclose(out[2], np.eye(3) * np.exp(0.5), rtol=1e-14)


def test_matrix_exp_low_precision_computes_in_float32():
    a = _RNG.standard_normal((3, 3)) * 0.5
    for dt, tol in ((clgrad.float16, 2e-3), (clgrad.bfloat16, 1e-2)):  # ~ 2 ulps near 1
        if dt is clgrad.float16 and not clgrad.default_device().fp16:
            continue  # (this device has no float16)
        out = clgrad.linalg.matrix_exp(_t(a, dt))
        assert out.dtype is dt
        ref = expm_ref(_np(_t(a, dt).float()))  # the rounded input's exp
        np.testing.assert_allclose(_np(out.float()), ref, rtol=tol, atol=tol)


def test_matrix_exp_errors():
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are "
                                           "2 by 3 matrices"):
        clgrad.linalg.matrix_exp(clgrad.zeros(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        clgrad.linalg.matrix_exp(clgrad.zeros(3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got clgrad.int64"):
        clgrad.linalg.matrix_exp(clgrad.zeros(3, 3, dtype=clgrad.int64))
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        clgrad.linalg.matrix_exp([[1.0]])


# -- matrix_exp: gradients --------------------------------------------------------------------
@pytest.mark.parametrize("scale", [0.2, 2.0, 15.0])
def test_matrix_exp_gradient_against_finite_differences(scale):
    a = _RNG.standard_normal((2, 4, 4)) * scale / 4
    w = _RNG.standard_normal((2, 4, 4))
    x = _t(a, grad=True)
    (clgrad.linalg.matrix_exp(x) * _t(w)).sum().backward()
    fd = _fd_grad(expm_ref, a, w)
    np.testing.assert_allclose(_np(x.grad), fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())


def test_matrix_exp_gradient_is_the_block_matrix_frechet_derivative():
    """d<W, exp(A)>/dA = L(A^T, W), the top-right block of exp([[A^T, W], [0, A^T]]) (Mathias
    1996; PyTorch's backward_analytic_function_of_a_matrix)."""
    n = 5
    a = _RNG.standard_normal((n, n)) * 1.2
    w = _RNG.standard_normal((n, n))
    x = _t(a, grad=True)
    (clgrad.matrix_exp(x) * _t(w)).sum().backward()
    block = np.block([[a.T, w], [np.zeros((n, n)), a.T]])
    ref = expm_taylor(block)[:n, n:]
    np.testing.assert_allclose(_np(x.grad), ref, rtol=1e-11, atol=1e-12 * np.abs(ref).max())


def test_matrix_exp_float32_gradient():
    a = _RNG.standard_normal((4, 4)) * 0.7
    w = _RNG.standard_normal((4, 4))
    x = _t(a.astype(np.float32), clgrad.float32, grad=True)
    (x.matrix_exp() * _t(w, clgrad.float32)).sum().backward()
    a64 = a.astype(np.float32).astype(np.float64)
    ref = expm_taylor(np.block([[a64.T, w], [np.zeros((4, 4)), a64.T]]))[:4, 4:]
    np.testing.assert_allclose(_np(x.grad), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_matrix_exp_matches_pytorch():
    torch = _torch()
    a = _RNG.standard_normal((3, 6, 6)) * np.array([0.1, 2.0, 9.0])[:, None, None]
    w = _RNG.standard_normal((3, 6, 6))
    for np_dt, tdt, cdt, tol in ((np.float64, torch.float64, clgrad.float64, 1e-12),
                                 (np.float32, torch.float32, clgrad.float32, 3e-5)):
        ta = torch.tensor(a.astype(np_dt), requires_grad=True)
        (torch.matrix_exp(ta) * torch.tensor(w, dtype=tdt)).sum().backward()
        ca = _t(a.astype(np_dt), cdt, grad=True)
        out = clgrad.matrix_exp(ca)
        (out * _t(w, cdt)).sum().backward()
        tout = torch.linalg.matrix_exp(ta).detach().numpy().astype(np.float64)
        for o, r in zip(_np(out), tout):
            assert np.abs(o - r).max() <= tol * np.abs(r).max()
        for g, r in zip(_np(ca.grad), ta.grad.numpy().astype(np.float64)):
            assert np.abs(g - r).max() <= 10 * tol * np.abs(r).max()


# -- householder_product ----------------------------------------------------------------------
@pytest.mark.parametrize("m,n,k", [(5, 3, 3), (5, 3, 2), (4, 4, 4), (4, 4, 1), (6, 1, 1)])
def test_householder_product_against_the_reflections_built_one_by_one(m, n, k):
    a = _RNG.standard_normal((2, m, n))
    tau = _RNG.uniform(0.2, 1.8, (2, k))
    out = _np(clgrad.linalg.householder_product(_t(a), _t(tau)))
    assert out.shape == (2, m, n)
    for o, ai, ti in zip(out, a, tau):
        np.testing.assert_allclose(o, householder_ref(ai, ti), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("m,n", [(6, 4), (5, 5), (7, 1)])
def test_householder_product_of_geqrf_is_the_qr_q(m, n):
    """The Q of geqrf's output is orthonormal and Q R = A, R the upper triangle of the output
    (no LAPACK Q used: R = Q^T A)."""
    a = _RNG.standard_normal((m, n))
    h, tau = _geqrf(a)
    q = _np(clgrad.orgqr(_t(h), _t(tau)))
    r = np.triu(h[:n])
    np.testing.assert_allclose(q.T @ q, np.eye(n), atol=1e-14)
    np.testing.assert_allclose(q @ r, a, atol=1e-13)
    np.testing.assert_allclose(q.T @ a, r, atol=1e-13)
    q32 = _np(_t(h, clgrad.float32).orgqr(_t(tau, clgrad.float32)))
    np.testing.assert_allclose(q32, q, atol=1e-6)


def test_householder_product_without_reflections_is_the_identity():
    out = clgrad.linalg.householder_product(_t(_RNG.standard_normal((2, 4, 3))),
                                            _t(np.zeros((2, 0))))
    np.testing.assert_array_equal(_np(out), np.broadcast_to(np.eye(4, 3), (2, 4, 3)))


def test_householder_product_gradient_against_finite_differences():
    m, n, k = 5, 3, 2
    a = _RNG.standard_normal((m, n))
    tau = _RNG.uniform(0.5, 1.5, k)
    w = _RNG.standard_normal((m, n))
    x, t = _t(a, grad=True), _t(tau, grad=True)
    (clgrad.linalg.householder_product(x, t) * _t(w)).sum().backward()
    np.testing.assert_allclose(_np(x.grad), _fd_grad(lambda z: householder_ref(z, tau), a, w),
                               atol=1e-8)
    np.testing.assert_allclose(_np(t.grad), _fd_grad(lambda z: householder_ref(a, z), tau, w),
                               atol=1e-8)


def test_householder_product_errors_are_pytorchs():
    f = clgrad.linalg.householder_product
    cases = [((3, 4), (2,), "input.shape\\[-2\\] must be greater than or equal to "
                            "input.shape\\[-1\\]"),
             ((4, 3), (4,), "input.shape\\[-1\\] must be greater than or equal to "
                            "tau.shape\\[-1\\]"),
             ((4, 3), (2, 2), "Expected tau to have one dimension less than input, but got "
                              "tau.ndim equal to 2 and input.ndim is equal to 2"),
             ((2, 4, 3), (3, 2), "Expected batch dimensions of tau to be equal to "
                                 "input.shape\\[:-2\\], but got \\[3\\]"),
             ((4,), (2,), "input must have at least 2 dimensions")]
    for ash, tsh, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            f(clgrad.zeros(*ash), clgrad.zeros(*tsh))
    with pytest.raises(RuntimeError, match="tau dtype Double does not match input dtype "
                                           "Float"):
        f(clgrad.zeros(4, 3), clgrad.zeros(2, dtype=clgrad.float64))
    with pytest.raises(RuntimeError, match="expected a float32 or float64 input, got Long"):
        f(clgrad.zeros(4, 3, dtype=clgrad.int64), clgrad.zeros(2, dtype=clgrad.int64))
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        f(clgrad.zeros(4, 3), 2)


def test_householder_product_matches_pytorch():
    torch = _torch()
    a = _RNG.standard_normal((3, 6, 4))
    tau = _RNG.uniform(0.2, 1.8, (3, 3))
    w = _RNG.standard_normal((3, 6, 4))
    ta, tt = torch.tensor(a, requires_grad=True), torch.tensor(tau, requires_grad=True)
    (torch.linalg.householder_product(ta, tt) * torch.tensor(w)).sum().backward()
    ca, ct = _t(a, grad=True), _t(tau, grad=True)
    out = clgrad.linalg.householder_product(ca, ct)
    (out * _t(w)).sum().backward()
    np.testing.assert_allclose(_np(out), torch.orgqr(ta, tt).detach().numpy(), atol=1e-13)
    np.testing.assert_allclose(_np(ca.grad), ta.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(_np(ct.grad), tt.grad.numpy(), atol=1e-12)


# -- nn.utils.parametrizations.orthogonal -----------------------------------------------------
_SHAPES = [(5, 5), (6, 3), (3, 6)]
_MAPS = [None, "matrix_exp", "householder", "cayley"]


def _gram(q):
    return q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T


@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize("orthogonal_map", _MAPS)
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal_maps_stay_orthogonal_while_training(shape, orthogonal_map, triv):
    clgrad.manual_seed(3)
    lin = nn.Linear(shape[1], shape[0]).double()
    PZ.orthogonal(lin, orthogonal_map=orthogonal_map, use_trivialization=triv)
    default = "matrix_exp" if shape[0] == shape[1] else "householder"
    assert lin.parametrizations.weight[0].orthogonal_map.name == (orthogonal_map or default)
    k = min(shape)
    np.testing.assert_allclose(_gram(_np(lin.weight)), np.eye(k), atol=1e-12)
    x = clgrad.tensor(np.linspace(-1, 1, 2 * shape[1]).reshape(2, shape[1]))
    opt = clgrad.optim.SGD(lin.parameters(), lr=0.3)
    W_before = _np(lin.weight)
    for _ in range(3):
        opt.zero_grad()
        (lin(x) ** 2).sum().backward()
        opt.step()
    W = _np(lin.weight)
    assert np.abs(W - W_before).max() > 1e-3  # the steps moved it
    np.testing.assert_allclose(_gram(W), np.eye(k), atol=1e-12)


def test_orthogonal_matrix_exp_is_exp_of_the_skew_part():
    """Without trivialization, weight = expm(A), A = tril(X) - tril(X)^T (float64 Taylor)."""
    clgrad.manual_seed(4)
    lin = nn.Linear(4, 4).double()
    PZ.orthogonal(lin, orthogonal_map="matrix_exp", use_trivialization=False)
    X = _np(lin.parametrizations.weight.original)
    A = np.tril(X) - np.tril(X).T
    np.testing.assert_allclose(_np(lin.weight), expm_taylor(A), atol=1e-13)


def test_orthogonal_householder_assignment_stores_the_qr():
    """use_trivialization=False, householder: assigning W makes the weight the Q of W = Q R
    with diag(R) > 0 (R = Q^T W upper triangular with a positive diagonal)."""
    lin = nn.Linear(3, 5).double()
    PZ.orthogonal(lin, orthogonal_map="householder", use_trivialization=False)
    W = _RNG.standard_normal((5, 3))
    with clgrad.no_grad():
        lin.weight = _t(W)
    Q = _np(lin.weight)
    R = Q.T @ W
    np.testing.assert_allclose(_gram(Q), np.eye(3), atol=1e-13)
    np.testing.assert_allclose(np.tril(R, -1), 0, atol=1e-13)
    assert (np.diag(R) > 0).all()
    np.testing.assert_allclose(Q @ R, W, atol=1e-13)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        m = PZ.orthogonal(nn.Linear(3, 3).double(), orthogonal_map="matrix_exp",
                          use_trivialization=False)
        with clgrad.no_grad():
            m.weight = _t(np.eye(3))


@pytest.mark.parametrize("shape", _SHAPES)
@pytest.mark.parametrize("orthogonal_map", _MAPS)
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal_maps_match_pytorch(shape, orthogonal_map, triv):
    torch = _torch()
    torch.manual_seed(0)
    tl = torch.nn.Linear(shape[1], shape[0]).double()
    cl = nn.Linear(shape[1], shape[0]).double()
    with clgrad.no_grad():
        cl.weight.copy_(_t(tl.weight.detach().numpy()))
        cl.bias.copy_(_t(tl.bias.detach().numpy()))
    torch.nn.utils.parametrizations.orthogonal(tl, orthogonal_map=orthogonal_map,
                                               use_trivialization=triv)
    PZ.orthogonal(cl, orthogonal_map=orthogonal_map, use_trivialization=triv)
    sd = tl.state_dict()
    assert set(sd) == set(cl.state_dict())
    cl.load_state_dict({k: _t(v.numpy()) for k, v in sd.items()})  # base's random completion
    np.testing.assert_allclose(_np(cl.weight), tl.weight.detach().numpy(), atol=1e-13)
    bump = np.tril(np.full(tuple(sd["parametrizations.weight.original"].shape), 0.3))
    with torch.no_grad():
        tl.parametrizations.weight.original.add_(torch.tensor(bump))
    with clgrad.no_grad():
        cl.parametrizations.weight.original.add_(_t(bump))
    np.testing.assert_allclose(_np(cl.weight), tl.weight.detach().numpy(), atol=1e-13)
    w = _RNG.standard_normal(shape)
    (tl.weight * torch.tensor(w)).sum().backward()
    (cl.weight * _t(w)).sum().backward()
    np.testing.assert_allclose(_np(cl.parametrizations.weight.original.grad),
                               tl.parametrizations.weight.original.grad.numpy(), atol=1e-12)
    if triv and shape[0] != shape[1]:
        return  # assignment completes the basis with random columns
    if not triv and orthogonal_map != "householder" and \
            (orthogonal_map is not None or shape[0] == shape[1]):
        return  # NotImplementedError on both sides (tested above)
    W = _RNG.standard_normal(shape)
    with torch.no_grad():
        tl.weight = torch.tensor(W)
    with clgrad.no_grad():
        cl.weight = _t(W)
    np.testing.assert_allclose(_np(cl.weight), tl.weight.detach().numpy(), atol=1e-13)
