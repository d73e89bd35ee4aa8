"""batch_norm of a float16 input with float32 parameters and running statistics (PyTorch's mixed
batch norm, what autocast gives a BatchNorm2d after a float16 op) against a float64 NumPy oracle
computed from the float16 input's own values.

Tolerances. The kernels compute in float32 and round the output (and grad_input) to float16
once, to nearest: so |got - exact| <= half a float16 ulp of the exact value (np.spacing of it in
float16, taken at the larger neighbour's spacing near a power of two) plus float32's own error
on the terms summed, which is bounded here by 1e-5 times their magnitude (|xhat * w| + |b| for
the output, |k| (|g| + |mean g| + |xhat mean(g xhat)|) for grad_input: float32's 6e-8 relative
error, a few roundings deep, with room; float16 arithmetic would be off by ~5e-4 times that).
The float32 outputs (running statistics, grad_weight, grad_bias) carry only float32 error:
1e-5 relative to the sums of absolute terms.
Paths: the CPU device's own kernels (*_rows), the work-group kernels of GPUs (the device posing
as one: unsplit bn_fwd/bn_bwd, with BN_VEC's half4 loads where the layout allows) and the split
kernels (BN_SPLIT_FORCE), each on contiguous, strided and 2-D inputs.
"""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.ops import norm

RNG = np.random.default_rng(23)
F16, F32 = clgrad.float16, clgrad.float32
EPS = 1e-5

pytestmark = pytest.mark.skipif(not clgrad.empty(0)._storage.device.fp16,
                                reason="the default device has no float16")


def bshape(nd):
    return (1, -1) + (1,) * (nd - 2)


def half_ulp(ref):
    """Half a float16 ulp at |ref| (float64): the bound of one rounding to nearest."""
    return 0.5 * np.spacing(np.abs(ref).astype(np.float16)).astype(np.float64)


def check_f16(got, ref, mag, what):
    """got (a float16 tensor) is ref rounded once to float16, up to float32's 1e-5 * mag."""
    assert got.dtype is F16, what
    g = got.detach().numpy().astype(np.float64)
    bad = np.abs(g - ref) > half_ulp(ref) + 1e-5 * mag
    assert not bad.any(), (what, g[bad][:5], ref[bad][:5])


def check_f32(got, ref, mag, what):
    """got (a float32 tensor) is ref up to float32's 1e-5 * mag."""
    assert got.dtype is F32, what
    err = np.abs(got.detach().numpy().astype(np.float64) - ref)
    assert (err <= 1e-5 * mag).all(), (what, err, mag)


def oracle(xd, rm, rv, w, b, training, momentum, act=None):
    """(y, pre-activation, mean, invstd, new rm, new rv) in float64."""
    axes = (0,) + tuple(range(2, xd.ndim))
    m = xd.size // xd.shape[1]
    if training:
        mean, var = xd.mean(axes), xd.var(axes)
        if rm is not None:
            rm = (1 - momentum) * rm + momentum * mean
            rv = (1 - momentum) * rv + momentum * var * m / (m - 1)
    else:
        mean, var = rm, rv
    invstd = 1 / np.sqrt(var + EPS)
    s = bshape(xd.ndim)
    xh = (xd - mean.reshape(s)) * invstd.reshape(s)
    wv = np.ones_like(mean) if w is None else w
    bv = np.zeros_like(mean) if b is None else b
    pre = xh * wv.reshape(s) + bv.reshape(s)
    sig = 1 / (1 + np.exp(-pre))
    y = {None: pre, "relu": np.maximum(pre, 0), "relu6": np.clip(pre, 0, 6),
         "silu": pre * sig}[act]
    dact = {None: np.ones_like(pre), "relu": (pre > 0) * 1.0,
            "relu6": ((pre > 0) & (pre < 6)) * 1.0, "silu": sig * (1 + pre * (1 - sig))}[act]
    if act == "silu":  # the magnitude of silu' s (1 + v (1 - s)): its terms (no cancellation)
        dact = np.stack([dact, sig * (1 + np.abs(pre) * (1 - sig))])
    # the terms float32 rounds: x and the mean (x - mean, or x * scale - mean * scale on
    # CPUs' *_rows) times the scale, and the bias
    mag = (np.abs(xd) + np.abs(mean.reshape(s))) * np.abs((wv * invstd).reshape(s)) + \
        np.abs(bv.reshape(s))
    return y, mag, xh, invstd, dact, rm, rv


def grads(xd, xh, invstd, w, g, training):
    """(gx, its magnitude, gw, gb, their magnitude) in float64 (g: already times act'; with
    silu, the pair (g act', |g| times the magnitude of act''s terms))."""
    g, gabs = (g[0], np.abs(g[1])) if g.ndim > xd.ndim else (g, np.abs(g))
    axes = (0,) + tuple(range(2, g.ndim))
    m = g.size // g.shape[1]
    s = bshape(g.ndim)
    gb, gw = g.sum(axes), (g * xh).sum(axes)
    k = ((1 if w is None else w) * invstd).reshape(s)
    a, bq = (gb / m, gw / m) if training else (0 * gb, 0 * gw)
    gx = k * (g - a.reshape(s) - xh * bq.reshape(s))
    xs = xd * invstd.reshape(s)
    xmag = np.abs(xs) + np.abs(xs - xh)  # (|x| + |mean|) * invstd: the terms of xhat
    mag = np.abs(k) * (gabs + np.abs(a.reshape(s)) + xmag * np.abs(bq.reshape(s)))
    return gx, mag, gw, gb, (gabs * (1 + np.abs(xh))).sum(axes)


@pytest.fixture(params=["device", "work_groups", "split"])
def path(request, monkeypatch):
    """The kernels to run: the device's own choice (CPUs: *_rows), GPUs' work-group kernels
    (the device posing as a GPU) or the split kernels (3 groups per channel, training).
    Returns (the path's name, a list of (kernel name, defines) of each batch-norm kernel
    built)."""
    dev = clgrad.empty(0)._storage.device
    if request.param == "work_groups":
        monkeypatch.setattr(dev, "kind", "gpu")
    if request.param == "split":
        monkeypatch.setattr(norm, "BN_SPLIT_FORCE", 3)
    built = []
    real = dev.kernel

    def spy(file, name, defines=None):
        if name.startswith("bn_"):
            built.append((name, dict(defines or {})))
        return real(file, name, defines)
    monkeypatch.setitem(vars(dev), "kernel", spy)
    dev.plans.clear()  # (plans do not key the device's kind: none made as another kind)
    yield request.param, built
    dev.plans.clear()


def make_input(layout):
    """(a float16 leaf, the input: the leaf or a view of it, the view as a function)."""
    def leaf(shape, shift):
        return clgrad.tensor((RNG.standard_normal(shape) * 3 + shift).astype(np.float16),
                             requires_grad=True)
    view = {"2d": lambda t: t, "contiguous": lambda t: t,
            # element offset 1: BN_FAST's scalar loads on the work-group path, no BN_VEC
            "offset_1": lambda t: t[1:].view(3, 5, 4, 12),
            # every other channel of a transposed map: the general off1 indexing
            "strided": lambda t: t[:, 1::2].transpose(2, 3)}[layout]
    base = {"2d": lambda: leaf((9, 5), 2),
            "contiguous": lambda: leaf((3, 5, 4, 12), 2),  # BN_VEC (inner length 12)
            "offset_1": lambda: leaf((1 + 3 * 5 * 4 * 12,), 1),
            "strided": lambda: leaf((3, 11, 7, 5), -1)}[layout]()
    return base, view(base), view


@pytest.mark.parametrize("layout", ["contiguous", "offset_1", "strided", "2d"])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("act", [None, "relu", "silu"])
def test_mixed_batch_norm_forward_backward(path, layout, training, affine, act):
    """Output (float16), running statistics (float32, updated with the momentum in training),
    grad_input (float16), grad_weight and grad_bias (float32) against the float64 oracle;
    without weight and bias the running statistics alone make the call mixed."""
    leaf, x, view = make_input(layout)
    c = x.shape[1]
    xd = x.detach().numpy().astype(np.float64)
    rm0 = RNG.standard_normal(c).astype(np.float32)
    rv0 = RNG.uniform(0.5, 2, c).astype(np.float32)
    rm, rv = clgrad.tensor(rm0), clgrad.tensor(rv0)
    wt = clgrad.tensor(RNG.uniform(0.5, 1.5, c).astype(np.float32), requires_grad=True) \
        if affine else None
    bt = clgrad.tensor(RNG.standard_normal(c).astype(np.float32), requires_grad=True) \
        if affine else None
    y = F.batch_norm(x, rm, rv, wt, bt, training=training, momentum=0.3, activation=act)
    wd = None if wt is None else wt.detach().numpy().astype(np.float64)
    bd = None if bt is None else bt.detach().numpy().astype(np.float64)
    ref, mag, xh, invstd, dact, wrm, wrv = oracle(xd, rm0.astype(np.float64),
                                                  rv0.astype(np.float64), wd, bd, training,
                                                  0.3, act)
    what = (path, layout, training, affine, act)
    assert y.shape == x.shape
    check_f16(y, ref, mag, what)
    if training:
        check_f32(rm, wrm, np.abs(wrm) + np.abs(xd).max(), what)
        check_f32(rv, wrv, np.abs(wrv) + 1, what)
    else:
        np.testing.assert_array_equal(rm.numpy(), rm0)
        np.testing.assert_array_equal(rv.numpy(), rv0)
    g16 = RNG.standard_normal(y.shape).astype(np.float16)
    y.backward(clgrad.tensor(g16))
    gx, gmag, gw, gb, wmag = grads(xd, xh, invstd, wd, g16.astype(np.float64) * dact,
                                   training)
    check_f16(view(leaf.grad), gx, gmag, what)  # (the leaf's grad seen through the view)
    if layout == "strided":
        np.testing.assert_array_equal(leaf.grad.numpy()[:, 0::2], 0)
    if affine:
        check_f32(wt.grad, gw, wmag, what)
        check_f32(bt.grad, gb, wmag, what)
    name, built = path
    assert built and all(d.get("BN_HALF") == 1 and d["T"] == "float" for _, d in built)
    rows = [k.endswith("_rows") for k, _ in built]
    if name == "work_groups" or (name == "split" and training):
        assert not any(rows), built
        split = [k.endswith(("_part", "_split")) for k, _ in built]
        assert all(split) if name == "split" else not any(split), built
        if layout == "contiguous":  # half4 loads: BN_VEC
            assert all("BN_VEC" in d for _, d in built), built
        if layout == "offset_1":  # scalar half loads, 32-bit offsets
            assert all("BN_FAST" in d and "BN_VEC" not in d for _, d in built), built
    elif clgrad.empty(0)._storage.device.kind == "cpu":
        assert all(rows), built


def test_mixed_kernels_are_float32_ones_with_half_storage(path):
    """Every batch-norm kernel of a mixed call is built with T float and BN_HALF, and so are
    a pure float16 call's (float16 parameters run on float32 copies: float16 statistics
    overflow; its kernels are the mixed call's, already built); the pure float32 call on the
    same layout builds its own without BN_HALF."""
    x = (RNG.standard_normal((2, 3, 4, 8))).astype(np.float16)
    built = path[1]
    for xdt, pdt, want, new in ((F16, F32, ("float", 1), True), (F16, F16, ("float", 1), False),
                                (F32, F32, ("float", None), True)):
        del built[:]
        xt = clgrad.tensor(x.astype(xdt.np), requires_grad=True)
        p = clgrad.ones(3, dtype=pdt, requires_grad=True)
        F.batch_norm(xt, None, None, p, None, training=True).backward(
            clgrad.ones(x.shape, dtype=xdt))
        assert p.grad.dtype is pdt
        if new:
            assert {k for k, _ in built} >= {"bn_fwd", "bn_bwd"} or len(built) >= 2, built
        assert all((d["T"], d.get("BN_HALF")) == want for _, d in built), (want, built)


@pytest.mark.parametrize("order", ["mixed_first", "half_first"])
def test_plans_tell_mixed_from_float16_and_float32(path, order):
    """The launch plans of one layout are kept apart per case: a float16 call with float16
    running statistics, the mixed call (float32 ones) and a float32 call, in either order,
    each give its own values. Without weight and bias nothing but the compute dtype tells the
    mixed backward from float16's (the key carries it)."""
    x16 = (RNG.standard_normal((4, 3, 4, 8)) * 2 + 1).astype(np.float16)
    xd = x16.astype(np.float64)
    g16 = RNG.standard_normal(x16.shape).astype(np.float16)
    cases = [("mixed", F16, F32), ("half", F16, F16), ("float", F32, F32)]
    if order == "half_first":
        cases = cases[1:2] + cases[:1] + cases[2:]
    for _ in range(2):  # the second round reuses every plan
        for name, xdt, pdt in cases:
            x = clgrad.tensor(x16.astype(xdt.np), requires_grad=True)
            rm, rv = clgrad.zeros(3, dtype=pdt), clgrad.ones(3, dtype=pdt)
            y = F.batch_norm(x, rm, rv, None, None, training=True, momentum=0.5)
            ref, mag, xh, invstd, _, wrm, wrv = oracle(xd, np.zeros(3), np.ones(3), None, None,
                                                       True, 0.5)
            y.backward(clgrad.tensor(g16.astype(xdt.np)))
            gx, gmag, *_ = grads(xd, xh, invstd, None, g16.astype(np.float64), True)
            assert y.dtype is xdt and rm.dtype is pdt and x.grad.dtype is xdt, name
            if name == "mixed":
                check_f16(y, ref, mag, name)
                check_f16(x.grad, gx, gmag, name)
                check_f32(rm, wrm, np.abs(wrm) + 3, name)
            else:  # float16 arithmetic (half) or float32: looser, but far from garbage
                tol = 2e-2 if name == "half" else 1e-4
                np.testing.assert_allclose(y.detach().numpy(), ref, atol=tol * 4, err_msg=name)
                np.testing.assert_allclose(x.grad.numpy(), gx, atol=tol * 4, err_msg=name)
                np.testing.assert_allclose(rm.numpy(), wrm, atol=tol, err_msg=name)


def test_mixed_batch_norm_nan_in_gives_nan_out_in_its_channel(path):
    """A NaN of channel 1 makes channel 1's outputs, statistics and running statistics NaN,
    and leaves the other channels' values right (training); in eval only that element."""
    x16 = (RNG.standard_normal((3, 3, 4, 4))).astype(np.float16)
    x16[1, 1, 2, 3] = np.nan
    xd = x16.astype(np.float64)
    for training in (True, False):
        rm, rv = clgrad.zeros(3), clgrad.ones(3)
        w = clgrad.ones(3)
        y = F.batch_norm(clgrad.tensor(x16), rm, rv, w, None, training=training).numpy()
        assert y.dtype == np.float16
        if training:
            assert np.isnan(y[:, 1]).all() and np.isnan(rm.numpy()[1]) and \
                np.isnan(rv.numpy()[1])
            keep = [0, 2]
            ref, mag, *_ = oracle(xd[:, keep], np.zeros(2), np.ones(2), None, None, True, 0.1)
            check_f16(clgrad.tensor(y[:, keep]), ref, mag, "nan")
            assert np.isfinite(rm.numpy()[keep]).all()
        else:
            nan = np.isnan(y)
            assert nan[1, 1, 2, 3] and nan.sum() == 1
            np.testing.assert_array_equal(rm.numpy(), 0)


def test_mixed_batch_norm_of_an_offset_channel_keeps_float32_statistics():
    """Channels at 1000 + small noise (float16 spacing 0.5 there): the statistics of the
    float16 values in float32 match float64's to float32 precision (the running variance to
    1e-4 relative), where float16 arithmetic would lose the variance entirely."""
    x16 = (1000 + 4 * RNG.standard_normal((8, 2, 6, 6))).astype(np.float16)
    xd = x16.astype(np.float64)
    rm, rv = clgrad.zeros(2), clgrad.ones(2)
    y = F.batch_norm(clgrad.tensor(x16), rm, rv, None, None, training=True, momentum=1.0)
    ref, mag, *_ = oracle(xd, np.zeros(2), np.ones(2), None, None, True, 1.0)
    check_f16(y, ref, mag, "offset")
    np.testing.assert_allclose(rm.numpy(), xd.mean((0, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(rv.numpy(), xd.var((0, 2, 3), ddof=1), rtol=1e-4)


@pytest.mark.parametrize("act", [None, "ReLU", "ReLU6", "SiLU"])
def test_batch_norm2d_float32_module_on_a_float16_input(path, act):
    """nn.BatchNorm2d (float32 parameters and buffers) on float16 inputs, alone or fused with
    an activation by nn.Sequential: three training steps (num_batches_tracked counts them in
    the launch; the running statistics follow the float64 oracle's momentum updates), float32
    parameter gradients, then eval with the running statistics."""
    bn = nn.BatchNorm2d(4)
    with clgrad.no_grad():
        bn.weight.copy_(clgrad.tensor(RNG.uniform(0.5, 1.5, 4).astype(np.float32)))
        bn.bias.copy_(clgrad.tensor(RNG.standard_normal(4).astype(np.float32)))
    model = nn.Sequential(bn, getattr(nn, act)()) if act else bn
    aname = {None: None, "ReLU": "relu", "ReLU6": "relu6", "SiLU": "silu"}[act]
    wd = bn.weight.detach().numpy().astype(np.float64)
    bd = bn.bias.detach().numpy().astype(np.float64)
    rm, rv = np.zeros(4), np.ones(4)
    for step in range(3):
        x16 = (RNG.standard_normal((2, 4, 5, 8)) * 2 + 3).astype(np.float16)
        xd = x16.astype(np.float64)
        x = clgrad.tensor(x16, requires_grad=True)
        y = model(x)
        ref, mag, xh, invstd, dact, rm, rv = oracle(xd, rm, rv, wd, bd, True, 0.1, aname)
        check_f16(y, ref, mag, (act, step))
        assert bn.num_batches_tracked.item() == step + 1
        check_f32(bn.running_mean, rm, np.abs(rm) + 5, (act, step))
        check_f32(bn.running_var, rv, np.abs(rv) + 1, (act, step))
        bn.weight.grad = bn.bias.grad = None
        y.float().sum().backward()
        gx, gmag, gw, gb, wmag = grads(xd, xh, invstd, wd, dact, True)
        assert bn.weight.grad.dtype is F32 and bn.bias.grad.dtype is F32
        check_f32(bn.weight.grad, gw, wmag, (act, step))
        check_f32(bn.bias.grad, gb, wmag, (act, step))
        check_f16(x.grad, gx, gmag, (act, step))
    model.eval()
    x16 = (RNG.standard_normal((3, 4, 2, 3)) + 3).astype(np.float16)
    ref, mag, *_ = oracle(x16.astype(np.float64), bn.running_mean.numpy().astype(np.float64),
                          bn.running_var.numpy().astype(np.float64), wd, bd, False, 0.1, aname)
    check_f16(model(clgrad.tensor(x16)), ref, mag, (act, "eval"))
    assert bn.num_batches_tracked.item() == 3


@pytest.mark.parametrize("act", ["ReLU", "ReLU6"])
@pytest.mark.parametrize("route", ["sequential", "absorbed"])
def test_fused_masks_cut_where_the_float16_output_rounds_to_a_bound(path, act, route):
    """The fused activation's gradient mask is the separate activation's, bit for bit: that
    one reads the float16 output, so a pre-activation v in (0, 2^-25] (rounds to +0) gets no
    gradient, nor, for ReLU6, one in [6 - 2^-9, 6) (rounds to 6). Every float16 input near
    the bounds times weights that move v across them; eval with invstd exactly 1, so v is
    float32(x * w), and the mask's oracle is act's derivative at float16(v). Routes:
    nn.Sequential's fused op, and the two ops written apart with the engine's absorb
    (autograd.graph._absorb); both against the oracle and the two ops' own backward."""
    from clgrad.autograd import graph
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    xs = bits[np.isfinite(bits) & ((np.abs(bits) < 1e-5) | ((bits > 5.5) & (bits < 6.6)) |
                                   ((bits > 11.5) & (bits < 12.5)))]
    ws = np.array([1, 1 - 2 ** -20, 1 + 2 ** -20, 0.5, 0.75, 0.99951171875], np.float32)
    x16 = np.broadcast_to(xs, (2, ws.size, xs.size)).reshape(2, ws.size, xs.size, 1).copy()
    v = (x16.astype(np.float64) * ws.reshape(1, -1, 1, 1)).astype(np.float32)
    z = v.astype(np.float16)  # the separate activation's input
    want = (z > 0) & (z < 6) if act == "ReLU6" else z > 0

    def run(fused, absorb):
        bn = nn.BatchNorm2d(ws.size, eps=2 ** -10).eval()  # running_var + eps == 1 exactly
        with clgrad.no_grad():
            bn.weight.copy_(clgrad.tensor(ws))
            bn.running_var.fill_(1 - 2 ** -10)
        x = clgrad.tensor(x16, requires_grad=True)
        a = getattr(nn, act)()
        y = nn.Sequential(bn, a)(x) if fused else a(bn(x))
        graph.ABSORB = absorb
        try:
            y.backward(clgrad.ones_like(y))
        finally:
            graph.ABSORB = True
        return x.grad.numpy(), bn.weight.grad.numpy()
    got = run(route == "sequential", route == "absorbed")
    apart = run(False, False)
    np.testing.assert_array_equal(got[0] != 0, want)
    np.testing.assert_array_equal(apart[0] != 0, want)
    np.testing.assert_array_equal(got[0], apart[0])
    np.testing.assert_array_equal(got[1], apart[1])


def test_batch_norm1d_under_autocast():
    """autocast's float16 linear output into a float32 BatchNorm1d (2-D, the mixed batch norm
    PyTorch's AMP runs): float16 output, float32 running statistics and parameter grads."""
    lin, bn = nn.Linear(6, 5), nn.BatchNorm1d(5)
    x = clgrad.tensor(RNG.standard_normal((7, 6)).astype(np.float32))
    kind = "cuda" if x._storage.device.kind == "gpu" else "cpu"  # (the default device's)
    with clgrad.autocast(kind, dtype=clgrad.float16):
        h = lin(x)
        y = bn(h)
    assert h.dtype is F16 and y.dtype is F16
    hd = h.detach().numpy().astype(np.float64)
    ref, mag, *_, rm, rv = oracle(hd, np.zeros(5), np.ones(5), np.ones(5), np.zeros(5), True,
                                  0.1)
    check_f16(y, ref, mag, "autocast")
    check_f32(bn.running_mean, rm, np.abs(rm) + np.abs(hd).max(0), "autocast")
    check_f32(bn.running_var, rv, rv + 1, "autocast")
    y.float().sum().backward()
    assert bn.weight.grad.dtype is F32 and lin.weight.grad.dtype is F32
    assert np.isfinite(lin.weight.grad.numpy()).all()


def test_mixed_batch_norm_of_no_elements():
    """N = 0 in eval: an empty float16 output; its backward gives zero float32 parameter
    grads (PyTorch's)."""
    x = clgrad.zeros((0, 3, 2, 2), dtype=F16, requires_grad=True)
    w = clgrad.ones(3, requires_grad=True)
    y = F.batch_norm(x, clgrad.zeros(3), clgrad.ones(3), w, None)
    assert y.dtype is F16 and y.shape == (0, 3, 2, 2)
    y.float().sum().backward()
    assert w.grad.dtype is F32
    np.testing.assert_array_equal(w.grad.numpy(), 0)


@pytest.mark.parametrize("xdt, dts, blame", [
    (F32, dict(running_mean=F16, running_var=F16, weight=F16, bias=F16), "running_mean"),
    (F16, dict(running_mean=clgrad.float64, running_var=clgrad.float64), "running_mean"),
    (F16, dict(weight=clgrad.float64, bias=clgrad.float64), "weight"),
    (F16, dict(running_mean=F16, running_var=F16, weight=F32), "running_mean"),
    (F16, dict(running_mean=F32, running_var=F32, weight=F16, bias=F16), "running_mean"),
    (F16, dict(running_mean=F32, running_var=F32, weight=F32, bias=F16), "bias"),
    (clgrad.float64, dict(running_mean=F32, running_var=F32, weight=F32), "running_mean"),
])
def test_other_mixes_are_refused(xdt, dts, blame):
    """Only float32 parameters and running statistics (every one given) with a float16 input
    mix; any other mix raises TypeError before any launch (PyTorch raises RuntimeError for
    each, 2.11 on CPU and CUDA), the running statistics untouched. The first given of weight,
    bias, running_mean, running_var decides whether the call is mixed, as PyTorch's."""
    x = clgrad.tensor(RNG.standard_normal((4, 3, 2, 2)).astype(xdt.np))
    args = {k: clgrad.full((3,), 0.5, dtype=dt) for k, dt in dts.items()}
    before = {k: v.numpy().copy() for k, v in args.items()}
    with pytest.raises(TypeError, match=f"batch_norm: expected {blame} of dtype"):
        F.batch_norm(x, args.get("running_mean"), args.get("running_var"), args.get("weight"),
                     args.get("bias"), training=True)
    for k, v in args.items():
        np.testing.assert_array_equal(v.numpy(), before[k])


@pytest.mark.parametrize("params", ["none", "float16"])
def test_float16_batch_norm_computes_in_float32(params):
    """A float16 input with no parameters (BatchNorm2d(affine=False,
    track_running_stats=False) under autocast) or float16 ones: statistics in float32, as
    PyTorch. In float16 a channel of mean 3 over 32768 values gave NaN (its sums overflow
    past 65504). Output within one float16 rounding of float64; float16 running statistics
    updated (rounded once); gradients of float16 parameters float16."""
    x = (RNG.standard_normal((32, 2, 32, 32)) + 3).astype(np.float16)
    xd = x.astype(np.float64)
    mu, var = xd.mean((0, 2, 3)), xd.var((0, 2, 3))
    ref = (xd - mu[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
    X = clgrad.tensor(x, requires_grad=True)
    if params == "none":
        y = F.batch_norm(X, None, None, training=True)
    else:
        w = clgrad.full((2,), 2.0, dtype=F16, requires_grad=True)
        b = clgrad.zeros(2, dtype=F16, requires_grad=True)
        rm, rv = clgrad.zeros(2, dtype=F16), clgrad.ones(2, dtype=F16)
        y = F.batch_norm(X, rm, rv, w, b, training=True, momentum=0.5)
        ref = 2 * ref
        np.testing.assert_allclose(rm.numpy(), 0.5 * mu, rtol=2.0 ** -10)
        n = x.size / 2
        np.testing.assert_allclose(rv.numpy(), 0.5 + 0.5 * var * n / (n - 1), rtol=2.0 ** -10)
    got = y.detach().numpy().astype(np.float64)
    assert y.dtype is F16 and np.isfinite(got).all()
    # one rounding of a value computed in float32 from float32 statistics (their error: a
    # float32 Welford pass over 32768 values, within 1e-5 of the normalised values here)
    assert np.all(np.abs(got - ref) <= 2.0 ** -11 * np.abs(ref) + 1e-5 * (1 + np.abs(ref)))
    y.float().sum().backward()
    assert X.grad.dtype is F16 and np.isfinite(X.grad.numpy()).all()
    if params == "float16":
        assert w.grad.dtype is F16 and b.grad.dtype is F16
        np.testing.assert_allclose(b.grad.numpy(), x.size / 2, rtol=2.0 ** -10)
