"""Composite ops added for real programs (issue 22): addcmul, addcdiv, lerp, addmm, baddbmm,
addmv, mv, outer, var_mean, std_mean, broadcast_tensors, meshgrid, tile, repeat_interleave,
masked_select, logical_xor, erf, torch._assert, jit.annotate and the no-op flags -- against
PyTorch (forward and gradients) and float64 finite differences."""
import numpy as np
import pytest

import clgrad
from clgrad.autograd import gradcheck

torch = pytest.importorskip("torch")  # the oracle (not in the dev extra)

RNG = np.random.default_rng(0)


def _run(fn_c, fn_t, arrays):
    cs = [clgrad.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    oc, ot = fn_c(*cs), fn_t(*ts)
    np.testing.assert_allclose(oc.detach().numpy(), ot.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    r = RNG.standard_normal(tuple(ot.shape))
    (oc * clgrad.tensor(r)).sum().backward()
    (ot * torch.tensor(r)).sum().backward()
    for c, t in zip(cs, ts):
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)
    return cs


CASES = [
    ("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), [(3, 4), (3, 1), (4,)]),
    ("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c.abs() + 1, value=-2), [(3, 4), (3, 4), (4,)]),
    ("lerp", lambda m, a, b, c: m.lerp(a, b, c), [(3, 4), (3, 4), (3, 4)]),
    ("lerp_scalar", lambda m, a, b: m.lerp(a, b, 0.25), [(2, 5), (2, 5)]),
    ("addmm", lambda m, a, b, c: m.addmm(a, b, c, beta=0.5, alpha=2), [(4,), (2, 3), (3, 4)]),
    ("baddbmm", lambda m, a, b, c: m.baddbmm(a, b, c, alpha=-1), [(2, 3, 4), (2, 3, 5),
                                                                   (2, 5, 4)]),
    ("addmv", lambda m, a, b, c: m.addmv(a, b, c, beta=2), [(3,), (3, 4), (4,)]),
    ("mv", lambda m, a, b: m.mv(a, b), [(3, 4), (4,)]),
    ("outer", lambda m, a, b: m.outer(a, b), [(3,), (5,)]),
    ("tile", lambda m, a: m.tile(a, (2, 1, 3)), [(2, 3)]),
    ("repeat_interleave", lambda m, a: m.repeat_interleave(a, 3, dim=1), [(2, 3)]),
    ("erf", lambda m, a: m.erf(a), [(3, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_composites_match_torch_forward_and_grad(name, fn, shapes):
    arrays = [RNG.standard_normal(s) for s in shapes]
    _run(lambda *a: fn(clgrad, *a), lambda *a: fn(torch, *a), arrays)
    ins = tuple(clgrad.tensor(a, requires_grad=True) for a in arrays)
    assert gradcheck(lambda *a: fn(clgrad, *a), ins)


def test_inplace_and_method_forms():
    a, b, c = (RNG.standard_normal((3, 4)) for _ in range(3))
    x = clgrad.tensor(a.copy())
    assert x.addcmul_(clgrad.tensor(b), clgrad.tensor(c), value=2) is x
    np.testing.assert_allclose(x.numpy(), a + 2 * b * c, rtol=1e-14)
    x = clgrad.tensor(a.copy())
    x.lerp_(clgrad.tensor(b), 0.3)
    np.testing.assert_allclose(x.numpy(), a + 0.3 * (b - a), rtol=1e-14)
    x = clgrad.tensor(a.copy())
    x.addcdiv_(clgrad.tensor(b), clgrad.tensor(np.abs(c) + 1))
    np.testing.assert_allclose(x.numpy(), a + b / (np.abs(c) + 1), rtol=1e-14)
    np.testing.assert_allclose(clgrad.tensor(a[0]).ger(clgrad.tensor(b[0])).numpy(),
                               np.outer(a[0], b[0]), rtol=1e-14)
    # beta = 0 ignores NaN in input, as PyTorch
    out = clgrad.addmm(clgrad.full((2, 2), float("nan")), clgrad.ones(2, 3), clgrad.ones(3, 2),
                       beta=0)
    assert out.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    with pytest.raises(RuntimeError):
        clgrad.mv(clgrad.ones(2, 3), clgrad.ones(3, 1))
    with pytest.raises(RuntimeError):
        clgrad.outer(clgrad.ones(2, 3), clgrad.ones(3))


def test_var_mean_std_mean():
    a = RNG.standard_normal((4, 5))
    for fn in ("var_mean", "std_mean"):
        for kw in ({}, {"dim": 1}, {"dim": 0, "correction": 0, "keepdim": True}):
            c = getattr(clgrad, fn)(clgrad.tensor(a), **kw)
            t = getattr(torch, fn)(torch.tensor(a), **kw)
            for u, v in zip(c, t):
                np.testing.assert_allclose(u.numpy(), v.numpy(), rtol=1e-13)


def test_shape_helpers():
    a, b = clgrad.arange(3.0), clgrad.arange(2.0) * 10
    for indexing in ("ij", "xy"):
        c = clgrad.meshgrid(a, b, indexing=indexing)
        t = torch.meshgrid(torch.arange(3.0), torch.arange(2.0) * 10, indexing=indexing)
        for u, v in zip(c, t):
            assert u.tolist() == v.tolist()
    x, y = clgrad.broadcast_tensors(clgrad.ones(3, 1), clgrad.arange(4.0))
    assert tuple(x.shape) == tuple(y.shape) == (3, 4) and y.stride()[0] == 0
    i = np.array([[1, 2], [3, 4]])
    ci, ti = clgrad.tensor(i), torch.tensor(i)
    assert ci.repeat_interleave(2).tolist() == ti.repeat_interleave(2).tolist()
    assert clgrad.repeat_interleave(ci, clgrad.tensor([1, 2]), dim=0).tolist() == \
        torch.repeat_interleave(ti, torch.tensor([1, 2]), dim=0).tolist()
    assert clgrad.repeat_interleave(clgrad.tensor([2, 0, 1])).tolist() == \
        torch.repeat_interleave(torch.tensor([2, 0, 1])).tolist()
    assert clgrad.tile(ci, (2,)).tolist() == torch.tile(ti, (2,)).tolist()
    with pytest.raises(RuntimeError):
        clgrad.repeat_interleave(ci, clgrad.tensor([1, 2, 3]), dim=0)


def test_masked_select_logical_xor_erf_values():
    a = RNG.standard_normal((3, 4))
    m = np.array([True, False, True, True])
    xc = clgrad.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    oc, ot = xc.masked_select(clgrad.tensor(m)), xt.masked_select(torch.tensor(m))
    np.testing.assert_array_equal(oc.detach().numpy(), ot.detach().numpy())
    oc.sum().backward()
    ot.sum().backward()
    np.testing.assert_array_equal(xc.grad.numpy(), xt.grad.numpy())
    with pytest.raises(TypeError):
        clgrad.masked_select(clgrad.tensor(a), clgrad.tensor(m.astype(np.int64)))
    p, q = np.array([1, 0, 2, 0]), np.array([0, 0, 3, 1])
    assert clgrad.logical_xor(clgrad.tensor(p), clgrad.tensor(q)).tolist() == \
        torch.logical_xor(torch.tensor(p), torch.tensor(q)).tolist()
    v = np.array([-3.0, -0.5, 0.0, 1e-8, 0.7, 4.0])
    np.testing.assert_allclose(clgrad.erf(clgrad.tensor(v)).numpy(),
                               torch.erf(torch.tensor(v)).numpy(), rtol=1e-15, atol=1e-300)
    assert clgrad.erf(clgrad.tensor([0, 1])).dtype is clgrad.float32


def test_assert_annotate_and_flags():
    clgrad._assert(True, "fine")
    clgrad._assert(clgrad.tensor(True), "fine")
    with pytest.raises(AssertionError, match="boom"):
        clgrad._assert(False, "boom")
    assert clgrad.jit.annotate(list, []) == []
    old = clgrad.get_num_threads()
    clgrad.set_num_threads(2)
    assert clgrad.get_num_threads() == 2
    clgrad.set_num_threads(old)
    clgrad.use_deterministic_algorithms(True)
    assert clgrad.are_deterministic_algorithms_enabled() is True
    clgrad.use_deterministic_algorithms(False)
    clgrad.set_float32_matmul_precision("high")
    assert clgrad.get_float32_matmul_precision() == "high"
    clgrad.set_float32_matmul_precision("highest")
    with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
        clgrad.set_float32_matmul_precision("fast")  # (PyTorch's: no effect)
    assert clgrad.get_float32_matmul_precision() == "highest"
