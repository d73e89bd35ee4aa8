"""batch_norm and local_response_norm against float64 NumPy references.

Inputs, parameters and running statistics are non-contiguous views; backward is checked
against closed forms / NumPy finite differences and by gradcheck in float64.
"""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from strided import strided, leaf_and_view, numeric_vjp
from clgrad.autograd import gradcheck

RNG = np.random.default_rng(11)


# -- batch_norm -------------------------------------------------------------------------------
def bshape(x):
    return (1, -1) + (1,) * (x.ndim - 2)


def ref_bn(x, rm, rv, w, b, training, momentum, eps):
    """(y, new running mean, new running var)."""
    axes = (0,) + tuple(range(2, x.ndim))
    if training:
        m = x.size // x.shape[1]
        mean, var = x.mean(axes), x.var(axes)
        if rm is not None:
            rm = (1 - momentum) * rm + momentum * mean
            rv = (1 - momentum) * rv + momentum * var * m / (m - 1)
    else:
        mean, var = rm, rv
    y = (x - mean.reshape(bshape(x))) / np.sqrt(var.reshape(bshape(x)) + eps)
    if w is not None:
        y = y * w.reshape(bshape(x))
    if b is not None:
        y = y + b.reshape(bshape(x))
    return y, rm, rv


def ref_bn_grad(x, g, w, mean, var, eps, training):
    """(gx, gw, gb): the closed forms of batch norm's backward."""
    axes = (0,) + tuple(range(2, x.ndim))
    m = x.size // x.shape[1]
    invstd = 1 / np.sqrt(var + eps)
    xh = (x - mean.reshape(bshape(x))) * invstd.reshape(bshape(x))
    gb, gw = g.sum(axes), (g * xh).sum(axes)
    k = ((w if w is not None else 1) * invstd).reshape(bshape(x))
    if training:
        gx = k / m * (m * g - gb.reshape(bshape(x)) - xh * gw.reshape(bshape(x)))
    else:
        gx = k * g
    return gx, gw, gb


@pytest.mark.parametrize("shape", [(4, 3, 5, 2), (6, 5), (3, 4, 7), (3, 2, 40, 41)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_forward_backward(shape, training):
    c = shape[1]
    x = RNG.standard_normal(shape) * 2 + 0.5
    w, b = RNG.uniform(0.5, 1.5, c), RNG.standard_normal(c)
    rm, rv = RNG.standard_normal(c), RNG.uniform(0.5, 2.0, c)
    want, want_rm, want_rv = ref_bn(x, rm, rv, w, b, training, 0.3, 1e-4)
    rm_t, rv_t = strided(rm), strided(rv)
    leaf, view = leaf_and_view(x)
    wt, bt = strided(w).requires_grad_(), strided(b).requires_grad_()
    y = F.batch_norm(view(leaf), rm_t, rv_t, wt, bt, training, 0.3, 1e-4)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rm_t.numpy(), want_rm, rtol=1e-12)   # written through the view
    np.testing.assert_allclose(rv_t.numpy(), want_rv, rtol=1e-12)

    g = RNG.standard_normal(shape)
    y.backward(strided(g))
    axes = (0,) + tuple(range(2, x.ndim))
    mean, var = (x.mean(axes), x.var(axes)) if training else (rm, rv)
    gx, gw, gb = ref_bn_grad(x, g, w, mean, var, 1e-4, training)
    np.testing.assert_allclose(view(leaf.grad).numpy(), gx, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(bt.grad.numpy(), gb, rtol=1e-9, atol=1e-11)


def test_batch_norm_without_affine_or_running_stats():
    x = RNG.standard_normal((5, 3, 4))
    y = F.batch_norm(strided(x), None, None, training=True)
    np.testing.assert_allclose(y.numpy(), ref_bn(x, None, None, None, None, True, 0.1, 1e-5)[0],
                               rtol=1e-10, atol=1e-12)


def test_batch_norm_running_stats_bump_version_only_in_training():
    x = clgrad.tensor(RNG.standard_normal((4, 2, 3)), dtype=clgrad.float32)
    rm, rv = clgrad.zeros(2), clgrad.ones(2)
    v0 = rm._version
    F.batch_norm(x, rm, rv, training=False)
    assert rm._version == v0 and np.all(rm.numpy() == 0)
    F.batch_norm(x, rm, rv, training=True)
    assert rm._version > v0 and rv._version > v0


def test_batch_norm_float32_two_pass_variance():
    # a large common offset: E[x^2] - E[x]^2 would lose every digit of the variance in float32
    x = (1000.0 + RNG.standard_normal((8, 2, 16, 16))).astype(np.float32)
    rm, rv = clgrad.zeros(2), clgrad.ones(2)
    y = F.batch_norm(strided(x, clgrad.float32), rm, rv, training=True, momentum=1.0)
    xd = x.astype(np.float64)
    np.testing.assert_allclose(rv.numpy(), xd.var((0, 2, 3), ddof=1), rtol=1e-4)
    np.testing.assert_allclose(y.numpy(), ref_bn(xd, None, None, None, None, True, 0, 1e-5)[0],
                               atol=2e-3)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck(training):
    x = RNG.standard_normal((3, 2, 2, 3))
    leaf, view = leaf_and_view(x)
    w = clgrad.tensor(RNG.uniform(0.5, 1.5, 2), requires_grad=True)
    b = clgrad.tensor(RNG.standard_normal(2), requires_grad=True)
    rm, rv = clgrad.zeros(2, dtype=clgrad.float64), clgrad.ones(2, dtype=clgrad.float64)
    # running stats: updated on every call in training, so gradcheck runs without them there
    stats = (None, None) if training else (rm, rv)
    assert gradcheck(lambda t, w_, b_: F.batch_norm(view(t), *stats, w_, b_, training),
                     [leaf, w, b])


def test_batch_norm_rejects_bad_input():
    x = clgrad.zeros(4, 3, 2)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(clgrad.zeros(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean and running_var"):
        F.batch_norm(x, None, None, training=False)
    with pytest.raises(RuntimeError, match=r"weight of shape \(3,\)"):
        F.batch_norm(x, None, None, clgrad.ones(4), training=True)
    with pytest.raises(TypeError, match="dtype"):
        F.batch_norm(x, clgrad.zeros(3, dtype=clgrad.float64), clgrad.ones(3))
    with pytest.raises(RuntimeError, match="2 or more dims"):
        F.batch_norm(clgrad.zeros(3), None, None, training=True)


# -- local_response_norm ----------------------------------------------------------------------
def ref_lrn(x, size, alpha, beta, k):
    c = x.shape[1]
    sq = np.zeros_like(x)
    for ch in range(c):
        lo, hi = ch - size // 2, ch + (size - 1) // 2
        for q in range(max(lo, 0), min(hi, c - 1) + 1):
            sq[:, ch] += x[:, q] ** 2
    return x / (k + alpha / size * sq) ** beta


@pytest.mark.parametrize("shape,size,beta", [((2, 6, 3, 4), 5, 0.75), ((2, 4, 5), 2, 0.6),
                                             ((1, 3, 2, 2, 3), 4, 0.75), ((2, 5, 3), 1, 1.3)])
def test_local_response_norm(shape, size, beta):
    x = RNG.standard_normal(shape) * 3
    alpha, k = 0.3, 1.5     # large alpha so the neighbours matter
    want = ref_lrn(x, size, alpha, beta, k)
    leaf, view = leaf_and_view(x)
    y = F.local_response_norm(view(leaf), size, alpha, beta, k)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12)
    g = RNG.standard_normal(shape)
    y.backward(strided(g))
    want_gx = numeric_vjp(lambda a: ref_lrn(a, size, alpha, beta, k), x, g)
    np.testing.assert_allclose(view(leaf.grad).numpy(), want_gx, rtol=1e-6, atol=1e-8)


def test_local_response_norm_alexnet_defaults_and_gradcheck():
    x = RNG.standard_normal((1, 7, 2, 3)) * 30
    np.testing.assert_allclose(F.local_response_norm(strided(x), 5, 1e-4, 0.75, 2.0).numpy(),
                               ref_lrn(x, 5, 1e-4, 0.75, 2.0), rtol=1e-12)
    leaf, view = leaf_and_view(x[:, :5] / 30)
    assert gradcheck(lambda t: F.local_response_norm(view(t), 3, 0.5, 0.6, 1.0), [leaf])


def test_local_response_norm_rejects_bad_input():
    with pytest.raises(RuntimeError, match="3D or higher"):
        F.local_response_norm(clgrad.zeros(2, 3), 2)
    with pytest.raises(ValueError, match="size >= 1"):
        F.local_response_norm(clgrad.zeros(2, 3, 4), 0)


@pytest.mark.parametrize("nan_at", [(0, 0, 1, 1), (1, 1, 0, 2)])
def test_batch_norm_nan_in_gives_nan_out_in_its_channel(nan_at):
    """NaN in gives NaN out: the channel holding it, and its running statistics."""
    x = RNG.standard_normal((2, 3, 4, 5))
    x[nan_at] = np.nan
    rm, rv = clgrad.zeros(3, dtype=clgrad.float64), clgrad.ones(3, dtype=clgrad.float64)
    y = F.batch_norm(strided(x), rm, rv, training=True).numpy()
    c = nan_at[1]
    assert np.isnan(y[:, c]).all() and np.isfinite(np.delete(y, c, axis=1)).all()
    assert np.isnan(rm.numpy()[c]) and np.isnan(rv.numpy()[c])
    assert np.isfinite(np.delete(rm.numpy(), c)).all()


def test_batch_norm_large_offset_keeps_the_variance():
    """float32 data 1e4 + N(0, 1): a one-pass sum of squares would lose the variance to
    cancellation; the corrected two-pass algorithm keeps it (reference: float64 NumPy)."""
    x = (1e4 + RNG.standard_normal((4, 2, 16, 16))).astype(np.float32)
    rm, rv = clgrad.zeros(2), clgrad.ones(2)
    y = F.batch_norm(clgrad.tensor(x), rm, rv, training=True, momentum=1.0)
    xd = x.astype(np.float64)
    var = xd.var(axis=(0, 2, 3))
    np.testing.assert_allclose(rv.numpy(), var * xd[:, 0].size / (xd[:, 0].size - 1),
                               rtol=2e-3)
    want = (xd - xd.mean(axis=(0, 2, 3), keepdims=True)) / np.sqrt(
        var[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(y.numpy(), want, atol=2e-3)


@pytest.mark.parametrize("layout", ["contiguous", "one_sample", "strided_w", "channels_last"])
def test_batch_norm_big_channels_outlier_and_layouts(layout):
    """Channels of 8192 elements (the wide work-groups on GPUs, their 32-bit offsets where every
    view has unit inner stride, the general offsets otherwise), data with an outlier of 1e6 at
    a channel's first element over 1e3 + N(0, 1) (the per-work-item Welford states merged
    pairwise keep the variance; a sum of squares shifted by the first element would not):
    output, running statistics and the three gradients against float64 NumPy."""
    n, c, h, w = {"one_sample": (1, 3, 64, 128)}.get(layout, (8, 3, 32, 32))
    full = (1e3 + RNG.standard_normal((n, c, h, 2 * w if layout == "strided_w" else w)))
    full[0, 1, 0, 0] = 1e6
    if layout == "strided_w":
        full[0, 1, 0, 0], full[0, 1, 0, 1] = 1e3, 1e6  # the outlier stays in the view
    full = full.astype(np.float32)
    if layout == "channels_last":
        base = clgrad.tensor(np.ascontiguousarray(full.transpose(0, 2, 3, 1)))
        x = base.permute(0, 3, 1, 2)
    else:
        base = clgrad.tensor(full)
        x = base[..., ::2] if layout == "strided_w" else base
    xd = x.numpy().astype(np.float64)
    x.requires_grad_()
    wt = clgrad.tensor(RNG.standard_normal(c).astype(np.float32), requires_grad=True)
    bs = clgrad.tensor(RNG.standard_normal(c).astype(np.float32), requires_grad=True)
    rm, rv = clgrad.zeros(c), clgrad.ones(c)
    y = F.batch_norm(x, rm, rv, wt, bs, training=True, momentum=0.5)
    want, wrm, wrv = ref_bn(xd, np.zeros(c), np.ones(c), wt.detach().numpy().astype(np.float64),
                            bs.detach().numpy().astype(np.float64), True, 0.5, 1e-5)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(rm.numpy(), wrm, rtol=1e-5)
    np.testing.assert_allclose(rv.numpy(), wrv, rtol=1e-3)
    g = RNG.standard_normal(y.shape).astype(np.float32)
    y.backward(clgrad.tensor(g))
    axes = (0, 2, 3)
    gx, gw, gb = ref_bn_grad(xd, g.astype(np.float64), wt.detach().numpy().astype(np.float64),
                             xd.mean(axes), xd.var(axes), 1e-5, True)
    for got, ref in ((x.grad, gx), (wt.grad, gw), (bs.grad, gb)):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-3,
                                   atol=1e-3 * max(1.0, float(np.abs(ref).max())))


# -- layer_norm / group_norm / instance_norm (row kernels rn_fwd / rn_bwd) -------------------
def ref_rows(a, axes, eps):
    """(a - mean) / sqrt(biased var + eps) over ``axes``."""
    mu = a.mean(axes, keepdims=True)
    return (a - mu) / np.sqrt(((a - mu) ** 2).mean(axes, keepdims=True) + eps)


def ref_ln(x, w, b, k, eps=1e-5):
    y = ref_rows(x, tuple(range(x.ndim - k, x.ndim)), eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def ref_gn(x, g, w, b, eps=1e-5):
    n, c = x.shape[:2]
    y = ref_rows(x.reshape(n, g, -1), 2, eps).reshape(x.shape)
    s = (1, c) + (1,) * (x.ndim - 2)
    return y * (1 if w is None else w.reshape(s)) + (0 if b is None else b.reshape(s))


@pytest.mark.parametrize("shape,k", [((3, 4, 5), 1), ((2, 3, 4, 5), 2), ((1, 300), 1),
                                     ((4, 1), 1)])
def test_layer_norm_forward_backward(shape, k):
    x = RNG.standard_normal(shape) * 3 + 1
    ns = shape[len(shape) - k:]
    w, b = RNG.standard_normal(ns), RNG.standard_normal(ns)
    leaf, view = leaf_and_view(x)
    wt, bt = strided(w), strided(b)
    wl, bl = (clgrad.tensor(v, requires_grad=True) for v in (w, b))
    y = F.layer_norm(view(leaf), ns, wl, bl)
    np.testing.assert_allclose(y.detach().numpy(), ref_ln(x, w, b, k), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(F.layer_norm(strided(x), ns, wt, bt).numpy(),
                               ref_ln(x, w, b, k), rtol=1e-10, atol=1e-12)
    g = RNG.standard_normal(shape)
    y.backward(strided(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(),
                               numeric_vjp(lambda a: ref_ln(a, w, b, k), x, g), atol=1e-6)
    np.testing.assert_allclose(wl.grad.numpy(),
                               numeric_vjp(lambda a: ref_ln(x, a, b, k), w, g), atol=1e-6)
    np.testing.assert_allclose(bl.grad.numpy(), g.reshape((-1,) + ns).sum(0), atol=1e-12)


@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 4), 3), ((3, 4, 5), 4), ((2, 4), 1)])
def test_group_norm_forward_backward(shape, groups):
    x = RNG.standard_normal(shape) * 2 - 1
    c = shape[1]
    w, b = RNG.standard_normal(c), RNG.standard_normal(c)
    leaf, view = leaf_and_view(x)
    wl, bl = (clgrad.tensor(v, requires_grad=True) for v in (w, b))
    y = F.group_norm(view(leaf), groups, wl, bl)
    np.testing.assert_allclose(y.detach().numpy(), ref_gn(x, groups, w, b), rtol=1e-10, atol=1e-12)
    g = RNG.standard_normal(shape)
    y.backward(strided(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(),
                               numeric_vjp(lambda a: ref_gn(a, groups, w, b), x, g), atol=1e-6)
    np.testing.assert_allclose(wl.grad.numpy(),
                               numeric_vjp(lambda a: ref_gn(x, groups, a, b), w, g), atol=1e-6)
    np.testing.assert_allclose(bl.grad.numpy(), numeric_vjp(
        lambda a: ref_gn(x, groups, w, a), b, g), atol=1e-6)
    assert gradcheck(lambda t: F.group_norm(view(t), groups), [leaf])
    with pytest.raises(RuntimeError, match="group_norm: expected the number of channels"):
        F.group_norm(view(leaf), 5)


def test_instance_norm_and_running_stats():
    x = RNG.standard_normal((3, 2, 4, 5)) + 2
    leaf, view = leaf_and_view(x)
    w = clgrad.tensor([0.5, -1.5], dtype=clgrad.float64, requires_grad=True)
    rm = strided(np.array([0.1, 0.2]))
    rv = strided(np.array([1.0, 2.0]))
    y = F.instance_norm(view(leaf), rm, rv, w, None, True, 0.2)
    ref = ref_rows(x, (2, 3), 1e-5) * np.array([0.5, -1.5])[:, None, None]
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rm.numpy(), 0.8 * np.array([0.1, 0.2]) +
                               0.2 * x.mean((2, 3)).mean(0), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.8 * np.array([1.0, 2.0]) +
                               0.2 * x.var((2, 3), ddof=1).mean(0), rtol=1e-12)
    assert gradcheck(lambda t, u: F.instance_norm(view(t), weight=u), [leaf, w])
    m = clgrad.nn.InstanceNorm2d(2, track_running_stats=True).double()
    m(view(leaf))
    m.eval()
    ye = m(view(leaf)).detach().numpy()
    rmn, rvn = m.running_mean.numpy(), m.running_var.numpy()
    np.testing.assert_allclose(ye, (x - rmn[:, None, None]) / np.sqrt(rvn[:, None, None] +
                                                                         1e-5), rtol=1e-10)
    # PyTorch's InstanceNorm: momentum=None is momentum 0 (the running statistics stay put; no
    # cumulative average as BatchNorm's) and num_batches_tracked never counts
    cum = clgrad.nn.InstanceNorm2d(2, momentum=None, track_running_stats=True).double()
    cum(clgrad.tensor(x))
    cum(clgrad.tensor(2 * x))
    assert cum.running_mean.tolist() == [0.0, 0.0] and cum.running_var.tolist() == [1.0, 1.0]
    assert int(cum.num_batches_tracked) == 0 and int(m.num_batches_tracked) == 0
    torch = pytest.importorskip("torch")
    tm = torch.nn.InstanceNorm2d(2, track_running_stats=True).double()
    tm(torch.tensor(x))
    np.testing.assert_allclose(rmn, tm.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rvn, tm.running_var.numpy(), rtol=1e-12)
    assert int(tm.num_batches_tracked) == 0


def test_layer_norm_launches():
    """Forward: one row kernel; backward: one row kernel and one reduction per parameter."""
    from clgrad.runtime import launch_count
    x = clgrad.tensor(RNG.standard_normal((6, 300)), requires_grad=True)
    w, b = (clgrad.tensor(RNG.standard_normal(300), requires_grad=True) for _ in range(2))
    g = clgrad.tensor(RNG.standard_normal((6, 300)))
    F.layer_norm(x, 300, w, b).backward(g)          # compile first
    n0 = launch_count()
    y = F.layer_norm(x, 300, w, b)
    n1 = launch_count()
    grads = y.grad_fn.backward_fn(g)                 # the op's own backward, no accumulation
    assert (n1 - n0, launch_count() - n1) == (1, 3)
    assert [tuple(t.shape) for t in grads] == [(6, 300), (300,), (300,)]


def test_norm_modules():
    nn = clgrad.nn
    x = RNG.standard_normal((4, 3, 5))
    t = clgrad.tensor(x)
    bn = nn.BatchNorm1d(3).double()
    np.testing.assert_allclose(bn(t).detach().numpy(), ref_rows(x, (0, 2), 1e-5), rtol=1e-10)
    np.testing.assert_allclose(bn(t[:, :, 0]).detach().numpy(), ref_rows(x[:, :, 0], 0, 1e-5),
                               rtol=1e-10)
    with pytest.raises(ValueError, match="BatchNorm1d: expected 2D or 3D"):
        bn(t[None])
    ln = nn.LayerNorm(5, bias=False).double()
    assert ln.bias is None and ln.weight.shape == (5,)
    np.testing.assert_allclose(ln(t).detach().numpy(), ref_rows(x, 2, 1e-5), rtol=1e-10)
    gn = nn.GroupNorm(3, 3).double()
    np.testing.assert_allclose(gn(t).detach().numpy(), ref_rows(x, 2, 1e-5), rtol=1e-10)
    assert [n for n, _ in gn.named_parameters()] == ["weight", "bias"]
    inn = nn.InstanceNorm1d(3)
    assert list(inn.parameters()) == [] and "running_mean" not in inn.state_dict()
    np.testing.assert_allclose(inn(t).numpy(), ref_rows(x, 2, 1e-5), rtol=1e-10)
    with pytest.raises(ValueError, match="GroupNorm: expected num_channels divisible"):
        nn.GroupNorm(2, 3)


def test_layer_group_norm_match_pytorch_float32():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 6, 3, 3)).astype(np.float32) * 5 + 3
    for ours, theirs in [(lambda t: F.layer_norm(t, (6, 3, 3)),
                          lambda t: torch.nn.functional.layer_norm(t, (6, 3, 3))),
                         (lambda t: F.group_norm(t, 2), lambda t: torch.nn.functional.group_norm(
                             t, 2))]:
        a = clgrad.tensor(x, requires_grad=True)
        b = torch.tensor(x, requires_grad=True)
        ya, yb = ours(a), theirs(b)
        np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-5, atol=1e-5)
        (ya * ya * clgrad.tensor(x)).sum().backward()
        (yb * yb * torch.tensor(x)).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_batch_norm_float32_tiny_maps_offset_data():
    """Training statistics over 1x1 maps (m = N values per channel) of data far from 0: the
    two-pass variance stays accurate where E[x^2] - E[x]^2 would cancel to noise (issue 13)."""
    x = (RNG.standard_normal((64, 4, 1, 1)) + 1000.0).astype(np.float32)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    xd = x.astype(np.float64)
    ref = ref_rows(xd, (0, 2, 3), 1e-5)
    xt = clgrad.tensor(x, requires_grad=True)
    rv = clgrad.ones(4)
    y = F.batch_norm(xt, clgrad.zeros(4), rv, training=True, momentum=1.0)
    np.testing.assert_allclose(y.detach().numpy(), ref, atol=5e-4)          # measured 5e-5
    np.testing.assert_allclose(rv.numpy(), xd.var((0, 2, 3), ddof=1), rtol=1e-3)
    y.backward(clgrad.tensor(g))
    gd = g.astype(np.float64)
    ref_gx = (gd - gd.mean((0, 2, 3), keepdims=True) - ref * (gd * ref).mean(
        (0, 2, 3), keepdims=True)) / np.sqrt(xd.var((0, 2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(xt.grad.numpy(), ref_gx, atol=5e-3)


# -- batch_norm fused with an activation (nn.Sequential's BatchNorm2d + ReLU / ReLU6 / SiLU) ---
def _sig(v):
    return 1 / (1 + np.exp(-v))


_ACT_REF = {  # activation: (forward, derivative), NumPy float64, PyTorch's kink choices
    "relu": (lambda v: np.maximum(v, 0), lambda v: (v > 0).astype(float)),
    "relu6": (lambda v: np.clip(v, 0, 6), lambda v: ((v > 0) & (v < 6)).astype(float)),
    "silu": (lambda v: v * _sig(v), lambda v: _sig(v) * (1 + v * (1 - _sig(v)))),
}


@pytest.mark.parametrize("act", ["relu", "relu6", "silu"])
@pytest.mark.parametrize("kind", ["view", "contig", "contig-tail"])
@pytest.mark.parametrize("training,affine", [(True, True), (False, True), (True, False)])
def test_batch_norm_activation_fused(act, kind, training, affine):
    """batch_norm(..., activation=act) against NumPy's float64 batch norm then act, forward
    and gradients (relu6 with weights large enough that pre-activations pass 6)."""
    shape = {"view": (3, 2, 5, 4), "contig": (4, 3, 8, 9), "contig-tail": (2, 3, 5, 7)}[kind]
    c = shape[1]
    x = RNG.standard_normal(shape) * 2 + 0.5
    w, b = (RNG.uniform(0.5, 1.5, c), RNG.standard_normal(c)) if affine else (None, None)
    if act == "relu6" and affine:
        w = w * 4
    rm, rv = RNG.standard_normal(c), RNG.uniform(0.5, 2.0, c)
    pre, want_rm, _ = ref_bn(x, rm, rv, w, b, training, 0.3, 1e-4)
    fwd, deriv = _ACT_REF[act]
    rm_t, rv_t = strided(rm), strided(rv)
    if kind == "view":
        leaf, view = leaf_and_view(x)
    else:
        leaf, view = clgrad.tensor(x, requires_grad=True), (lambda t: t)
    wt, bt = [None if p is None else strided(p).requires_grad_() for p in (w, b)]
    kw = dict(relu=True) if act == "relu" else dict(activation=act)
    y = F.batch_norm(view(leaf), rm_t, rv_t, wt, bt, training, 0.3, 1e-4, **kw)
    np.testing.assert_allclose(y.detach().numpy(), fwd(pre), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rm_t.numpy(), want_rm, rtol=1e-12)
    if act == "relu6" and affine:
        assert (pre > 6).any() and (pre < 0).any()
    g = RNG.standard_normal(shape)
    y.backward(strided(g))
    axes = (0,) + tuple(range(2, x.ndim))
    mean, var = (x.mean(axes), x.var(axes)) if training else (rm, rv)
    gx, gw, gb = ref_bn_grad(x, g * deriv(pre), w, mean, var, 1e-4, training)
    np.testing.assert_allclose(view(leaf.grad).numpy(), gx, rtol=1e-9, atol=1e-11)
    if affine:
        np.testing.assert_allclose(wt.grad.numpy(), gw, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(bt.grad.numpy(), gb, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("act", ["relu", "relu6", "silu"])
def test_batch_norm_activation_gradcheck(act):
    x = RNG.standard_normal((3, 2, 2, 3))
    leaf, view = leaf_and_view(x)
    w = clgrad.tensor(RNG.uniform(0.5, 1.5, 2) * (4 if act == "relu6" else 1),
                      requires_grad=True)
    b = clgrad.tensor(RNG.standard_normal(2), requires_grad=True)
    assert gradcheck(lambda t, w_, b_: F.batch_norm(view(t), None, None, w_, b_, True,
                                                    activation=act), [leaf, w, b])


def test_batch_norm_activation_nan_and_bad_name():
    """NaN in a channel gives NaN out through each fused activation (as the unfused ops);
    an unknown activation name raises ValueError naming it."""
    x = np.ones((2, 2, 3, 3))
    x[0, 1, 0, 0] = np.nan
    for act in ("relu", "relu6", "silu"):
        y = F.batch_norm(clgrad.tensor(x), None, None, training=True, activation=act).numpy()
        assert np.isnan(y[:, 1]).all() and not np.isnan(y[:, 0]).any()
    with pytest.raises(ValueError, match="'gelu'"):
        F.batch_norm(clgrad.tensor(x), None, None, training=True, activation="gelu")


@pytest.mark.parametrize("act_name", ["ReLU", "ReLU6", "SiLU"])
def test_sequential_fuses_batch_norm_and_activation(act_name):
    """Sequential(BatchNorm2d, act) gives the values and gradients of the two modules run one
    after the other, in one fused op (one launch fewer each way); a module whose forward was
    replaced on the instance is not fused. The two apart with the engine's absorb (ReLU's
    backward run in batch norm's, autograd.graph._absorb): the same, one launch fewer back."""
    import clgrad.nn as nn
    from clgrad.autograd import graph
    from clgrad.runtime import launch_count
    x = RNG.standard_normal((4, 3, 5, 6)) * 3
    outs = []
    for fused, absorb in ((True, False), (False, False), (False, True)):
        bn, act = nn.BatchNorm2d(3).double(), getattr(nn, act_name)()
        with clgrad.no_grad():
            bn.weight.copy_(clgrad.tensor([0.5, 1.0, 8.0]))
            bn.bias.copy_(clgrad.tensor([0.1, -0.2, 0.3]))
        xt = clgrad.tensor(x, requires_grad=True)
        n0 = launch_count()
        y = nn.Sequential(bn, act)(xt) if fused else act(bn(xt))
        n1 = launch_count()
        graph.ABSORB = absorb
        try:
            y.backward(clgrad.tensor(np.cos(np.arange(y.numel())).reshape(y.shape)))
        finally:
            graph.ABSORB = True
        outs.append((y.detach().numpy(), xt.grad.numpy(), bn.weight.grad.numpy(),
                     bn.bias.grad.numpy(), bn.running_var.numpy(), n1 - n0, launch_count() - n1))
    for a, b in zip(outs[0][:5], outs[1][:5]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert outs[0][5] == outs[1][5] - 1 and outs[0][6] <= outs[1][6] - 1
    for a, b in zip(outs[2][:5], outs[1][:5]):  # absorbed: bit for bit
        np.testing.assert_array_equal(a, b)
    assert outs[2][6] == outs[1][6] - (act_name == "ReLU")  # (only relu is absorbed)
    bn, act = nn.BatchNorm2d(3).double(), getattr(nn, act_name)()
    act.forward = lambda t: t * 2  # replaced on the instance: Sequential calls it
    y = nn.Sequential(bn.eval(), act)(clgrad.tensor(x))
    np.testing.assert_allclose(y.detach().numpy(), 2 * x / np.sqrt(1 + 1e-5), rtol=1e-12)


def test_batch_norm_launch_plans_follow_every_argument():
    """The forward's and backward's launch plans are kept per shape, layout, flags, momentum and
    eps: the same input shape run with another momentum, eps, parameter views (strided, or
    None) or mode gives that call's values (float64 NumPy reference each time)."""
    x = RNG.standard_normal((4, 3, 6, 6)).astype(np.float32)
    cases = [dict(momentum=0.1, eps=1e-5, w=True, training=True),
             dict(momentum=0.7, eps=1e-5, w=True, training=True),
             dict(momentum=0.7, eps=1e-1, w=True, training=True),
             dict(momentum=0.7, eps=1e-1, w=False, training=True),
             dict(momentum=0.7, eps=1e-1, w=True, training=False),
             dict(momentum=0.1, eps=1e-5, w=True, training=True)]
    for k in cases:
        wbase = RNG.standard_normal(6).astype(np.float32)  # weight and bias: strided views
        w = clgrad.tensor(wbase, requires_grad=True)[::2] if k["w"] else None
        b = clgrad.tensor(wbase[::-1].copy())[1::2] if k["w"] else None
        rm0, rv0 = RNG.standard_normal(3), 1 + RNG.random(3)
        rm, rv = clgrad.tensor(rm0.astype(np.float32)), clgrad.tensor(rv0.astype(np.float32))
        xt = clgrad.tensor(x, requires_grad=True)
        y = F.batch_norm(xt, rm, rv, w, b, training=k["training"], momentum=k["momentum"],
                         eps=k["eps"])
        wn = None if w is None else w.detach().numpy().astype(np.float64)
        bn = None if b is None else b.detach().numpy().astype(np.float64)
        want, wrm, wrv = ref_bn(x.astype(np.float64), rm0, rv0, wn, bn, k["training"],
                                k["momentum"], k["eps"])
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-4, err_msg=k)
        np.testing.assert_allclose(rm.numpy(), wrm, rtol=1e-5, atol=1e-6, err_msg=k)
        np.testing.assert_allclose(rv.numpy(), wrv, rtol=1e-5, atol=1e-6, err_msg=k)
        g = RNG.standard_normal(x.shape)
        y.backward(clgrad.tensor(g.astype(np.float32)))
        xd = x.astype(np.float64)
        axes = (0, 2, 3)
        mean, var = (xd.mean(axes), xd.var(axes)) if k["training"] else (rm0, rv0)
        gx, gw, _ = ref_bn_grad(xd, g, wn, mean, var, k["eps"], k["training"])
        np.testing.assert_allclose(xt.grad.numpy(), gx, rtol=1e-3, atol=1e-4, err_msg=k)


@pytest.mark.parametrize("nsplit", [2, 3, 7])
@pytest.mark.parametrize("act", [None, "relu"])
def test_batch_norm_split_over_work_groups(monkeypatch, nsplit, act):
    """Training batch norm over S work-groups per channel (kernels/norm.cl *_part + *_split,
    what long channels take on GPUs; forced here on any device): output, running statistics,
    saved statistics and the three gradients against float64 NumPy, on contiguous and strided
    inputs, chunks that do not divide the channel, an outlier in one chunk."""
    from clgrad.ops import norm
    monkeypatch.setattr(norm, "BN_SPLIT_FORCE", nsplit)
    for strided_in in (False, True):
        full = (5 + RNG.standard_normal((3, 4, 9, 22 if strided_in else 11))).astype(np.float32)
        full[1, 2, 3, 0] = 300.0
        base = clgrad.tensor(full)
        x = (base[..., ::2] if strided_in else base).detach().requires_grad_()
        xd = x.detach().numpy().astype(np.float64)
        w = clgrad.tensor(RNG.standard_normal(4).astype(np.float32), requires_grad=True)
        b = clgrad.tensor(RNG.standard_normal(4).astype(np.float32), requires_grad=True)
        rm, rv = clgrad.zeros(4), clgrad.ones(4)
        y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3, activation=act)
        wd, bd = w.detach().numpy().astype(np.float64), b.detach().numpy().astype(np.float64)
        pre, wrm, wrv = ref_bn(xd, np.zeros(4), np.ones(4), wd, bd, True, 0.3, 1e-5)
        want = np.maximum(pre, 0) if act else pre
        np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(rm.numpy(), wrm, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rv.numpy(), wrv, rtol=1e-4)
        g = RNG.standard_normal(y.shape)
        y.backward(clgrad.tensor(g.astype(np.float32)))
        axes = (0, 2, 3)
        gpre = g * (pre > 0) if act else g
        gx, gw, gb = ref_bn_grad(xd, gpre, wd, xd.mean(axes), xd.var(axes), 1e-5, True)
        for got, ref in ((x.grad, gx), (w.grad, gw), (b.grad, gb)):
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-3,
                                       atol=1e-4 * max(1.0, float(np.abs(ref).max())))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_tracking_turned_off_after_construction(training):
    """track_running_stats = False after construction (PyTorch's _BatchNorm.forward): training
    normalises with the batch statistics but leaves the buffers and the count alone; eval
    still normalises with the buffers."""
    rows = [[1., 2.], [3., 6.]]
    bn = clgrad.nn.BatchNorm1d(2)
    bn.track_running_stats = False
    bn.train(training)
    with clgrad.no_grad():
        bn.running_mean.copy_(clgrad.tensor([1., -1.]))
        bn.running_var.copy_(clgrad.tensor([4., 0.25]))
    y = bn(clgrad.tensor(rows))
    x = np.array(rows)
    # hand-computed: batch mean (2, 4), biased var (1, 4) -> [[-1, -1], [1, 1]] (times the
    # eps factor); eval: (x - running_mean) / sqrt(running_var + eps), e.g. (1 - 1) / 2 = 0
    want = (np.array([[-1., -1.], [1., 1.]]) * np.sqrt(np.array([1., 4.]) /
                                                       (np.array([1., 4.]) + 1e-5))
            if training else (x - [1., -1.]) / np.sqrt(np.array([4., 0.25]) + 1e-5))
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(bn.running_mean.numpy(), [1., -1.])
    np.testing.assert_array_equal(bn.running_var.numpy(), [4., 0.25])
    assert bn.num_batches_tracked.item() == 0
    torch = pytest.importorskip("torch")
    tb = torch.nn.BatchNorm1d(2)
    tb.track_running_stats = False
    tb.train(training)
    with torch.no_grad():
        tb.running_mean.copy_(torch.tensor([1., -1.]))
        tb.running_var.copy_(torch.tensor([4., 0.25]))
    np.testing.assert_allclose(y.detach().numpy(), tb(torch.tensor(rows)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(bn.running_mean.numpy(), tb.running_mean.numpy())
    np.testing.assert_array_equal(bn.running_var.numpy(), tb.running_var.numpy())
    assert bn.num_batches_tracked.item() == tb.num_batches_tracked.item()


def test_batch_norm_checks_momentum_eps_and_dtype():
    """momentum/eps of another type, a negative eps (or eps <= 0 in training) and an integer
    input are refused as PyTorch refuses them, never baked into a launch plan as NaN (a None
    momentum once made the running statistics NaN, a None or negative eps the output). Number
    types PyTorch takes (int, bool, NumPy scalars) give the float's result."""
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    for kw in (dict(momentum=None, training=True), dict(momentum=None, training=False),
               dict(momentum="0.1", training=True), dict(eps=None), dict(eps=[1e-5])):
        rm, rv = clgrad.zeros(3), clgrad.ones(3)
        with pytest.raises(TypeError, match="momentum" if "momentum" in kw else "eps"):
            F.batch_norm(clgrad.tensor(x), rm, rv, **kw)
        np.testing.assert_array_equal(rm.numpy(), 0)  # nothing ran
        np.testing.assert_array_equal(rv.numpy(), 1)
    with pytest.raises(ValueError, match="eps must be non-negative, but got -1.0"):
        F.batch_norm(clgrad.tensor(x), clgrad.zeros(3), clgrad.ones(3), eps=-1.0)
    for eps in (-1.0, 0.0, 0):
        with pytest.raises(ValueError, match=f"eps must be positive during training, but got "
                                             f"{eps}"):
            F.batch_norm(clgrad.tensor(x), None, None, training=True, eps=eps)
    with pytest.raises(TypeError, match="floating point input, got clgrad.int32"):
        F.batch_norm(clgrad.tensor(x).int(), None, None, training=True)
    # eps 0 in eval is allowed; int, bool and NumPy momentum/eps are numbers like floats
    rm0, rv0 = np.array([0.5, -1, 2]), np.array([1.5, 2, 0.25])
    y = F.batch_norm(clgrad.tensor(x), clgrad.tensor(rm0.astype(np.float32)),
                     clgrad.tensor(rv0.astype(np.float32)), eps=0.0)
    np.testing.assert_allclose(y.numpy(), (x - rm0) / np.sqrt(rv0), rtol=1e-5, atol=1e-6)
    for momentum, eps in ((1, np.float64(1e-5)), (True, np.float32(1e-5)), (np.float64(1), 1)):
        rm, rv = clgrad.zeros(3), clgrad.ones(3)
        y = F.batch_norm(clgrad.tensor(x), rm, rv, training=True, momentum=momentum, eps=eps)
        xd = x.astype(np.float64)
        want, wrm, wrv = ref_bn(xd, np.zeros(3), np.ones(3), None, None, True, 1.0, float(eps))
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(rm.numpy(), xd.mean(0), rtol=1e-5, atol=1e-6)  # momentum 1
        np.testing.assert_allclose(rv.numpy(), xd.var(0, ddof=1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(rm.numpy(), wrm, rtol=1e-5, atol=1e-6)
    torch = pytest.importorskip("torch")
    for kw in (dict(momentum=None), dict(eps=-1.0), dict(eps=0.0, training=True)):
        with pytest.raises((TypeError, ValueError)) as theirs:
            torch.nn.functional.batch_norm(torch.tensor(x), torch.zeros(3), torch.ones(3), **kw)
        # the type as torch's; the wording differs between torch versions (2.11: "eps must be
        # positive", 2.13: "non-negative"; the exact 2.13 messages are asserted above)
        with pytest.raises(theirs.type, match="momentum" if "momentum" in kw else "eps"):
            F.batch_norm(clgrad.tensor(x), clgrad.zeros(3), clgrad.ones(3), **kw)


@pytest.mark.parametrize("nsplit", [None, 3, 7])
@pytest.mark.parametrize("act", [None, "relu", "silu"])
@pytest.mark.parametrize("layout", ["contiguous", "offset_4", "offset_1", "one_sample"])
def test_batch_norm_vector_path(monkeypatch, nsplit, act, layout):
    """The float4 loads of kernels/norm.cl (BN_VEC, GPUs: inner length, offsets, batch and
    channel strides all multiples of 4; split chunks rounded up to groups of 4, so chunks may
    be empty) and the scalar path beside it (offset_1: an offset of 1 element): output,
    running and saved statistics and the three gradients against float64 NumPy."""
    from clgrad.ops import norm
    monkeypatch.setattr(norm, "BN_SPLIT_FORCE", nsplit)
    n, c, h, w = (1, 3, 4, 12) if layout == "one_sample" else (3, 5, 4, 12)
    lead = {"offset_4": 4, "offset_1": 1}.get(layout, 0)
    flat = (2 + RNG.standard_normal(lead + n * c * h * w)).astype(np.float32)
    flat[lead + 7] = 40.0  # an outlier in channel 0's first group of 4
    base = clgrad.tensor(flat)
    x = base[lead:].view(n, c, h, w).detach().requires_grad_()
    assert x.storage_offset() == lead
    xd = x.detach().numpy().astype(np.float64)
    wt = clgrad.tensor(RNG.uniform(0.5, 1.5, c).astype(np.float32), requires_grad=True)
    bt = clgrad.tensor(RNG.standard_normal(c).astype(np.float32), requires_grad=True)
    rm, rv = clgrad.zeros(c), clgrad.ones(c)
    y = F.batch_norm(x, rm, rv, wt, bt, training=True, momentum=0.3, activation=act)
    wd, bd = wt.detach().numpy().astype(np.float64), bt.detach().numpy().astype(np.float64)
    pre, wrm, wrv = ref_bn(xd, np.zeros(c), np.ones(c), wd, bd, True, 0.3, 1e-5)
    sig = 1 / (1 + np.exp(-pre))
    want = {None: pre, "relu": np.maximum(pre, 0), "silu": pre * sig}[act]
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm.numpy(), wrm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), wrv, rtol=1e-5)
    g = RNG.standard_normal(y.shape)
    y.backward(clgrad.tensor(g.astype(np.float32)))
    dact = {None: 1.0, "relu": pre > 0, "silu": sig * (1 + pre * (1 - sig))}[act]
    axes = (0, 2, 3)
    gx, gw, gb = ref_bn_grad(xd, g * dact, wd, xd.mean(axes), xd.var(axes), 1e-5, True)
    for got, ref in ((x.grad, gx), (wt.grad, gw), (bt.grad, gb)):
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4,
                                   atol=1e-5 * max(1.0, float(np.abs(ref).max())))


@pytest.mark.parametrize("nsplit", [None, 3])
@pytest.mark.parametrize("layout", ["contiguous", "offset_1"])
def test_batch_norm_welford_merge_of_a_huge_mean(monkeypatch, nsplit, layout):
    """Chan et al.'s merge adds d^2 * na * nb / n; with an empty state (na = 0: the first
    group of 4 of the float4 path, an idle work item, the first part of a split) and
    |d| > 1.8e19, d * d * na overflowed to inf * 0 = NaN. float32 channels of mean 3e19 and
    spread 1e18 (variance 1e36, finite) against float64 NumPy, every path."""
    from clgrad.ops import norm
    monkeypatch.setattr(norm, "BN_SPLIT_FORCE", nsplit)
    n, c, h, w = 2, 3, 4, 8
    lead = 1 if layout == "offset_1" else 0
    flat = (3e19 + 1e18 * RNG.standard_normal(lead + n * c * h * w)).astype(np.float32)
    x = clgrad.tensor(flat)[lead:].view(n, c, h, w)
    xd = x.numpy().astype(np.float64)
    rm, rv = clgrad.zeros(c), clgrad.ones(c)
    y = F.batch_norm(x, rm, rv, training=True, momentum=1.0)
    pre, wrm, wrv = ref_bn(xd, np.zeros(c), np.ones(c), None, None, True, 1.0, 1e-5)
    np.testing.assert_allclose(y.numpy(), pre, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(rm.numpy(), wrm, rtol=1e-5)
    np.testing.assert_allclose(rv.numpy(), wrv, rtol=1e-4)


@pytest.mark.parametrize("nsplit", [None, 3])
@pytest.mark.parametrize("value", [1e38, -3e38])
def test_batch_norm_of_a_constant_channel_near_float_max(monkeypatch, nsplit, value):
    """A constant float32 channel near the largest float: mean the value, variance 0,
    output 0 (float64 NumPy's). The float4 path's group mean, (v0 + v1 + v2 + v3) / 4,
    overflowed to inf above 8.5e37 (NaN outputs); each lane is now scaled first. (The CPU
    devices' unsplit bn_fwd_rows sums x and x^2 in a first pass, which overflows here too:
    not this test's path.)"""
    from clgrad.ops import norm
    monkeypatch.setattr(norm, "BN_SPLIT_FORCE", nsplit)
    if nsplit is None and clgrad.empty(0)._storage.device.kind == "cpu":
        pytest.skip("bn_fwd_rows (CPUs): its first pass's sums overflow near float max")
    x = np.full((2, 2, 4, 8), value, np.float32)
    x[:, 1] = RNG.standard_normal((2, 4, 8))
    rm, rv = clgrad.zeros(2), clgrad.ones(2)
    y = F.batch_norm(clgrad.tensor(x), rm, rv, training=True, momentum=1.0)
    pre, wrm, wrv = ref_bn(x.astype(np.float64), np.zeros(2), np.ones(2), None, None, True,
                           1.0, 1e-5)
    np.testing.assert_allclose(y.numpy(), pre, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rm.numpy(), wrm, rtol=1e-6)
    np.testing.assert_allclose(rv.numpy(), wrv, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 2, 2), (2, 3, 2, 1, 2)])
def test_sync_batch_norm_is_batch_norm_in_one_process(shape):
    x = RNG.standard_normal(shape)
    sbn = clgrad.nn.SyncBatchNorm(3, dtype=clgrad.float64)
    y = sbn(clgrad.tensor(x)).detach().numpy()
    axes = (0,) + tuple(range(2, len(shape)))
    want = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-9, atol=1e-9)
    n = x.size // 3
    np.testing.assert_allclose(sbn.running_var.numpy(),
                               0.9 + 0.1 * x.var(axes) * n / (n - 1), rtol=1e-9)
    assert sbn.num_batches_tracked.item() == 1
    with pytest.raises(ValueError, match="at least 2D"):
        sbn(clgrad.zeros(3, dtype=clgrad.float64))
    net = clgrad.nn.Sequential(clgrad.nn.BatchNorm2d(3))
    assert clgrad.nn.SyncBatchNorm.convert_sync_batchnorm(net) is net
