"""pixel_shuffle / pixel_unshuffle / channel_shuffle and the padding layers (issue 22):
values, shapes, reprs and gradients against PyTorch, float64 finite differences."""
import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from strided import strided

torch = pytest.importorskip("torch")  # the oracle (not in the dev extra)


def close(c, t, **kw):
    np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), **kw)


def grads_match(fn_c, fn_t, a):
    xc = clgrad.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    oc, ot = fn_c(xc), fn_t(xt)
    close(oc, ot)
    assert tuple(oc.shape) == tuple(ot.shape)
    r = np.random.default_rng(0).standard_normal(tuple(ot.shape))
    (oc * clgrad.tensor(r)).sum().backward()
    (ot * torch.tensor(r)).sum().backward()
    close(xc.grad, xt.grad, rtol=1e-14)


@pytest.mark.parametrize("shape,r", [((2, 8, 3, 5), 2), ((18, 2, 3), 3), ((2, 3, 4, 1, 2), 2),
                                     ((1, 3, 2, 2), 1)])
def test_pixel_shuffle_and_unshuffle_match_torch(shape, r):
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    close(F.pixel_shuffle(strided(a), r), torch.nn.functional.pixel_shuffle(torch.tensor(a), r))
    grads_match(lambda x: F.pixel_shuffle(x, r),
                lambda x: torch.nn.functional.pixel_shuffle(x, r), a)
    up = torch.nn.functional.pixel_shuffle(torch.tensor(a), r).numpy()
    close(F.pixel_unshuffle(strided(up), r),
          torch.nn.functional.pixel_unshuffle(torch.tensor(up), r))
    grads_match(lambda x: nn.PixelUnshuffle(r)(x), lambda x: torch.nn.PixelUnshuffle(r)(x), up)
    # round trip
    close(F.pixel_unshuffle(F.pixel_shuffle(clgrad.tensor(a), r), r), torch.tensor(a))


def test_shuffle_modules_repr_errors_and_gradcheck():
    assert repr(nn.PixelShuffle(3)) == repr(torch.nn.PixelShuffle(3))
    assert repr(nn.PixelUnshuffle(2)) == repr(torch.nn.PixelUnshuffle(2))
    assert repr(nn.ChannelShuffle(2)) == repr(torch.nn.ChannelShuffle(2))
    with pytest.raises(RuntimeError, match="divisible"):
        F.pixel_shuffle(clgrad.zeros(2, 5, 3, 3), 2)
    with pytest.raises(RuntimeError, match="at least 3"):
        F.pixel_shuffle(clgrad.zeros(4, 3), 2)
    with pytest.raises(RuntimeError, match="positive"):
        F.pixel_shuffle(clgrad.zeros(1, 4, 3, 3), 0)
    with pytest.raises(RuntimeError, match="divisible"):
        F.pixel_unshuffle(clgrad.zeros(2, 5, 3, 4), 2)
    with pytest.raises(TypeError):
        F.pixel_shuffle(np.zeros((1, 4, 2, 2)), 2)
    a = np.random.default_rng(1).standard_normal((1, 4, 2, 3))
    assert gradcheck(lambda x: F.pixel_shuffle(x.transpose(2, 3), 2),
                     (clgrad.tensor(a, requires_grad=True),))


@pytest.mark.parametrize("groups", [1, 2, 3, 6])
def test_channel_shuffle_matches_torch(groups):
    a = np.arange(2 * 6 * 2 * 3, dtype=np.float64).reshape(2, 6, 2, 3)
    close(F.channel_shuffle(strided(a), groups),
          torch.nn.functional.channel_shuffle(torch.tensor(a), groups))
    grads_match(lambda x: nn.ChannelShuffle(groups)(x),
                lambda x: torch.nn.ChannelShuffle(groups)(x), a)


PADS = [("ReflectionPad1d", 2, 3), ("ReflectionPad1d", (1, 3), 3), ("ReplicationPad1d", 3, 3),
        ("ReplicationPad1d", (0, 2), 2), ("ZeroPad1d", (2, 1), 3), ("ZeroPad1d", (-1, 2), 2),
        ("ConstantPad1d", (1, 2), 3), ("ReflectionPad2d", 2, 4),
        ("ReflectionPad2d", (1, 0, 2, 3), 3),
        ("ReplicationPad2d", (2, 1, 0, 3), 4), ("ReplicationPad2d", 1, 3), ("ZeroPad2d", 1, 4),
        ("ZeroPad2d", (1, 0, -1, 2), 4), ("ConstantPad2d", (3, 0, 1, 1), 3),
        ("CircularPad1d", (2, 1), 3), ("CircularPad2d", (1, 2, 3, 0), 4)]


@pytest.mark.parametrize("name,padding,ndim", PADS, ids=[f"{p[0]}-{p[1]}-{p[2]}d" for p in PADS])
def test_padding_layers_match_torch(name, padding, ndim):
    shape = (2, 3, 4, 5)[-ndim:]
    a = np.random.default_rng(2).standard_normal(shape)
    args = (padding, 2.5) if name.startswith("Constant") else (padding,)
    mc, mt = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(mc) == repr(mt)
    assert tuple(mc.padding) == tuple(mt.padding)
    close(mc(strided(a)), mt(torch.tensor(a)))
    grads_match(mc, mt, a)


@pytest.mark.parametrize("pad", [(1, 2), (2, 0, 1, 3), (1, 1, 0, 2, 2, 1)])
def test_circular_pad_function_and_gradcheck(pad):
    a = np.random.default_rng(3).standard_normal((1, 2, 3, 4, 3)[:2 + len(pad) // 2])
    ref = torch.nn.functional.pad(torch.tensor(a), pad, mode="circular")
    close(F.pad(strided(a), pad, mode="circular"), ref)
    grads_match(lambda x: F.pad(x, pad, mode="circular"),
                lambda x: torch.nn.functional.pad(x, pad, mode="circular"), a)
    b = np.random.default_rng(4).standard_normal((1, 2, 3, 3))
    assert gradcheck(lambda x: F.pad(x.transpose(2, 3), (pad + pad)[:4], mode="circular"),
                     (clgrad.tensor(b, requires_grad=True),))
    with pytest.raises(ValueError):
        F.pad(clgrad.zeros(1, 2, 3), (4, 0), mode="circular")
    with pytest.raises(ValueError):
        F.pad(clgrad.zeros(1, 2, 3), (1, 0), mode="wrap")
