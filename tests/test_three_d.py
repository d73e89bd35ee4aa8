"""The 3-D family (clgrad/ops/three_d.py, clgrad/nn/three_d.py, interpolate on 5-D inputs):
values against float64 NumPy loops and, where importable, PyTorch with the same weights;
gradients by float64 finite differences (gradcheck). The GPU code paths: run the conv tests
as ``CLGRAD_TEST_AS_GPU=intel CLGRAD_DEVICE=gpu pytest tests/test_three_d.py -k conv``
(conftest.py makes Intel's CPU runtime pose as a GPU)."""
import itertools

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from clgrad.runtime import launch_count

RNG = np.random.default_rng(3)


def t64(a, grad=False):
    return clgrad.tensor(np.asarray(a, dtype=np.float64), dtype=clgrad.float64,
                         requires_grad=grad)


# -- float64 loop references ---------------------------------------------------------------------
def ref_conv3d(x, w, b, s, p, d, g):
    n, c, D, H, W = x.shape
    o, cg, kd, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1]), (p[2], p[2])))
    od = (D + 2 * p[0] - d[0] * (kd - 1) - 1) // s[0] + 1
    oh = (H + 2 * p[1] - d[1] * (kh - 1) - 1) // s[1] + 1
    ow = (W + 2 * p[2] - d[2] * (kw - 1) - 1) // s[2] + 1
    y = np.zeros((n, o, od, oh, ow))
    og = o // g
    for oc, i, j, k in itertools.product(range(o), range(od), range(oh), range(ow)):
        gi = oc // og
        patch = xp[:, gi * cg:(gi + 1) * cg, i * s[0]:i * s[0] + d[0] * (kd - 1) + 1:d[0],
                   j * s[1]:j * s[1] + d[1] * (kh - 1) + 1:d[1],
                   k * s[2]:k * s[2] + d[2] * (kw - 1) + 1:d[2]]
        y[:, oc, i, j, k] = (patch * w[oc]).sum(axis=(1, 2, 3, 4))
    return y + (0 if b is None else b[None, :, None, None, None])


def ref_conv_transpose3d(x, w, b, s, p, op, g, d):
    n, cin, D, H, W = x.shape
    _, cog, kd, kh, kw = w.shape
    full = [(sz - 1) * si + di * (k - 1) + 1 + o for sz, si, di, k, o in
            zip((D, H, W), s, d, (kd, kh, kw), op)]
    y = np.zeros((n, cog * g) + tuple(full))
    cg = cin // g
    for ci, i, j, k, a, bb, cc in itertools.product(range(cin), range(D), range(H), range(W),
                                                    range(kd), range(kh), range(kw)):
        gi = ci // cg
        y[:, gi * cog:(gi + 1) * cog, i * s[0] + a * d[0], j * s[1] + bb * d[1],
          k * s[2] + cc * d[2]] += x[:, ci, i, j, k, None] * w[ci, :, a, bb, cc]
    out = [f - o - 2 * pi for f, o, pi in zip(full, op, p)]
    out = [o + q for o, q in zip(out, op)]
    y = y[:, :, p[0]:p[0] + out[0], p[1]:p[1] + out[1], p[2]:p[2] + out[2]]
    return y + (0 if b is None else b[None, :, None, None, None])


def _pool_out(size, k, s, p, d, ceil):
    num = size + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil else num // s) + 1
    if ceil and (o - 1) * s >= size + p:
        o -= 1
    return o


def ref_max_pool3d(x, k, s, p, d, ceil):
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    outs = [_pool_out(*a, ceil) for a in zip(sizes, k, s, p, d)]
    y, idx = np.full((n, c) + tuple(outs), -np.inf), np.zeros((n, c) + tuple(outs), np.int64)
    for pos in itertools.product(*[range(o) for o in outs]):
        for off in itertools.product(*[range(kk) for kk in k]):
            q = [o * si - pi + f * di for o, si, pi, f, di in zip(pos, s, p, off, d)]
            if all(0 <= qi < sz for qi, sz in zip(q, sizes)):
                v = x[(slice(None), slice(None)) + tuple(q)]
                better = v > y[(slice(None), slice(None)) + pos]
                y[(slice(None), slice(None)) + pos] = np.where(better, v, y[(..., ) + pos])
                flat = (q[0] * sizes[1] + q[1]) * sizes[2] + q[2]
                idx[(..., ) + pos] = np.where(better, flat, idx[(..., ) + pos])
    return y, idx


def ref_avg_pool3d(x, k, s, p, ceil, cip, div):
    sizes = x.shape[2:]
    outs = [_pool_out(*a, 1, ceil) for a in zip(sizes, k, s, p)]
    y = np.zeros(x.shape[:2] + tuple(outs))
    for pos in itertools.product(*[range(o) for o in outs]):
        lo = [o * si - pi for o, si, pi in zip(pos, s, p)]
        hi = [min(a + kk, sz + pi) for a, kk, sz, pi in zip(lo, k, sizes, p)]
        count = np.prod([h - a for a, h in zip(lo, hi)])
        lo2, hi2 = [max(a, 0) for a in lo], [min(h, sz) for h, sz in zip(hi, sizes)]
        if not cip:
            count = np.prod([h - a for a, h in zip(lo2, hi2)])
        total = x[:, :, lo2[0]:hi2[0], lo2[1]:hi2[1], lo2[2]:hi2[2]].sum(axis=(2, 3, 4))
        y[(..., ) + pos] = total / (div if div else count)
    return y


# -- conv3d ---------------------------------------------------------------------------------------
CONV_CASES = [  # (C, O, k, stride, padding, dilation, groups)
    (2, 3, (2, 3, 2), 1, 0, 1, 1),
    (4, 6, (3, 2, 3), (2, 1, 2), (1, 0, 1), (1, 2, 1), 2),
    (4, 4, 3, 2, 1, (2, 1, 1), 4),
    (3, 6, (1, 3, 3), (1, 2, 2), (0, 1, 1), 1, 3),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv3d_matches_loop(case):
    c, o, k, s, p, d, g = case
    k3 = k if isinstance(k, tuple) else (k,) * 3
    x = RNG.standard_normal((2, c, 6, 7, 5))
    w = RNG.standard_normal((o, c // g) + k3)
    b = RNG.standard_normal(o)
    tr = lambda v: v if isinstance(v, tuple) else (v,) * 3  # noqa: E731
    y = F.conv3d(t64(x), t64(w), t64(b), s, p, d, g)
    np.testing.assert_allclose(y.numpy(), ref_conv3d(x, w, b, tr(s), tr(p), tr(d), g),
                               rtol=1e-12, atol=1e-12)
    # unbatched (C, D, H, W) and torch's face
    y1 = clgrad.conv3d(t64(x[0]), t64(w), t64(b), s, p, d, g)
    np.testing.assert_allclose(y1.numpy(), y.numpy()[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CONV_CASES[:2])
def test_conv3d_gradcheck(case):
    c, o, k, s, p, d, g = case
    k3 = k if isinstance(k, tuple) else (k,) * 3
    x = t64(RNG.standard_normal((1, c, 5, 4, 5)), True)
    w = t64(RNG.standard_normal((o, c // g) + k3), True)
    b = t64(RNG.standard_normal(o), True)
    assert gradcheck(lambda a, ww, bb: F.conv3d(a, ww, bb, s, p, d, g), [x, w, b])


def test_conv3d_same_valid_and_noncontiguous():
    x = RNG.standard_normal((1, 2, 5, 6, 4))
    w = RNG.standard_normal((3, 2, 2, 3, 4))
    y = F.conv3d(t64(x), t64(w), padding="same")
    assert y.shape == (1, 3, 5, 6, 4)
    # 'same' with an even kernel pads one more on the right, as PyTorch
    xp = np.pad(x, ((0, 0), (0, 0), (0, 1), (1, 1), (1, 2)))
    np.testing.assert_allclose(y.numpy(), ref_conv3d(xp, w, None, (1,) * 3, (0,) * 3,
                                                     (1,) * 3, 1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(F.conv3d(t64(x), t64(w), padding="valid").numpy(),
                               ref_conv3d(x, w, None, (1,) * 3, (0,) * 3, (1,) * 3, 1),
                               rtol=1e-12, atol=1e-12)
    # a permuted (non-contiguous) input and weight
    xt = t64(x.transpose(0, 1, 4, 3, 2).copy()).permute(0, 1, 4, 3, 2)
    wt = t64(w.transpose(1, 0, 2, 3, 4).copy()).permute(1, 0, 2, 3, 4)
    np.testing.assert_allclose(F.conv3d(xt, wt, stride=(1, 2, 1)).numpy(),
                               ref_conv3d(x, w, None, (1, 2, 1), (0,) * 3, (1,) * 3, 1),
                               rtol=1e-12, atol=1e-12)


def test_conv3d_launch_count_independent_of_groups_and_depth():
    def launches(g, depth):
        x = clgrad.randn(1, 8, depth, 6, 6)
        w = clgrad.randn(8, 8 // g, 3, 3, 3)
        F.conv3d(x, w, padding=1, groups=g)  # warm (algorithm choice, builds)
        n0 = launch_count()
        F.conv3d(x, w, padding=1, groups=g)
        return launch_count() - n0
    counts = {launches(g, depth) for g in (1, 2, 8) for depth in (4, 9)}
    assert len(counts) <= 2 and max(counts) <= 12, counts  # (the algorithm may differ per g)


def test_conv3d_errors():
    w = clgrad.randn(2, 2, 1, 1, 1)
    with pytest.raises(RuntimeError, match="Expected 4D \\(unbatched\\) or 5D"):
        F.conv3d(clgrad.randn(2, 3, 3), w)
    with pytest.raises(RuntimeError, match="to have 2 channels, but got 1 channels"):
        F.conv3d(clgrad.randn(1, 1, 2, 3, 3), w)
    with pytest.raises(RuntimeError, match="strided"):
        F.conv3d(clgrad.randn(1, 2, 3, 3, 3), w, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="Expected 4D \\(unbatched\\) or 5D"):
        F.conv_transpose3d(clgrad.randn(2, 3, 3), w)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv3d(2, 2, 1, padding_mode="bogus")


# -- conv_transpose3d -----------------------------------------------------------------------------
TCONV_CASES = [  # (C_in, C_out, k, stride, padding, output_padding, groups, dilation)
    (2, 3, (2, 3, 2), 1, 0, 0, 1, 1),
    (4, 6, (3, 2, 3), (2, 1, 2), (1, 0, 1), (1, 0, 1), 2, (2, 1, 1)),
    (3, 3, 2, 3, 2, 2, 3, 1),
    (2, 4, (1, 2, 2), (1, 2, 1), 0, (0, 1, 0), 1, 1),
]


@pytest.mark.parametrize("case", TCONV_CASES)
def test_conv_transpose3d_matches_loop(case):
    ci, co, k, s, p, op, g, d = case
    k3 = k if isinstance(k, tuple) else (k,) * 3
    tr = lambda v: v if isinstance(v, tuple) else (v,) * 3  # noqa: E731
    x = RNG.standard_normal((2, ci, 3, 4, 3))
    w = RNG.standard_normal((ci, co // g) + k3)
    b = RNG.standard_normal(co)
    y = F.conv_transpose3d(t64(x), t64(w), t64(b), s, p, op, g, d)
    np.testing.assert_allclose(y.numpy(), ref_conv_transpose3d(x, w, b, tr(s), tr(p), tr(op),
                                                               g, tr(d)),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", TCONV_CASES[1:3])
def test_conv_transpose3d_gradcheck(case):
    ci, co, k, s, p, op, g, d = case
    k3 = k if isinstance(k, tuple) else (k,) * 3
    x = t64(RNG.standard_normal((1, ci, 3, 2, 3)), True)
    w = t64(RNG.standard_normal((ci, co // g) + k3), True)
    b = t64(RNG.standard_normal(co), True)
    assert gradcheck(lambda a, ww, bb: F.conv_transpose3d(a, ww, bb, s, p, op, g, d),
                     [x, w, b])


# -- pools ----------------------------------------------------------------------------------------
MAX_CASES = [  # (kernel, stride, padding, dilation, ceil_mode)
    (2, None, 0, 1, False),
    ((3, 2, 2), (2, 1, 2), 1, (1, 2, 1), True),
    ((2, 3, 2), 1, (1, 1, 0), 1, False),
    (3, 2, 1, 1, True),
]


@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool3d_values_indices(case):
    k, s, p, d, ceil = case
    tr = lambda v: v if isinstance(v, tuple) else (v,) * 3  # noqa: E731
    x = RNG.standard_normal((2, 3, 5, 6, 5))
    y, i = F.max_pool3d(t64(x), k, s, p, d, ceil, return_indices=True)
    ry, ri = ref_max_pool3d(x, tr(k), tr(s if s is not None else k), tr(p), tr(d), ceil)
    np.testing.assert_array_equal(y.numpy(), ry)
    np.testing.assert_array_equal(i.numpy(), ri)
    assert i.dtype == clgrad.int64
    y1 = F.max_pool3d(t64(x[0]), k, s, p, d, ceil)  # unbatched
    np.testing.assert_array_equal(y1.numpy(), ry[0])
    yw, iw = F.max_pool3d_with_indices(t64(x), k, s, p, d, ceil)
    np.testing.assert_array_equal(iw.numpy(), ri)


@pytest.mark.parametrize("case", MAX_CASES[:2])
def test_max_pool3d_gradcheck(case):
    k, s, p, d, ceil = case
    x = t64(RNG.permutation(100)[:60].reshape(1, 2, 3, 5, 2) / 10.0, True)  # distinct values
    assert gradcheck(lambda a: F.max_pool3d(a, k, s, p, d, ceil), [x])


AVG_CASES = [  # (kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    (2, None, 0, False, True, None),
    ((3, 2, 2), (2, 1, 2), 1, True, True, None),
    (3, 2, 1, True, False, None),
    ((2, 3, 3), 1, (1, 1, 0), False, True, 5),
]


@pytest.mark.parametrize("case", AVG_CASES)
def test_avg_pool3d(case):
    k, s, p, ceil, cip, div = case
    tr = lambda v: v if isinstance(v, tuple) else (v,) * 3  # noqa: E731
    x = RNG.standard_normal((2, 3, 5, 6, 5))
    y = F.avg_pool3d(t64(x), k, s, p, ceil, cip, div)
    ry = ref_avg_pool3d(x, tr(k), tr(s if s is not None else k), tr(p), ceil, cip, div)
    np.testing.assert_allclose(y.numpy(), ry, rtol=1e-12, atol=1e-12)
    xg = t64(RNG.standard_normal((1, 2, 4, 3, 4)), True)
    assert gradcheck(lambda a: F.avg_pool3d(a, k, s, p, ceil, cip, div), [xg])


def test_adaptive_pools_3d():
    x = RNG.standard_normal((2, 3, 5, 7, 4))
    for size in (2, (3, None, 3), (5, 4, 1)):
        od, oh, ow = (size,) * 3 if isinstance(size, int) else size
        od, oh, ow = od or 5, oh or 7, ow or 4
        ya = F.adaptive_avg_pool3d(t64(x), size).numpy()
        ym, im = F.adaptive_max_pool3d(t64(x), size, return_indices=True)
        assert ya.shape == ym.shape == (2, 3, od, oh, ow)
        for a, b, c in itertools.product(range(od), range(oh), range(ow)):
            sl = tuple(slice(i * n // o, -(-(i + 1) * n // o)) for i, n, o in
                       zip((a, b, c), (5, 7, 4), (od, oh, ow)))
            win = x[(..., ) + sl]
            np.testing.assert_allclose(ya[..., a, b, c], win.mean(axis=(2, 3, 4)), rtol=1e-12)
            np.testing.assert_array_equal(ym.numpy()[..., a, b, c], win.max(axis=(2, 3, 4)))
        yw, iw = F.adaptive_max_pool3d_with_indices(t64(x), size)
        np.testing.assert_array_equal(iw.numpy(), im.numpy())
        flat = x.reshape(2, 3, -1)
        np.testing.assert_array_equal(np.take_along_axis(flat, im.numpy().reshape(2, 3, -1), 2),
                                      ym.numpy().reshape(2, 3, -1))
    xg = t64(RNG.permutation(80)[:48].reshape(1, 2, 4, 3, 2) / 10.0, True)
    assert gradcheck(lambda a: F.adaptive_avg_pool3d(a, (3, 2, 1)), [xg])
    assert gradcheck(lambda a: F.adaptive_max_pool3d(a, (2, 2, 1)), [xg])
    with pytest.raises(RuntimeError, match="Expected 4D or 5D"):
        F.adaptive_avg_pool3d(clgrad.randn(2, 3, 3), 2)
    with pytest.raises(RuntimeError, match="4D or 5D"):
        F.max_pool3d(clgrad.randn(2, 3, 3), 2)


# -- norms, dropout, padding, interpolate ------------------------------------------------------
def test_batch_and_instance_norm_3d():
    x = RNG.standard_normal((3, 2, 3, 4, 2))
    bn = nn.BatchNorm3d(2).double()
    y = bn(t64(x)).detach().numpy()
    m, v = x.mean(axis=(0, 2, 3, 4)), x.var(axis=(0, 2, 3, 4))
    np.testing.assert_allclose(y, (x - m[:, None, None, None]) /
                               np.sqrt(v[:, None, None, None] + 1e-5), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * m, rtol=1e-10)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    with pytest.raises(ValueError, match="expected 5D input"):
        bn(clgrad.randn(2, 2, 2, 2))
    inn = nn.InstanceNorm3d(2)
    y = inn(t64(x)).numpy()
    mi, vi = x.mean(axis=(2, 3, 4), keepdims=True), x.var(axis=(2, 3, 4), keepdims=True)
    np.testing.assert_allclose(y, (x - mi) / np.sqrt(vi + 1e-5), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(inn(t64(x[0])).numpy(), y[0], rtol=1e-10, atol=1e-10)


def test_dropout3d():
    x = clgrad.ones(4, 6, 2, 3, 2)
    y = F.dropout3d(x, 0.5, True).numpy()
    per_channel = y.reshape(4, 6, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1)).all()
    y1 = nn.Dropout3d(0.5)(clgrad.ones(6, 2, 3, 2)).numpy().reshape(6, -1)  # unbatched
    assert ((y1 == 0).all(-1) | (y1 == 2.0).all(-1)).all()
    m = nn.Dropout3d(0.5).eval()
    assert m(x) is x
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        F.dropout3d(clgrad.ones(2, 3), 0.5)  # deprecated, read as unbatched (PyTorch's)


def test_pad_layers_3d():
    x = RNG.standard_normal((1, 2, 3, 4, 5))
    amounts = (1, 2, 0, 1, 2, 1)
    npad = ((0, 0), (0, 0), (2, 1), (0, 1), (1, 2))
    cases = [(nn.ReflectionPad3d(amounts), np.pad(x, npad, mode="reflect")),
             (nn.ReplicationPad3d(amounts), np.pad(x, npad, mode="edge")),
             (nn.CircularPad3d(amounts), np.pad(x, npad, mode="wrap")),
             (nn.ConstantPad3d(amounts, 2.5), np.pad(x, npad, constant_values=2.5)),
             (nn.ZeroPad3d(amounts), np.pad(x, npad))]
    for m, ref in cases:
        np.testing.assert_allclose(m(t64(x)).numpy(), ref, rtol=0, atol=0)
    assert repr(nn.ZeroPad3d(1)) == "ZeroPad3d((1, 1, 1, 1, 1, 1))"
    xg = t64(RNG.standard_normal((1, 1, 3, 3, 3)), True)
    assert gradcheck(lambda a: nn.ReflectionPad3d(1)(a), [xg])


def test_interpolate_5d():
    x = RNG.standard_normal((1, 2, 3, 4, 2))
    y = F.interpolate(t64(x), scale_factor=2, mode="nearest").numpy()
    np.testing.assert_array_equal(y, x.repeat(2, 2).repeat(2, 3).repeat(2, 4))
    # trilinear, align_corners: separable 1-D linear interpolation along each dim
    y = F.interpolate(t64(x), size=(5, 7, 3), mode="trilinear", align_corners=True).numpy()
    ref = x
    for ax, o in zip((2, 3, 4), (5, 7, 3)):
        n = ref.shape[ax]
        src = np.linspace(0, n - 1, o)
        lo = np.floor(src).astype(int).clip(0, n - 1)
        hi = np.minimum(lo + 1, n - 1)
        lam = (src - lo).reshape([-1 if a == ax else 1 for a in range(5)])
        ref = np.take(ref, lo, ax) * (1 - lam) + np.take(ref, hi, ax) * lam
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
    assert nn.Upsample(scale_factor=2, mode="trilinear")(t64(x)).shape == (1, 2, 6, 8, 4)
    xg = t64(x, True)
    assert gradcheck(lambda a: F.interpolate(a, size=(4, 3, 3), mode="trilinear"), [xg])
    with pytest.raises(ValueError, match="5-D"):
        F.interpolate(t64(x[0]), scale_factor=2, mode="trilinear")


# -- against PyTorch, same weights ---------------------------------------------------------------
def _both(torch, m_cl, m_t, x, grad=True):
    m_t.double()
    m_cl.double()
    with torch.no_grad():
        for (name, p) in m_t.named_parameters():
            dict(m_cl.named_parameters())[name].data = t64(p.detach().numpy())
    X, tx = t64(x, grad), torch.tensor(x, requires_grad=grad)
    y, ty = m_cl(X), m_t(tx)
    if isinstance(ty, tuple):
        np.testing.assert_array_equal(y[1].numpy(), ty[1].numpy())
        y, ty = y[0], ty[0]
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    if grad:
        g = RNG.standard_normal(ty.shape)
        y.backward(t64(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(X.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-10)
        for name, p in m_t.named_parameters():
            np.testing.assert_allclose(dict(m_cl.named_parameters())[name].grad.numpy(),
                                       p.grad.numpy(), rtol=1e-10, atol=1e-10)


MODULES = [
    ("Conv3d", (4, 6, (2, 3, 2)), dict(stride=(2, 1, 1), padding=1, dilation=(1, 2, 1),
                                       groups=2)),
    ("Conv3d", (2, 3, 3), dict(padding="same", padding_mode="reflect")),
    ("Conv3d", (2, 3, (2, 2, 3)), dict(padding=(1, 0, 2), padding_mode="replicate",
                                       bias=False)),
    ("Conv3d", (2, 4, 3), dict(padding=1, padding_mode="circular", groups=2)),
    ("ConvTranspose3d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("ConvTranspose3d", (2, 3, (2, 1, 3)), dict(stride=(1, 2, 3), dilation=(2, 1, 1))),
    ("MaxPool3d", (3, 2, 1), dict(ceil_mode=True, return_indices=True)),
    ("MaxPool3d", ((2, 3, 2),), dict(dilation=(2, 1, 1), return_indices=True)),
    ("AvgPool3d", (3, 2, 1), dict(ceil_mode=True, count_include_pad=False)),
    ("AdaptiveAvgPool3d", ((3, None, 2),), {}),
    ("AdaptiveMaxPool3d", ((2, 3, 2), True), {}),
    ("BatchNorm3d", (4,), {}),
    ("InstanceNorm3d", (4,), dict(affine=True)),
    ("Upsample", (), dict(scale_factor=(2, 1.5, 2), mode="trilinear")),
    ("Upsample", (), dict(size=(3, 7, 5), mode="nearest")),
]


@pytest.mark.parametrize("name,args,kw", MODULES, ids=[f"{m[0]}-{i}" for i, m in
                                                      enumerate(MODULES)])
def test_modules_match_pytorch(name, args, kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    m_t = getattr(torch.nn, name)(*args, **kw)
    m_cl = getattr(nn, name)(*args, **kw)
    if name not in ("BatchNorm3d", "InstanceNorm3d"):
        assert repr(m_cl) == repr(m_t)
    assert list(m_cl.state_dict()) == list(m_t.state_dict())
    c = args[0] if name.startswith("Conv") else 4
    x = RNG.standard_normal((2, c, 5, 6, 5))
    _both(torch, m_cl, m_t, x)
    if name.startswith(("Conv", "MaxPool", "AvgPool", "Adaptive", "InstanceNorm")):
        m_t.zero_grad()
        _both(torch, m_cl, m_t, x[0], grad=False)  # unbatched (C, D, H, W)
