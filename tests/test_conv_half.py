"""float16 convolutions (issue 35, part 2): conv2d, conv1d and conv_transpose2d in float16
(im2col + GEMMs that sum in float32: tensor cores on NVIDIA; depthwise through float32), and
their lowering under autocast, against float64 NumPy on the float16 operands.

Error bounds (u = 2^-11, half of float16's spacing at 1; a = the same oracle on |operands|,
the sum of the magnitudes of the terms):
- output and weight gradient: one float32 sum of K terms rounded once to float16:
  |got - ref| <= u |ref| + K 2^-23 a (float32's summation bound, Higham (2002) eq. 3.5,
  doubled for the tensor cores' unspecified summation order);
- input gradient: the column gradient (W^T g) is rounded to float16 before col2im adds the
  at most kH * kW columns meeting a pixel in float32: one more rounding of each term,
  u a more;
- bias gradient: a float32 sum rounded once, as the output.
"""
import numpy as np
import pytest

import clgrad
import clgrad.backends as backends
import clgrad.nn.functional as F
from clgrad.runtime import default_device, launch_count

from test_conv import ref_conv

F16, F32 = clgrad.float16, clgrad.float32
U = 2.0 ** -11


@pytest.fixture(autouse=True)
def _im2col_everywhere(monkeypatch):
    """float16 through im2col on every device (by default only tensor cores take it: see
    test_half_conv_default_route_elsewhere_is_float32)."""
    from clgrad.ops.conv import op
    monkeypatch.setattr(op, "HALF_IM2COL", True)


@pytest.fixture
def dev():
    d = default_device()
    if not d.fp16:
        pytest.skip(f"the default device {d.name!r} lacks cl_khr_fp16 (float16)")
    return d


def _h(a):
    """a rounded to float16, as float64."""
    return np.asarray(a).astype(np.float16).astype(np.float64)


def _check(got, ref, absref, k, extra=0.0, name=""):
    got = np.asarray(got, np.float64)
    bound = U * np.abs(ref) + (k * 2.0 ** -23 + extra) * absref + 1e-30
    err = np.abs(got - ref)
    assert np.all(err <= bound), (name, float(np.max(err - bound)), float(np.max(err)))


def _conv_case(n, c, h, w, o, groups, k, stride=1, padding=0, dilation=1, bias=True, seed=0,
               view=False):
    rng = np.random.default_rng(seed)
    x = _h(rng.standard_normal((n, c, h, w)))
    wt = _h(rng.standard_normal((o, c // groups, k, k)) / np.sqrt(c // groups * k * k))
    b = _h(rng.standard_normal(o)) if bias else None
    if view:  # a strided input: the channels of a wider tensor, H and W transposed
        big = np.zeros((n, c + 2, w, h), np.float16)
        big[:, 1:1 + c] = x.transpose(0, 1, 3, 2)
        base = clgrad.tensor(big, dtype=F16, requires_grad=True)
        X = base.narrow(1, 1, c).transpose(2, 3)
    else:
        base = X = clgrad.tensor(x, dtype=F16, requires_grad=True)
    W = clgrad.tensor(wt, dtype=F16, requires_grad=True)
    B = clgrad.tensor(b, dtype=F16, requires_grad=True) if bias else None
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    y = F.conv2d(X, W, B, **kw)
    assert y.dtype is F16
    gy = _h(rng.standard_normal(tuple(y.shape)))
    y.backward(clgrad.tensor(gy, dtype=F16))
    gx = base.grad.numpy()
    if view:
        gx = gx[:, 1:1 + c].transpose(0, 1, 3, 2)
    ref = ref_conv(x, wt, b, gy, **kw)
    absref = ref_conv(np.abs(x), np.abs(wt), None if b is None else np.abs(b), np.abs(gy),
                      **kw)
    kdepth = c // groups * k * k
    _check(y.detach().numpy(), ref[0], absref[0], kdepth, name="output")
    _check(gx, ref[1], absref[1], o // groups, extra=U, name="grad_input")
    npix = n * ref[0].shape[2] * ref[0].shape[3]
    _check(W.grad.numpy(), ref[2], absref[2], npix, name="grad_weight")
    assert base.grad.dtype is F16 and W.grad.dtype is F16
    if bias:
        _check(B.grad.numpy(), ref[3], absref[3], npix, name="grad_bias")
    return backends.last_conv_algorithms.copy()


CASES = {  # n, c, h, w, o, groups, k, stride, padding, dilation
    "3x3 pad 1": (2, 8, 10, 10, 16, 1, 3, 1, 1, 1),
    "strided grouped": (2, 8, 9, 9, 16, 2, 3, 2, 1, 1),
    "dilated grouped": (3, 12, 7, 9, 24, 3, 3, 1, 2, 2),
    "1x1": (2, 16, 6, 6, 24, 1, 1, 1, 0, 1),
    "1x1 strided": (2, 16, 7, 7, 8, 1, 1, 2, 0, 1),
    "5x5 stride 2 (AlexNet-like)": (2, 6, 17, 17, 10, 1, 5, 2, 2, 1),
    "large maps (per-sample GEMMs)": (2, 8, 20, 20, 16, 2, 3, 1, 1, 1),
    "first layer (C=3)": (2, 3, 16, 16, 8, 1, 3, 1, 1, 1),
    "depthwise": (2, 8, 12, 12, 8, 8, 3, 1, 1, 1),
    "depthwise stride 2, multiplier 2": (2, 8, 11, 11, 16, 8, 3, 2, 1, 1),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
@pytest.mark.parametrize("bias", (True, False))
def test_half_conv_vs_numpy(dev, case, bias):
    n, c, h, w, o, g, k, s, p, d = CASES[case]
    algos = _conv_case(n, c, h, w, o, g, k, s, p, d, bias=bias)
    want = "im2col" if c // g * (o // g) > 16 else None  # few pairs: float32 algorithms
    if want:
        assert set(algos.values()) == {want}, algos


def test_half_conv_strided_input_and_twice(dev):
    """A strided input view, and the same signature again (its recorded launches replayed)."""
    for seed in (0, 1):
        _conv_case(2, 8, 9, 11, 16, 2, 3, 1, 1, 1, seed=seed, view=True)


def test_half_conv_merged_threshold_both_sides(dev, monkeypatch):
    """Maps below MERGE_PIXELS run merged GEMMs through an output copy, others per-sample
    GEMMs: the same case both ways."""
    from clgrad.ops.conv import algorithms as alg
    for merge in (1, 1 << 20):
        monkeypatch.setattr(alg, "MERGE_PIXELS", merge)
        _conv_case(2, 8, 6, 6, 16, 2, 3, 1, 1, 1, seed=merge)


def test_half_conv_chunks(dev, monkeypatch):
    """A workspace limit of one sample: every pass runs chunk by chunk (the weight
    gradient's GEMMs add into it; each adds a rounding, bounded here by u a per chunk)."""
    monkeypatch.setattr(backends, "conv_workspace_limit", 1)
    y, X, W, ref, absref = _padded_3x3(5, 3, 6)
    _check(y.detach().numpy(), ref[0], absref[0], 72, name="output")
    _check(X.grad.numpy(), ref[1], absref[1], 16, extra=U, name="grad_input")
    # the chunks' sums add in one float32 workspace: one rounding, as one chunk
    _check(W.grad.numpy(), ref[2], absref[2], 3 * 36, name="grad_weight")


def test_half_weight_gradient_many_chunks_cancelling(dev, monkeypatch):
    """32 chunks of one sample each whose partial weight gradients cancel: one rounding of
    the float32 sum. Rounded to float16 after each chunk it was 423 ulps off."""
    monkeypatch.setattr(backends, "conv_workspace_limit", 1)
    rng = np.random.default_rng(12)
    x = _h(rng.standard_normal((32, 8, 8, 8)))
    wt = _h(rng.standard_normal((8, 8, 3, 3)) * 0.2)
    W = clgrad.tensor(wt, dtype=F16, requires_grad=True)
    y = F.conv2d(clgrad.tensor(x, dtype=F16), W, padding=1)
    gy = _h(rng.standard_normal(tuple(y.shape)))
    y.backward(clgrad.tensor(gy, dtype=F16))
    ref = ref_conv(x, wt, None, gy, padding=1)
    absref = ref_conv(np.abs(x), np.abs(wt), None, np.abs(gy), padding=1)
    _check(W.grad.numpy(), ref[2], absref[2], 32 * 64, name="grad_weight")


def _padded_3x3(seed, n, hw):
    """Forward and backward of a float16 8 -> 16 channel 3 x 3 conv (padding 1) of an
    (n, 8, hw, hw) input: (y, X, W, the float64 reference, its magnitudes' reference)."""
    rng = np.random.default_rng(seed)
    x = _h(rng.standard_normal((n, 8, hw, hw)))
    wt = _h(rng.standard_normal((16, 8, 3, 3)) * 0.2)
    X = clgrad.tensor(x, dtype=F16, requires_grad=True)
    W = clgrad.tensor(wt, dtype=F16, requires_grad=True)
    y = F.conv2d(X, W, padding=1)
    gy = _h(rng.standard_normal(tuple(y.shape)))
    y.backward(clgrad.tensor(gy, dtype=F16))
    ref = ref_conv(x, wt, None, gy, padding=1)
    absref = ref_conv(np.abs(x), np.abs(wt), None, np.abs(gy), padding=1)
    return y, X, W, ref, absref


def test_half_conv_launch_count_independent_of_groups(dev):
    def launches(groups):
        rng = np.random.default_rng(0)
        x = clgrad.tensor(rng.standard_normal((2, 32, 6, 6)), dtype=F16, requires_grad=True)
        w = clgrad.tensor(rng.standard_normal((64, 32 // groups, 3, 3)) * 0.1, dtype=F16,
                          requires_grad=True)
        g = clgrad.tensor(rng.standard_normal((2, 64, 6, 6)), dtype=F16)
        F.conv2d(x, w, padding=1, groups=groups).backward(g)  # builds the programs first
        n0 = launch_count()
        y = F.conv2d(x, w, padding=1, groups=groups)
        n1 = launch_count()
        y.backward(g)
        return n1 - n0, launch_count() - n1
    assert launches(1) == launches(2) == launches(4)


def test_half_conv_non_mergeable_weight_and_nan(dev):
    """A weight view whose (C, kH, kW) do not merge is copied (gradients reach the view's
    base); NaN in the input gives NaN in the outputs it reaches only."""
    rng = np.random.default_rng(3)
    wbig = _h(rng.standard_normal((8, 4, 3, 3)) * 0.3)
    base = clgrad.tensor(wbig.transpose(0, 1, 3, 2).copy(), dtype=F16, requires_grad=True)
    w = base.transpose(2, 3)  # (kh, kw) swapped back: not one stride over (c, kh, kw)
    x = _h(rng.standard_normal((1, 4, 5, 5)))
    x[0, 1, 2, 2] = np.nan
    X = clgrad.tensor(x, dtype=F16, requires_grad=True)
    y = F.conv2d(X, w)
    y.sum().backward()
    out = y.detach().numpy()
    assert np.isnan(out).all()  # every 3x3 window of a 5x5 map holds the centre
    assert base.grad.dtype is F16 and base.grad.shape == (8, 4, 3, 3)
    assert np.isnan(base.grad.numpy()[:, 1]).any()
    ref = ref_conv(np.nan_to_num(x), wbig, None)
    x[0, 1, 2, 2] = 0
    X2 = clgrad.tensor(x, dtype=F16)
    _check(F.conv2d(X2, w).detach().numpy(), ref, ref_conv(np.abs(x), np.abs(wbig), None), 36)


def test_half_conv_errors(dev, monkeypatch):
    x = clgrad.zeros(1, 2, 4, 4, dtype=F16)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.conv2d(x, clgrad.zeros(2, 2, 3, 3))
    with pytest.raises(RuntimeError, match="float16, float32 or float64"):
        F.conv2d(clgrad.zeros(1, 2, 4, 4, dtype=clgrad.int32),
                 clgrad.zeros(2, 2, 3, 3, dtype=clgrad.int32))
    with pytest.raises(RuntimeError, match="expected 4-D weight"):  # (not kview's unpacking)
        F.conv2d(clgrad.zeros(1, 8, 4, 4, dtype=F16), clgrad.zeros(16, 8, 3, dtype=F16))
    x, w = clgrad.zeros(1, 8, 4, 4, dtype=F16), clgrad.zeros(16, 8, 3, 3, dtype=F16)
    monkeypatch.setattr(dev, "fp16", False)  # (tensors made before: the device says no now)
    with pytest.raises(RuntimeError, match="lacks it"):
        F.conv2d(x, w)


# -- autocast -----------------------------------------------------------------------------------
def _device_type(d):
    return "cuda" if d.kind == "gpu" else "cpu"


def test_autocast_lowers_conv2d_conv1d_conv_transpose(dev):
    rng = np.random.default_rng(7)
    conv = clgrad.nn.Conv2d(6, 12, 3, padding=1)
    conv1 = clgrad.nn.Conv1d(6, 8, 3)
    convt = clgrad.nn.ConvTranspose2d(6, 4, 3, stride=2)
    dw = clgrad.nn.Conv2d(6, 6, 3, padding=1, groups=6)  # few pairs: float32 inside
    x = clgrad.tensor(rng.standard_normal((2, 6, 7, 7)), dtype=F32, requires_grad=True)
    x1 = clgrad.tensor(rng.standard_normal((2, 6, 9)), dtype=F32)
    with clgrad.autocast(_device_type(dev), dtype=F16):
        y = conv(x)
        y1 = conv1(x1)
        yt = convt(x)
        yd = dw(x)
        f64 = F.conv2d(clgrad.zeros(1, 2, 3, 3, dtype=clgrad.float64),
                       clgrad.zeros(1, 2, 3, 3, dtype=clgrad.float64))
    assert yd.dtype is F16
    yd.float().sum().backward()
    assert dw.weight.grad.dtype is F32 and x.grad.dtype is F32
    xh, wd = _h(x.detach().numpy()), _h(dw.weight.detach().numpy())
    bd = _h(dw.bias.detach().numpy())
    refd = ref_conv(xh, wd, bd, padding=1, groups=6)
    _check(yd.detach().numpy(), refd, ref_conv(np.abs(xh), np.abs(wd), np.abs(bd), padding=1,
                                      groups=6), 9, name="autocast depthwise")
    x.grad = None
    assert y.dtype is F16 and y1.dtype is F16 and yt.dtype is F16 and f64.dtype is clgrad.float64
    (y.float().sum() + y1.float().sum() + yt.float().sum()).backward()
    for p in (conv.weight, conv.bias, conv1.weight, convt.weight, x):
        assert p.grad is not None and p.grad.dtype is F32
    # the values: float16-rounded operands, float32 sums, one rounding
    xw, wh, bh = _h(x.detach().numpy()), _h(conv.weight.detach().numpy()), _h(
        conv.bias.detach().numpy())
    ref = ref_conv(xw, wh, bh, np.ones((2, 12, 7, 7)), padding=1)
    absref = ref_conv(np.abs(xw), np.abs(wh), np.abs(bh), np.ones((2, 12, 7, 7)), padding=1)
    _check(y.detach().numpy(), ref[0], absref[0], 54, name="autocast output")
    # the weight gradient: float16 (u a), then cast to float32 exactly
    _check(conv.weight.grad.numpy(), ref[2], absref[2], 98, name="autocast grad_weight")
    assert (F.conv2d(x, conv.weight, conv.bias, padding=1)).dtype is F32  # off after the block


def test_autocast_conv_matches_torch(dev):
    torch = pytest.importorskip("torch")
    if dev.kind != "cpu":
        pytest.skip("compares with torch's CPU autocast")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
    w = (rng.standard_normal((8, 4, 3, 3)) * 0.2).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    res = {}
    for name, lib in (("clgrad", clgrad), ("torch", torch)):
        tw = lib.tensor(w, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.float16):
            y = lib.nn.functional.conv2d(lib.tensor(x), tw, lib.tensor(b), padding=1)
        y.float().square().sum().backward()
        res[name] = (y, tw.grad)
    assert str(res["clgrad"][0].dtype).endswith("float16")
    assert str(res["torch"][0].dtype).endswith("float16")
    got = res["clgrad"][0].detach().numpy().astype(np.float64)
    want = res["torch"][0].detach().numpy()
    absref = ref_conv(np.abs(_h(x)), np.abs(_h(w)), np.abs(_h(b)), padding=1)
    assert np.all(np.abs(got - want) <= 2 * U * (np.abs(want) + absref))
    np.testing.assert_allclose(res["clgrad"][1].numpy(), res["torch"][1].numpy(), rtol=1e-2,
                               atol=1e-2)


@pytest.mark.parametrize("n, hw, per_chunk", ((8, 8, None), (7, 6, 4)))
def test_half_weight_gradient_split_k(dev, monkeypatch, n, hw, per_chunk):
    """Tensor cores split the float16 weight gradient's depth (N * P) into slices whose
    float32 partial sums one reduction adds and rounds once: the same bound as one GEMM.
    With 4 samples a chunk, a batch of 7 on 6 x 6 maps runs chunks of depth 144 (2 slices)
    and 108 (not a multiple of 2 * 8: added into slice 0). Elsewhere one float32 slice, the
    chunks added into it: one rounding either way."""
    from clgrad.ops.conv import algorithms as alg
    from clgrad.ops.conv.problem import _check as conv_check
    monkeypatch.setattr(alg, "WGRAD_SLICE_MIN", 8)
    if per_chunk:
        monkeypatch.setattr(backends, "conv_workspace_limit", per_chunk * (72 + 16) * hw * hw * 2)
    _, X, W, ref, absref = _padded_3x3(9, n, hw)
    split = (dev.kind == "gpu" and alg.mma_precision(dev, F16, False) == "f16" and
             alg.has_mma_f32out(dev))
    _check(W.grad.numpy(), ref[2], absref[2], n * hw * hw, name="grad_weight")
    if split:  # (the slices this test meant to run)
        p = conv_check(X, W, None, 1, 1, 1, 1)
        assert alg._wgrad_slices(p, (per_chunk or n) * hw * hw, dev) >= 2


@pytest.mark.parametrize("stride, groups, hw", ((1, 1, 5), (2, 2, 5), (2, 1, 17)))
def test_half_conv_transpose_vs_numpy(dev, stride, groups, hw):
    """conv_transpose2d of float16 is conv2d's input gradient (im2col's col2im path: maps
    below and above MERGE_PIXELS): the reference is NumPy's input gradient of the conv2d it
    transposes, one more rounding per column term (u a) as conv2d's input gradient."""
    rng = np.random.default_rng(stride * 10 + hw)
    n, cin, cout, k = 2, 8, 12, 3
    x = _h(rng.standard_normal((n, cin, hw, hw)))
    w = _h(rng.standard_normal((cin, cout // groups, k, k)) * 0.3)
    y = F.conv_transpose2d(clgrad.tensor(x, dtype=F16), clgrad.tensor(w, dtype=F16),
                           stride=stride, padding=1, groups=groups)
    assert y.dtype is F16
    ho = (hw - 1) * stride - 2 + k
    z = np.zeros((n, cout, ho, ho))
    ref = ref_conv(z, w, None, x, stride=stride, padding=1, groups=groups)[1]
    absref = ref_conv(z, np.abs(w), None, np.abs(x), stride=stride, padding=1,
                      groups=groups)[1]
    _check(y.numpy(), ref, absref, cin // groups, extra=U, name="conv_transpose2d")


@pytest.mark.parametrize("n, hw", ((1, 3), (2, 3), (1, 17), (2, 17)))
def test_half_conv_transpose_1x1_with_output_padding(dev, n, hw):
    """A 1 x 1 conv_transpose2d at stride 1 with output_padding 1 (< dilation 2): its output
    is one row and column larger than its input, so im2col's GEMMs may not take the tensors
    as their columns (a dense 1 x 1 has equal maps; review of 9b27320). Output, input and
    weight gradients against NumPy: one float32 sum rounded once; the added row and column
    are the bias alone."""
    rng = np.random.default_rng(n * 100 + hw)
    cin, cout, g = 8, 6, 2
    C, O = cin // g, cout // g
    x = _h(rng.standard_normal((n, cin, hw, hw)))
    w = _h(rng.standard_normal((cin, O, 1, 1)) * 0.3)
    b = _h(rng.standard_normal(cout))
    gy = _h(rng.standard_normal((n, cout, hw + 1, hw + 1)))
    xs = clgrad.tensor(x, dtype=F16, requires_grad=True)
    ws = clgrad.tensor(w, dtype=F16, requires_grad=True)
    y = F.conv_transpose2d(xs, ws, clgrad.tensor(b, dtype=F16), stride=1, padding=0,
                           output_padding=1, groups=g, dilation=2)
    y.backward(clgrad.tensor(gy, dtype=F16))
    wm = w[:, :, 0, 0]

    def per_group(f):
        return np.concatenate([f(i) for i in range(g)], axis=1)
    core = per_group(lambda i: np.einsum("nchw,co->nohw", x[:, i * C:(i + 1) * C],
                                         wm[i * C:(i + 1) * C]))
    acore = per_group(lambda i: np.einsum("nchw,co->nohw", np.abs(x[:, i * C:(i + 1) * C]),
                                          np.abs(wm[i * C:(i + 1) * C])))
    ref = np.broadcast_to(b[None, :, None, None], gy.shape).copy()
    ref[:, :, :hw, :hw] += core
    absref = np.broadcast_to(np.abs(b)[None, :, None, None], gy.shape).copy()
    absref[:, :, :hw, :hw] += acore
    _check(y.detach().numpy(), ref, absref, C + 1, name="output")
    g_in = gy[:, :, :hw, :hw]
    gx = per_group(lambda i: np.einsum("nohw,co->nchw", g_in[:, i * O:(i + 1) * O],
                                       wm[i * C:(i + 1) * C]))
    agx = per_group(lambda i: np.einsum("nohw,co->nchw", np.abs(g_in[:, i * O:(i + 1) * O]),
                                        np.abs(wm[i * C:(i + 1) * C])))
    _check(xs.grad.numpy(), gx, agx, O, name="input gradient")
    gw = np.concatenate([np.einsum("nchw,nohw->co", x[:, i * C:(i + 1) * C],
                                   g_in[:, i * O:(i + 1) * O]) for i in range(g)])
    agw = np.concatenate([np.einsum("nchw,nohw->co", np.abs(x[:, i * C:(i + 1) * C]),
                                    np.abs(g_in[:, i * O:(i + 1) * O])) for i in range(g)])
    _check(ws.grad.numpy()[:, :, 0, 0], gw, agw, n * hw * hw, name="weight gradient")


def test_half_conv_default_route_elsewhere_is_float32(dev, monkeypatch):
    """Without tensor cores float16 convolutions (conv2d and conv_transpose2d) run float32's
    kernels on float32 copies, rounded once: the same bound; with them, im2col."""
    from clgrad.ops.conv import op
    monkeypatch.setattr(op, "HALF_IM2COL", None)
    tensor_cores = op.mma_precision(dev, F16, False) == "f16"
    algos = _conv_case(2, 8, 10, 10, 16, 1, 3, 1, 1, 1)
    assert (set(algos.values()) == {"im2col"}) == tensor_cores, algos
    rng = np.random.default_rng(4)
    x, w = _h(rng.standard_normal((2, 8, 5, 5))), _h(rng.standard_normal((8, 6, 3, 3)) * 0.3)
    y = F.conv_transpose2d(clgrad.tensor(x, dtype=F16), clgrad.tensor(w, dtype=F16),
                           stride=2, padding=1)
    z = np.zeros((2, 6, 9, 9))
    ref = ref_conv(z, w, None, x, stride=2, padding=1)[1]
    absref = ref_conv(z, np.abs(w), None, np.abs(x), stride=2, padding=1)[1]
    assert y.dtype is F16
    _check(y.numpy(), ref, absref, 8, extra=U, name="conv_transpose2d")


def test_half_weight_gradient_slices_on_any_device(dev, monkeypatch):
    """The split-K slicing itself (the views of _im2col_wgrad's slices, S from
    _wgrad_slices, a short chunk into slice 0) on any device: tensor cores pretended, so the
    slices' float32 partial sums run through gemm's float32 copies where there are none.
    Against NumPy, one rounding."""
    from clgrad.ops.conv import algorithms as alg
    monkeypatch.setattr(alg, "mma_precision", lambda *a: "f16")
    monkeypatch.setattr(alg, "has_mma_f32out", lambda d: True)
    monkeypatch.setattr(alg, "WGRAD_SLICE_MIN", 8)
    monkeypatch.setattr(alg, "_units", lambda d: 64)  # slices enough for many units
    seen = []
    real = alg._wgrad_slices
    monkeypatch.setattr(alg, "_wgrad_slices", lambda *a: seen.append(real(*a)) or seen[-1])
    for n, hw, per_chunk in ((8, 8, None), (7, 6, 4)):
        if per_chunk:
            monkeypatch.setattr(backends, "conv_workspace_limit",
                                per_chunk * (72 + 16) * hw * hw * 2)
        _, X, W, ref, absref = _padded_3x3(n + hw, n, hw)
        _check(W.grad.numpy(), ref[2], absref[2], n * hw * hw, name="grad_weight")
    assert seen[0] >= 8 and seen[1] == 2, seen  # (512 deep: 64 slices wanted; 144: 2)


# -- the measured route (half_via_float32 on tensor cores) -------------------------------------
@pytest.fixture
def route(dev, monkeypatch, tmp_path):
    """float16 conv2d's route measured on this device: tensor cores pretended
    (op.mma_precision), HALF_IM2COL None, every layer big enough (conv_gpu._TUNE_MIN_MACS 1),
    a fresh table in a temporary cache folder. Returns a record of the run: ``trials``, the
    (pass name, geometry) of each route trial begun; ``via32``, the calls of as_float32 (the
    float32 route, also inside trials)."""
    from types import SimpleNamespace
    from clgrad.ops.conv import gpu as conv_gpu, op
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CLGRAD_CONV_TUNE", raising=False)
    monkeypatch.setattr(backends, "conv_algorithm", "auto")
    monkeypatch.setattr(op, "HALF_IM2COL", None)
    monkeypatch.setattr(op, "mma_precision", lambda *a: "f16")
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 1)
    monkeypatch.setattr(conv_gpu, "_TUNED", {})
    seen = SimpleNamespace(trials=[], via32=0)
    trial, as_float32 = op._route_trial, op.as_float32

    def counted_trial(pass_name, geo, dtype, d):
        seen.trials.append((pass_name, geo))
        return trial(pass_name, geo, dtype, d)

    def counted_as_float32(*args):
        seen.via32 += 1
        return as_float32(*args)
    monkeypatch.setattr(op, "_route_trial", counted_trial)
    monkeypatch.setattr(op, "as_float32", counted_as_float32)
    return seen


def _routes():
    """The route entries of conv_algos.json: {key: {"algo": ..., "ms": {...}}}."""
    import json
    from clgrad.ops.conv import gpu as conv_gpu
    path = conv_gpu.tune_file()
    stored = json.loads(path.read_text()) if path.exists() else {}
    return {k: v for k, v in stored.items() if " | route" in k}


ROUTE_LAYER = (2, 8, 10, 10, 16, 1, 3, 1, 1, 1)  # n, c, h, w, o, groups, k, stride, pad, dil


def test_half_route_measured_once_stored_and_right(dev, route):
    """The first call of a layer times conv2d's forward + backward through both routes and
    stores the faster under a key naming the layer and both routes; the call's values (and
    gradients) are right whichever route won, and so is the next call, which runs the stored
    route without measuring again."""
    from clgrad import settings
    from clgrad.ops.conv import problem as C
    _conv_case(*ROUTE_LAYER)
    (key, entry), = _routes().items()
    x = clgrad.zeros(2, 8, 10, 10, dtype=F16)
    geo = C._check(x, clgrad.zeros(16, 8, 3, 3, dtype=F16), None, 1, 1, 1, 1)
    geo_key = " ".join(f"{k}={v}" for k, v in zip(geo._fields[:16], geo))
    assert key == (f"{settings.device_key(dev)} | route+bias float16 {geo_key} | "
                   f"float16,float32")
    assert set(entry["ms"]) == {"float16", "float32"}, entry
    assert all(ms > 0 for ms in entry["ms"].values()), entry
    assert entry["algo"] == min(entry["ms"], key=entry["ms"].get)
    assert route.trials == [("route+bias", geo)]
    via32 = route.via32
    algos = _conv_case(*ROUTE_LAYER, seed=1)
    assert route.trials == [("route+bias", geo)]  # not measured again
    assert route.via32 - via32 == (entry["algo"] == "float32")
    if entry["algo"] == "float16":
        assert set(algos.values()) == {"im2col"}, algos


def test_half_route_each_forced_matches_numpy(dev, route, monkeypatch):
    """Either stored route (the table's entry replaced) computes the layer's output and its
    input, weight and bias gradients within the float16 bounds, with no new measurement."""
    from clgrad.ops.conv import gpu as conv_gpu
    _conv_case(*ROUTE_LAYER, bias=True)
    (key, entry), = _routes().items()
    for i, want in enumerate(("float16", "float32", "float16")):
        table = dict(conv_gpu._TUNED)  # (a new table: the kept answers are looked up again)
        table[key] = {"algo": want, "ms": entry["ms"]}
        monkeypatch.setattr(conv_gpu, "_TUNED", table)
        via32 = route.via32
        algos = _conv_case(*ROUTE_LAYER, bias=True, seed=10 + i)
        assert route.via32 - via32 == (want == "float32"), want
        if want == "float16":
            assert set(algos.values()) == {"im2col"}, algos
    assert len(route.trials) == 1


def test_half_route_kept_per_signature(dev, route, monkeypatch):
    """A layer seen before costs a lookup in the device's plans (conv_gpu.measured is not even
    called). Every part of the key counts: another input shape, bias, stride, padding,
    dilation or groups measures anew; the same geometry through other argument types, a
    changed setting or a replaced table looks the stored route up again (no new trial)."""
    from clgrad.ops.conv import gpu as conv_gpu
    calls = []
    measured = conv_gpu.measured
    monkeypatch.setattr(conv_gpu, "measured", lambda name, *a, **k: calls.append(name) or
                        measured(name, *a, **k))
    rng = np.random.default_rng(2)
    b = clgrad.tensor(rng.standard_normal(16), dtype=F16)

    def conv(hw=10, bias=b, groups=1, **kw):
        x = clgrad.tensor(rng.standard_normal((2, 8, hw, hw)), dtype=F16)
        w = clgrad.tensor(rng.standard_normal((16, 8 // groups, 3, 3)) * 0.2, dtype=F16)
        kw = dict(dict(stride=1, padding=1, dilation=1), **kw)
        del calls[:]
        y = F.conv2d(x, w, bias, groups=groups, **kw)
        ref = ref_conv(_h(x.numpy()), _h(w.numpy()), None if bias is None else
                       _h(bias.numpy()), groups=groups, **kw)
        absref = ref_conv(np.abs(_h(x.numpy())), np.abs(_h(w.numpy())), None if bias is None
                          else np.abs(_h(bias.numpy())), groups=groups, **kw)
        _check(y.numpy(), ref, absref, 72 // groups)
        return [c for c in calls if c.startswith("route")]
    variants = [{}, dict(hw=12), dict(bias=None), dict(stride=2), dict(padding=2),
                dict(dilation=2), dict(groups=2)]
    for i, kw in enumerate(variants):
        assert conv(**kw) == ["route" if "bias" in kw else "route+bias"], kw
        assert len(route.trials) == i + 1, kw
        assert conv(**kw) == [], kw  # kept
    assert conv(padding=(1, 1), stride=(1, 1)) == ["route+bias"]  # other types: looked up
    monkeypatch.setenv("CLGRAD_CONV_DEBUG", "")  # a setting changed (the epoch)
    assert conv() == ["route+bias"]
    monkeypatch.setattr(conv_gpu, "_TUNED", dict(conv_gpu._TUNED))  # a replaced table
    assert conv() == ["route+bias"]
    assert conv() == []
    assert len(route.trials) == len(variants) and len(_routes()) == len(variants)


def test_half_route_tune_off_forced_small_and_few_pairs_not_measured(dev, route, monkeypatch):
    """CLGRAD_CONV_TUNE=off keeps tensor cores' default route (float16: im2col) unmeasured;
    HALF_IM2COL still forces either route; a layer below conv_gpu._TUNE_MIN_MACS takes the
    default, and one of few channel pairs (depthwise) float32 on CPUs and depthwise_gpu's
    float16 kernels on GPUs, neither measured."""
    from clgrad.ops.conv import gpu as conv_gpu, op
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "off")
    algos = _conv_case(*ROUTE_LAYER)
    assert set(algos.values()) == {"im2col"} and route.via32 == 0, algos
    monkeypatch.delenv("CLGRAD_CONV_TUNE")
    monkeypatch.setattr(op, "HALF_IM2COL", False)
    _conv_case(*ROUTE_LAYER, seed=1)
    assert route.via32 == 1
    monkeypatch.setattr(op, "HALF_IM2COL", True)
    assert set(_conv_case(*ROUTE_LAYER, seed=2).values()) == {"im2col"}
    monkeypatch.setattr(op, "HALF_IM2COL", None)
    n, c, h, w, o, g, k = ROUTE_LAYER[:7]
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", n * o * h * w * c // g * k * k + 1)
    algos = _conv_case(*ROUTE_LAYER, seed=3)
    assert set(algos.values()) == {"im2col"} and route.via32 == 1, algos
    monkeypatch.setattr(conv_gpu, "_TUNE_MIN_MACS", 1)
    algos = _conv_case(2, 8, 12, 12, 8, 8, 3, 1, 1, 1)  # depthwise: unmeasured
    if dev.kind == "gpu":
        assert set(algos.values()) == {"depthwise_gpu"} and route.via32 == 1, algos
    else:
        assert route.via32 == 2
    assert route.trials == [] and _routes() == {}


def test_half_route_nested_float32_measurement(dev, route, monkeypatch):
    """The float32 route's conv2d measures its own algorithms (each pass, conv_gpu.measured)
    inside the route trial, which holds conv_gpu._LOCK: no deadlock (run in a thread, with a
    time limit), and every entry stored. Under CLGRAD_TEST_AS_GPU the nested measurements
    are the GPU ones."""
    import threading
    from clgrad.ops.conv import gpu as conv_gpu, op
    monkeypatch.setattr(conv_gpu, "CPU_TUNE_MIN_MACS", 1)  # CPUs measure theirs too
    calls, measured = [], conv_gpu.measured
    monkeypatch.setattr(conv_gpu, "measured", lambda name, *a, **k: calls.append(
        (name, op._TRIAL.route)) or measured(name, *a, **k))
    done = []

    def run():
        try:
            done.append(_conv_case(*ROUTE_LAYER))
        except BaseException as e:  # noqa: BLE001  (reported below)
            done.append(e)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout=300)
    assert not t.is_alive(), "deadlock: the route trial's nested measurement never returned"
    assert not isinstance(done[0], BaseException), done[0]
    import json
    stored = json.loads(conv_gpu.tune_file().read_text())
    passes = {" ".join(k.split(" | ")[-2].split()[:2])
              for k in stored}
    assert {"route+bias float16", "forward float32", "grad_input float32",
            "grad_weight float32"} <= passes, passes
    assert len(route.trials) == 1
    # inside the trial's float32 run (the warm-up's), every pass
    assert {(p, "float32") for p in ("forward", "grad_input", "grad_weight")} <= set(calls)


def test_half_route_two_threads_measure_once(dev, route):
    """Two threads' first calls of one layer: one measures (the other waits on the lock, then
    reads its entry); the route forced inside the trial is that thread's only."""
    import threading
    barrier, got = threading.Barrier(2), []

    def run(seed):
        barrier.wait()
        try:
            got.append(_conv_case(*ROUTE_LAYER, seed=seed))
        except BaseException as e:  # noqa: BLE001  (reported below)
            got.append(e)
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    assert not any(isinstance(g, BaseException) for g in got), got
    assert len(route.trials) == 1 and len(_routes()) == 1


def test_half_route_measured_inside_a_capture(dev, route):
    """A float16 layer first met inside a CUDAGraph capture: its route trials run eagerly (not
    recorded into the graph), which holds the conv's own launches and replays its values."""
    rng = np.random.default_rng(5)
    xn, wn = _h(rng.standard_normal((2, 8, 9, 9))), _h(rng.standard_normal((16, 8, 3, 3)) * .2)
    x, w = clgrad.tensor(xn, dtype=F16), clgrad.tensor(wn, dtype=F16)
    g = clgrad.cuda.CUDAGraph()
    with clgrad.cuda.graph(g):
        y = F.conv2d(x, w, padding=1)
    assert len(route.trials) == 1
    before = launch_count()
    eager = F.conv2d(x, w, padding=1)
    assert g.num_kernels == launch_count() - before  # the conv's launches only
    g.replay()
    ref = ref_conv(xn, wn, None, padding=1)
    absref = ref_conv(np.abs(xn), np.abs(wn), None, padding=1)
    _check(y.numpy(), ref, absref, 72, name="captured")
    _check(eager.numpy(), ref, absref, 72, name="eager")


# -- float16 depthwise on GPUs: depthwise_gpu's kernels read and write half ------------------
def _intel_fp16() -> bool:
    """Whether Intel's CPU runtime (with cl_khr_fp16) is here to pose as a GPU in a child."""
    from clgrad.runtime import devices
    return any("intel" in d["platform"].lower() and d["fp16"] and d["usable"]
               for d in devices())


_DW_CHILD = r'''
import json
import numpy as np
import clgrad, clgrad.backends as backends
import clgrad.nn.functional as F
from clgrad.ops.conv import gpu as conv_gpu
from clgrad.runtime import launch_count
dev = clgrad.default_device()
assert dev.kind == "gpu" and dev.fp16, (dev.name, dev.kind)
cases = json.loads(CASES)
out = []
for (n, c, h, w, groups, o, k, s, p, d, bias) in cases:
    rng = np.random.default_rng(n * 100 + c + k)
    x = rng.standard_normal((n, c, h, w)).astype(np.float16)
    wt = (rng.standard_normal((o, c // groups, k, k)) * 0.3).astype(np.float16)
    b = rng.standard_normal(o).astype(np.float16) if bias else None
    gy = None
    res = {}
    for route in (True, False):
        conv_gpu.HALF_DEPTHWISE = route
        xs = clgrad.tensor(x, requires_grad=True)
        ws = clgrad.tensor(wt, requires_grad=True)
        bs = clgrad.tensor(b, requires_grad=True) if bias else None
        y = F.conv2d(xs, ws, bs, stride=s, padding=p, dilation=d, groups=groups)  # (warm)
        if gy is None:
            gy = rng.standard_normal(y.shape).astype(np.float16)
        y.backward(clgrad.tensor(gy))
        for t in (xs, ws, bs):
            if t is not None:
                t.grad = None
        clgrad.synchronize()
        before = launch_count()
        y = F.conv2d(xs, ws, bs, stride=s, padding=p, dilation=d, groups=groups)
        y.backward(clgrad.tensor(gy))
        launches = launch_count() - before
        res[route] = dict(
            launches=launches, algos=dict(backends.last_conv_algorithms),
            dtypes=[str(t.dtype) for t in (y, xs.grad, ws.grad)],
            vals=[t.detach().numpy().astype(np.float64).tolist()
                  for t in (y, xs.grad, ws.grad) + ((bs.grad,) if bias else ())])
    out.append(dict(x=x.astype(np.float64).tolist(), w=wt.astype(np.float64).tolist(),
                    b=None if b is None else b.astype(np.float64).tolist(),
                    gy=gy.astype(np.float64).tolist(), new=res[True], old=res[False]))
print("RESULT" + json.dumps(out))
'''

# (n, c, h, w, groups, o, k, stride, padding, dilation, bias): depthwise, a channel
# multiplier of 2, two channels per group, a strided 7 x 7 (the input gradient in phases)
_DW_CASES = [(2, 8, 9, 11, 8, 8, 3, 1, 1, 1, True), (3, 6, 16, 16, 6, 12, 5, 2, 2, 1, False),
             (2, 4, 12, 10, 2, 4, 3, 2, 1, 2, True), (2, 8, 21, 20, 8, 8, 7, 3, 3, 1, True)]


@pytest.mark.skipif(not _intel_fp16(), reason="needs Intel's CPU runtime (float16) to pose "
                    "as a GPU")
def test_half_depthwise_on_gpus_reads_and_writes_half_without_casts():
    """On a GPU (Intel's CPU runtime posing as one: the same kernels and choices) a float16
    conv2d with few channel pairs per group runs depthwise_gpu's kernels on the float16
    tensors in every pass: values bit for bit those of the float32 route (float32 copies,
    rounded once: HALF_DEPTHWISE False), within float16's bound of float64 NumPy, in 6
    launches fewer (8 with a bias: the casts of input, weight, bias and output, and of the
    four gradients)."""
    import json

    from subproc import run_as_gpu
    r = run_as_gpu(_DW_CHILD.replace("CASES", repr(json.dumps(_DW_CASES))), as_gpu="intel",
                   CLGRAD_DEVICE="gpu")
    got = json.loads(r.stdout.split("RESULT", 1)[1])
    for case, g in zip(_DW_CASES, got):
        n, c, h, w, groups, o, k, s, p, d, bias = case
        new, old = g["new"], g["old"]
        assert set(new["algos"].values()) == {"depthwise_gpu"}, (case, new["algos"])
        assert new["dtypes"] == ["clgrad.float16"] * 3, new["dtypes"]
        for a, b in zip(new["vals"], old["vals"]):
            np.testing.assert_array_equal(np.array(a), np.array(b), err_msg=str(case))
        assert old["launches"] - new["launches"] == (8 if bias else 6), (
            case, old["launches"], new["launches"])
        x, wt, gy = (np.array(g[key]) for key in ("x", "w", "gy"))
        b = np.array(g["b"]) if bias else None
        kw = dict(stride=s, padding=p, dilation=d, groups=groups)
        ref = ref_conv(x, wt, b, gy, **kw)
        absref = ref_conv(np.abs(x), np.abs(wt), None if b is None else np.abs(b),
                          np.abs(gy), **kw)
        taps = c // groups * k * k
        vals = [np.array(v) for v in new["vals"]]
        _check(vals[0], ref[0], absref[0], taps, name=f"{case} output")
        _check(vals[1], ref[1], absref[1], o // groups * k * k, name=f"{case} input grad")
        _check(vals[2], ref[2], absref[2], n * gy.shape[2] * gy.shape[3],
               name=f"{case} weight grad")
        if bias:
            _check(vals[3], ref[3], absref[3], n * gy.shape[2] * gy.shape[3],
                   name=f"{case} bias grad")


# (n, c, h, w, o, groups, k, padding, bias, view, launches saved a step): a dense 1 x 1 on
# maps of at least MERGE_PIXELS pixels (per-sample GEMMs), with a view input whose pixels do
# not merge, on 1 x 1 maps (squeeze-excitation: merged GEMMs whose columns are the samples),
# grouped, at batch 1, a 3 x 3 on 1 x 1 maps and at batch 1 (only the gradient's copies go),
# and 8 x 8 maps at batch 4 (nothing merges: as before)
_DENSE = [(2, 16, 16, 16, 24, 1, 1, 0, True, False, 2), (3, 8, 20, 20, 12, 2, 1, 0, False, True, 1),
          (8, 16, 1, 1, 24, 1, 1, 0, True, False, 6), (8, 24, 1, 1, 16, 2, 1, 0, False, False, 6),
          (1, 16, 8, 8, 32, 1, 1, 0, True, False, 6), (1, 16, 8, 8, 32, 1, 3, 1, True, False, 3),
          (6, 16, 1, 1, 8, 1, 3, 1, True, False, 3), (4, 16, 8, 8, 32, 1, 1, 0, True, False, 0)]


@pytest.mark.parametrize("case", _DENSE)
def test_half_gemms_read_and_write_the_tensors_where_columns_merge(dev, monkeypatch, case):
    """float16 im2col's GEMMs read x and g and write y and gi themselves, without im2col's,
    col2im's and the merged GEMMs' copies, where a copy would only move the elements: a dense
    1 x 1 conv (no stride, padding or zero insertion) on large maps (per-sample GEMMs), and
    merged GEMMs whose samples and pixels merge into one stride (1 x 1 maps, batch 1). The
    same values bit for bit as with the copies, the launches saved that the case names, and
    within the bound of float64 NumPy."""
    from clgrad.ops.conv import algorithms as alg
    n, c, h, w, o, g, k, pad, bias, view, saved = case
    rng = np.random.default_rng(sum(case[:7]))
    x = _h(rng.standard_normal((n, c, h, w + 3 * view)))
    wt = _h(rng.standard_normal((o, c // g, k, k)) * 0.3)
    b = _h(rng.standard_normal(o)) if bias else None
    gy = _h(rng.standard_normal((n, o, h, w)))
    dense, runs = alg._dense_1x1, alg._runs
    got = {}
    for on in (True, False):
        monkeypatch.setattr(alg, "_dense_1x1", dense if on else (lambda p, v: None))
        monkeypatch.setattr(alg, "_runs", runs if on else (lambda *a: None))
        dev.plans.clear()  # (replayed launches were recorded with the other rule)
        xs = clgrad.tensor(x, dtype=F16, requires_grad=True)
        ws = clgrad.tensor(wt, dtype=F16, requires_grad=True)
        bs = clgrad.tensor(b, dtype=F16, requires_grad=True) if bias else None
        for _ in range(2):  # the second step replays what the first recorded
            for t in (xs, ws, bs):
                if t is not None:
                    t.grad = None
            before = launch_count()
            y = F.conv2d(xs[..., :w], ws, bs, padding=pad, groups=g)
            y.backward(clgrad.tensor(gy, dtype=F16))
            launches = launch_count() - before
        assert set(backends.last_conv_algorithms.values()) == {"im2col"}
        got[on] = launches, [t.detach().numpy() for t in (y, xs.grad, ws.grad) +
                             ((bs.grad,) if bias else ())]
    assert got[False][0] - got[True][0] == saved, (got[True][0], got[False][0])
    for a, b_ in zip(got[True][1], got[False][1]):
        np.testing.assert_array_equal(a, b_)
    kw = dict(padding=pad, groups=g)
    ref = ref_conv(x[..., :w], wt, b, gy, **kw)
    absref = ref_conv(np.abs(x[..., :w]), np.abs(wt), None if b is None else np.abs(b),
                      np.abs(gy), **kw)
    y, gx, gw = got[True][1][:3]
    _check(y, ref[0], absref[0], c // g * k * k, name="output")
    _check(gx[..., :w], ref[1], absref[1], o // g * k * k, extra=U if k > 1 else 0.0,
           name="input gradient")
    _check(gw, ref[2], absref[2], n * h * w, name="weight gradient")
