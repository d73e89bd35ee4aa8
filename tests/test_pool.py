"""Pooling against float64 NumPy loops: max_pool2d, avg_pool2d, adaptive_avg_pool2d.

Inputs are non-contiguous views (offset, reversed storage order, a step); gradients are checked
against the NumPy backward and by gradcheck in float64.
"""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from strided import strided, leaf_and_view
from clgrad.autograd import gradcheck

RNG = np.random.default_rng(7)


# -- NumPy references -------------------------------------------------------------------------
def out_size(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    o = (math.ceil(span / s) if ceil_mode else math.floor(span / s)) + 1
    if ceil_mode and (o - 1) * s >= n + p:  # the last window must start inside
        o -= 1
    return o


def ref_max_pool(x, k, s, p, d, ceil_mode):
    n, c, h, w = x.shape
    oh, ow = (out_size(h, k[0], s[0], p[0], d[0], ceil_mode),
              out_size(w, k[1], s[1], p[1], d[1], ceil_mode))
    out = np.full((n, c, oh, ow), -np.inf)
    idx = np.full((n, c, oh, ow), -1, dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            for a in range(k[0]):
                for b in range(k[1]):
                    y, xx = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                    if not (0 <= y < h and 0 <= xx < w):
                        continue
                    v = x[:, :, y, xx]
                    better = (v > out[:, :, i, j]) | (idx[:, :, i, j] < 0)
                    out[:, :, i, j] = np.where(better, v, out[:, :, i, j])
                    idx[:, :, i, j] = np.where(better, y * w + xx, idx[:, :, i, j])
    return out, idx


def ref_max_pool_grad(x_shape, idx, g):
    n, c, h, w = x_shape
    gx = np.zeros((n, c, h * w))
    for a in range(n):
        for b in range(c):
            np.add.at(gx[a, b], idx[a, b].reshape(-1), g[a, b].reshape(-1))
    return gx.reshape(x_shape)


def ref_avg_windows(h, w, k, s, p, ceil_mode, include_pad, divisor):
    """[(oh, ow, rows, cols, divisor)] of PyTorch's avg_pool2d."""
    oh, ow = out_size(h, k[0], s[0], p[0], 1, ceil_mode), out_size(w, k[1], s[1], p[1], 1,
                                                                    ceil_mode)
    wins = []
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * s[0] - p[0], j * s[1] - p[1]
            y1, x1 = min(y0 + k[0], h + p[0]), min(x0 + k[1], w + p[1])
            pool = (y1 - y0) * (x1 - x0)
            rows, cols = range(max(y0, 0), min(y1, h)), range(max(x0, 0), min(x1, w))
            dv = divisor or (pool if include_pad else len(rows) * len(cols))
            wins.append((i, j, rows, cols, dv))
    return oh, ow, wins


def ref_avg_pool(x, k, s, p, ceil_mode, include_pad, divisor, g=None):
    n, c, h, w = x.shape
    oh, ow, wins = ref_avg_windows(h, w, k, s, p, ceil_mode, include_pad, divisor)
    out, gx = np.zeros((n, c, oh, ow)), np.zeros(x.shape)
    for i, j, rows, cols, dv in wins:
        if len(rows) and len(cols):
            out[:, :, i, j] = x[:, :, rows][:, :, :, cols].sum((2, 3)) / dv
            if g is not None:
                gx[:, :, rows.start:rows.stop, cols.start:cols.stop] += \
                    g[:, :, i, j][:, :, None, None] / dv
    return out, gx


def ref_adaptive(x, oh, ow, g=None):
    n, c, h, w = x.shape
    out, gx = np.zeros((n, c, oh, ow)), np.zeros(x.shape)
    for i in range(oh):
        y0, y1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            x0, x1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            cnt = (y1 - y0) * (x1 - x0)
            out[:, :, i, j] = x[:, :, y0:y1, x0:x1].sum((2, 3)) / cnt
            if g is not None:
                gx[:, :, y0:y1, x0:x1] += g[:, :, i, j][:, :, None, None] / cnt
    return out, gx


# -- max_pool2d -------------------------------------------------------------------------------
# (input shape, kernel, stride, padding, dilation, ceil_mode)
MAX_CASES = [
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), (1, 1), True),    # ceil adds a last window
    ((1, 2, 5, 5), (2, 2), (2, 2), (1, 1), (1, 1), True),    # ceil's window would start in pad
    ((2, 2, 9, 8), (3, 2), (2, 1), (1, 1), (2, 3), True),    # dilation, non-square
    ((1, 3, 5, 5), (3, 3), (1, 1), (0, 0), (1, 1), False),   # overlapping windows
    ((1, 1, 17, 3), (4, 1), (3, 1), (2, 0), (1, 1), True),
    # windows that tile the input (kernel == stride, no padding): the max_bwd_tiled kernel
    ((2, 3, 8, 6), (2, 2), (2, 2), (0, 0), (1, 1), False),   # exact tiling
    ((2, 3, 7, 9), (2, 2), (2, 2), (0, 0), (1, 1), False),   # a last row/column uncovered
    ((2, 3, 7, 9), (2, 2), (2, 2), (0, 0), (1, 1), True),    # ceil: partial last windows
    ((1, 2, 8, 11), (3, 2), (3, 2), (0, 0), (1, 1), False),  # non-square, uncovered edges
    ((3, 17, 5, 5), (5, 5), (5, 5), (0, 0), (1, 1), False),  # one window per plane
]


@pytest.mark.parametrize("shape,k,s,p,d,ceil", MAX_CASES)
def test_max_pool2d_forward_backward(shape, k, s, p, d, ceil):
    x = RNG.permutation(math.prod(shape)).reshape(shape) * 0.25 - 3.0   # distinct: no ties
    out, idx = F.max_pool2d(strided(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    want, want_idx = ref_max_pool(x, k, s, p, d, ceil)
    assert tuple(out.shape) == want.shape
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    assert idx.dtype is clgrad.int64

    leaf, view = leaf_and_view(x)
    g = RNG.standard_normal(want.shape)
    F.max_pool2d(view(leaf), k, s, p, d, ceil_mode=ceil).backward(strided(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(), ref_max_pool_grad(shape, want_idx, g),
                               atol=1e-12)


def test_max_pool2d_output_size_under_ceil_mode():
    # H=5, k=2, s=2, p=1: floor gives 3; ceil would give 4 but that window starts in the pad
    x = clgrad.zeros(1, 1, 5, 5)
    assert tuple(F.max_pool2d(x, 2, 2, 1, ceil_mode=True).shape) == (1, 1, 3, 3)
    assert tuple(F.avg_pool2d(x, 2, 2, 1, ceil_mode=True).shape) == (1, 1, 3, 3)
    # H=8, k=3, s=2: floor 3, ceil 4 (the last window starts at row 6, inside)
    x = clgrad.zeros(1, 1, 8, 8)
    assert tuple(F.max_pool2d(x, 3, 2, ceil_mode=False).shape) == (1, 1, 3, 3)
    assert tuple(F.max_pool2d(x, 3, 2, ceil_mode=True).shape) == (1, 1, 4, 4)


def test_max_pool2d_padding_counts_as_minus_inf():
    x = -np.arange(1.0, 17.0).reshape(1, 1, 4, 4)  # all negative: a zero pad would win
    out = F.max_pool2d(strided(x), 3, 1, 1).numpy()
    np.testing.assert_array_equal(out, ref_max_pool(x, (3, 3), (1, 1), (1, 1), (1, 1),
                                                    False)[0])
    assert out.max() < 0


def test_max_pool2d_ties_send_gradient_to_one_element():
    x = clgrad.ones(2, 3, 4, 4, dtype=clgrad.float64, requires_grad=True)
    out, idx = F.max_pool2d(x, 2, 1, return_indices=True)   # overlapping 2x2 windows, all tied
    out.sum().backward()
    g = x.grad.numpy()
    # each window's gradient goes to its first element (row-major): (i, j) for window (i, j)
    want = np.zeros((4, 4))
    want[:3, :3] = 1
    np.testing.assert_array_equal(g, np.broadcast_to(want, g.shape))
    np.testing.assert_array_equal(idx.numpy()[0, 0], np.arange(4 * 4).reshape(4, 4)[:3, :3])


def test_max_pool2d_unbatched_and_float32():
    x = RNG.standard_normal((3, 8, 5))
    out = F.max_pool2d(strided(x, clgrad.float32), (2, 3), 2, (1, 1))
    want = ref_max_pool(x.astype(np.float32)[None].astype(np.float64), (2, 3), (2, 2), (1, 1),
                        (1, 1), False)[0][0]
    assert out.dtype is clgrad.float32 and tuple(out.shape) == want.shape
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


def test_max_pool2d_gradcheck():
    a = RNG.permutation(2 * 2 * 6 * 5).reshape(2, 2, 6, 5) * 0.1
    leaf, view = leaf_and_view(a)
    assert gradcheck(lambda t: F.max_pool2d(view(t), (3, 2), (2, 1), 1, (1, 2), True), [leaf])


@pytest.mark.parametrize("kwargs,match", [
    (dict(kernel_size=3, padding=2), "at most half"),
    (dict(kernel_size=0), "kernel_size"),
    (dict(kernel_size=2, stride=0), "stride"),
    (dict(kernel_size=2, dilation=0), "dilation"),
    (dict(kernel_size=2, padding=-1), "padding"),
    (dict(kernel_size=9), "too small"),
])
def test_max_pool2d_rejects_bad_arguments(kwargs, match):
    x = clgrad.zeros(1, 2, 5, 5)
    before = clgrad.runtime.launch_count()
    with pytest.raises(RuntimeError, match=match):
        F.max_pool2d(x, **kwargs)
    assert clgrad.runtime.launch_count() == before


def test_pool_rejects_bad_inputs():
    with pytest.raises(RuntimeError, match="3D .* or 4D"):
        F.max_pool2d(clgrad.zeros(5, 5), 2)
    with pytest.raises(TypeError, match="floating point"):
        F.avg_pool2d(clgrad.zeros(1, 5, 5, dtype=clgrad.int64), 2)
    with pytest.raises(TypeError, match="kernel_size"):
        F.max_pool2d(clgrad.zeros(1, 5, 5), (2, 2, 2))
    with pytest.raises(RuntimeError, match="divisor"):
        F.avg_pool2d(clgrad.zeros(1, 5, 5), 2, divisor_override=0)


# -- avg_pool2d -------------------------------------------------------------------------------
# (input shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVG_CASES = [
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), False, True, None),
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), True, True, None),    # last window past the pad
    ((2, 3, 7, 6), (3, 3), (2, 2), (1, 1), True, False, None),
    ((1, 2, 5, 8), (2, 4), (1, 3), (1, 2), True, False, None),
    ((1, 2, 5, 5), (3, 3), (2, 2), (1, 1), False, True, 5),
    ((1, 1, 4, 4), (2, 2), (2, 2), (1, 1), True, True, None),    # half-padded edge windows
    # windows that tile the input (kernel == stride, no padding: avg_bwd_tiled)
    ((2, 3, 7, 6), (2, 2), (2, 2), (0, 0), False, True, None),   # last row in no window
    ((2, 3, 7, 5), (2, 2), (2, 2), (0, 0), True, True, None),    # clipped last windows
    ((1, 2, 6, 11), (3, 3), (3, 3), (0, 0), True, False, None),
    ((1, 2, 9, 8), (2, 4), (2, 4), (0, 0), False, True, 3),      # divisor_override
    ((1, 2, 11, 12), (5, 5), (5, 5), (0, 0), True, False, None),  # no TKH define, clipped
    ((1, 1, 2, 2), (2, 2), (2, 2), (0, 0), False, True, 7),      # one window, divisor 7
]


@pytest.mark.parametrize("shape,k,s,p,ceil,inc,div", AVG_CASES)
def test_avg_pool2d_forward_backward(shape, k, s, p, ceil, inc, div):
    x = RNG.standard_normal(shape)
    want, _ = ref_avg_pool(x, k, s, p, ceil, inc, div)
    out = F.avg_pool2d(strided(x), k, s, p, ceil, inc, div)
    assert tuple(out.shape) == want.shape
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-14)

    g = RNG.standard_normal(want.shape)
    _, want_gx = ref_avg_pool(x, k, s, p, ceil, inc, div, g)
    leaf, view = leaf_and_view(x)
    F.avg_pool2d(view(leaf), k, s, p, ceil, inc, div).backward(strided(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(), want_gx, rtol=1e-12, atol=1e-14)


def test_avg_pool2d_gradcheck():
    leaf, view = leaf_and_view(RNG.standard_normal((2, 2, 5, 6)))
    assert gradcheck(lambda t: F.avg_pool2d(view(t), 3, 2, 1, True, False), [leaf])


# -- adaptive_avg_pool2d ----------------------------------------------------------------------
@pytest.mark.parametrize("shape,size,want_hw", [
    ((2, 3, 7, 5), (3, 2), (3, 2)),
    ((1, 2, 5, 7), (7, 3), (7, 3)),        # larger than the input along H: windows overlap
    ((1, 2, 6, 9), (None, 4), (6, 4)),
    ((2, 6, 5), 4, (4, 4)),                # unbatched, int size
    ((1, 1, 4, 4), 1, (1, 1)),             # global average
    ((3, 5, 3, 6), (1, 1), (1, 1)),        # global average, batched (its own backward)
    ((4, 3, 5), 1, (1, 1)),                # global average, unbatched
])
def test_adaptive_avg_pool2d(shape, size, want_hw):
    x = RNG.standard_normal(shape)
    x4 = x if x.ndim == 4 else x[None]
    g4 = RNG.standard_normal(x4.shape[:2] + want_hw)
    want, want_gx = ref_adaptive(x4, *want_hw, g=g4)
    leaf, view = leaf_and_view(x)
    out = F.adaptive_avg_pool2d(view(leaf), size)
    assert tuple(out.shape) == shape[:-2] + want_hw
    np.testing.assert_allclose(out.detach().numpy().reshape(want.shape), want, rtol=1e-12)
    out.backward(strided(g4.reshape(out.shape)))
    np.testing.assert_allclose(view(leaf.grad).numpy().reshape(x4.shape), want_gx, rtol=1e-12)


def test_adaptive_avg_pool2d_gradcheck():
    leaf, view = leaf_and_view(RNG.standard_normal((1, 2, 5, 7)))
    assert gradcheck(lambda t: F.adaptive_avg_pool2d(view(t), (3, 4)), [leaf])
    assert gradcheck(lambda t: F.adaptive_avg_pool2d(view(t), 1), [leaf])


# -- adaptive max pooling and the 1-D poolings -------------------------------------------------
def ref_adaptive_reduce(x, oh, ow, reduce):
    """PyTorch's adaptive windows: [floor(i H / OH), ceil((i + 1) H / OH))."""
    h, w = x.shape[-2:]
    out = np.empty(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            y0, y1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            x0, x1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[..., i, j] = reduce(x[..., y0:y1, x0:x1], axis=(-2, -1))
    return out


@pytest.mark.parametrize("hw,size", [((5, 7), (3, 2)), ((4, 4), (2, 2)), ((3, 2), (5, 4)),
                                     ((6, 5), (1, 1)), ((5, 5), (None, 3))])
def test_adaptive_max_and_avg_pool2d_all_sizes(hw, size):
    x = values_distinct((2, 3) + hw)
    leaf, view = leaf_and_view(x)
    oh, ow = (hw[0] if size[0] is None else size[0]), size[1]
    y, idx = F.adaptive_max_pool2d(view(leaf), size, return_indices=True)
    np.testing.assert_array_equal(y.detach().numpy(), ref_adaptive_reduce(x, oh, ow, np.max))
    np.testing.assert_array_equal(F.adaptive_avg_pool2d(strided(x), size).numpy().round(12),
                                  ref_adaptive_reduce(x, oh, ow, np.mean).round(12))
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), 2),
                                  y.detach().numpy().reshape(2, 3, -1))
    g = RNG.standard_normal(y.shape)
    y.backward(strided(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(),
                               ref_max_pool_grad(x.shape, idx.numpy(), g), rtol=1e-12)


def values_distinct(shape):
    return (RNG.permutation(math.prod(shape)) * 0.37 - 3.0).reshape(shape)


def test_adaptive_max_pool2d_gradcheck_and_module():
    x = values_distinct((1, 2, 5, 4))
    leaf, view = leaf_and_view(x)
    assert gradcheck(lambda t: F.adaptive_max_pool2d(view(t), (3, 3)), [leaf])
    m = clgrad.nn.AdaptiveMaxPool2d(2)
    np.testing.assert_array_equal(m(clgrad.tensor(x)).numpy(), ref_adaptive_reduce(x, 2, 2, np.max))
    assert clgrad.nn.AdaptiveMaxPool2d((2, 1))(clgrad.tensor(x[0])).shape == (2, 2, 1)


def test_pool1d_family():
    x = values_distinct((2, 3, 11))
    leaf, view = leaf_and_view(x)
    y, idx = F.max_pool1d(view(leaf), 3, 2, 1, return_indices=True)
    ref, ridx = ref_max_pool(x[:, :, None], (1, 3), (1, 2), (0, 1), (1, 1), False)
    np.testing.assert_array_equal(y.detach().numpy(), ref[:, :, 0])
    np.testing.assert_array_equal(idx.numpy(), ridx[:, :, 0])
    assert gradcheck(lambda t: F.max_pool1d(view(t), 3, 2, 1, 2, ceil_mode=True), [leaf])
    a = F.avg_pool1d(view(leaf), 4, 3, 2, count_include_pad=False)
    xp = np.pad(x, ((0, 0), (0, 0), (2, 2)), constant_values=np.nan)
    want = np.stack([np.nanmean(xp[..., 3 * i:3 * i + 4], -1) for i in range(4)], -1)
    np.testing.assert_allclose(a.detach().numpy(), want, rtol=1e-12)
    assert gradcheck(lambda t: F.avg_pool1d(view(t), 4, 3, 2), [leaf])
    np.testing.assert_allclose(F.adaptive_avg_pool1d(view(leaf), 4).detach().numpy(),
                               ref_adaptive_reduce(x[:, :, None], 1, 4, np.mean)[:, :, 0],
                               rtol=1e-12)
    np.testing.assert_array_equal(F.adaptive_max_pool1d(view(leaf), 4).detach().numpy(),
                                  ref_adaptive_reduce(x[:, :, None], 1, 4, np.max)[:, :, 0])
    assert gradcheck(lambda t: F.adaptive_avg_pool1d(view(t), 4), [leaf])
    nn = clgrad.nn
    t = clgrad.tensor(x[0])                                            # unbatched (C, L)
    assert nn.MaxPool1d(2)(t).shape == (3, 5) and nn.AvgPool1d(3, 1)(t).shape == (3, 9)
    assert nn.AdaptiveAvgPool1d(1)(t).shape == (3, 1)
    assert nn.AdaptiveMaxPool1d(2)(t).shape == (3, 2)
    with pytest.raises(RuntimeError, match="max_pool1d: expected a 2-D"):
        F.max_pool1d(clgrad.tensor(x[None]), 2)


@pytest.mark.parametrize("k", [(2, 2), (3, 3), (2, 4), (4, 4)])
@pytest.mark.parametrize("ceil", [False, True])
def test_max_pool2d_tiled_small_windows_ties_and_nan(k, ceil):
    """Windows that tile the input up to 4 x 4 (pool.cl's max_fwd_tiled with the window as
    defines, every load before the comparisons): ties take the window's first element
    (row-major), a NaN wins (the last NaN of a window holding several, as the loop over the
    window in order gives), partial windows under ceil_mode; values and indices against
    the element-by-element reference, the gradient where no NaN is."""
    x = np.round(RNG.standard_normal((2, 3, 4 * k[0] + 1, 4 * k[1] + 3)) * 2) / 2  # many ties
    x[0, 0, 0, 1] = np.nan
    x[1, 2, k[0] - 1, k[1] - 1] = np.nan
    x[1, 2, k[0] - 1, 0] = np.nan
    out, idx = F.max_pool2d(strided(x), k, k, 0, 1, ceil_mode=ceil, return_indices=True)
    want, widx = ref_max_pool(np.nan_to_num(x, nan=np.inf), k, k, (0, 0), (1, 1), ceil)
    nan = np.isnan(x)
    for a, b in zip(*np.nonzero(nan.any(axis=(2, 3)))):  # windows with a NaN: its last NaN
        for i in range(want.shape[2]):
            for j in range(want.shape[3]):
                win = nan[a, b, i * k[0]:(i + 1) * k[0], j * k[1]:(j + 1) * k[1]]
                if win.any():
                    ys, xs = np.nonzero(win)
                    want[a, b, i, j] = np.nan
                    widx[a, b, i, j] = (i * k[0] + ys[-1]) * x.shape[3] + j * k[1] + xs[-1]
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(idx.numpy(), widx)


def test_pool_checks_kept_per_signature_follow_every_argument():
    """The poolings keep their checked geometry per signature (ops/pool.py _signature: exact
    ints and tuples of ints only): calls that differ only in an argument's type (a bool, a
    list, a NumPy int), its value, ceil_mode, the input's shape (batched or not) or dtype get
    the checks and the geometry of their own, NumPy's values, and the same errors after a
    kept signature as before one."""
    xn = RNG.permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) * 0.5 - 9.0
    x = clgrad.tensor(xn)
    for _ in range(2):  # the second round takes the kept geometry
        for k, s, ceil in ((2, None, False), ((2, 2), 2, False), (3, 2, True), ([3, 2], 1,
                                                                                False),
                           (np.int64(3), (2, 1), True), (1, 1, False)):
            kk = tuple(int(e) for e in (k if isinstance(k, (list, tuple)) else (k, k)))
            ss = kk if s is None else tuple(int(e) for e in (s if isinstance(s, tuple)
                                                             else (s, s)))
            want, _ = ref_max_pool(xn, kk, ss, (0, 0), (1, 1), ceil)
            np.testing.assert_array_equal(F.max_pool2d(x, k, s, ceil_mode=ceil).numpy(), want)
            np.testing.assert_array_equal(F.max_pool2d(x[0], k, s, ceil_mode=ceil).numpy(),
                                          want[0])  # unbatched: the same numbers, (C, OH, OW)
            want, _ = ref_avg_pool(xn, kk, ss, (0, 0), ceil, True, None)
            np.testing.assert_allclose(F.avg_pool2d(x, k, s, ceil_mode=ceil).numpy(), want,
                                       rtol=1e-12)
            np.testing.assert_allclose(F.avg_pool2d(x.float(), k, s, ceil_mode=ceil).numpy(),
                                       want, rtol=1e-5)
        for bad in (True, (2, True), 0, (2, 0)):  # never taken for the kept (1, 1) or (2, 2)
            with pytest.raises((TypeError, RuntimeError), match="max_pool2d"):
                F.max_pool2d(x, bad)
            with pytest.raises((TypeError, RuntimeError), match="avg_pool2d"):
                F.avg_pool2d(x, bad)
        with pytest.raises(RuntimeError, match="pad should be at most half"):
            F.max_pool2d(x, 2, 2, 2)
        for size, hw in ((1, (1, 1)), ((3, 2), (3, 2)), ([3, 2], (3, 2)), ((7, 6), (7, 6))):
            np.testing.assert_allclose(F.adaptive_avg_pool2d(x, size).numpy(),
                                       ref_adaptive(xn, *hw)[0], rtol=1e-12)
        with pytest.raises(TypeError, match="adaptive_avg_pool2d"):
            F.adaptive_avg_pool2d(x, True)


@pytest.mark.parametrize("op", ("avg_pool2d", "adaptive_avg_pool2d"))
def test_half_average_pools_sum_in_float(cpu_fp16, op):
    """float16 windows are summed in float32 and rounded once (PyTorch's): a 32 x 32 window
    of values in [1, 2) within one rounding (2^-11 relative) of the float64 mean, forward and
    backward. Summed in float16 the forward was 1 % off (spacing 1 at the partial sums'
    magnitude, 1024)."""
    rng = np.random.default_rng(1)
    x = (rng.random((2, 3, 32, 32)) + 1).astype(np.float16)
    X = clgrad.tensor(x, requires_grad=True)
    f = getattr(clgrad.nn.functional, op)
    y = f(X, 32) if op == "avg_pool2d" else f(X, 1)
    assert y.dtype is clgrad.float16
    want = x.astype(np.float64).mean((2, 3), keepdims=True)
    np.testing.assert_array_less(np.abs(y.detach().numpy().astype(np.float64) - want),
                                 2.0 ** -11 * want + 1e-12)
    g = (rng.random((2, 3, 1, 1)) + 1).astype(np.float16)
    y.backward(clgrad.tensor(g))
    gw = np.broadcast_to(g.astype(np.float64) / 1024, x.shape)
    np.testing.assert_array_less(np.abs(X.grad.numpy().astype(np.float64) - gw),
                                 2.0 ** -11 * gw + 1e-12)


@pytest.mark.parametrize("hw", (45, 65, 256))
def test_half_global_average_pool_gradient_large_maps(cpu_fp16, hw):
    """adaptive_avg_pool2d(x, 1) of float16 maps of 2025, 4225 and 65536 pixels: the gradient
    gy / (H*W) within one rounding. The divisor rounded to float16 made it inf past 65504
    (every gradient 0) and 4224 for 4225."""
    x = clgrad.ones(1, 2, hw, hw, dtype=clgrad.float16, requires_grad=True)
    y = clgrad.nn.functional.adaptive_avg_pool2d(x, 1)
    y.backward(clgrad.full((1, 2, 1, 1), 3.0, dtype=clgrad.float16))
    want = 3.0 / (hw * hw)
    got = x.grad.numpy().astype(np.float64)
    assert np.all(np.abs(got - want) <= 2.0 ** -11 * want + 2.0 ** -25), (got.min(), want)
