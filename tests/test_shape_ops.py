"""NumPy-style shape ops and products (clgrad/ops/shaping.py, clgrad/ops/products.py).

Oracles: NumPy float64 (np.hstack, np.rot90, np.kron, np.tensordot, np.take_along_axis,
np.linalg.matrix_power, itertools ...) and hand formulas (cdist, renorm, diag_embed); gradients
by ``clgrad.autograd.gradcheck`` (float64 central differences, full Jacobian columns); PyTorch
itself where importable (values and gradients of the same calls, last section).
"""
import itertools
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from clgrad.errors import IndexRangeError

f64 = clgrad.float64
RNG = np.random.default_rng(0)


def T(a, dtype=f64, grad=False):
    return clgrad.tensor(np.asarray(a), dtype=dtype, requires_grad=grad)


def leaf(*shape):
    """A float64 leaf (non-contiguous: a transposed copy's transpose) requiring grad."""
    host = RNG.uniform(-2, 2, size=shape)
    if len(shape) >= 2:
        t = T(np.ascontiguousarray(np.swapaxes(host, 0, 1))).transpose(0, 1)
        return t.detach().requires_grad_()
    return T(host, grad=True)


def close(t, ref, tol=1e-10):
    np.testing.assert_allclose(t.detach().numpy(), ref, rtol=tol, atol=tol)


# -- stacking, splitting, atleast ------------------------------------------------------------
@pytest.mark.parametrize("name,shapes", [
    ("hstack", [(3,), (2,), ()]), ("hstack", [(2, 3), (2, 1)]),
    ("vstack", [(3,), (2, 3)]), ("row_stack", [(2, 3), (3,)]),
    ("dstack", [(3,), (3,)]), ("dstack", [(2, 3), (2, 3, 2)]),
    ("column_stack", [(3,), (3, 2), (3,)])])
def test_stacks_match_numpy(name, shapes):
    hosts = [RNG.standard_normal(s) for s in shapes]
    np_name = "vstack" if name == "row_stack" else name
    out = getattr(clgrad, name)([T(h) for h in hosts])
    close(out, getattr(np, np_name)(hosts))
    ts = [leaf(*s) if s else T(h, grad=True) for s, h in zip(shapes, hosts)]
    assert gradcheck(lambda *a: getattr(clgrad, name)(list(a)), ts)


def test_stacks_promote_and_refuse_empty():
    out = clgrad.hstack([T([1, 2], clgrad.int64), T([0.5], clgrad.float32)])
    assert out.dtype == clgrad.float32
    close(out, [1, 2, 0.5])
    for name in ("hstack", "vstack", "row_stack", "dstack", "column_stack"):
        with pytest.raises(RuntimeError, match="non-empty"):
            getattr(clgrad, name)([])
        with pytest.raises(TypeError):
            getattr(clgrad, name)(T([1.0]))


@pytest.mark.parametrize("name,shape,arg", [
    ("hsplit", (2, 6), 3), ("hsplit", (6,), 2), ("hsplit", (2, 6), [1, 4, 10]),
    ("hsplit", (2, 6), [4, 1]), ("vsplit", (4, 3), 2), ("vsplit", (4, 3), [1, 3]),
    ("dsplit", (2, 2, 4), 2), ("dsplit", (2, 2, 4), [3])])
def test_splits_are_views_matching_numpy(name, shape, arg):
    host = RNG.standard_normal(shape)
    x = T(host)
    parts = getattr(clgrad, name)(x, arg)
    parts_m = getattr(x, name)(arg)
    ref = getattr(np, name)(host, arg)
    assert len(parts) == len(ref) == len(parts_m)
    for p, pm, r in zip(parts, parts_m, ref):
        assert p._storage is x._storage and tuple(p.shape) == r.shape
        close(p, r)
        close(pm, r)
    g = leaf(*shape)
    assert gradcheck(lambda a: tuple(p * (i + 1) for i, p in enumerate(
        getattr(clgrad, name)(a, arg))), [g])


def test_split_errors():
    with pytest.raises(RuntimeError, match="not divisible"):
        clgrad.hsplit(T(np.ones((2, 4))), 3)
    with pytest.raises(RuntimeError, match="at least 1 dimension"):
        clgrad.hsplit(T(1.0), 1)
    with pytest.raises(RuntimeError, match="at least 2 dimension"):
        clgrad.vsplit(T(np.ones(4)), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimension"):
        clgrad.dsplit(T(np.ones((2, 4))), 2)
    with pytest.raises(TypeError, match="indices_or_sections"):
        clgrad.hsplit(T(np.ones(4)), 2.0)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_atleast_matches_numpy(n):
    fn, ref = getattr(clgrad, f"atleast_{n}d"), getattr(np, f"atleast_{n}d")
    for shape in [(), (3,), (2, 3), (2, 3, 4)]:
        host = RNG.standard_normal(shape)
        x = T(host)
        out = fn(x)
        assert out._storage is x._storage  # a view (or x itself)
        close(out, ref(host))
        if x.ndim >= n:
            assert out is x
    a, b = T(1.0), T([1.0, 2.0])
    for outs in (fn(a, b), fn([a, b]), fn((a, b))):
        assert isinstance(outs, tuple) and len(outs) == 2
        assert outs[0].shape == ref(np.float64(1)).shape
    with pytest.raises(TypeError):
        fn(a, np.ones(2))
    g = T(2.5, grad=True)
    fn(g).sum().backward()
    assert g.grad.item() == 1.0


# -- views -----------------------------------------------------------------------------------
def test_broadcast_to_is_a_stride0_view():
    x = T(RNG.standard_normal((3, 1)))
    y = clgrad.broadcast_to(x, (2, 3, 4))
    assert y._storage is x._storage and y.stride() == (0, 1, 0)
    close(y, np.broadcast_to(x.numpy(), (2, 3, 4)))
    assert x.broadcast_to((3, -1)).shape == (3, 1)
    with pytest.raises(RuntimeError):
        clgrad.broadcast_to(T(np.ones(3)), (2, 4))
    g = leaf(3, 1)
    assert gradcheck(lambda a: clgrad.broadcast_to(a, (2, 3, 4)), [g])


def test_swapaxes_swapdims_moveaxis_are_views():
    host = RNG.standard_normal((2, 3, 4))
    x = T(host)
    for out in (clgrad.swapaxes(x, 0, 2), clgrad.swapdims(x, 0, -1), x.swapaxes(0, 2),
                x.swapdims(2, 0)):
        assert out._storage is x._storage
        close(out, np.swapaxes(host, 0, 2))
    for out in (clgrad.moveaxis(x, 0, -1), x.moveaxis(0, 2), clgrad.movedim(x, 0, 2)):
        assert out._storage is x._storage
        close(out, np.moveaxis(host, 0, -1))
    close(clgrad.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(host, (0, 1), (2, 0)))
    g = leaf(2, 3, 4)
    assert gradcheck(lambda a: (clgrad.swapdims(a, 0, 2), clgrad.moveaxis(a, 0, 2)), [g])


# -- take, take_along_dim, index_fill --------------------------------------------------------
def test_take_matches_numpy_with_negative_indices():
    host = RNG.standard_normal((3, 4))
    idx = np.array([[0, -1, 5], [11, -12, 3]])
    out = clgrad.take(T(host), T(idx, clgrad.int64))
    close(out, np.take(host, idx))
    assert out.shape == (2, 3)
    close(T(host).take(T(idx, clgrad.int64)), np.take(host, idx))
    with pytest.raises(IndexError, match="take"):
        clgrad.take(T(host), T([12], clgrad.int64))
    with pytest.raises(IndexRangeError):
        clgrad.take(T(host), T([-13], clgrad.int64))
    with pytest.raises(RuntimeError, match="long"):
        clgrad.take(T(host), T([1], clgrad.int32))
    g = leaf(3, 4)
    assert gradcheck(lambda a: clgrad.take(a, T(idx, clgrad.int64)), [g])


def test_take_along_dim_matches_numpy():
    host = RNG.standard_normal((3, 4))
    idx = np.argsort(host, axis=1)
    x, i = T(host), T(idx, clgrad.int64)
    close(clgrad.take_along_dim(x, i, 1), np.take_along_axis(host, idx, 1))
    close(x.take_along_dim(i, dim=-1), np.take_along_axis(host, idx, 1))
    close(clgrad.take_along_dim(x, T([[5, 0]], clgrad.int64)), host.reshape(-1)[[5, 0]])
    # broadcasting of the dims but dim (NumPy's take_along_axis broadcasts too)
    h1, i1 = RNG.standard_normal((3, 1, 5)), np.array([[[0, 4]], [[1, 1]], [[2, 3]]])
    i1 = np.broadcast_to(i1, (3, 2, 2)).copy()
    out = clgrad.take_along_dim(T(h1), T(i1, clgrad.int64), 2)
    close(out, np.take_along_axis(np.broadcast_to(h1, (3, 2, 5)), i1, 2))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        clgrad.take_along_dim(x, T([0], clgrad.int64), 1)
    with pytest.raises(RuntimeError, match="Long"):
        clgrad.take_along_dim(x, T(idx, clgrad.int32), 1)
    g = leaf(3, 1, 5)
    assert gradcheck(lambda a: clgrad.take_along_dim(a, T(i1, clgrad.int64), 2), [g])


def test_index_fill_matches_hand_formula():
    host = RNG.standard_normal((3, 4))
    ref = host.copy()
    ref[:, [1, 3]] = -7.0
    x = T(host)
    close(clgrad.index_fill(x, 1, T([1, -1, 1], clgrad.int64), -7.0), ref)
    close(x.index_fill(1, T(3, clgrad.int64).reshape(()), -7.0)[:, 3], [-7.0] * 3)
    close(x, host)  # out-of-place
    xi = T(np.arange(6).reshape(3, 2), clgrad.int64)
    out = xi.index_fill(0, T([1], clgrad.int64), 5.7)
    assert out.dtype == clgrad.int64 and out.numpy().tolist() == [[0, 1], [5, 5], [4, 5]]
    # in place: returns self, writes through
    y = T(host.copy())
    assert y.index_fill_(1, T([1, 3], clgrad.int64), -7.0) is y
    close(y, ref)
    # gradients: input (zero where filled) and a 0-dim value tensor (the sum over the fill)
    a, v = leaf(3, 4), T(0.5, grad=True)
    assert gradcheck(lambda a, v: clgrad.index_fill(a, 1, T([1, 3, 1], clgrad.int64), v),
                     [a, v])
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_fill(1, T([4], clgrad.int64), 0.0)
    with pytest.raises(IndexError, match="int64"):
        x.index_fill(1, T([1], clgrad.int32), 0.0)
    with pytest.raises(RuntimeError, match="vector/scalar"):
        x.index_fill(1, T([[1]], clgrad.int64), 0.0)
    with pytest.raises(RuntimeError, match="0-dimensional value"):
        x.index_fill(1, T([1], clgrad.int64), T([1.0]))


# -- flips, rotations -----------------------------------------------------------------------
def test_rot90_flips_match_numpy():
    host = RNG.standard_normal((2, 3, 4))
    x = T(host)
    for k in range(-5, 6):
        for dims in ((0, 1), (1, 2), (2, 0), (-1, -2)):
            close(clgrad.rot90(x, k, dims), np.rot90(host, k, dims))
    close(x.rot90(), np.rot90(host))
    close(clgrad.fliplr(x), np.fliplr(host))
    close(x.flipud(), np.flipud(host))
    with pytest.raises(RuntimeError, match="total rotation dims == 2"):
        clgrad.rot90(x, 1, [0, 1, 2])
    with pytest.raises(RuntimeError, match="different"):
        clgrad.rot90(x, 1, [0, 0])
    with pytest.raises(RuntimeError, match="total dims >= 2"):
        clgrad.rot90(T(np.ones(3)))
    with pytest.raises(RuntimeError, match=">= 2-d"):
        clgrad.fliplr(T(np.ones(3)))
    with pytest.raises(RuntimeError, match=">= 1-d"):
        clgrad.flipud(T(1.0))
    g = leaf(2, 3)
    assert gradcheck(lambda a: (clgrad.rot90(a, 1), clgrad.rot90(a, -1, (1, 0)),
                                clgrad.fliplr(a), clgrad.flipud(a)), [g])


# -- diagonals and blocks --------------------------------------------------------------------
def _diag_embed_ref(a, offset, d1, d2):
    n = a.shape[-1] + abs(offset)
    nd = a.ndim + 1
    d1, d2 = d1 % nd, d2 % nd
    lead = list(a.shape[:-1])
    shape = [n if i in (d1, d2) else lead.pop(0) for i in range(nd)]
    out = np.zeros(shape)
    for idx in np.ndindex(*a.shape):
        *b, k = idx
        r, c = (k, k + offset) if offset >= 0 else (k - offset, k)
        full = []
        bi = iter(b)
        for i in range(nd):
            full.append(r if i == d1 else c if i == d2 else next(bi))
        out[tuple(full)] = a[idx]
    return out


@pytest.mark.parametrize("shape,offset,d1,d2", [((3,), 0, -2, -1), ((2, 3), 1, 0, 2),
                                                ((2, 3), -2, -1, 0), ((2, 2, 3), 0, 1, 3)])
def test_diag_embed_matches_hand_formula(shape, offset, d1, d2):
    host = RNG.standard_normal(shape)
    out = clgrad.diag_embed(T(host), offset, d1, d2)
    close(out, _diag_embed_ref(host, offset, d1, d2))
    close(T(host).diag_embed(offset, d1, d2), _diag_embed_ref(host, offset, d1, d2))
    assert gradcheck(lambda a: clgrad.diag_embed(a, offset, d1, d2), [leaf(*shape)])


def test_diag_embed_errors():
    with pytest.raises(RuntimeError, match="identical"):
        clgrad.diag_embed(T(np.ones(3)), 0, 0, 0)


def test_trace():
    host = RNG.standard_normal((3, 4))
    close(clgrad.trace(T(host)), np.trace(host))
    out = T(np.arange(9).reshape(3, 3), clgrad.int64).trace()
    assert out.dtype == clgrad.int64 and out.item() == 12
    with pytest.raises(RuntimeError, match="expected a matrix"):
        clgrad.trace(T(np.ones(3)))
    assert gradcheck(clgrad.trace, [leaf(3, 4)])


def test_block_diag():
    a, b, c = RNG.standard_normal((2, 3)), RNG.standard_normal(2), np.float64(4.0)
    ref = np.zeros((4, 6))
    ref[:2, :3], ref[2, 3:5], ref[3, 5] = a, b, c
    close(clgrad.block_diag(T(a), T(b), T(c)), ref)
    mixed = clgrad.block_diag(T([[1]], clgrad.int64), T([2.0], clgrad.float32))
    assert mixed.dtype == clgrad.float32 and mixed.numpy().tolist() == [[1, 0], [0, 2]]
    empty = clgrad.block_diag()
    assert empty.shape == (1, 0) and empty.dtype == clgrad.float32
    close(clgrad.block_diag(T(np.ones((2, 0))), T(a)), np.block(
        [[np.zeros((2, 0)), np.zeros((2, 3))], [np.zeros((2, 0)), a]]))
    with pytest.raises(RuntimeError, match="2 or fewer dimensions"):
        clgrad.block_diag(T(np.ones((1, 1, 1))))
    assert gradcheck(lambda x, y: clgrad.block_diag(x, y), [leaf(2, 3), leaf(2)])


def test_kron_matches_numpy():
    for sa, sb in [((2, 3), (3, 2)), ((3,), (2, 2)), ((2, 1, 2), (2, 3)), ((), (2,))]:
        a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
        close(clgrad.kron(T(a), T(b)), np.kron(a, b))
        close(T(a).kron(T(b)), np.kron(a, b))
    out = clgrad.kron(T([1, 2], clgrad.int32), T([[1.5]], clgrad.float32))
    assert out.dtype == clgrad.float32
    assert gradcheck(clgrad.kron, [leaf(2, 3), leaf(3, 2)])


@pytest.mark.parametrize("sa,sb,dims", [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 2), 1),
                                        ((2, 3), (4,), 0), ((3, 4, 5), (4, 3, 2), ([0, 1], [1, 0])),
                                        ((2, 3), (3, 2), ([1], [0])), ((2, 3), (2, 3), 2)])
def test_tensordot_matches_numpy(sa, sb, dims):
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    close(clgrad.tensordot(T(a), T(b), dims), np.tensordot(a, b, dims))
    assert gradcheck(lambda x, y: clgrad.tensordot(x, y, dims), [leaf(*sa), leaf(*sb)])


def test_tensordot_errors():
    a = T(np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="same dtype"):
        clgrad.tensordot(a, T(np.ones((3, 2)), clgrad.float32), 1)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        clgrad.tensordot(a, T(np.ones((4, 2))), 1)
    with pytest.raises(RuntimeError, match="dims >= 0"):
        clgrad.tensordot(a, a, -1)
    with pytest.raises(RuntimeError, match="ndim_a"):
        clgrad.tensordot(a, a, 3)


# -- index sets ------------------------------------------------------------------------------
def test_cartesian_prod_and_combinations():
    a, b, c = [1.0, 2.0], [3.0, 4.0, 5.0], [6.0]
    out = clgrad.cartesian_prod(T(a), T(b), T(c))
    close(out, np.array(list(itertools.product(a, b, c))))
    x = T(a)
    assert clgrad.cartesian_prod(x) is x
    with pytest.raises(RuntimeError, match="1D vector"):
        clgrad.cartesian_prod(T(np.ones((2, 2))), x)
    v = [0.5, -1.0, 2.0, 3.5]
    for r in range(0, 6):
        for rep in (False, True):
            out = clgrad.combinations(T(v), r, rep)
            gen = itertools.combinations_with_replacement if rep else itertools.combinations
            ref = np.array(list(gen(v, r))).reshape(-1, r) if r else np.zeros(0)
            assert tuple(out.shape) == ref.shape
            close(out, ref)
    with pytest.raises(RuntimeError, match="1D vector"):
        clgrad.combinations(T(np.ones((2, 2))))
    with pytest.raises(RuntimeError, match="non-negative"):
        clgrad.combinations(T(v), -1)
    assert gradcheck(lambda p, q: clgrad.cartesian_prod(p, q), [leaf(2), leaf(3)])
    assert gradcheck(lambda p: clgrad.combinations(p, 3, True), [leaf(3)])


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (3, 4, -1), (4, 3, 2), (0, 3, 0),
                                            (3, 5, -5), (2, 2, 9)])
def test_tri_indices_match_numpy(row, col, offset):
    for name in ("tril_indices", "triu_indices"):
        out = getattr(clgrad, name)(row, col, offset)
        ref = np.stack(getattr(np, name)(row, offset, col)).reshape(2, -1) if row else \
            np.zeros((2, 0))
        assert out.dtype == clgrad.int64 and tuple(out.shape) == ref.shape
        np.testing.assert_array_equal(out.numpy(), ref)
    out = clgrad.tril_indices(3, 3, dtype=clgrad.int32, device="cpu")
    # (where "cpu" names an OpenCL CPU device; a GPU-only machine maps it as every factory)
    assert out.dtype == clgrad.int32 and out.device == clgrad.zeros(1, device="cpu").device
    with pytest.raises(RuntimeError, match="not implemented"):
        clgrad.triu_indices(3, 3, dtype=clgrad.float32)


# -- distances and norms ---------------------------------------------------------------------
def _cdist_ref(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(float)
    if p == math.inf:
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("p", [0, 1, 2, math.inf, 3, 0.5, 1.5])
def test_cdist_matches_hand_formula(p):
    a, b = RNG.standard_normal((2, 1, 4, 3)), RNG.standard_normal((3, 5, 3))
    close(clgrad.cdist(T(a), T(b), p), _cdist_ref(a, b, p), 1e-9)
    if p != 0:
        assert gradcheck(lambda x, y: clgrad.cdist(x, y, p), [leaf(3, 2), leaf(4, 2)])


def test_cdist_gradients_at_zero_differences_and_ties():
    """p < 1: 0 (not NaN) where a coordinate difference is 0; p = inf: sign(diff) at each tied
    maximum (PyTorch's cdist backward, hand-computed here)."""
    a = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]])
    b = np.array([[0.0, 1.0, 3.0], [1.0, 1.0, 1.0]])
    x, y = T(a, grad=True), T(b, grad=True)
    clgrad.cdist(x, y, 0.5).sum().backward()
    assert np.isfinite(x.grad.numpy()).all() and x.grad.numpy()[0, 1] == 0.0
    np.testing.assert_allclose(x.grad.numpy()[:, 1], 0.0)
    x, y = T(a, grad=True), T(b, grad=True)
    clgrad.cdist(x, y, math.inf).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[-1, 0, 0], [0, 0, -1]])
    np.testing.assert_allclose(y.grad.numpy(), [[0, 0, 2], [1, 0, -1]])


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist_if_necessary",
                                  "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"])
def test_cdist_euclid_modes(mode):
    a, b = RNG.standard_normal((30, 4)), RNG.standard_normal((2, 4))  # P > 25: mm
    out = clgrad.cdist(T(a), T(b), compute_mode=mode)
    close(out, _cdist_ref(a, b, 2), 1e-9)
    x, y = leaf(3, 2), leaf(27, 2)
    assert gradcheck(lambda x, y: clgrad.cdist(x, y, compute_mode=mode), [x, y])
    # the matmul form: gradient 0 (not NaN) at a zero distance (PyTorch's clamp at 1e-30)
    z = T(np.ones((2, 3)), grad=True)
    clgrad.cdist(z, T(np.ones((1, 3))), compute_mode="use_mm_for_euclid_dist").sum().backward()
    assert np.isfinite(z.grad.numpy()).all()


def test_cdist_dtypes_and_errors():
    a = RNG.standard_normal((4, 3))
    out = clgrad.cdist(T(a, clgrad.float32), T(a, clgrad.float32))
    assert out.dtype == clgrad.float32
    close(out, _cdist_ref(a, a, 2), 1e-5)
    outb = clgrad.cdist(T(a, clgrad.bfloat16), T(a, clgrad.bfloat16))
    assert outb.dtype == clgrad.bfloat16
    np.testing.assert_allclose(outb.float().numpy(), _cdist_ref(a, a, 2), atol=0.05, rtol=0.02)
    with pytest.raises(RuntimeError, match="at least 2D"):
        clgrad.cdist(T(np.ones(3)), T(np.ones(3)))
    with pytest.raises(RuntimeError, match="same number of columns"):
        clgrad.cdist(T(np.ones((2, 3))), T(np.ones((2, 4))))
    with pytest.raises(RuntimeError, match="non-negative p"):
        clgrad.cdist(T(a), T(a), -1)
    with pytest.raises(RuntimeError, match="floating-point"):
        clgrad.cdist(T(a, clgrad.int64), T(a, clgrad.int64))
    with pytest.raises(ValueError, match="compute_mode"):
        clgrad.cdist(T(a), T(a), compute_mode="x")
    with pytest.raises(RuntimeError, match="same dtype"):
        clgrad.cdist(T(a), T(a, clgrad.float32))


def test_dist():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    for p in (2, 1, 0, math.inf, -math.inf, 3.5):
        d = np.abs(a - b).ravel()
        ref = ((d != 0).sum() if p == 0 else d.max() if p == math.inf else d.min()
               if p == -math.inf else (d ** p).sum() ** (1 / p))
        close(clgrad.dist(T(a), T(b), p), ref)
        close(T(a).dist(T(b), p), ref)
    with pytest.raises(RuntimeError, match="floating point"):
        clgrad.dist(T([1], clgrad.int64), T([2], clgrad.int64))
    assert gradcheck(lambda x, y: clgrad.dist(x, y, 3), [leaf(2, 3), leaf(3)])


def test_renorm():
    host = RNG.standard_normal((3, 4, 2))
    for p, dim, maxnorm in ((2, 0, 1.5), (1, 1, 2.0), (3, -1, 0.5), (2, 0, 100.0)):
        axes = tuple(i for i in range(3) if i != dim % 3)
        n = (np.abs(host) ** p).sum(axes, keepdims=True) ** (1 / p)
        ref = host * np.where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)
        close(clgrad.renorm(T(host), p, dim, maxnorm), ref)
        close(T(host).renorm(p, dim, maxnorm), ref)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        clgrad.renorm(T(np.ones(3)), 2, 0, 1)
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        clgrad.renorm(T(host), 0, 0, 1)
    with pytest.raises(RuntimeError, match="maxnorm"):
        clgrad.renorm(T(host), 2, 0, -1)
    assert gradcheck(lambda x: clgrad.renorm(x, 2, 1, 1.0), [leaf(3, 4)])


# -- fused products --------------------------------------------------------------------------
def test_addr():
    m, u, v = RNG.standard_normal((3, 4)), RNG.standard_normal(3), RNG.standard_normal(4)
    close(clgrad.addr(T(m), T(u), T(v), beta=0.5, alpha=-2), 0.5 * m - 2 * np.outer(u, v))
    close(T(m).addr(T(u), T(v)), m + np.outer(u, v))
    close(clgrad.addr(T(v), T(u), T(v)), v + np.outer(u, v))  # broadcast input
    nan = T(np.full((3, 4), np.nan))
    close(clgrad.addr(nan, T(u), T(v), beta=0), np.outer(u, v))
    y = T(m.copy())
    assert y.addr_(T(u), T(v)) is y
    close(y, m + np.outer(u, v))
    i = T(np.ones((2, 2)), clgrad.int64)
    assert clgrad.addr(i, T([1, 2], clgrad.int64), T([3, 4], clgrad.int64)).dtype == clgrad.int64
    with pytest.raises(RuntimeError, match="floating point number"):
        clgrad.addr(i, T([1, 2], clgrad.int64), T([3, 4], clgrad.int64), beta=1.5)
    with pytest.raises(RuntimeError, match="1-D argument vec1"):
        clgrad.addr(T(m), T(m), T(v))
    assert gradcheck(lambda a, b, c: clgrad.addr(a, b, c, beta=0.5, alpha=2),
                     [leaf(3, 4), leaf(3), leaf(4)])


def test_addbmm():
    m, b1, b2 = (RNG.standard_normal(s) for s in ((3, 5), (4, 3, 2), (4, 2, 5)))
    ref = 0.5 * m + 2 * np.einsum("bij,bjk->ik", b1, b2)
    close(clgrad.addbmm(T(m), T(b1), T(b2), beta=0.5, alpha=2), ref)
    close(T(m).addbmm(T(b1), T(b2), beta=0.5, alpha=2), ref)
    y = T(m.copy())
    assert y.addbmm_(T(b1), T(b2)) is y
    close(y, m + np.einsum("bij,bjk->ik", b1, b2))
    ints = [T(np.ones(s), clgrad.int64) for s in ((2, 2), (3, 2, 2), (3, 2, 2))]
    assert clgrad.addbmm(*ints, beta=2, alpha=3).numpy().tolist() == [[20, 20], [20, 20]]
    with pytest.raises(RuntimeError, match="3D"):
        clgrad.addbmm(T(m), T(m), T(b2))
    with pytest.raises(RuntimeError, match="same number of batches"):
        clgrad.addbmm(T(m), T(b1[:2]), T(b2))
    with pytest.raises(RuntimeError, match="Incompatible"):
        clgrad.addbmm(T(m), T(b1), T(b1))
    assert gradcheck(lambda a, b, c: clgrad.addbmm(a, b, c, beta=0.5, alpha=2),
                     [leaf(3, 5), leaf(4, 3, 2), leaf(4, 2, 5)])


def test_chain_matmul():
    mats = [RNG.standard_normal(s) for s in ((2, 5), (5, 1), (1, 4), (4, 3))]
    close(clgrad.chain_matmul(*[T(m) for m in mats]), np.linalg.multi_dot(mats))
    one = T(mats[0])
    out = clgrad.chain_matmul(one)
    assert out is not one and out._storage is not one._storage
    close(out, mats[0])
    with pytest.raises(RuntimeError, match="one or more"):
        clgrad.chain_matmul()
    with pytest.raises(RuntimeError, match="expected 2"):
        clgrad.chain_matmul(T(np.ones(3)))
    assert gradcheck(lambda *m: clgrad.chain_matmul(*m),
                     [leaf(2, 5), leaf(5, 1), leaf(1, 4), leaf(4, 3)])


def test_matrix_power():
    host = RNG.standard_normal((2, 3, 3)) * 0.7
    for n in range(0, 7):
        ref = np.stack([np.linalg.matrix_power(h, n) for h in host])
        close(clgrad.matrix_power(T(host), n), ref, 1e-9)
        close(T(host).matrix_power(n), ref, 1e-9)
    eye = T(np.ones((2, 2)), clgrad.int32).matrix_power(0)
    assert eye.dtype == clgrad.int32 and eye.numpy().tolist() == [[1, 0], [0, 1]]
    ints = T(np.array([[1, 1], [1, 0]]), clgrad.int64)
    assert ints.matrix_power(10).numpy().tolist() == [[89, 55], [55, 34]]
    close(clgrad.matrix_power(T(host), -2), np.linalg.matrix_power(np.linalg.inv(host), 2),
          1e-9)  # n < 0: through linalg.inv (tests/test_linalg_decomp.py)
    with pytest.raises(RuntimeError, match="square"):
        clgrad.matrix_power(T(np.ones((2, 3))), 2)
    with pytest.raises(TypeError, match="'n'"):
        clgrad.matrix_power(T(host), 2.0)
    assert gradcheck(lambda a: clgrad.matrix_power(a, 5), [leaf(3, 3)])


# -- PyTorch as the oracle -------------------------------------------------------------------
TORCH_CASES = {
    "hstack": (lambda m, a, b: m.hstack([a, b.reshape(2, 3)]), [(2, 2), (6,)]),
    "vstack": (lambda m, a, b: m.vstack([a, b]), [(2, 3), (3,)]),
    "row_stack": (lambda m, a, b: m.row_stack([a, b]), [(2, 3), (3,)]),
    "dstack": (lambda m, a, b: m.dstack([a, b]), [(2, 3), (2, 3, 2)]),
    "column_stack": (lambda m, a, b: m.column_stack([a, b]), [(3,), (3, 2)]),
    "hsplit": (lambda m, a: m.hsplit(a, [1, 3]), [(2, 5)]),
    "vsplit": (lambda m, a: m.vsplit(a, 2), [(4, 3)]),
    "dsplit": (lambda m, a: a.dsplit([1]), [(2, 2, 3)]),
    "atleast": (lambda m, a, b: (*m.atleast_3d(a, b), m.atleast_2d(b), m.atleast_1d(b)),
                [(2, 3), (4,)]),
    "broadcast_to": (lambda m, a: m.broadcast_to(a, (2, 3, 4)), [(3, 1)]),
    "swap": (lambda m, a: (m.swapaxes(a, 0, 2), a.swapdims(1, 0), m.moveaxis(a, 0, -1)),
             [(2, 3, 4)]),
    "take": (lambda m, a: m.take(a, m.tensor([[0, -1], [7, 3]])), [(2, 4)]),
    "take_along_dim": (lambda m, a: m.take_along_dim(a, m.tensor([[0, 2], [1, 1]]), 1),
                       [(2, 3)]),
    "index_fill": (lambda m, a, v: a.index_fill(1, m.tensor([0, 2, 0]), v.reshape(())),
                   [(2, 3), (1,)]),
    "rot90": (lambda m, a: (m.rot90(a, 1, [0, 2]), a.rot90(-3), m.fliplr(a), a.flipud()),
              [(2, 3, 4)]),
    "trace": (lambda m, a: m.trace(a), [(3, 4)]),
    "diag_embed": (lambda m, a: m.diag_embed(a, -1, 2, 0), [(2, 3)]),
    "block_diag": (lambda m, a, b: m.block_diag(a, b), [(2, 3), (2,)]),
    "kron": (lambda m, a, b: m.kron(a, b), [(2, 3), (3, 1, 2)]),
    "tensordot": (lambda m, a, b: m.tensordot(a, b, ([2, 0], [0, 1])), [(2, 3, 4), (4, 2, 5)]),
    "cartesian_prod": (lambda m, a, b: m.cartesian_prod(a, b), [(2,), (3,)]),
    "combinations": (lambda m, a: (m.combinations(a, 2), m.combinations(a, 3, True)), [(4,)]),
    "cdist": (lambda m, a, b: (m.cdist(a, b), m.cdist(a, b, 1), m.cdist(a, b, 3.5),
                               m.cdist(a, b, float("inf")), m.cdist(a, b, 0.7)),
              [(2, 3, 4), (5, 4)]),
    "cdist_mm": (lambda m, a, b: m.cdist(a, b), [(30, 3), (4, 3)]),
    "dist": (lambda m, a, b: (m.dist(a, b), a.dist(b, 1), m.dist(a, b, float("inf"))),
             [(2, 3), (3,)]),
    "renorm": (lambda m, a: (m.renorm(a, 2, 0, 1.0), a.renorm(1, -1, 1.5)), [(3, 4)]),
    "addr": (lambda m, a, b, c: m.addr(a, b, c, beta=0.5, alpha=2), [(3, 4), (3,), (4,)]),
    "addbmm": (lambda m, a, b, c: a.addbmm(b, c, beta=0.5, alpha=2),
               [(3, 5), (4, 3, 2), (4, 2, 5)]),
    "chain_matmul": (lambda m, a, b, c: m.chain_matmul(a, b, c), [(2, 5), (5, 1), (1, 4)]),
    "matrix_power": (lambda m, a: (m.matrix_power(a, 3), a.matrix_power(0)), [(2, 3, 3)]),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_against_pytorch(name):
    torch = pytest.importorskip("torch")
    fn, shapes = TORCH_CASES[name]
    hosts = [RNG.standard_normal(s) for s in shapes]
    ours = [T(h, grad=True) for h in hosts]
    theirs = [torch.tensor(h, requires_grad=True) for h in hosts]
    out_o, out_t = fn(clgrad, *ours), fn(torch, *theirs)
    out_o = out_o if isinstance(out_o, tuple) else (out_o,)
    out_t = out_t if isinstance(out_t, tuple) else (out_t,)
    assert len(out_o) == len(out_t)
    loss_o, loss_t = 0, 0
    for k, (o, t) in enumerate(zip(out_o, out_t)):
        assert tuple(o.shape) == tuple(t.shape), k
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-9,
                                   atol=1e-9)
        w = RNG.standard_normal(tuple(t.shape))
        if t.requires_grad:
            loss_o = loss_o + (o * T(w)).sum()
            loss_t = loss_t + (t * torch.tensor(w)).sum()
    if isinstance(loss_t, int):
        return
    loss_o.backward()
    loss_t.backward()
    for o, t in zip(ours, theirs):
        if t.grad is None:
            assert o.grad is None or not o.grad.numpy().any()
        else:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-9)


def test_split_indices_count_negatives_from_the_end_and_tensor_split():
    """Python slicing's bounds (PyTorch's tensor_split, which hsplit/vsplit/dsplit use):
    hsplit(x, [-2]) is x[:, :-2], x[:, -2:]; an int n gives size % n pieces one longer."""
    x = clgrad.arange(12.0).reshape(2, 6)
    xn = np.arange(12.0).reshape(2, 6)
    for idx in ([-2], [2, -1], [4, 2, 9], [-9, 3]):
        got = [t.numpy() for t in clgrad.hsplit(x, idx)]
        want = np.split(xn, [i + 6 if i < 0 else i for i in idx], axis=1) if min(idx) >= -6 \
            else [xn[:, :0], xn[:, :3], xn[:, 3:]]
        assert [g.shape for g in got] == [w.shape for w in want], idx
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    assert [tuple(t.shape) for t in clgrad.vsplit(x, [-1])] == [(1, 6), (1, 6)]
    v = clgrad.arange(10.0)
    assert [t.tolist() for t in clgrad.tensor_split(v, 3)] == \
        [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
    assert [t.tolist() for t in v.tensor_split([2, -3])] == \
        [[0.0, 1.0], [2.0, 3.0, 4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]
    assert [len(t) for t in clgrad.tensor_split(v, clgrad.tensor([1, 5]))] == [1, 4, 5]
    parts = clgrad.tensor_split(clgrad.zeros(2, 7), 4, dim=1)
    assert [tuple(t.shape) for t in parts] == [(2, 2), (2, 2), (2, 2), (2, 1)]
    assert all(p._storage is parts[0]._storage for p in parts)  # views
    with pytest.raises(RuntimeError, match="larger than 0"):
        clgrad.tensor_split(v, 0)


def test_piecewise_constant_results_require_grad_with_zero_gradients():
    """p = 0 distances (counts) and matrix_power(A, 0) (the identity) are differentiable
    with zero gradients, as PyTorch marks them; a loss through them alone backwards."""
    x = clgrad.tensor([[1.0, 2.0], [0.0, 0.0]], requires_grad=True)
    outs = [clgrad.cdist(x, x, p=0), clgrad.dist(x, x * 2, 0),
            F.pairwise_distance(x, x.detach() + 1, p=0.0)]
    assert all(o.requires_grad for o in outs)
    assert outs[0].tolist() == [[0.0, 2.0], [2.0, 0.0]]
    sum(o.sum() for o in outs).backward()
    assert x.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    a = clgrad.tensor([[2.0, 1.0], [0.0, 3.0]], requires_grad=True)
    e = clgrad.matrix_power(a, 0)
    assert e.requires_grad and e.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    e.sum().backward()
    assert a.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_multi_margin_loss_keeps_a_one_element_target_dim():
    x = clgrad.tensor([0.1, 0.5, 0.2])
    assert tuple(F.multi_margin_loss(x, clgrad.tensor([1]), reduction="none").shape) == (1,)
    assert tuple(F.multi_margin_loss(x, clgrad.tensor(1), reduction="none").shape) == ()
