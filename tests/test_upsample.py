"""interpolate (nearest, nearest-exact, linear, bilinear, area) against NumPy references of
PyTorch's source-index formulas (float64 linear weights; nearest indices in float32 as
PyTorch computes them), on non-contiguous inputs; gradients by NumPy scatter and gradcheck."""
import math

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from strided import leaf_and_view, numeric_vjp, strided

RNG = np.random.default_rng(21)


def near_index(out, inp, scale, exact):
    if out == inp:
        return np.arange(out)
    if out == 2 * inp:
        return np.arange(out) >> 1
    d = np.arange(out, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0))
    return np.minimum(np.floor(d * np.float32(scale)).astype(np.int64), inp - 1)


def lin_matrix(out, inp, scale, align):
    """(out, inp) interpolation weights along one axis."""
    d = np.arange(out, dtype=np.float64)
    src = scale * d if align else np.maximum(scale * (d + 0.5) - 0.5, 0)
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < inp - 1)
    l1 = src - i0
    m = np.zeros((out, inp))
    np.add.at(m, (np.arange(out), i0), 1 - l1)
    np.add.at(m, (np.arange(out), i1), l1)
    return m


def ref_interp(x, outs, scales, mode, align):
    """NumPy resampling of the last two dims; scales are the coordinate scales."""
    if mode.startswith("nearest"):
        iy = near_index(outs[0], x.shape[2], scales[0], mode == "nearest-exact")
        ix = near_index(outs[1], x.shape[3], scales[1], mode == "nearest-exact")
        return x[:, :, iy][:, :, :, ix]
    my = lin_matrix(outs[0], x.shape[2], scales[0], align)
    mx = lin_matrix(outs[1], x.shape[3], scales[1], align)
    return np.einsum("oh,nchw,pw->ncop", my, x, mx)


def coord(i, o, sf, mode, align):
    if mode == "bilinear" and align:
        return (i - 1) / (o - 1) if o > 1 else 0.0
    return 1 / sf if sf else i / o


CASES = [  # (input hw, kwargs)
    ((5, 7), dict(scale_factor=2)),
    ((5, 7), dict(size=(8, 11))),
    ((6, 4), dict(size=(3, 3))),
    ((4, 5), dict(scale_factor=(1.7, 0.6))),
    ((1, 3), dict(size=(4, 1))),
]


@pytest.mark.parametrize("mode,align", [("nearest", None), ("nearest-exact", None),
                                        ("bilinear", False), ("bilinear", True)])
@pytest.mark.parametrize("hw,kw", CASES, ids=[str(i) for i in range(len(CASES))])
def test_interpolate_2d(hw, kw, mode, align):
    x = RNG.standard_normal((2, 3) + hw)
    if "size" in kw:
        outs, sfs = kw["size"], (None, None)
    else:
        sf = kw["scale_factor"]
        sfs = sf if isinstance(sf, tuple) else (sf, sf)
        outs = tuple(math.floor(i * s) for i, s in zip(hw, sfs))
    scales = [coord(i, o, s, mode, align) for i, o, s in zip(hw, outs, sfs)]
    leaf, view = leaf_and_view(x)
    y = F.interpolate(view(leaf), mode=mode, align_corners=align, **kw)
    ref = ref_interp(x, outs, scales, mode, align)
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12, atol=1e-14)
    g = RNG.standard_normal(ref.shape)
    y.backward(strided(g))
    f = lambda a: ref_interp(a, outs, scales, mode, align)  # noqa: E731 (linear in a: exact)
    np.testing.assert_allclose(view(leaf.grad).numpy(), numeric_vjp(f, x, g, h=1.0),
                               rtol=1e-10, atol=1e-12)


def test_interpolate_1d_area_gradcheck_and_errors():
    x = RNG.standard_normal((2, 3, 7))
    leaf, view = leaf_and_view(x)
    y = F.interpolate(view(leaf), size=12, mode="linear", align_corners=True)
    ref = np.einsum("ol,ncl->nco", lin_matrix(12, 7, 6 / 11, True), x)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12)
    assert gradcheck(lambda t: F.interpolate(view(t), scale_factor=1.5, mode="linear"), [leaf])
    np.testing.assert_array_equal(F.interpolate(view(leaf), size=3).detach().numpy(),
                                  x[:, :, near_index(3, 7, 7 / 3, False)])
    a = F.interpolate(clgrad.tensor(x[:, :, None]), size=(1, 3), mode="area")
    np.testing.assert_allclose(a.numpy()[:, :, 0], np.stack(
        [x[..., 0:3].mean(-1), x[..., 2:5].mean(-1), x[..., 4:7].mean(-1)], -1))
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(view(leaf), size=3, align_corners=True)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(view(leaf))
    with pytest.raises(ValueError, match="mode 'bilinear' expects a 4-D"):
        F.interpolate(view(leaf), size=3, mode="bilinear")
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.interpolate(clgrad.tensor(x[None]), size=3, mode="bicubic")


def test_upsample_modules():
    nn = clgrad.nn
    x = RNG.standard_normal((1, 2, 3, 4))
    t = clgrad.tensor(x)
    np.testing.assert_array_equal(nn.Upsample(scale_factor=2)(t).numpy(),
                                  x.repeat(2, 2).repeat(2, 3))
    up = nn.UpsamplingBilinear2d(size=(5, 7))(t).numpy()
    np.testing.assert_allclose(up, ref_interp(x, (5, 7), (0.5, 0.5), "bilinear", True),
                               rtol=1e-12)
    assert repr(nn.Upsample(scale_factor=2, mode="bilinear")) == \
        "Upsample(scale_factor=2.0, mode='bilinear')"


def test_interpolate_matches_pytorch_float32():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 5, 6)).astype(np.float32)
    for kw in (dict(scale_factor=1.7, mode="bilinear"), dict(size=(9, 4), mode="nearest"),
               dict(size=(7, 13), mode="bilinear", align_corners=True),
               dict(scale_factor=2.5, mode="nearest-exact")):
        a, b = clgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ya, yb = F.interpolate(a, **kw), torch.nn.functional.interpolate(b, **kw)
        np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=1e-6, atol=1e-6)
        g = RNG.standard_normal(yb.shape).astype(np.float32)
        ya.backward(clgrad.tensor(g))
        yb.backward(torch.tensor(g))
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)
