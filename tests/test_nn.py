"""clgrad.nn: Module bookkeeping, state dicts, layers (against NumPy), init, reprs."""
import math
from collections import OrderedDict

import numpy as np
import pytest

import clgrad
from clgrad import nn
from clgrad.nn import init


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1, groups=2)
        self.bn = nn.BatchNorm2d(4)
        self.register_buffer("scratch", clgrad.zeros(2), persistent=False)
        self.scale = nn.Parameter(clgrad.ones(1))

    def forward(self, x):
        return self.bn(self.conv(x)) * self.scale


def _net():
    return nn.Sequential(Block(), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 5 * 5, 3))


# -- Module bookkeeping -----------------------------------------------------------------------
def test_registration_and_pytorch_names():
    net = _net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["0.scale", "0.conv.weight", "0.conv.bias", "0.bn.weight", "0.bn.bias",
                     "3.weight", "3.bias"]
    assert [n for n, _ in net.named_buffers()] == [
        "0.scratch", "0.bn.running_mean", "0.bn.running_var", "0.bn.num_batches_tracked"]
    assert list(net.state_dict()) == [
        "0.scale", "0.conv.weight", "0.conv.bias", "0.bn.weight", "0.bn.bias",
        "0.bn.running_mean", "0.bn.running_var", "0.bn.num_batches_tracked",
        "3.weight", "3.bias"]  # the non-persistent buffer is left out
    assert [type(m).__name__ for m in net.children()] == ["Block", "ReLU", "Flatten", "Linear"]
    assert [type(m).__name__ for m in net.modules()] == [
        "Sequential", "Block", "Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Linear"]
    assert all(p.requires_grad and p.is_leaf for p in net.parameters())
    assert net[0].conv.weight.shape == (4, 1, 3, 3)
    assert isinstance(net[-1], nn.Linear) and len(net[1:]) == 3


def test_shared_parameters_are_listed_once_and_reassignment_moves_names():
    m = nn.Module()
    lin = nn.Linear(2, 2)
    m.a, m.b = lin, lin
    assert len(list(m.parameters())) == 2
    with pytest.raises(TypeError, match="as child module 'a'"):
        m.a = clgrad.zeros(1)
    del m.a
    m.a = clgrad.zeros(1)  # now a plain attribute
    assert list(m._modules) == ["b"] and m.a.shape == (1,)
    m.b = nn.Parameter(clgrad.zeros(1))  # a parameter replaces the child of that name
    assert list(m._modules) == [] and [n for n, _ in m.named_parameters()] == ["b"]
    with pytest.raises(TypeError, match="as parameter 'weight'"):
        lin.weight = clgrad.zeros(2, 2)
    lin.bias = None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        m.nope


def test_train_eval_and_zero_grad():
    net = _net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert net[0].bn.training
    x = clgrad.randn(2, 2, 5, 5)
    net(x).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(not p.grad.numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_repr_is_pytorch_like():
    net = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.Conv2d(16, 32, 3, padding=1, groups=4, bias=False),
                        nn.MaxPool2d(2), nn.Dropout(0.25), nn.Linear(8, 10))
    assert repr(net) == (
        "Sequential(\n"
        "  (0): Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n"
        "  (1): BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, "
        "track_running_stats=True)\n"
        "  (2): ReLU()\n"
        "  (3): Conv2d(16, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=4, "
        "bias=False)\n"
        "  (4): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        "  (5): Dropout(p=0.25, inplace=False)\n"
        "  (6): Linear(in_features=8, out_features=10, bias=True)\n"
        ")")
    assert repr(nn.Parameter(clgrad.zeros(2))).startswith("Parameter containing:\ntensor(")


def test_parameter_shares_root_storage_and_copies_views():
    t = clgrad.arange(6.0)
    p = nn.Parameter(t)
    assert p._storage is t._storage and p.is_leaf and p.requires_grad
    v = nn.Parameter(clgrad.arange(6.0).reshape(2, 3).t(), requires_grad=False)
    assert v.is_contiguous() and not v.requires_grad
    assert v.tolist() == [[0, 3], [1, 4], [2, 5]]


# -- state dicts ------------------------------------------------------------------------------
def test_state_dict_round_trip_through_a_checkpoint(tmp_path):
    clgrad.manual_seed(0)
    a = _net()
    a.train()
    a(clgrad.randn(4, 2, 5, 5))  # moves the running statistics away from their init
    clgrad.save(a.state_dict(), tmp_path / "m.safetensors")
    clgrad.manual_seed(1)
    b = _net()
    result = b.load_state_dict(clgrad.load(tmp_path / "m.safetensors"))
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and va.dtype is vb.dtype
        np.testing.assert_array_equal(va.numpy(), vb.numpy(), err_msg=ka)
    assert b[0].bn.num_batches_tracked.item() == 1
    x = clgrad.randn(3, 2, 5, 5)
    a.eval(), b.eval()
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())


def test_load_state_dict_accepts_numpy_arrays():
    lin = nn.Linear(3, 2)
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    lin.load_state_dict({"weight": w, "bias": np.zeros(2, np.float32)})
    np.testing.assert_array_equal(lin.weight.detach().numpy(), w)


def _sd(**changes):
    sd = OrderedDict(nn.Linear(3, 2).state_dict())
    for k, v in changes.items():
        if v is None:
            del sd[k]
        else:
            sd[k] = v
    return sd


@pytest.mark.parametrize("sd,match", [
    (_sd(bias=None), r"missing key\(s\) in state_dict: 'bias'"),
    (_sd(extra=clgrad.zeros(1)), r"unexpected key\(s\) in state_dict: 'extra'"),
    (_sd(weight=clgrad.zeros(3, 2)), r"size mismatch for weight: copying a param with shape "
                                     r"\(3, 2\) from checkpoint, the shape in current model is "
                                     r"\(2, 3\)"),
    (_sd(bias=[0.0, 0.0]), r"bias: expected a Tensor or ndarray, got list"),
])
def test_load_state_dict_errors_name_the_key_and_copy_nothing(sd, match):
    lin = nn.Linear(3, 2)
    before = lin.weight.detach().numpy().copy()
    if "weight" in sd and tuple(sd["weight"].shape) == (2, 3):
        sd["weight"] = clgrad.full((2, 3), 7.0)
    with pytest.raises(RuntimeError, match=match):
        lin.load_state_dict(sd)
    np.testing.assert_array_equal(lin.weight.detach().numpy(), before)


def test_load_state_dict_casts_to_the_model_dtypes():
    w64 = np.array([[0.1, 0.2, 1 / 3], [1e-9, -2.5, 7.0]])  # not exact in float32
    b64 = np.array([0.7, -0.3])
    lin = nn.Linear(3, 2)
    lin.load_state_dict({"weight": clgrad.tensor(w64, dtype=clgrad.float64).t().t(),
                         "bias": b64})  # a float64 tensor and a float64 ndarray
    assert lin.weight.dtype is clgrad.float32 and lin.bias.dtype is clgrad.float32
    np.testing.assert_array_equal(lin.weight.detach().numpy(), w64.astype(np.float32))
    np.testing.assert_array_equal(lin.bias.detach().numpy(), b64.astype(np.float32))
    bn = nn.BatchNorm1d(2)  # an int64 buffer from a float value, floats from int64
    bn.load_state_dict({"weight": clgrad.tensor([2, 3]), "bias": clgrad.zeros(2),
                        "running_mean": clgrad.zeros(2, dtype=clgrad.float64),
                        "running_var": clgrad.ones(2), "num_batches_tracked": clgrad.tensor(4.0)})
    assert bn.weight.tolist() == [2.0, 3.0] and bn.weight.dtype is clgrad.float32
    assert bn.num_batches_tracked.dtype is clgrad.int64 and bn.num_batches_tracked.item() == 4
    lin.load_state_dict({"weight": clgrad.tensor(w64, dtype=clgrad.float64),
                         "bias": clgrad.tensor(b64, dtype=clgrad.float64)}, assign=True)
    assert lin.weight.dtype is clgrad.float64  # assign puts the tensor in as it is (PyTorch)
    torch = pytest.importorskip("torch")
    ref = torch.nn.Linear(3, 2)
    ref.load_state_dict({"weight": torch.tensor(w64), "bias": torch.tensor(b64)})
    lin = nn.Linear(3, 2)
    lin.load_state_dict({"weight": clgrad.tensor(w64, dtype=clgrad.float64), "bias": b64})
    assert ref.weight.dtype == torch.float32
    np.testing.assert_array_equal(lin.weight.detach().numpy(), ref.weight.detach().numpy())


def test_load_state_dict_non_strict_reports_keys():
    lin = nn.Linear(3, 2)
    res = lin.load_state_dict({"weight": clgrad.ones(2, 3), "other": clgrad.ones(1)},
                              strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["other"]
    assert lin.weight.detach().numpy().tolist() == [[1.0] * 3] * 2


# -- layers against NumPy ---------------------------------------------------------------------
def _conv_ref(x, w, b, pad, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, o, ho, wo))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i:i + ho, j:j + wo]
                out[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, i, j])
    return out + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("groups", [1, 2, 6])
def test_conv2d_layer_matches_numpy(groups):
    conv = nn.Conv2d(6, 12, 3, padding=1, groups=groups).double()
    assert conv.weight.shape == (12, 6 // groups, 3, 3) and conv.weight.dtype is clgrad.float64
    x = np.random.default_rng(0).standard_normal((2, 6, 5, 4))
    out = conv(clgrad.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), _conv_ref(x, conv.weight.detach().numpy(),
                                                      conv.bias.detach().numpy(), 1, groups),
                               atol=1e-12)


@pytest.mark.parametrize("kwargs,match", [
    (dict(in_channels=6, out_channels=8, kernel_size=3, groups=4), "in_channels divisible"),
    (dict(in_channels=8, out_channels=6, kernel_size=3, groups=4), "out_channels divisible"),
    (dict(in_channels=0, out_channels=6, kernel_size=3), "in_channels to be a positive int"),
    (dict(in_channels=2, out_channels=2, kernel_size=(3, 0)), "kernel_size"),
    (dict(in_channels=2, out_channels=2, kernel_size=3, padding=-1), "padding"),
    (dict(in_channels=2, out_channels=2, kernel_size=3, padding_mode="reflect"), "padding_mode"),
])
def test_conv2d_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        nn.Conv2d(**kwargs)


@pytest.mark.parametrize("make,fan_in", [(lambda: nn.Conv2d(32, 64, 3, groups=4), 8 * 9),
                                         (lambda: nn.Linear(150, 400), 150)])
def test_default_init_is_pytorchs(make, fan_in):
    clgrad.manual_seed(0)
    layer = make()
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)) and the bias rule agree
    for t in (layer.weight.detach().numpy(), layer.bias.detach().numpy()):
        assert np.abs(t).max() <= bound
        assert np.abs(t).max() > 0.95 * bound
    w = layer.weight.detach().numpy()
    assert abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound


def test_linear_matches_numpy():
    lin = nn.Linear(5, 3).double()
    x = np.random.default_rng(1).standard_normal((4, 5))
    np.testing.assert_allclose(lin(clgrad.tensor(x)).detach().numpy(),
                               x @ lin.weight.detach().numpy().T + lin.bias.detach().numpy(),
                               rtol=1e-12)
    assert nn.Linear(5, 3, bias=False).bias is None


def _bn_ref(x, eps=1e-5):
    mean = x.mean(axis=(0, 2, 3))
    var = x.var(axis=(0, 2, 3))
    return mean, var, (x - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + eps)


def test_batchnorm2d_running_statistics():
    bn = nn.BatchNorm2d(3, momentum=0.2).double()
    rng = np.random.default_rng(2)
    xs = [rng.normal(2.0, 3.0, (4, 3, 5, 5)) for _ in range(3)]
    rm, rv = np.zeros(3), np.ones(3)
    n = 4 * 5 * 5
    for x in xs:
        out = bn(clgrad.tensor(x)).detach().numpy()
        mean, var, want = _bn_ref(x)
        np.testing.assert_allclose(out, want, atol=1e-10)  # batch statistics in training
        rm = 0.8 * rm + 0.2 * mean
        rv = 0.8 * rv + 0.2 * var * n / (n - 1)  # the running variance is unbiased
    np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), rv, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 3 and bn.num_batches_tracked.dtype is clgrad.int64
    bn.eval()
    x = rng.normal(0.0, 1.0, (2, 3, 4, 4))
    want = (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5)
    np.testing.assert_allclose(bn(clgrad.tensor(x)).detach().numpy(), want, atol=1e-10)
    assert bn.num_batches_tracked.item() == 3  # eval leaves the statistics alone


def test_batchnorm2d_cumulative_average_and_untracked():
    bn = nn.BatchNorm2d(2, momentum=None).double()
    rng = np.random.default_rng(3)
    xs = [rng.normal(1.0, 2.0, (3, 2, 4, 4)) for _ in range(3)]
    for x in xs:
        bn(clgrad.tensor(x))
    np.testing.assert_allclose(bn.running_mean.numpy(),
                               np.mean([x.mean(axis=(0, 2, 3)) for x in xs], axis=0), rtol=1e-12)
    free = nn.BatchNorm2d(2, affine=False, track_running_stats=False).double().eval()
    assert list(free.state_dict()) == []
    x = xs[0]
    np.testing.assert_allclose(free(clgrad.tensor(x)).numpy(), _bn_ref(x)[2], atol=1e-10)


def test_dropout_eval_is_identity_and_train_scales():
    drop = nn.Dropout(0.4)
    x = clgrad.rand(50, 40) + 0.5
    drop.eval()
    y = drop(x)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    drop.train()
    y = drop(x).numpy()
    kept = y != 0
    assert 0.5 < kept.mean() < 0.7
    np.testing.assert_allclose(y[kept], x.numpy()[kept] / 0.6, rtol=1e-6)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_losses_match_numpy():
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((6, 4))
    target = np.array([0, 3, 1, 1, 2, 0])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    want = -logp[np.arange(6), target]
    x, t = clgrad.tensor(logits), clgrad.tensor(target)
    assert nn.CrossEntropyLoss()(x, t).item() == pytest.approx(want.mean(), rel=1e-12)
    assert nn.CrossEntropyLoss(reduction="sum")(x, t).item() == pytest.approx(want.sum())
    np.testing.assert_allclose(nn.NLLLoss(reduction="none")(clgrad.tensor(logp), t).numpy(),
                               want, rtol=1e-12)
    y = rng.standard_normal((6, 4))
    assert nn.MSELoss()(x, clgrad.tensor(y)).item() == pytest.approx(((logits - y) ** 2).mean())
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")


def test_activation_pool_flatten_layers():
    x = np.random.default_rng(5).standard_normal((2, 3, 4, 6))
    t = clgrad.tensor(x)
    np.testing.assert_array_equal(nn.ReLU()(t).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(nn.LeakyReLU(0.1)(t).numpy(), np.where(x > 0, x, 0.1 * x))
    pooled = x.reshape(2, 3, 2, 2, 3, 2)
    np.testing.assert_array_equal(nn.MaxPool2d(2)(t).numpy(), pooled.max(axis=(3, 5)))
    np.testing.assert_allclose(nn.AvgPool2d(2)(t).numpy(), pooled.mean(axis=(3, 5)))
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d(1)(t).numpy(),
                               x.mean(axis=(2, 3), keepdims=True))
    assert nn.Flatten()(t).shape == (2, 72) and nn.Flatten(0, 1)(t).shape == (6, 4, 6)
    lrn = nn.LocalResponseNorm(3)(t).numpy()
    sq = np.pad(x ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
    div = (1.0 + 1e-4 / 3 * (sq[:, :-2] + sq[:, 1:-1] + sq[:, 2:])) ** 0.75
    np.testing.assert_allclose(lrn, x / div, rtol=1e-12)


def test_sequential_and_module_list_item_assignment_and_deletion():
    """seq[i] = m keeps the child's name and position (torchvision's
    `model.classifier[1] = nn.Linear(...)`); del renumbers the rest 0, 1, ... as PyTorch."""
    a, b, c, d = nn.ReLU(), nn.Linear(2, 3), nn.Linear(3, 2), nn.Linear(2, 3)
    seq = nn.Sequential(a, b, c)
    seq[-2] = d
    assert list(seq) == [a, d, c] and seq[1] is d
    assert [n for n, _ in seq.named_parameters()] == ["1.weight", "1.bias", "2.weight",
                                                      "2.bias"]
    x = clgrad.tensor(np.arange(4.0, dtype=np.float32).reshape(2, 2))
    np.testing.assert_allclose(seq(x).detach().numpy(), c(d(a(x))).detach().numpy())
    del seq[0]
    assert list(seq._modules) == ["0", "1"] and list(seq) == [d, c]
    del seq[:1]
    assert list(seq._modules) == ["0"] and seq[0] is c
    ml = nn.ModuleList([a, b, c])
    ml[0] = d
    del ml[1]
    assert list(ml) == [d, c] and list(ml._modules) == ["0", "1"]
    with pytest.raises(IndexError, match="index 5 is out of range for 2 modules"):
        ml[5] = a
    with pytest.raises(TypeError, match="expected a Module to assign at index 0, got int"):
        seq[0] = 3
    with pytest.raises(TypeError, match="expected an int index or a slice, got str"):
        del ml["x"]


def test_module_list_and_custom_forward():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(2)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]
    assert net(clgrad.ones(2, 3)).shape == (2, 3)
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)


# -- init -------------------------------------------------------------------------------------
def test_calculate_gain():
    assert init.calculate_gain("conv2d") == 1.0
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("leaky_relu") == math.sqrt(2 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == math.sqrt(1 / 3)
    with pytest.raises(ValueError, match="expected one of"):
        init.calculate_gain("swish")


@pytest.mark.parametrize("fn,shape,expect", [
    (lambda t: init.kaiming_uniform_(t, nonlinearity="relu"), (400, 50, 2, 2),
     ("uniform", math.sqrt(6 / 200))),
    (lambda t: init.kaiming_normal_(t, mode="fan_out"), (100, 400),
     ("normal", math.sqrt(2 / (1 + 1e-4)) / math.sqrt(100))),
    (lambda t: init.xavier_uniform_(t, gain=2.0), (300, 500),
     ("uniform", 2.0 * math.sqrt(6 / 800))),
    (lambda t: init.xavier_normal_(t), (64, 32, 3, 3),
     ("normal", math.sqrt(2 / (32 * 9 + 64 * 9)))),
    (lambda t: init.uniform_(t, -0.5, 1.5), (200, 200), ("uniform01", None)),
    (lambda t: init.normal_(t, 3.0, 0.5), (200, 200), ("normal3", 0.5)),
])
def test_random_init_distributions(fn, shape, expect):
    clgrad.manual_seed(0)
    t = clgrad.empty(shape)
    assert fn(t) is t
    w = t.numpy()
    kind, scale = expect
    if kind == "uniform":
        assert np.abs(w).max() <= scale and np.abs(w).max() > 0.99 * scale
        assert abs(w.std() - scale / math.sqrt(3)) < 0.02 * scale
    elif kind == "normal":
        assert abs(w.mean()) < 0.02 * scale and abs(w.std() - scale) < 0.02 * scale
    elif kind == "uniform01":
        assert w.min() >= -0.5 and w.max() < 1.5 and abs(w.mean() - 0.5) < 0.01
    else:
        assert abs(w.mean() - 3.0) < 0.01 and abs(w.std() - 0.5) < 0.01


def test_constant_inits_on_views_and_fan_errors():
    t = clgrad.ones(4, 6)
    init.zeros_(t[:, ::2])
    init.constant_(t[1], 2.5)
    want = np.ones((4, 6))
    want[:, ::2] = 0
    want[1] = 2.5
    np.testing.assert_array_equal(t.numpy(), want)
    assert init.ones_(clgrad.zeros(3)).tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(clgrad.empty(5))
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_normal_(clgrad.empty(3, 3), mode="fan_avg")
    with pytest.raises(TypeError, match="floating"):
        init.normal_(clgrad.zeros(3, dtype=clgrad.int64))


def test_init_under_parameters_keeps_them_leaves():
    p = nn.Parameter(clgrad.empty(3, 4))
    init.kaiming_uniform_(p, a=math.sqrt(5))
    assert p.is_leaf and p.requires_grad and p.grad_fn is None


# -- CNN layer set (issue 13): channel dropout, containers, Unflatten ------------------------
def test_dropout2d_drops_whole_channels():
    import clgrad.nn.functional as F
    clgrad.manual_seed(0)
    x = np.arange(1.0, 1 + 8 * 16 * 2 * 3).reshape(8, 16, 2, 3)
    leaf = clgrad.tensor(x, requires_grad=True)
    y = F.dropout2d(leaf, 0.25, True)
    out = y.detach().numpy()
    kept = (out != 0).all(axis=(2, 3))
    assert ((out == 0).all(axis=(2, 3)) | kept).all()                  # all or nothing
    np.testing.assert_allclose(out[kept], x[kept] / 0.75)
    assert 0.6 < kept.mean() < 0.9                                     # 128 channels, p=0.25
    y.backward(clgrad.ones_like(y))
    np.testing.assert_allclose(leaf.grad.numpy(), np.where(kept[..., None, None], 1 / 0.75, 0.0)
                               * np.ones_like(x))
    z = F.dropout1d(clgrad.tensor(x[0]), 0.5)                         # (C, L): unbatched
    assert ((z.numpy() == 0).all(-1) | (z.numpy() != 0).all(-1)).all()
    m = clgrad.nn.Dropout2d(0.5)
    m.eval()
    t = clgrad.tensor(x)
    assert m(t) is t
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but "
                       "received a 4D input"):
        F.dropout1d(leaf, 0.5)


def test_dropout2d_other_ranks_warn_and_drop_the_first_two_dims():
    """PyTorch 2.13's F.dropout2d: a rank other than 3 or 4 is deprecated (UserWarning) but
    still drops the (N, C) planes -- examples/mnist_rnn applies nn.Dropout2d to (batch,
    features); dropout3d reads a rank other than 5 as unbatched."""
    import clgrad.nn.functional as F
    clgrad.manual_seed(0)
    x = np.arange(1.0, 1 + 64 * 32).reshape(64, 32)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d, which is "
                      "deprecated"):
        y = clgrad.nn.Dropout2d(0.25)(clgrad.tensor(x)).numpy()
    kept = y != 0       # (64, 32): each element is its own (N, C) plane
    np.testing.assert_allclose(y[kept], x[kept] / 0.75)
    assert 0.65 < kept.mean() < 0.85
    with pytest.warns(UserWarning, match="Received a 5-D input to dropout2d"):
        z = F.dropout2d(clgrad.ones(4, 8, 2, 3, 2), 0.5).numpy().reshape(4, 8, -1)
    assert ((z == 0).all(-1) | (z == 2.0).all(-1)).all() and 0 < (z == 0).mean() < 1
    with pytest.warns(UserWarning, match="interpreted as shape \\(N, C, L\\)"):
        F.dropout2d(clgrad.ones(2, 3, 4), 0.5)
    with pytest.warns(UserWarning, match="Received a 1-D input"):
        one = clgrad.ones(3)
        assert F.dropout2d(one, 0.5, training=False) is one
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 "
                           "dimensions in the input"):
            F.dropout2d(one, 0.5)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        w = F.dropout3d(clgrad.ones(40, 3), 0.5).numpy()   # unbatched: (C=40, 3)
    assert ((w == 0).all(-1) | (w == 2.0).all(-1)).all() and 0 < (w == 0).mean() < 1


def test_module_dict_parameter_list_dict_unflatten():
    nn = clgrad.nn
    d = nn.ModuleDict({"a": nn.Linear(2, 3), "b": nn.ReLU()})
    d["c"] = nn.Linear(3, 1)
    assert list(d.keys()) == ["a", "b", "c"] and len(d) == 3 and "b" in d
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    pl = nn.ParameterList([clgrad.ones(2), nn.Parameter(clgrad.zeros(3))])
    pl.append(clgrad.ones(1))
    assert len(pl) == 3 and all(isinstance(p, nn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"] and pl[-1].shape == (1,)
    pd = nn.ParameterDict({"w": clgrad.ones(2)})
    pd["b"] = clgrad.zeros(1)
    assert list(pd.keys()) == ["w", "b"] and isinstance(pd["b"], nn.Parameter)
    assert sorted(pd.state_dict()) == ["b", "w"]
    u = nn.Unflatten(1, (2, 3))
    x = clgrad.arange(12.0).reshape(2, 6)
    y = u(x)
    assert y.shape == (2, 2, 3) and y._storage is x._storage
    np.testing.assert_array_equal(y.numpy(), np.arange(12.0).reshape(2, 2, 3))


def test_cnn_layer_set_matches_pytorch_float64():
    """One network over the CNN layer set of issue 13, written once against a torch-like
    namespace, with copied weights: loss and every gradient equal PyTorch's (float64)."""
    torch = pytest.importorskip("torch")

    def build(T):
        n = T.nn
        return n.Sequential(
            n.Conv2d(3, 8, 3, padding=1), n.BatchNorm2d(8), n.ReLU6(inplace=True),
            n.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
            n.GroupNorm(3, 6), n.GELU(), n.Upsample(scale_factor=1.5, mode="bilinear"),
            n.InstanceNorm2d(6, affine=True), n.SiLU(), n.Dropout2d(0.0),
            n.AdaptiveMaxPool2d((3, 2)), n.Flatten(), n.LayerNorm(36), n.Linear(36, 5),
            n.Hardswish(), n.PReLU(), n.Identity())
    torch.manual_seed(0)
    ref = build(torch).double()
    ours = build(clgrad).double()
    ours.load_state_dict({k: clgrad.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3, 5, 5))
    t = (rng.random((4, 5)) < 0.5).astype(np.float64)
    lt = torch.nn.BCEWithLogitsLoss()(ref(torch.tensor(x)), torch.tensor(t))
    lo = clgrad.nn.BCEWithLogitsLoss()(ours(clgrad.tensor(x)), clgrad.tensor(t))
    lt.backward()
    lo.backward()
    np.testing.assert_allclose(lo.item(), lt.item(), rtol=1e-12)
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


def test_parameter_data_assignment():
    """`param.data = t` (older PyTorch code): the Parameter object stays (registered, same
    optimizer key), takes t's values and shape, shares a root t's storage; a view is copied."""
    lin = nn.Linear(2, 3)
    w = lin.weight
    new = clgrad.tensor(np.arange(6, dtype=np.float32).reshape(3, 2))
    lin.weight.data = new
    assert lin.weight is w and w.requires_grad and w.is_leaf
    np.testing.assert_array_equal(w.detach().numpy(), np.arange(6).reshape(3, 2))
    new.add_(1)                                      # shared storage, as in PyTorch
    np.testing.assert_array_equal(w.detach().numpy(), np.arange(1, 7).reshape(3, 2))
    base = clgrad.tensor(np.arange(8, dtype=np.float32).reshape(2, 4))
    w.data = base[:, 1:4].t()                        # a view: copied
    np.testing.assert_array_equal(w.detach().numpy(), np.arange(8).reshape(2, 4)[:, 1:4].T)
    x = clgrad.tensor(np.array([[1.0, 2.0]], np.float32))
    lin(x).sum().backward()                          # grad of the new values
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((3, 1)) * [[1.0, 2.0]])
    with pytest.raises(TypeError, match="data: expected a Tensor to assign, got ndarray"):
        w.data = np.zeros((3, 2))
    with pytest.raises(RuntimeError, match="cannot assign the .data of a view"):
        base[0].data = clgrad.zeros(4)


def test_sequential_insert_extend_and_module_list_add():
    a, b, c, d = nn.ReLU(), nn.Tanh(), nn.Sigmoid(), nn.Identity()
    s = nn.Sequential(a, b)
    assert s.insert(1, c) is s and list(s) == [a, c, b]
    assert list(s._modules) == ["0", "1", "2"]
    s.insert(-1, d)  # before the last, as list.insert
    assert list(s) == [a, c, d, b]
    s.insert(4, a)
    assert list(s) == [a, c, d, b, a]
    with pytest.raises(IndexError):
        s.insert(6, b)
    with pytest.raises(TypeError):
        s.insert(0, "relu")
    assert s.extend([b, c]) is s and list(s)[-2:] == [b, c] and len(s) == 7
    x = clgrad.tensor([-1.0, 2.0])
    np.testing.assert_allclose(nn.Sequential(nn.ReLU()).extend([nn.Tanh()])(x).numpy(),
                               np.tanh([0.0, 2.0]), rtol=1e-6)
    l1, l2 = nn.ModuleList([a, b]), nn.ModuleList([c])
    both = l1 + l2
    assert isinstance(both, nn.ModuleList) and list(both) == [a, b, c]
    assert list(l1) == [a, b] and list(l2) == [c]  # operands unchanged
    l1.insert(0, d)
    assert list(l1) == [d, a, b] and list(l1._modules) == ["0", "1", "2"]
    l1 += [c]
    assert list(l1) == [d, a, b, c]


def test_named_modules_memo_prefix_and_duplicates():
    shared = nn.Linear(2, 2)
    net = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in net.named_modules()] == ["", "0", "1"]
    assert [n for n, _ in net.named_modules(remove_duplicate=False)] == ["", "0", "1", "2"]
    assert [n for n, _ in net.named_modules(prefix="net")] == ["net", "net.0", "net.1"]
    memo = {shared}
    assert [n for n, _ in net.named_modules(memo)] == ["", "1"]
    assert net in memo


def test_module_type_casts_every_parameter_and_buffer():
    bn = nn.BatchNorm1d(3)
    with clgrad.no_grad():
        bn.weight.copy_(clgrad.tensor([1.5, 2.0, 3.0]))
    assert bn.type(clgrad.float64) is bn
    assert bn.weight.dtype is clgrad.float64 and bn.running_var.dtype is clgrad.float64
    assert bn.num_batches_tracked.dtype is clgrad.float64  # integer buffers too (not .to's)
    np.testing.assert_array_equal(bn.weight.detach().numpy(), [1.5, 2.0, 3.0])
    bn2 = nn.BatchNorm1d(3).double()
    assert bn2.num_batches_tracked.dtype is clgrad.int64
    lin = nn.Linear(2, 2).type("torch.DoubleTensor")
    assert lin.weight.dtype is clgrad.float64 and isinstance(lin.weight, nn.Parameter)
