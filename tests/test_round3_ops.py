"""Ops added for real programs (issue 22): log1p, expm1, atan2, logsigmoid, diff, cummax,
cummin, median, kthvalue, nansum, nanmean, index_add -- forward and gradients against PyTorch
2.x (the installed torch), float64 finite differences, on non-contiguous inputs."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from strided import strided

torch = pytest.importorskip("torch")  # the oracle (not in the dev extra)

NAN = float("nan")


def t2c(t, **kw):
    """A clgrad copy of a torch tensor."""
    return clgrad.tensor(t.detach().numpy(), **kw)


def c2t(x, **kw):
    return torch.tensor(x.detach().numpy(), **kw)


def close(c, t, **kw):
    np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), **kw)


def both_grads(fn_c, fn_t, a, weight_seed=0):
    """Gradients of sum(fn(x) * R) in clgrad and in torch from the same float64 data."""
    xc = clgrad.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    oc, ot = fn_c(xc), fn_t(xt)
    r = np.random.default_rng(weight_seed).standard_normal(tuple(ot.shape))
    (oc * clgrad.tensor(r)).sum().backward()
    (ot * torch.tensor(r)).sum().backward()
    return oc, ot, xc.grad, xt.grad


# -- log1p, expm1, atan2 ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["log1p", "expm1"])
def test_log1p_expm1_accurate_for_small_x(name):
    a = np.array([1e-30, -1e-20, 1e-12, -3e-8, 1e-5, 0.25, -0.5, 3.0])
    for dt, np_dt, rtol in ((clgrad.float64, np.float64, 1e-14),
                            (clgrad.float32, np.float32, 2e-7)):
        x = clgrad.tensor(a.astype(np_dt), dtype=dt)
        out = getattr(clgrad, name)(x)
        ref = getattr(np, name)(a.astype(np.float64))
        np.testing.assert_allclose(out.numpy().astype(np.float64), ref, rtol=rtol * 4)
        assert out.dtype is dt
    # naive formulas would give 0 here: the point of the ops
    assert clgrad.log1p(clgrad.tensor([1e-10])).item() == pytest.approx(1e-10, rel=1e-6)
    assert clgrad.expm1(clgrad.tensor([1e-10])).item() == pytest.approx(1e-10, rel=1e-6)


@pytest.mark.parametrize("name", ["log1p", "expm1"])
def test_log1p_expm1_methods_views_ints_and_grad(name):
    a = np.random.default_rng(0).uniform(-0.9, 2.0, (3, 5))
    x = strided(a)
    np.testing.assert_allclose(getattr(x, name)().numpy(), getattr(np, name)(a), rtol=1e-13)
    i = clgrad.tensor([0, 1, 2])
    out = getattr(clgrad, name)(i)
    ref = getattr(torch, name)(torch.tensor([0, 1, 2]))
    assert out.dtype is clgrad.float32 and ref.dtype is torch.float32
    close(out, ref, rtol=1e-6)
    assert gradcheck(lambda t: getattr(clgrad, name)(t.t()),
                     (clgrad.tensor(a, requires_grad=True),))
    y = clgrad.tensor(a.copy())
    getattr(y, name + "_")()
    np.testing.assert_allclose(y.numpy(), getattr(np, name)(a), rtol=1e-13)


def test_atan2_against_torch_quadrants_broadcast_and_grad():
    y = np.array([[1.0, -1.0, 0.0, 2.0, -0.0, 3.0]])
    x = np.array([[0.5], [-2.0], [-1.0]])
    for fn in (clgrad.atan2, clgrad.arctan2):
        close(fn(clgrad.tensor(y), clgrad.tensor(x)),
              torch.atan2(torch.tensor(y), torch.tensor(x)), rtol=1e-14)
    close(clgrad.tensor(y).atan2(0.5), torch.tensor(y).atan2(torch.tensor(0.5)), rtol=1e-14)
    iy, ix = clgrad.tensor([1, -2]), clgrad.tensor([3, 3])
    assert clgrad.atan2(iy, ix).dtype is clgrad.float32
    a = np.random.default_rng(1).uniform(0.3, 2.0, (3, 4)) * [1, -1, 1, -1]
    b = np.random.default_rng(2).uniform(0.3, 2.0, (4,)) * [-1, 1, 1, -1]
    assert gradcheck(lambda p, q: clgrad.atan2(p.t(), q),
                     (clgrad.tensor(a.T.copy(), requires_grad=True),
                      clgrad.tensor(b, requires_grad=True)))
    pc, qc = clgrad.tensor(a, requires_grad=True), clgrad.tensor(b, requires_grad=True)
    pt, qt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    clgrad.atan2(pc, qc).sum().backward()
    torch.atan2(pt, qt).sum().backward()
    close(pc.grad, pt.grad, rtol=1e-13)
    close(qc.grad, qt.grad, rtol=1e-13)
    z = clgrad.tensor(a.copy())
    z.atan2_(clgrad.tensor(b))
    np.testing.assert_allclose(z.numpy(), np.arctan2(a, b), rtol=1e-14)


# -- logsigmoid -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logsigmoid_stable_and_matches_torch(dtype):
    a = np.array([-1000.0, -100.0, -30.0, -1.0, -1e-8, 0.0, 1e-8, 2.0, 30.0, 100.0, 1000.0])
    xc = clgrad.tensor(a, dtype=getattr(clgrad, dtype), requires_grad=True)
    xt = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True)
    oc, ot = F.logsigmoid(xc), torch.nn.functional.logsigmoid(xt)
    assert np.isfinite(oc.detach().numpy()).all()
    # float32: exp(-100) is a denormal (no relative precision there), hence the atol
    close(oc, ot, rtol=1e-6 if dtype == "float32" else 1e-14, atol=1e-38)
    oc.sum().backward()
    ot.sum().backward()
    close(xc.grad, xt.grad, rtol=1e-6 if dtype == "float32" else 1e-14, atol=1e-38)
    m = clgrad.nn.LogSigmoid()
    close(m(xc), ot, rtol=1e-6 if dtype == "float32" else 1e-14, atol=1e-38)
    assert repr(m) == "LogSigmoid()"


def test_logsigmoid_gradcheck_on_view():
    a = np.random.default_rng(3).uniform(-4, 4, (4, 3))
    assert gradcheck(lambda t: F.logsigmoid(t.t()), (clgrad.tensor(a, requires_grad=True),))
    with pytest.raises(TypeError):
        F.logsigmoid(clgrad.tensor([1, 2]))


# -- diff -----------------------------------------------------------------------------------
@pytest.mark.parametrize("n,dim", [(1, -1), (2, -1), (1, 0), (3, 1), (0, 1), (9, 1)])
def test_diff_matches_torch(n, dim):
    a = np.random.default_rng(4).standard_normal((4, 6))
    close(clgrad.diff(strided(a), n=n, dim=dim), torch.diff(torch.tensor(a), n=n, dim=dim),
          rtol=1e-13, atol=1e-13)
    oc, ot, gc, gt = both_grads(lambda x: x.diff(n, dim), lambda x: x.diff(n, dim), a)
    close(oc, ot, rtol=1e-13, atol=1e-13)
    close(gc, gt, rtol=1e-13, atol=1e-13)


def test_diff_prepend_append_bool_int_and_errors():
    a = np.arange(12.0).reshape(3, 4) ** 2
    p, q = np.array([[1.0], [2.0], [3.0]]), np.array([[5.0, 6.0], [7.0, 8.0], [9.0, 1.0]])
    got = clgrad.diff(clgrad.tensor(a), 2, 1, clgrad.tensor(p), clgrad.tensor(q))
    close(got, torch.diff(torch.tensor(a), 2, 1, torch.tensor(p), torch.tensor(q)))
    b = np.array([True, False, False, True, True])
    assert clgrad.diff(clgrad.tensor(b)).tolist() == torch.diff(torch.tensor(b)).tolist()
    i = np.array([3, 1, 4, 1, 5])
    out = clgrad.diff(clgrad.tensor(i))
    assert out.dtype is clgrad.int64 and out.tolist() == np.diff(i).tolist()
    xs = [clgrad.tensor(v, requires_grad=True) for v in (a, p, q)]
    assert gradcheck(lambda x, u, v: clgrad.diff(x, 1, 1, u, v), xs)
    with pytest.raises(RuntimeError):
        clgrad.diff(clgrad.tensor(1.0))
    with pytest.raises(RuntimeError):
        clgrad.diff(clgrad.tensor(a), prepend=clgrad.zeros(2, 1))
    with pytest.raises(TypeError):
        clgrad.diff(clgrad.tensor(a), prepend=1.0)


# -- cummax / cummin --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_ties_nan_and_dtypes_as_torch(name):
    rows = [[1.0, 3.0, 3.0, NAN, 2.0, NAN, 5.0], [2.0, 2.0, 0.0, 0.0, 7.0, -1.0, -1.0],
            [NAN, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]
    a = np.array(rows)
    for dim in (0, 1, -1):
        vc, ic = getattr(clgrad, name)(strided(a), dim)
        vt, it = getattr(torch, name)(torch.tensor(a), dim)
        close(vc, vt)
        assert ic.dtype is clgrad.int64 and ic.tolist() == it.tolist()
    for arr in (np.array([[3, 1, 3, 0, 5], [0, 0, 9, 9, 1]]),
                np.array([True, False, True, True])):
        vc, ic = getattr(clgrad.tensor(arr), name)(-1)
        vt, it = getattr(torch.tensor(arr), name)(-1)
        assert vc.tolist() == vt.tolist() and ic.tolist() == it.tolist()
    r = getattr(clgrad, name)(clgrad.tensor(2.5), 0)
    assert r.values.item() == 2.5 and r.indices.item() == 0 and type(r).__name__ == name
    assert getattr(clgrad, name)(clgrad.zeros(2, 0), 1).values.shape == (2, 0)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_gradients(name):
    a = np.random.default_rng(5).permutation(35).reshape(5, 7) * 0.3 - 4.0
    for dim in (0, 1):
        oc, ot, gc, gt = both_grads(lambda x: getattr(x, name)(dim).values,
                                    lambda x: getattr(x, name)(dim).values, a)
        close(gc, gt, rtol=1e-13)
    assert gradcheck(lambda x: getattr(clgrad, name)(x.t(), 1).values,
                     (clgrad.tensor(a, requires_grad=True),))
    # ties: the whole gradient of a run goes to its latest index (PyTorch)
    b = np.array([1.0, 1.0, 1.0, 0.5]) * (1 if name == "cummax" else -1)
    *_, gc, gt = both_grads(lambda x: getattr(x, name)(0).values,
                            lambda x: getattr(x, name)(0).values, b)
    close(gc, gt)


# -- median / kthvalue -----------------------------------------------------------------------
def test_median_global_lower_median_nan_and_gradient():
    for a in (np.array([3.0, 1.0, 4.0, 1.5]), np.array([[2.0, 9.0, -1.0], [7.0, 0.5, 3.0]]),
              np.array([1.0, 2.0, 2.0, 5.0]), np.array([1.0, NAN, 2.0]), np.array([4.0])):
        oc, ot, gc, gt = both_grads(clgrad.median, torch.median, a)
        close(oc, ot)
        assert oc.shape == ()
        close(gc, gt)
    assert clgrad.median(clgrad.tensor([3, 1, 2, 8])).item() == 2
    assert math.isnan(clgrad.median(clgrad.zeros(0)).item())


@pytest.mark.parametrize("keepdim", [False, True])
def test_median_kthvalue_with_dim_against_torch(keepdim):
    a = np.random.default_rng(6).permutation(60).reshape(3, 4, 5) * 0.5 - 7.0
    x = strided(a)
    for dim in (0, 1, 2, -1):
        vc, ic = clgrad.median(x, dim, keepdim)
        vt, it = torch.median(torch.tensor(a), dim, keepdim)
        close(vc, vt)
        assert ic.tolist() == it.tolist() and tuple(vc.shape) == tuple(vt.shape)
        for k in (1, 2, a.shape[dim]):
            r = x.kthvalue(k, dim, keepdim)
            rt = torch.tensor(a).kthvalue(k, dim, keepdim)
            close(r.values, rt.values)
            assert r.indices.tolist() == rt.indices.tolist()
            assert type(r).__name__ == "kthvalue"
    r = clgrad.median(x, 1)
    assert type(r).__name__ == "median" and r.values is r[0]


def test_median_kthvalue_nan_rows_and_ints():
    a = np.array([[1.0, NAN, 2.0, NAN, 0.0], [3.0, 1.0, 2.0, 5.0, 4.0]])
    vc, ic = clgrad.median(clgrad.tensor(a), 1)
    vt, it = torch.median(torch.tensor(a), 1)
    close(vc, vt)
    assert ic.tolist() == it.tolist()
    for k in (4, 5):
        r, rt = clgrad.tensor(a).kthvalue(k, 1), torch.tensor(a).kthvalue(k, 1)
        close(r.values, rt.values)
        assert r.indices.tolist() == rt.indices.tolist()
    i = np.array([[3, 1, 2], [7, 5, 6]])
    r, rt = clgrad.median(clgrad.tensor(i), 1), torch.median(torch.tensor(i), 1)
    assert r.values.tolist() == rt.values.tolist() and r.indices.tolist() == rt.indices.tolist()
    assert r.values.dtype is clgrad.int64


def test_median_kthvalue_gradients_and_errors():
    a = np.random.default_rng(7).permutation(20).reshape(4, 5) * 0.25
    for f_c, f_t in ((lambda x: x.median(1).values, lambda x: x.median(1).values),
                     (lambda x: x.kthvalue(2, 0).values, lambda x: x.kthvalue(2, 0).values),
                     (lambda x: x.median(), lambda x: x.median())):
        *_, gc, gt = both_grads(f_c, f_t, a)
        close(gc, gt)
    assert gradcheck(lambda x: clgrad.kthvalue(x.t(), 3, 1).values,
                     (clgrad.tensor(a, requires_grad=True),))
    with pytest.raises(RuntimeError):
        clgrad.kthvalue(clgrad.tensor(a), 6, 1)
    with pytest.raises(RuntimeError):
        clgrad.kthvalue(clgrad.tensor(a), 0, 1)
    with pytest.raises(IndexError):
        clgrad.median(clgrad.zeros(0, 3), 0)
    with pytest.raises(IndexError):
        clgrad.median(clgrad.tensor(a), 2)


# -- nansum / nanmean -------------------------------------------------------------------------
def test_nansum_nanmean_against_torch_with_grads():
    a = np.array([[1.0, NAN, 2.5, -1.0], [NAN, NAN, NAN, NAN], [0.5, 3.0, NAN, 4.0]])
    for name in ("nansum", "nanmean"):
        for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": (0, 1)}):
            oc, ot, gc, gt = both_grads(lambda x: getattr(clgrad, name)(x, **kw),
                                        lambda x: getattr(torch, name)(x, **kw), a)
            close(oc, ot)
            close(gc, gt)
        close(getattr(strided(a), name)(1), getattr(torch.tensor(a), name)(1))
    i = clgrad.tensor([1, 2, 3])
    assert clgrad.nansum(i).item() == 6 and clgrad.nansum(i).dtype is clgrad.int64
    with pytest.raises(RuntimeError):
        clgrad.nanmean(i)
    assert clgrad.nansum(clgrad.tensor([1.0, NAN]), dtype=clgrad.float64).dtype is \
        clgrad.float64


# -- index_add -------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_add_against_torch_with_repeats_alpha_and_grads(dim):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((4, 5))
    idx = [3, 0, 3] if dim == 0 else [4, 0, 4]
    shape = (3, 5) if dim == 0 else (4, 3)
    s = rng.standard_normal(shape)
    for alpha in (1, -2.5):
        xc, sc = clgrad.tensor(a, requires_grad=True), clgrad.tensor(s, requires_grad=True)
        xt, st = torch.tensor(a, requires_grad=True), torch.tensor(s, requires_grad=True)
        oc = clgrad.index_add(xc, dim, clgrad.tensor(idx), sc, alpha=alpha)
        ot = torch.index_add(xt, dim, torch.tensor(idx), st, alpha=alpha)
        close(oc, ot, rtol=1e-14)
        r = rng.standard_normal(ot.shape)
        (oc * clgrad.tensor(r)).sum().backward()
        (ot * torch.tensor(r)).sum().backward()
        close(xc.grad, xt.grad)
        close(sc.grad, st.grad, rtol=1e-14)
    assert gradcheck(lambda x, v: x.index_add(dim, clgrad.tensor(idx), v.t().t(), alpha=0.5),
                     (clgrad.tensor(a, requires_grad=True), clgrad.tensor(s, requires_grad=True)))


def test_index_add_inplace_views_and_errors():
    a = np.zeros((3, 4))
    x = clgrad.tensor(a.copy())
    src = strided(np.arange(8.0).reshape(2, 4))
    out = x.index_add_(0, clgrad.tensor([2, 2], dtype=clgrad.int32), src)
    assert out is x
    ref = torch.zeros(3, 4, dtype=torch.float64).index_add_(
        0, torch.tensor([2, 2]), torch.arange(8.0, dtype=torch.float64).reshape(2, 4))
    close(x, ref)
    leaf = clgrad.zeros(3, 4, dtype=clgrad.float64, requires_grad=True)
    s = clgrad.ones(2, 4, dtype=clgrad.float64, requires_grad=True)
    y = leaf * 2
    y.index_add_(0, clgrad.tensor([0, 1]), s)
    y.sum().backward()
    assert leaf.grad.tolist() == [[2.0] * 4] * 3 and s.grad.tolist() == [[1.0] * 4] * 2
    with pytest.raises(IndexError):
        clgrad.index_add(clgrad.tensor(a), 0, clgrad.tensor([3]), clgrad.ones(1, 4).double())
    with pytest.raises(RuntimeError):
        clgrad.index_add(clgrad.tensor(a), 0, clgrad.tensor([0]), clgrad.ones(1, 3).double())
    with pytest.raises(RuntimeError):
        clgrad.index_add(clgrad.tensor(a), 0, clgrad.tensor([0]), clgrad.ones(1, 4))
