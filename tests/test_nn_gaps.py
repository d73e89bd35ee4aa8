"""nn modules and functions PyTorch programs use (tests/test_nn_gaps.py): RMSNorm and
F.rms_norm, nn.Buffer, the lazy modules (UninitializedParameter/Buffer), and more below.
NumPy float64 is the oracle for values, gradcheck (float64 central differences) for
gradients; PyTorch, when installed, for state_dict keys and reprs."""
import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from clgrad.nn.parameter import UninitializedBuffer, UninitializedParameter
from strided import strided

RNG = np.random.default_rng(7)


def t64(*shape, rg=False):
    return clgrad.tensor(RNG.standard_normal(shape), dtype=clgrad.float64, requires_grad=rg)


# -- RMSNorm ------------------------------------------------------------------------------------
def _rms_np(x, k, w=None, eps=None):
    eps = np.finfo(np.float64).eps if eps is None else eps
    axes = tuple(range(x.ndim - k, x.ndim))
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y * w if w is not None else y


@pytest.mark.parametrize("shape,k", [((2, 3, 5), 1), ((4, 3, 5), 2), ((5,), 1), ((0, 3), 1)])
def test_rms_norm_values(shape, k):
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal(shape[len(shape) - k:])
    xs = strided(x)  # a non-contiguous view
    got = F.rms_norm(xs, shape[len(shape) - k:], clgrad.tensor(w), eps=1e-5).numpy()
    np.testing.assert_allclose(got, _rms_np(x, k, w, 1e-5), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(clgrad.rms_norm(xs, list(shape[len(shape) - k:])).numpy(),
                               _rms_np(x, k), rtol=1e-12, atol=1e-12)


def test_rms_norm_grad():
    x, w = t64(4, 3, 5, rg=True), t64(5, 4, rg=True)
    assert gradcheck(lambda a, b: F.rms_norm(a.transpose(0, 1), (4, 5), b.t()), (x, w))
    assert gradcheck(lambda a: F.rms_norm(a, (5,), eps=0.1), (x,))


def test_rms_norm_dtypes_and_eps():
    x = RNG.standard_normal((4, 6)).astype(np.float32) * 1e-4
    got = F.rms_norm(clgrad.tensor(x), (6,))
    assert got.dtype == clgrad.float32
    ref = x / np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True) +
                      np.finfo(np.float32).eps)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5)
    if not clgrad.default_device().fp16:
        return  # (this device has no float16)
    h = clgrad.tensor(x * 1e3, dtype=clgrad.float16)  # in float32, cast back once
    out = F.rms_norm(h, (6,), clgrad.ones(6))
    assert out.dtype == clgrad.float16
    hx = (x * 1e3).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(out.float().numpy(), _rms_np(hx, 1, eps=1.2e-7), rtol=2e-3)


def test_rms_norm_errors():
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.rms_norm(t64(2, 3), (4,))
    with pytest.raises(RuntimeError, match="weight"):
        F.rms_norm(t64(2, 3), (3,), t64(4))


def test_rms_norm_module():
    m = nn.RMSNorm(4)
    assert repr(m) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
    assert list(m.state_dict()) == ["weight"]
    m2 = nn.RMSNorm([3, 4], eps=1e-6, elementwise_affine=False)
    assert repr(m2) == "RMSNorm((3, 4), eps=1e-06, elementwise_affine=False)"
    assert list(m2.state_dict()) == [] and m2.weight is None
    m = m.double()
    with clgrad.no_grad():
        m.weight.copy_(t64(4))
    x = RNG.standard_normal((2, 4))
    np.testing.assert_allclose(m(clgrad.tensor(x)).detach().numpy(),
                               _rms_np(x, 1, m.weight.detach().numpy()), rtol=1e-12)


def test_rms_norm_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 5))
    w = RNG.standard_normal(5)
    ref = torch.nn.functional.rms_norm(torch.tensor(x), [5], torch.tensor(w)).numpy()
    np.testing.assert_allclose(F.rms_norm(clgrad.tensor(x), [5], clgrad.tensor(w)).numpy(),
                               ref, rtol=1e-12)
    tm = torch.nn.RMSNorm(5)
    m = nn.RMSNorm(5)
    assert repr(m) == repr(tm)
    m.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})


# -- nn.Buffer ------------------------------------------------------------------------------------
class _WithBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Buffer(clgrad.ones(3))
        self.b = nn.Buffer(clgrad.zeros(2), persistent=False)


def test_buffer_registers():
    m = _WithBuffers()
    assert list(m.state_dict()) == ["a"]
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]
    assert type(m.a) is clgrad.Tensor and not list(m.parameters())
    m.to(clgrad.float64)
    assert m.a.dtype == clgrad.float64
    m.a = nn.Buffer(clgrad.full((4,), 2.0), persistent=False)  # re-registered, now not saved
    assert list(m.state_dict()) == [] and m.a.shape == (4,)
    t = clgrad.ones(2, requires_grad=True)
    m.c = nn.Buffer(t)
    assert m.c.requires_grad and m.c.grad_fn is None
    assert isinstance(nn.Buffer(clgrad.ones(1)), clgrad.Tensor)
    with pytest.raises(TypeError):
        nn.Buffer([1, 2])


def test_buffer_keys_match_torch():
    torch = pytest.importorskip("torch")

    class T(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Buffer(torch.ones(3))
            self.b = torch.nn.Buffer(torch.zeros(2), persistent=False)
    assert list(T().state_dict()) == list(_WithBuffers().state_dict())


# -- uninitialized parameters and lazy modules ----------------------------------------------------
def test_uninitialized_parameter():
    u = UninitializedParameter(dtype=clgrad.float64)
    assert repr(u) == "<UninitializedParameter>" and u.requires_grad
    with pytest.raises(RuntimeError, match="uninitialized"):
        u.shape
    with pytest.raises(ValueError, match="uninitialized"):
        u.numel()
    u.materialize((2, 3))
    assert type(u) is nn.Parameter and u.shape == (2, 3) and u.dtype == clgrad.float64
    b = UninitializedBuffer()
    b.materialize(4)
    assert type(b) is clgrad.Tensor and b.shape == (4,) and not b.requires_grad


LAZY = [  # (lazy module, input shape, eager class, the eager module of the inferred size)
    (lambda: nn.LazyLinear(5), (3, 7), nn.Linear, lambda: nn.Linear(7, 5)),
    (lambda: nn.LazyLinear(5, bias=False), (2, 4, 7), nn.Linear,
     lambda: nn.Linear(7, 5, bias=False)),
    (lambda: nn.LazyConv1d(4, 3), (2, 3, 9), nn.Conv1d, lambda: nn.Conv1d(3, 4, 3)),
    (lambda: nn.LazyConv2d(8, 3, groups=2, padding=1), (1, 4, 5, 5), nn.Conv2d,
     lambda: nn.Conv2d(4, 8, 3, groups=2, padding=1)),
    (lambda: nn.LazyConv2d(8, 3), (4, 5, 5), nn.Conv2d, lambda: nn.Conv2d(4, 8, 3)),
    (lambda: nn.LazyConvTranspose1d(6, 3, groups=2), (1, 4, 7), nn.ConvTranspose1d,
     lambda: nn.ConvTranspose1d(4, 6, 3, groups=2)),
    (lambda: nn.LazyConvTranspose2d(6, 3, stride=2), (1, 4, 5, 5), nn.ConvTranspose2d,
     lambda: nn.ConvTranspose2d(4, 6, 3, stride=2)),
    (lambda: nn.LazyBatchNorm1d(), (4, 3), nn.BatchNorm1d, lambda: nn.BatchNorm1d(3)),
    (lambda: nn.LazyBatchNorm2d(momentum=None), (2, 3, 4, 4), nn.BatchNorm2d,
     lambda: nn.BatchNorm2d(3, momentum=None)),
    (lambda: nn.LazyInstanceNorm1d(), (2, 3, 6), nn.InstanceNorm1d,
     lambda: nn.InstanceNorm1d(3, affine=True, track_running_stats=True)),
    (lambda: nn.LazyInstanceNorm2d(), (2, 3, 4, 4), nn.InstanceNorm2d,
     lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True)),
]


@pytest.mark.parametrize("make,shape,eager,ref", LAZY)
def test_lazy_first_call(make, shape, eager, ref):
    m = make()
    assert isinstance(m, eager) and m.has_uninitialized_params()
    keys = list(m.state_dict())
    x = clgrad.tensor(RNG.standard_normal(shape).astype(np.float32))
    y = m(x)
    assert type(m) is eager and not m._forward_pre_hooks
    r = ref()
    assert repr(m) == repr(r)
    assert keys == list(m.state_dict()) == list(r.state_dict())
    assert [tuple(v.shape) for v in m.state_dict().values()] == \
        [tuple(v.shape) for v in r.state_dict().values()]
    r.load_state_dict(m.state_dict())
    r.train(m.training)
    if eager in (nn.BatchNorm1d, nn.BatchNorm2d, nn.InstanceNorm1d, nn.InstanceNorm2d):
        f = 1.0 if m.momentum is None else m.momentum  # (None: the cumulative average)
        np.testing.assert_allclose(m.running_mean.numpy(), f * x.numpy().mean(
            axis=(0, *range(2, x.ndim)) if eager in (nn.BatchNorm1d, nn.BatchNorm2d) else
            (0, *range(2, x.ndim))), rtol=1e-4, atol=1e-6)
    else:
        np.testing.assert_allclose(y.detach().numpy(), r(x).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_lazy_init_is_eager_init():
    clgrad.manual_seed(3)
    m = nn.LazyLinear(50)
    m(clgrad.zeros(1, 200))
    w = m.weight.detach().numpy()
    bound = 1 / np.sqrt(200)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound


def test_lazy_optimizer_before_first_call():
    m = nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.LazyLinear(1))
    opt = clgrad.optim.SGD(m.parameters(), lr=0.1)
    assert list(m.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    m(clgrad.ones(2, 3)).sum().backward()
    before = m[0].weight.detach().numpy().copy()
    g = m[0].weight.grad.numpy()
    opt.step()
    np.testing.assert_allclose(m[0].weight.detach().numpy(), before - 0.1 * g, rtol=1e-6)


def test_lazy_load_state_dict_materializes():
    src = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4), nn.Conv1d(4, 2, 1))
    m = nn.Sequential(nn.LazyLinear(4), nn.LazyBatchNorm1d(), nn.LazyConv1d(2, 1))
    m.load_state_dict(src.state_dict())
    assert m[0].weight.shape == (4, 6) and m[0].in_features == 6
    assert m[1].num_features == 4 and m[2].in_channels == 4
    assert type(m[0]) is nn.LazyLinear  # (until its first call, as PyTorch's)
    x = clgrad.randn(3, 6)
    src.eval(), m.eval()
    np.testing.assert_allclose(m[:2](x).detach().numpy(), src[:2](x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert type(m[0]) is nn.Linear and repr(m[0]) == repr(src[0])


def test_lazy_errors():
    with pytest.raises(RuntimeError, match="Expected 3D"):
        nn.LazyConv2d(4, 3)(clgrad.ones(2, 3))
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(clgrad.ones(1, 3, 5, 5))
    with pytest.raises(RuntimeError, match="size mismatch"):
        nn.Linear(3, 4).load_state_dict(nn.LazyLinear(4).state_dict() | {
            "weight": clgrad.ones(4, 5), "bias": clgrad.ones(4)})


def test_lazy_against_torch():
    torch = pytest.importorskip("torch")
    pairs = [(nn.LazyLinear(5), torch.nn.LazyLinear(5), (3, 7)),
             (nn.LazyConv2d(8, 3), torch.nn.LazyConv2d(8, 3), (1, 3, 5, 5)),
             (nn.LazyBatchNorm2d(), torch.nn.LazyBatchNorm2d(), (2, 3, 4, 4)),
             (nn.LazyInstanceNorm1d(), torch.nn.LazyInstanceNorm1d(), (2, 3, 4))]
    for m, tm, shape in pairs:
        assert list(m.state_dict()) == list(tm.state_dict())
        assert [repr(v) for v in m.state_dict().values()][:2] == \
            [repr(v) for v in tm.state_dict().values()][:2]
        tm(torch.zeros(shape))
        m.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
        m(clgrad.zeros(shape))
        assert type(m).__name__ == type(tm).__name__
        assert list(m.state_dict()) == list(tm.state_dict())


# -- pooling with indices, unpooling, in-place activations, deprecated aliases ------------------
def test_with_indices_forms():
    x = clgrad.tensor(RNG.standard_normal((2, 3, 6, 6)).astype(np.float32))
    for f, g, args in ((F.max_pool2d_with_indices, F.max_pool2d, (2,)),
                       (F.adaptive_max_pool2d_with_indices, F.adaptive_max_pool2d, (3,))):
        v, i = f(x, *args)
        v2, i2 = g(x, *args, return_indices=True)
        np.testing.assert_array_equal(v.numpy(), v2.numpy())
        np.testing.assert_array_equal(i.numpy(), i2.numpy())
    x1 = x[:, :, 0]
    v, i = F.max_pool1d_with_indices(x1, 2)
    assert i.dtype == clgrad.int64 and v.shape == (2, 3, 3)
    v, i = F.adaptive_max_pool1d_with_indices(x1, 2)
    np.testing.assert_array_equal(v.numpy(), x1.numpy().reshape(2, 3, 2, 3).max(-1))


def _unpool_np(v, i, out_shape):
    out = np.zeros(v.shape[:-2] + (int(np.prod(out_shape)),))
    flat_v, flat_i = v.reshape(v.shape[:-2] + (-1,)), i.reshape(i.shape[:-2] + (-1,))
    np.put_along_axis(out, flat_i, flat_v, axis=-1)
    return out.reshape(v.shape[:-2] + tuple(out_shape))


def test_max_unpool2d_values_and_grad():
    x = clgrad.tensor(RNG.permutation(2 * 3 * 36).reshape(2, 3, 6, 6).astype(np.float64))
    v, i = F.max_pool2d(x, 2, return_indices=True)
    u = F.max_unpool2d(v, i, 2)
    np.testing.assert_array_equal(u.numpy(), _unpool_np(v.numpy(), i.numpy(), (6, 6)))
    assert F.max_unpool2d(v, i, 2, output_size=(7, 7)).shape == (2, 3, 7, 7)
    assert F.max_unpool2d(v[0], i[0], 2).shape == (3, 6, 6)  # unbatched
    leaf = v.detach().requires_grad_(True)
    assert gradcheck(lambda t: F.max_unpool2d(t, i, (2, 2), stride=2), (leaf,))
    m = nn.MaxUnpool2d(2)
    assert repr(m) == "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
    np.testing.assert_array_equal(m(v, i).numpy(), u.numpy())


def test_max_unpool1d_and_errors():
    x = clgrad.tensor(RNG.standard_normal((2, 3, 8)))
    v, i = F.max_pool1d(x, 2, return_indices=True)
    u = F.max_unpool1d(v, i, 2)
    ref = _unpool_np(v.numpy()[..., None, :], i.numpy()[..., None, :], (1, 8))[..., 0, :]
    np.testing.assert_array_equal(u.numpy(), ref)
    assert repr(nn.MaxUnpool1d(3, 2, 1)) == \
        "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(1,))"
    assert nn.MaxUnpool1d(2)(v, i, output_size=[2, 3, 9]).shape == (2, 3, 9)
    with pytest.raises(RuntimeError, match="invalid max index"):
        F.max_unpool1d(v, i * 10, 2)
    with pytest.raises(RuntimeError, match="shape"):
        F.max_unpool1d(v, i[..., :1], 2)


def test_inplace_activations_and_aliases():
    a = RNG.standard_normal(7)
    for f, ref, kw in ((F.elu_, F.elu, {"alpha": 0.5}), (F.leaky_relu_, F.leaky_relu, {}),
                       (F.hardtanh_, F.hardtanh, {"min_val": -0.5, "max_val": 0.5})):
        x = clgrad.tensor(a)
        assert f(x, **kw) is x
        np.testing.assert_allclose(x.numpy(), ref(clgrad.tensor(a), **kw).numpy())
    x = clgrad.tensor(RNG.standard_normal((1, 2, 3, 3)))
    with pytest.warns(UserWarning, match="deprecated"):
        got = F.upsample_bilinear(x, scale_factor=2)
    np.testing.assert_allclose(got.numpy(), F.interpolate(
        x, scale_factor=2, mode="bilinear", align_corners=True).numpy())
    with pytest.warns(UserWarning, match="deprecated"):
        got = F.upsample_nearest(x, size=(5, 5))
    np.testing.assert_allclose(got.numpy(), F.interpolate(x, size=(5, 5)).numpy())


def test_softmax2d_and_nllloss2d():
    x = RNG.standard_normal((2, 3, 4, 5))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(nn.Softmax2d()(clgrad.tensor(x)).numpy(),
                               e / e.sum(1, keepdims=True), rtol=1e-12)
    assert repr(nn.Softmax2d()) == "Softmax2d()"
    with pytest.raises(ValueError, match="3D or 4D"):
        nn.Softmax2d()(clgrad.ones(2, 3))
    assert issubclass(nn.NLLLoss2d, nn.NLLLoss) and repr(nn.NLLLoss2d()) == "NLLLoss2d()"
    logp = F.log_softmax(clgrad.tensor(x), 1)
    t = clgrad.tensor(RNG.integers(0, 3, (2, 4, 5)))
    np.testing.assert_allclose(nn.NLLLoss2d()(logp, t).numpy(), F.nll_loss(logp, t).numpy())


def test_unpool_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 7, 7))
    tv, ti = torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    ref = torch.nn.functional.max_unpool2d(tv, ti, 3, 2, 1, output_size=(7, 7)).numpy()
    v, i = F.max_pool2d(clgrad.tensor(x), 3, 2, 1, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(F.max_unpool2d(v, i, 3, 2, 1, output_size=(7, 7)).numpy(), ref)
