"""conv_transpose2d/1d and conv1d against float64 NumPy references (a direct scatter for the
transposed convolution), under every conv algorithm, on non-contiguous inputs."""
import numpy as np
import pytest

import clgrad
import clgrad.backends as backends
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from clgrad.runtime import launch_count
from strided import leaf_and_view, numeric_vjp, strided

RNG = np.random.default_rng(13)
ALGOS = ("implicit", "depthwise", "direct", "im2col", "implicit:gpu", "pointwise", "auto")


@pytest.fixture(autouse=True)
def _restore_backend():
    with backends.flags(conv_algorithm=backends.conv_algorithm,
                        conv_implicit_variant=backends.conv_implicit_variant):
        yield


def _use(algo):
    """Force an algorithm; 'implicit:gpu' is the implicit GEMM's GPU kernels (any device)."""
    name, _, variant = algo.partition(":")
    backends.conv_algorithm, backends.conv_implicit_variant = name, variant or "auto"


def ref_conv_transpose(x, w, b, s, p, op, g, d):
    """out[n, co, i s - p + ki d, j s - p + kj d] += x[n, ci, i, j] w[ci, co', ki, kj]."""
    n, cin, h, wd = x.shape
    cog, kh, kw = w.shape[1:]
    oh = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op[0] + 1
    ow = (wd - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op[1] + 1
    big = np.zeros((n, g * cog, oh + 2 * p[0] + s[0] * h + d[0] * kh,
                    ow + 2 * p[1] + s[1] * wd + d[1] * kw))
    cig = cin // g
    for gi in range(g):
        xs, ws = x[:, gi * cig:(gi + 1) * cig], w[gi * cig:(gi + 1) * cig]
        for ki in range(kh):
            for kj in range(kw):
                big[:, gi * cog:(gi + 1) * cog, ki * d[0]: ki * d[0] + s[0] * h: s[0],
                    kj * d[1]: kj * d[1] + s[1] * wd: s[1]] += np.einsum(
                        "nchw,co->nohw", xs, ws[:, :, ki, kj])
    out = big[:, :, p[0]:p[0] + oh, p[1]:p[1] + ow]
    return out + (0 if b is None else b[None, :, None, None])


CASES = [  # (cin, cout, groups, stride, padding, output_padding, dilation, k, (H, W))
    ((4, 6, 2), (2, 2), (1, 1), (1, 1), (1, 1), (3, 3), (4, 5)),
    ((3, 3, 3), (3, 2), (0, 1), (2, 1), (1, 1), (2, 3), (3, 4)),   # depthwise-like, uneven
    ((2, 4, 1), (1, 1), (1, 0), (0, 0), (2, 1), (3, 2), (5, 4)),
    ((2, 2, 1), (2, 3), (2, 1), (1, 2), (3, 1), (3, 3), (4, 3)),  # output_padding < dilation
    # a 1 x 1 at stride 1 whose output_padding makes the output larger than the input: not
    # a "dense 1 x 1" for im2col's GEMMs (review of 9b27320: they wrote rows out of place)
    ((2, 4, 2), (1, 1), (0, 0), (1, 1), (2, 2), (1, 1), (3, 3)),
]


@pytest.mark.parametrize("n", [2, 1])
@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_conv_transpose2d_matches_scatter_reference(case, algo, n):
    _use(algo)
    (cin, cout, g), s, p, op, d, k, hw = case
    x = RNG.standard_normal((n, cin) + hw)
    w = RNG.standard_normal((cin, cout // g) + k)
    b = RNG.standard_normal(cout)
    lx, vx = leaf_and_view(x)
    lw, vw = leaf_and_view(w)
    bt = clgrad.tensor(b, requires_grad=True)
    y = F.conv_transpose2d(vx(lx), vw(lw), bt, s, p, op, g, d)
    ref = ref_conv_transpose(x, w, b, s, p, op, g, d)
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-10, atol=1e-10)
    gy = RNG.standard_normal(ref.shape)
    y.backward(strided(gy))
    f = lambda a: ref_conv_transpose(a, w, b, s, p, op, g, d)          # noqa: E731
    np.testing.assert_allclose(vx(lx.grad).numpy(), numeric_vjp(f, x, gy), atol=1e-6)
    f = lambda a: ref_conv_transpose(x, a, b, s, p, op, g, d)          # noqa: E731
    np.testing.assert_allclose(vw(lw.grad).numpy(), numeric_vjp(f, w, gy), atol=1e-6)
    np.testing.assert_allclose(bt.grad.numpy(), gy.sum((0, 2, 3)), rtol=1e-10)


def test_conv_transpose2d_is_conv2d_input_gradient_and_errors():
    x = RNG.standard_normal((2, 3, 7, 6))
    w = RNG.standard_normal((4, 3, 3, 3))
    xt = clgrad.tensor(x, requires_grad=True)
    y = F.conv2d(xt, clgrad.tensor(w), stride=2, padding=1)
    gy = RNG.standard_normal(y.shape)
    y.backward(clgrad.tensor(gy))
    t = F.conv_transpose2d(clgrad.tensor(gy), clgrad.tensor(w), stride=2, padding=1,
                           output_padding=(0, 1))
    np.testing.assert_allclose(t.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match="output padding must be smaller"):
        F.conv_transpose2d(clgrad.tensor(gy), clgrad.tensor(w), stride=2, output_padding=2)
    with pytest.raises(RuntimeError, match="expected weight with 4 input channels"):
        F.conv_transpose2d(clgrad.tensor(gy), clgrad.tensor(w[:2]))
    unb = F.conv_transpose2d(clgrad.tensor(gy[0]), clgrad.tensor(w), stride=2, padding=1)
    np.testing.assert_allclose(unb.numpy(), t.numpy()[0, :, :, :5], rtol=1e-12)


def test_conv1d_and_transpose1d():
    x = RNG.standard_normal((2, 4, 9))
    w = RNG.standard_normal((6, 2, 3))
    b = RNG.standard_normal(6)
    lx, vx = leaf_and_view(x)
    wt, bt = clgrad.tensor(w, requires_grad=True), clgrad.tensor(b, requires_grad=True)
    y = F.conv1d(vx(lx), wt, bt, stride=2, padding=1, dilation=2, groups=2)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))                 # L' = (11 - 5) // 2 + 1 = 4
    ref = np.zeros((2, 6, 4)) + b[:, None]
    for o in range(6):
        gi = o // 3
        for k in range(3):
            ref[:, o] += np.einsum("ncl,c->nl", xp[:, gi * 2:gi * 2 + 2, 2 * k:2 * k + 7:2],
                                   w[o, :, k])
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12)
    assert gradcheck(lambda a, c, e: F.conv1d(vx(a), c, e, 2, 1, 2, 2), [lx, wt, bt])
    assert F.conv1d(vx(lx), wt, None, padding="same", groups=2).shape == (2, 6, 9)
    n0 = launch_count()                               # the unit-height views copy nothing:
    F.conv1d(vx(lx), wt, bt, stride=2, groups=2)      # as many launches as the conv2d itself
    n1 = launch_count()
    F.conv2d(vx(lx).unsqueeze(2), wt.unsqueeze(2), bt, (1, 2), groups=2)
    assert n1 - n0 == launch_count() - n1
    wt2 = clgrad.tensor(RNG.standard_normal((4, 3, 3)), requires_grad=True)
    assert gradcheck(lambda a, c: F.conv_transpose1d(vx(a), c, None, 2, 1, 1, 2), [lx, wt2])
    yt = F.conv_transpose1d(vx(lx), wt2, stride=2, padding=1, output_padding=1, groups=2)
    ref_t = ref_conv_transpose(x[:, :, None], wt2.detach().numpy()[:, :, None], None, (1, 2),
                               (0, 1), (0, 1), 2, (1, 1))[:, :, 0]
    np.testing.assert_allclose(yt.detach().numpy(), ref_t, rtol=1e-12)


def test_conv_modules():
    nn = clgrad.nn
    c1 = nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2)
    assert c1.weight.shape == (6, 2, 3) and c1.bias.shape == (6,)
    assert c1(clgrad.randn(2, 4, 9)).shape == (2, 6, 5)
    assert repr(c1) == "Conv1d(4, 6, kernel_size=(3,), stride=(2,), padding=(1,), groups=2)"
    ct = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    assert ct.weight.shape == (4, 3, 3, 3)
    assert ct(clgrad.randn(1, 4, 5, 5)).shape == (1, 6, 10, 10)
    assert nn.ConvTranspose1d(2, 3, 4, stride=2)(clgrad.randn(1, 2, 5)).shape == (1, 3, 12)
    bound = 1 / np.sqrt(3 * 9)                        # fan_in of the (C_in, C_out/G, k, k) weight
    assert np.abs(ct.weight.detach().numpy()).max() <= bound + 1e-7


def test_conv_transpose2d_matches_pytorch_float32():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 6, 5, 5)).astype(np.float32)
    w = RNG.standard_normal((6, 2, 3, 3)).astype(np.float32)
    a, c = clgrad.tensor(x, requires_grad=True), clgrad.tensor(w, requires_grad=True)
    ta, tc = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    y = F.conv_transpose2d(a, c, None, 2, 1, 1, 3)
    ty = torch.nn.functional.conv_transpose2d(ta, tc, None, 2, 1, 1, 3)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(c.grad.numpy(), tc.grad.numpy(), rtol=1e-4, atol=1e-3)
