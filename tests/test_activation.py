"""leaky_relu, dropout and pad against float64 NumPy references, and the functional namespace.

Inputs are non-contiguous views; gradients are checked against NumPy and by gradcheck.
Dropout's mask is checked against an independent NumPy Philox4x32-10 (verified on the
Random123 known-answer vectors).
"""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from strided import strided, leaf_and_view, numeric_vjp
from clgrad.autograd import gradcheck

RNG = np.random.default_rng(3)


# -- leaky_relu / relu ------------------------------------------------------------------------
@pytest.mark.parametrize("slope", [0.01, 0.2, -0.5])
def test_leaky_relu_forward_backward(slope):
    x = RNG.standard_normal((3, 4, 5))
    x[0, 0, :2] = 0.0                                   # at 0 the gradient is the slope's
    leaf, view = leaf_and_view(x)
    y = F.leaky_relu(view(leaf), slope)
    np.testing.assert_array_equal(y.detach().numpy(), np.where(x > 0, x, slope * x))
    g = RNG.standard_normal(x.shape)
    y.backward(strided(g))
    np.testing.assert_array_equal(view(leaf.grad).numpy(), np.where(x > 0, g, slope * g))


def test_leaky_relu_gradcheck_and_inplace():
    x = RNG.standard_normal((4, 5))
    x[np.abs(x) < 0.1] = 0.5                             # away from the kink
    leaf, view = leaf_and_view(x)
    assert gradcheck(lambda t: F.leaky_relu(view(t), 0.3), [leaf])
    y = clgrad.tensor(x) * 1.0
    assert F.leaky_relu(y, 0.3, inplace=True) is y
    np.testing.assert_array_equal(y.numpy(), np.where(x > 0, x, 0.3 * x))
    z = strided(x)
    assert F.relu(z, inplace=True) is z
    np.testing.assert_array_equal(z.numpy(), np.maximum(x, 0))


# -- dropout ----------------------------------------------------------------------------------
_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)


def philox4x32_10(ctr, key):
    """Philox4x32-10 on uint64 arrays holding 32-bit words (Salmon et al., SC'11)."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in ctr)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(10):
        p0, p1 = np.uint64(_M0) * c0, np.uint64(_M1) * c2
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & _MASK,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & _MASK)
        k0, k1 = (k0 + np.uint64(_W0)) & _MASK, (k1 + np.uint64(_W1)) & _MASK
    return c0, c1, c2, c3


def test_numpy_philox_matches_random123_known_answers():
    kat = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
           ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                                    0x6d5451fd)),
           ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
            (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    for ctr, key, want in kat:
        assert tuple(int(v) for v in philox4x32_10(ctr, key)) == want


def ref_dropout_keep(seed, shape, p):
    """The mask dropout draws after ``manual_seed(seed)``: its 64-bit key is the generator's
    next integers(0, 2**63); element k is kept when word k % 4 of
    philox((k // 4, 0, 0, 0), key) is >= p 2^32."""
    key = int(np.random.default_rng(seed).integers(0, 2 ** 63))
    n = int(np.prod(shape))
    i = np.arange(-(-n // 4), dtype=np.uint64)
    words = philox4x32_10((i & _MASK, i >> np.uint64(32), 0 * i, 0 * i),
                          (key & 0xFFFFFFFF, key >> 32))
    r = np.stack(words, axis=1).reshape(-1)[:n]
    return (r >= np.uint64(round(p * 2.0 ** 32))).reshape(shape)


def test_dropout_mask_scale_and_gradient():
    x = RNG.uniform(0.5, 1.5, (3, 7, 11))
    leaf, view = leaf_and_view(x)
    clgrad.manual_seed(123)
    y = F.dropout(view(leaf), 0.3)
    keep = ref_dropout_keep(123, x.shape, 0.3)
    np.testing.assert_allclose(y.detach().numpy(), np.where(keep, x / 0.7, 0.0), rtol=1e-15)
    g = RNG.standard_normal(x.shape)
    y.backward(strided(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(), np.where(keep, g / 0.7, 0.0),
                               rtol=1e-15)


def test_dropout_reproducible_and_fresh_per_call():
    x = clgrad.ones(50, 40)
    clgrad.manual_seed(9)
    a, b = F.dropout(x).numpy(), F.dropout(x).numpy()
    clgrad.manual_seed(9)
    np.testing.assert_array_equal(F.dropout(x).numpy(), a)
    assert (a != b).any()
    # the mask follows the logical index, not the storage: a view gives the same mask
    clgrad.manual_seed(9)
    np.testing.assert_array_equal(F.dropout(strided(np.ones((50, 40)), clgrad.float32)).numpy(),
                                  a)


def test_dropout_keeps_one_minus_p():
    n = 200_000
    clgrad.manual_seed(0)
    kept = (F.dropout(clgrad.ones(n), 0.25).numpy() != 0).mean()
    assert abs(kept - 0.75) < 4 * np.sqrt(0.25 * 0.75 / n)


def test_dropout_edges():
    x = strided(RNG.standard_normal((4, 5)))
    assert F.dropout(x, 0.5, training=False) is x
    np.testing.assert_array_equal(F.dropout(x, 0.0).numpy(), x.numpy())
    leaf = clgrad.tensor(RNG.standard_normal(6), requires_grad=True)
    y = F.dropout(leaf, 1.0)
    y.sum().backward()
    assert not y.detach().numpy().any() and not leaf.grad.numpy().any()
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="probability"):
            F.dropout(x, p)
    z = clgrad.tensor(np.arange(1.0, 41.0).reshape(5, 8))
    clgrad.manual_seed(4)
    assert F.dropout(z, 0.5, inplace=True) is z
    np.testing.assert_array_equal(z.numpy(), np.where(ref_dropout_keep(4, (5, 8), 0.5),
                                                      np.arange(2.0, 82.0, 2).reshape(5, 8), 0))


# -- pad --------------------------------------------------------------------------------------
_NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


def _np_width(ndim, pad):
    k = len(pad) // 2
    return [(0, 0)] * (ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]


def ref_pad(x, pad, mode, value=0.0):
    width = _np_width(x.ndim, pad)
    crop = tuple(slice(max(-a, 0), n - max(-b, 0)) for n, (a, b) in zip(x.shape, width))
    width = [(max(a, 0), max(b, 0)) for a, b in width]
    kw = {"constant_values": value} if mode == "constant" else {}
    return np.pad(x[crop], width, mode=_NP_MODE[mode], **kw)


def ref_pad_grad(shape, pad, mode, g):
    """Scatter g back through the index map: pad the element indices the same way."""
    idx = ref_pad(np.arange(np.prod(shape)).reshape(shape), pad, mode, -1)
    keep = idx >= 0
    return np.bincount(idx[keep], weights=g[keep], minlength=int(np.prod(shape))).reshape(shape)


PAD_CASES = [
    ((2, 3, 4, 5), (1, 2), "constant", 1.5),
    ((2, 3, 4, 5), (-1, 2, 1, -2), "constant", 0.0),        # negative amounts crop
    ((4,), (2, 3), "constant", -2.0),
    ((2, 3, 4, 5), (1, 2, 0, 3), "reflect", 0.0),
    ((3, 6), (5, 4), "reflect", 0.0),                       # the largest reflect pads
    ((2, 3, 4, 5), (1, 1, 2, 0, 1, 2), "reflect", 0.0),     # three dims
    ((2, 3, 4, 5), (3, 1, 2, 2), "replicate", 0.0),
    ((2, 1, 3), (2, 2, 1, 3), "replicate", 0.0),            # a size-1 dim
]


@pytest.mark.parametrize("shape,amounts,mode,value", PAD_CASES)
def test_pad_forward_backward(shape, amounts, mode, value):
    x = RNG.standard_normal(shape)
    want = ref_pad(x, amounts, mode, value)
    leaf, view = leaf_and_view(x)
    y = F.pad(view(leaf), amounts, mode, value)
    np.testing.assert_array_equal(y.detach().numpy(), want)
    g = RNG.standard_normal(want.shape)
    y.backward(strided(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(), ref_pad_grad(shape, amounts, mode, g),
                               rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_gradcheck(mode):
    leaf, view = leaf_and_view(RNG.standard_normal((2, 3, 4)))
    assert gradcheck(lambda t: F.pad(view(t), (2, 1, 1, 2), mode), [leaf])


def test_pad_integer_input():
    x = np.arange(12).reshape(3, 4)
    got = F.pad(clgrad.tensor(x)[:, 1:], (1, 1), value=7)
    np.testing.assert_array_equal(got.numpy(), np.pad(x[:, 1:], [(0, 0), (1, 1)],
                                                      constant_values=7))


@pytest.mark.parametrize("amounts,mode,match", [
    ((1, 2, 3), "constant", "even number"),
    ((4, 0), "reflect", "less than the dim's size"),
    ((1, 1), "wrap", "mode"),  # circular is supported since issue 22
    ((1, 1, 1, 1), "replicate", "not the first"),
    ((-2, -2), "replicate", "empty output"),  # negative amounts crop (issue 32)
    ((0, -9), "constant", "negative output size"),
])
def test_pad_rejects_bad_arguments(amounts, mode, match):
    with pytest.raises(ValueError, match=match):
        F.pad(clgrad.zeros(3, 4), amounts, mode)


# -- the functional namespace -----------------------------------------------------------------
def test_functional_names_and_thin_wrappers():
    for name in F.__all__:
        assert callable(getattr(F, name)), name
    x = strided(RNG.standard_normal((2, 3, 4)))
    assert tuple(F.flatten(x, 1).shape) == (2, 12)
    w, b = RNG.standard_normal((5, 4)), RNG.standard_normal(5)
    np.testing.assert_allclose(F.linear(x, strided(w), strided(b)).numpy(),
                               x.numpy() @ w.T + b, rtol=1e-12)
    np.testing.assert_array_equal(F.relu(x).numpy(), np.maximum(x.numpy(), 0))


def test_functional_conv2d_delegates():
    pytest.importorskip("clgrad.ops.conv")
    x, w = RNG.standard_normal((1, 2, 4, 4)), RNG.standard_normal((3, 2, 3, 3))
    want = np.einsum("nchwij,ocij->nohw",
                     np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3)), w)
    np.testing.assert_allclose(F.conv2d(strided(x), strided(w)).numpy(), want, rtol=1e-10)


# -- pointwise activations (ACT kernels) and their modules ------------------------------------
_erf = np.vectorize(__import__("math").erf)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.logaddexp(0, x)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


# (name, clgrad function, NumPy float64 reference); derivatives come from numeric_vjp
ACTS = [
    ("relu6", F.relu6, lambda x: np.clip(x, 0, 6)),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5)),
    ("gelu", F.gelu, lambda x: x * 0.5 * (1 + _erf(x / np.sqrt(2)))),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), _gelu_tanh),
    ("silu", F.silu, lambda x: x * _sig(x)),
    ("elu", lambda x: F.elu(x, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    ("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    ("hardsigmoid", F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    ("softplus", lambda x: F.softplus(x, 2.0, 3.0),
     lambda x: np.where(2 * x > 3, x, _softplus(2 * x) / 2)),
    ("mish", F.mish, lambda x: x * np.tanh(_softplus(x))),
]


@pytest.mark.parametrize("name,fn,ref", ACTS, ids=[a[0] for a in ACTS])
def test_pointwise_activation_forward_backward(name, fn, ref):
    x = RNG.uniform(-8, 8, (3, 5, 4))
    kinks = np.array([-3.0, -0.5, 0.0, 1.5, 3.0, 6.0])
    x[np.abs(x[..., None] - kinks).min(-1) < 0.05] = 0.3      # central differences need it
    x[0, 0, :] = [-30.0, 30.0, 0.3, -2.0]                    # saturated tails
    leaf, view = leaf_and_view(x)
    y = fn(view(leaf))
    np.testing.assert_allclose(y.detach().numpy(), ref(x), rtol=1e-12, atol=1e-13)
    g = RNG.standard_normal(x.shape)
    y.backward(strided(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(), numeric_vjp(ref, x, g),
                               rtol=1e-6, atol=1e-8)
    x32 = strided(x, clgrad.float32)
    np.testing.assert_allclose(fn(x32).numpy(), ref(x).astype(np.float32), rtol=2e-6,
                               atol=2e-6)



def test_silu_float32_matches_torch_over_the_whole_range():
    """silu forward and backward in float32 against PyTorch's (float64 references for the
    size of the error), tails, zeros and NaN included (not infinities: PyTorch's own result
    at -inf differs between its vector and scalar loops): on PoCL the sigmoid's exp is
    kernels/common.h's polynomial EXP_T."""
    torch = pytest.importorskip("torch")
    x = np.concatenate([np.linspace(-110, 95, 4001),
                        [-103.9, -87.4, 88.73, 0.0, -0.0, np.nan]])
    x = x.astype(np.float32)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    xt = torch.tensor(x, requires_grad=True)
    torch.nn.functional.silu(xt).backward(torch.tensor(g))
    xc = clgrad.tensor(x, requires_grad=True)
    y = F.silu(xc)
    y.backward(clgrad.tensor(g))
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        s64 = 1 / (1 + np.exp(-x64))
        want_y = x64 * s64
        want_g = g * s64 * (1 + x64 * (1 - s64))
    for got, ref, want in ((y.detach().numpy(), xt.detach().numpy(), want_y),
                           (xc.grad.numpy(), xt.grad.numpy(), want_g)):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        fin = np.isfinite(ref)
        # no further from the float64 value than PyTorch's float32 result, plus 2 ulp
        tol = np.abs(ref[fin] - want[fin]) + 2 * np.spacing(np.abs(ref[fin]))
        assert np.all(np.abs(got[fin] - want[fin]) <= tol)

def test_activation_kinks_follow_pytorch():
    """At the bounds the gradient is PyTorch 2.13's choice (checked by hand against it)."""
    x = clgrad.tensor([0.0, 6.0, -3.0, 3.0, 3.5], dtype=clgrad.float64, requires_grad=True)
    F.relu6(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0, 1, 1])
    x.grad = None
    F.hardswish(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 1, 0, 1, 1])
    x.grad = None
    F.hardsigmoid(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1 / 6, 0, 0, 0, 0])
    assert np.isnan(F.gelu(clgrad.tensor([float("nan")])).numpy()).all()


def test_prelu_and_modules():
    x = RNG.standard_normal((2, 3, 4))
    w = np.array([0.1, -0.2, 0.3])
    leaf, view = leaf_and_view(x)
    wt = clgrad.tensor(w, requires_grad=True)
    assert gradcheck(lambda a, b: F.prelu(view(a), b), [leaf, wt])
    y = F.prelu(view(leaf), wt)
    np.testing.assert_allclose(y.detach().numpy(), np.where(x > 0, x, w[:, None] * x))
    m = clgrad.nn.PReLU(3)
    assert m.weight.shape == (3,) and m.weight.detach().numpy().tolist() == [0.25] * 3
    with pytest.raises(RuntimeError, match="prelu: expected weight"):
        F.prelu(view(leaf), clgrad.ones(2, dtype=clgrad.float64))
    t = clgrad.tensor(x)
    nn = clgrad.nn
    for mod, ref in [(nn.ReLU6(), np.clip(x, 0, 6)), (nn.Sigmoid(), _sig(x)),
                     (nn.Tanh(), np.tanh(x)), (nn.GELU("tanh"), _gelu_tanh(x)),
                     (nn.Hardtanh(-1, 1), np.clip(x, -1, 1)),
                     (nn.Softmax(dim=1), np.exp(x) / np.exp(x).sum(1, keepdims=True)),
                     (nn.LogSoftmax(dim=1), x - np.log(np.exp(x).sum(1, keepdims=True))),
                     (nn.SiLU(), x * _sig(x)), (nn.ELU(), np.where(x > 0, x, np.expm1(x))),
                     (nn.Softplus(), _softplus(x)), (nn.Mish(), x * np.tanh(_softplus(x))),
                     (nn.Hardswish(), x * np.clip(x + 3, 0, 6) / 6)]:
        np.testing.assert_allclose(mod(t).numpy(), ref, rtol=1e-12, atol=1e-14)
    u = clgrad.tensor(x)
    assert nn.ReLU6(inplace=True)(u) is u and u.numpy().max() <= 6
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    with pytest.raises(ValueError, match="gelu: expected approximate"):
        F.gelu(t, approximate="erf")


def test_activations_match_pytorch_float32():
    torch = pytest.importorskip("torch")
    x = RNG.uniform(-7, 7, (4, 6)).astype(np.float32)
    names = ["relu6", "hardtanh", "gelu", "silu", "elu", "hardswish", "hardsigmoid", "softplus",
             "mish"]
    for name in names:
        a, b = clgrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ya, yb = getattr(F, name)(a), getattr(torch.nn.functional, name)(b)
        np.testing.assert_allclose(ya.detach().numpy(), yb.detach().numpy(), rtol=2e-6, atol=2e-6,
                                   err_msg=name)
        (ya * ya).sum().backward()
        (yb * yb).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=2e-5, atol=2e-5,
                                   err_msg=name)


# -- the CONTIG build of activation.cl (issue 23, helper h8) -----------------------------------
@pytest.mark.parametrize("name", ["silu", "hardtanh", "leaky_relu", "elu", "gelu"])
def test_activation_on_dense_views_at_an_offset_matches_torch(name):
    """Dense operands at a storage offset (the CONTIG build indexes offset + i): forward and
    backward against torch in float64."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    base_np = rng.standard_normal(500) * 3
    g_np = rng.standard_normal(500)
    x = clgrad.tensor(base_np, dtype=clgrad.float64)[37:437].view(20, 20).detach()
    x.requires_grad_()
    g = clgrad.tensor(g_np, dtype=clgrad.float64)[50:450].view(20, 20)
    y = getattr(F, name)(x)
    y.backward(g)
    tx = torch.tensor(base_np[37:437].reshape(20, 20), requires_grad=True)
    ty = getattr(torch.nn.functional, name)(tx)
    ty.backward(torch.tensor(g_np[50:450].reshape(20, 20)))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


# -- in place through the output: relu_, relu6/hardtanh(inplace), exp_, sigmoid_, tanh_ ---------
def _sig(v):
    return 1 / (1 + np.exp(-v))


_OUT_INPLACE = {  # name: (apply in place, forward, derivative at x), NumPy float64
    "relu_": (lambda t: t.relu_(), lambda v: np.maximum(v, 0), lambda v: (v > 0) * 1.0),
    "F.relu": (lambda t: F.relu(t, inplace=True), lambda v: np.maximum(v, 0),
               lambda v: (v > 0) * 1.0),
    "ReLU6": (lambda t: clgrad.nn.ReLU6(inplace=True)(t), lambda v: np.clip(v, 0, 6),
              lambda v: ((v > 0) & (v < 6)) * 1.0),
    "hardtanh": (lambda t: F.hardtanh(t, -0.5, 2.0, inplace=True), lambda v: np.clip(v, -.5, 2),
                 lambda v: ((v > -0.5) & (v < 2)) * 1.0),
    "exp_": (lambda t: t.exp_(), np.exp, np.exp),
    "sigmoid_": (lambda t: t.sigmoid_(), _sig, lambda v: _sig(v) * (1 - _sig(v))),
    "tanh_": (lambda t: t.tanh_(), np.tanh, lambda v: 1 - np.tanh(v) ** 2),
}


@pytest.mark.parametrize("name", list(_OUT_INPLACE))
def test_inplace_through_the_output_is_one_launch_with_exact_gradients(name):
    """op_ on a non-leaf root writes into it in one launch (no copy of self, no copy_slices),
    and the gradient reaches the leaf as NumPy's float64 derivative (NaN passing as the
    out-of-place op's does); a view of the root taken before the write and a retain_grad()
    follow the new value, as in PyTorch."""
    from clgrad.runtime import launch_count
    apply, fwd, deriv = _OUT_INPLACE[name]
    x = RNG.standard_normal((4, 6)) * 4
    x[0, :3] = (0.0, 6.0, -0.5)  # the kinks: gradient 0 there (PyTorch)
    leaf = clgrad.tensor(x, requires_grad=True)
    y = leaf * 1.5
    y.retain_grad()
    v = y[1:3]  # a view taken before the write
    n0 = launch_count()
    out = apply(y)
    assert launch_count() - n0 == 1 and out is y
    np.testing.assert_allclose(y.detach().numpy(), fwd(1.5 * x), rtol=1e-12, atol=1e-300)
    g = np.cos(np.arange(24.0)).reshape(4, 6)
    (y * clgrad.tensor(g)).sum().backward(retain_graph=True)
    np.testing.assert_allclose(leaf.grad.numpy(), 1.5 * g * deriv(1.5 * x), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), g, rtol=0, atol=0)
    leaf.grad = None
    v.sum().backward()
    want = np.zeros_like(x)
    want[1:3] = 1.5 * deriv(1.5 * x[1:3])
    np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-10, atol=1e-12)


def test_inplace_through_the_output_keeps_the_autograd_rules():
    """The saved-tensor check (exp saved its output, relu_ wrote into it: backward raises,
    as PyTorch), a leaf that requires grad is refused, a view with autograd involved takes
    the copy_slices path (values and gradient still exact), and without autograd a view is
    written at once."""
    x = RNG.standard_normal((3, 4))
    leaf = clgrad.tensor(x, requires_grad=True)
    z = leaf.exp()
    z.relu_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        clgrad.tensor(x, requires_grad=True).relu_()
    leaf = clgrad.tensor(x, requires_grad=True)
    y = leaf * 2.0
    y[1].relu_()  # through a view
    y.sum().backward()
    want = np.full_like(x, 2.0)
    want[1] = 2.0 * (x[1] > 0)
    np.testing.assert_allclose(leaf.grad.numpy(), want)
    t = clgrad.tensor(x)
    t[:, 1:3].tanh_()
    want = x.copy()
    want[:, 1:3] = np.tanh(x[:, 1:3])
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-12)


# -- issue 32: negative amounts crop in reflect / replicate / circular mode, as PyTorch -----
def _map_index(n, lo, hi, mode):
    """The input index each output position reads along one dim (PyTorch's maps): reflect
    and replicate from o - lo at the input's own edges; circular within the cropped part."""
    out = []
    c0, c1 = max(-lo, 0), n - max(-hi, 0)
    for o in range(n + lo + hi):
        s = o - lo
        if mode == "reflect":
            s = -s if s < 0 else s
            s = 2 * (n - 1) - s if s >= n else s
        elif mode == "replicate":
            s = min(max(s, 0), n - 1)
        else:
            s = c0 + (o - max(lo, 0)) % (c1 - c0)
        out.append(s)
    return np.array(out, dtype=np.int64)


def _ref_pad_map(x, amounts, mode):
    k = len(amounts) // 2
    idx = [np.arange(n) for n in x.shape[:x.ndim - k]]
    idx += [_map_index(x.shape[d], amounts[2 * (x.ndim - 1 - d)],
                       amounts[2 * (x.ndim - 1 - d) + 1], mode) for d in range(x.ndim - k, x.ndim)]
    return np.ix_(*idx)


NEG_PAD_CASES = [
    ((1, 1, 5), (-3, 2), "reflect"), ((1, 1, 5), (-3, 4), "reflect"),
    ((1, 1, 5), (3, -4), "reflect"), ((1, 1, 5), (-2, -2), "reflect"),
    ((1, 1, 5), (2, -3), "reflect"), ((2, 3, 4, 5), (-1, 2, 3, -2), "reflect"),
    ((1, 1, 5), (-3, 2), "replicate"), ((1, 1, 5), (3, -4), "replicate"),
    ((1, 1, 5), (-1, 5), "replicate"), ((2, 3, 4, 5), (2, -3, -1, 2, -1, 1), "replicate"),
    ((1, 1, 5), (-3, 2), "circular"), ((1, 1, 5), (2, -3), "circular"),
    ((1, 1, 5), (-2, -2), "circular"), ((2, 3, 4, 5), (-1, 2, 1, -2), "circular"),
]


@pytest.mark.parametrize("shape,amounts,mode", NEG_PAD_CASES)
def test_pad_negative_amounts_crop(shape, amounts, mode):
    x = RNG.standard_normal(shape)
    leaf, view = leaf_and_view(x)
    y = F.pad(view(leaf), amounts, mode)
    sel = _ref_pad_map(x, amounts, mode)
    np.testing.assert_array_equal(y.detach().numpy(), x[sel])
    g = RNG.standard_normal(y.shape)
    y.backward(clgrad.tensor(g, dtype=clgrad.float64))
    gx = np.zeros_like(x)
    np.add.at(gx, sel, g)
    np.testing.assert_allclose(view(leaf.grad).numpy(), gx, rtol=1e-13, atol=1e-14)
    torch = pytest.importorskip("torch")
    t = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.pad(t, amounts, mode=mode)
    np.testing.assert_array_equal(y.detach().numpy(), ref.detach().numpy())
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(view(leaf.grad).numpy(), t.grad.numpy(), rtol=1e-13, atol=1e-14)


def test_pad_negative_amounts_gradcheck_and_errors():
    leaf, view = leaf_and_view(RNG.standard_normal((2, 3, 5)))
    for mode, amounts in [("reflect", (-3, 4)), ("replicate", (2, -3)), ("circular", (-1, 2))]:
        assert gradcheck(lambda t: F.pad(view(t), amounts, mode), [leaf])
    x = clgrad.zeros(1, 1, 5)
    for mode, amounts, match in [
            ("reflect", (-1, 5), "less than the dim's size"),
            ("reflect", (0, -5), "empty output"), ("replicate", (-3, -2), "empty output"),
            ("circular", (-3, 4), "after cropping"), ("circular", (3, -4), "after cropping"),
            ("circular", (-5, 1), "after cropping"), ("circular", (-6, 2), "crops more")]:
        with pytest.raises(ValueError, match=match):
            F.pad(x, amounts, mode)
    assert tuple(F.pad(x, (0, -5), "circular").shape) == (1, 1, 0)  # PyTorch: empty too


def test_relu_refuses_bool_on_every_face():
    """relu of a bool tensor is refused as PyTorch refuses it (it ran, returning the input's
    values), on every face: clgrad.relu, Tensor.relu/relu_, F.relu (inplace too), nn.ReLU;
    integer tensors keep their dtype and values (NumPy: max(x, 0))."""
    faces = (clgrad.relu, lambda t: t.relu(), lambda t: t.relu_(), F.relu,
             lambda t: F.relu(t, inplace=True), clgrad.nn.ReLU(), clgrad.nn.ReLU(inplace=True))
    for face in faces:
        b = clgrad.tensor([True, False])
        with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
            face(b)
        assert b.tolist() == [True, False]
        i = clgrad.tensor([-3, 0, 5], dtype=clgrad.int32)
        got = face(i)
        assert got.dtype == clgrad.int32
        np.testing.assert_array_equal(got.numpy(), np.maximum(np.array([-3, 0, 5]), 0))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        torch.relu(torch.tensor([True, False]))
