"""PyTorch's top-level forms of nn.functional ops (clgrad/ops/toplevel.py and the rows whose
TORCH face is nn.functional's function) and the in-place forms added to existing ops
(module-level ``clgrad.abs_``, methods ``x.cos_()``, ``x.eq_(y)`` ...).

Oracles: nn.functional's op with the arguments rearranged, NumPy in float64, float64
gradchecks (in-place writes into non-leaves and through views), and PyTorch where importable
(signatures, values, dtype errors)."""
import inspect

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import gradcheck
from clgrad.ops import registry
from strided import strided

F64 = clgrad.float64
RNG = np.random.default_rng(7)


def _t(shape, dtype=F64, lo=-2.0, hi=2.0):
    return clgrad.tensor(RNG.uniform(lo, hi, size=shape), dtype=dtype)


def _np(t):
    return t.detach().numpy()


def _unwrapped(fn):
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


# -- signatures: PyTorch's top-level ones (ATen's schemas, ``self`` named ``input``) ----------
SIGNATURES = {
    "conv1d": "input weight bias stride padding dilation groups",
    "conv2d": "input weight bias stride padding dilation groups",
    "conv_transpose1d": "input weight bias stride padding output_padding groups dilation",
    "conv_transpose2d": "input weight bias stride padding output_padding groups dilation",
    "convolution": "input weight bias stride padding dilation transposed output_padding groups",
    "max_pool1d": "input kernel_size stride padding dilation ceil_mode",
    "max_pool2d": "input kernel_size stride padding dilation ceil_mode",
    "max_pool1d_with_indices": "input kernel_size stride padding dilation ceil_mode",
    "avg_pool1d": "input kernel_size stride padding ceil_mode count_include_pad",
    "adaptive_avg_pool1d": "input output_size",
    "adaptive_max_pool1d": "input output_size",
    "dropout": "input p train", "dropout_": "input p train",
    "feature_dropout": "input p train", "feature_dropout_": "input p train",
    "batch_norm": "input weight bias running_mean running_var training momentum eps "
                  "cudnn_enabled",
    "instance_norm": "input weight bias running_mean running_var use_input_stats momentum eps "
                     "cudnn_enabled",
    "layer_norm": "input normalized_shape weight bias eps cudnn_enable",
    "group_norm": "input num_groups weight bias eps cudnn_enabled",
    "embedding": "weight indices padding_idx scale_grad_by_freq sparse",
    "embedding_bag": "weight indices offsets scale_grad_by_freq mode sparse per_sample_weights "
                     "include_last_offset padding_idx",
    "embedding_renorm_": "input indices max_norm norm_type",
    "pixel_shuffle": "input upscale_factor", "pixel_unshuffle": "input downscale_factor",
    "channel_shuffle": "input groups", "native_channel_shuffle": "input groups",
    "prelu": "input weight", "bilinear": "input1 input2 weight bias",
    "binary_cross_entropy_with_logits": "input target weight pos_weight reduction",
    "kl_div": "input target reduction log_target",
    "constant_pad_nd": "input pad value", "rsub": "input other alpha",
}
# parameters without a default in PyTorch (the rest have one)
REQUIRED = {"convolution": 9, "dropout": 3, "dropout_": 3, "feature_dropout": 3,
            "feature_dropout_": 3, "batch_norm": 9, "instance_norm": 9, "embedding_bag": 3,
            "embedding_renorm_": 4}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signature_is_pytorchs_top_level_one(name):
    fn = getattr(clgrad, name)
    assert name in clgrad.__all__
    params = inspect.signature(fn).parameters
    assert " ".join(params) == SIGNATURES[name]
    required = [p for p in params.values() if p.default is p.empty]
    assert len(required) == REQUIRED.get(name, len(required)), name


def _aten_names(torch, name):
    """Parameter names of each of torch.<name>'s ATen overloads (keyword-only ones too),
    ``self`` -> ``input`` (embedding_bag's second overload adds padding_idx)."""
    return [[("input" if a.name == "self" else a.name) for a in schema.arguments]
            for schema in torch._C._jit_get_schemas_for_operator("aten::" + name)]


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_signatures_agree_with_torch(name):
    torch = pytest.importorskip("torch")
    if not hasattr(torch._C, "_jit_get_schemas_for_operator"):
        pytest.skip("this torch lists no ATen schemas")
    assert SIGNATURES[name].split() in _aten_names(torch, name)


SAME_AS_F = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "avg_pool1d",
             "adaptive_avg_pool1d", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
             "native_channel_shuffle", "prelu", "bilinear"]


@pytest.mark.parametrize("name", SAME_AS_F)
def test_names_of_the_same_signature_are_nn_functionals_op(name):
    """Where torch's top-level signature is nn.functional's, clgrad.<name> is F's op (conv2d:
    the op F.conv2d wraps)."""
    row = next(r for r in registry.OPS if name in r.names())
    assert row.torch is None
    assert _unwrapped(getattr(clgrad, name)) is row.fn
    x = _t((2, 4, 6))
    if name.startswith("conv"):
        w = _t((4, 2, 3)) if "transpose" in name else _t((3, 4, 3))
        x = x if name.endswith("1d") else x.reshape(2, 4, 2, 3)
        w = w if name.endswith("1d") else w.reshape(*w.shape[:2], 1, 3)
        args = (x, w, _t((w.shape[1] if "transpose" in name else 3,)))
    else:
        args = {"avg_pool1d": (x, 2), "adaptive_avg_pool1d": (x, 4),
                "pixel_shuffle": (x.reshape(1, 4, 2, 6), 2),
                "pixel_unshuffle": (x.reshape(2, 1, 4, 6), 2),
                "channel_shuffle": (x, 2), "native_channel_shuffle": (x, 2),
                "prelu": (x, _t((4,))), "bilinear": (_t((3, 2)), _t((3, 4)), _t((5, 2, 4)))}[name]
    np.testing.assert_allclose(_np(getattr(clgrad, name)(*args)),
                               _np(getattr(F, name)(*args)), rtol=1e-12)


# -- conv and pool ----------------------------------------------------------------------------
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("rank", [1, 2])
def test_convolution_is_the_conv_of_its_rank(rank, transposed):
    x = strided(RNG.uniform(-1, 1, size=(2, 4, 7) if rank == 1 else (2, 4, 5, 6)))
    w = _t((4, 3, 3) if transposed else (3, 4, 3))
    w = w if rank == 1 else w.reshape(*w.shape, 1).expand(*w.shape, 2).contiguous()
    b = _t((3,))
    k = (1,) * rank
    got = clgrad.convolution(x, w, b, (2,) * rank, k, k, transposed, k, 1)
    fn = getattr(F, f"conv{'_transpose' if transposed else ''}{rank}d")
    want = fn(x, w, b, 2, 1, 1, 1, 1) if transposed else fn(x, w, b, 2, 1, 1, 1)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="3-D or 4-D input"):
        clgrad.convolution(_t((1, 1, 2, 2, 2)), _t((1, 1, 1, 1, 1)), None, (1,), (0,), (1,),
                           False, (0,), 1)


def test_max_pools_take_no_return_indices_and_default_stride_to_the_kernel():
    x = strided(RNG.permutation(48).astype(np.float64).reshape(2, 3, 8))
    np.testing.assert_array_equal(_np(clgrad.max_pool1d(x, 2)), _np(F.max_pool1d(x, 2)))
    np.testing.assert_array_equal(_np(clgrad.max_pool1d(x, 3, [], 1, 1, True)),
                                  _np(F.max_pool1d(x, 3, None, 1, 1, True)))
    x2 = x.reshape(2, 3, 2, 4)
    np.testing.assert_array_equal(_np(clgrad.max_pool2d(x2, 2, 1)), _np(F.max_pool2d(x2, 2, 1)))
    for fn in (clgrad.max_pool1d, clgrad.max_pool2d):
        with pytest.raises(TypeError):
            fn(x2, 2, return_indices=True)
    values, indices = clgrad.max_pool1d_with_indices(x, 2)
    want_v, want_i = F.max_pool1d(x, 2, return_indices=True)
    np.testing.assert_array_equal(_np(values), _np(want_v))
    np.testing.assert_array_equal(indices.numpy(), want_i.numpy())
    values, indices = clgrad.adaptive_max_pool1d(x, 3)  # always both (F: return_indices=True)
    want_v, want_i = F.adaptive_max_pool1d(x, 3, True)
    np.testing.assert_array_equal(_np(values), _np(want_v))
    np.testing.assert_array_equal(indices.numpy(), want_i.numpy())


# -- dropout ----------------------------------------------------------------------------------
def test_dropout_takes_train_positionally_and_requires_it():
    x = _t((64, 16), lo=0.5, hi=1.5)
    with pytest.raises(TypeError):
        clgrad.dropout(x, 0.5)
    assert clgrad.dropout(x, 0.5, False) is x
    np.testing.assert_array_equal(_np(clgrad.dropout(x, 0.0, True)), _np(x))
    np.testing.assert_array_equal(_np(clgrad.dropout(x, 1.0, True)), 0)
    y = _np(clgrad.dropout(x, 0.25, True))
    kept = y != 0
    np.testing.assert_allclose(y[kept], _np(x)[kept] / 0.75, rtol=1e-12)
    assert 0.6 < kept.mean() < 0.9
    for fn in (clgrad.dropout, clgrad.dropout_, clgrad.feature_dropout,
               clgrad.feature_dropout_):
        with pytest.raises(RuntimeError, match="^dropout probability has to be between 0 and 1,"
                                               " but got 1.5$"):
            fn(x.clone(), 1.5, True)


def test_dropout_in_place_writes_self():
    x = _t((32, 8), lo=0.5, hi=1.5)
    before, v = _np(x).copy(), x._version
    assert clgrad.dropout_(x, 0.5, True) is x
    assert x._version > v
    got = _np(x)
    np.testing.assert_allclose(got[got != 0], before[got != 0] * 2, rtol=1e-12)
    assert clgrad.dropout_(x, 0.5, False) is x


def test_feature_dropout_zeroes_whole_channels():
    x = _t((6, 8, 3, 5), lo=0.5, hi=1.5)
    for fn, inplace in ((clgrad.feature_dropout, False), (clgrad.feature_dropout_, True)):
        src = x.clone()
        got = fn(src, 0.5, True)
        assert (got is src) == inplace
        y = _np(got)
        planes = y.reshape(6, 8, -1)
        zero = (planes == 0).all(-1)
        assert ((planes != 0).all(-1) | zero).all()  # a channel is all kept or all dropped
        np.testing.assert_allclose(planes[~zero], _np(x).reshape(6, 8, -1)[~zero] * 2,
                                   rtol=1e-12)
        assert 0 < zero.sum() < zero.size
    assert clgrad.feature_dropout(x, 0.5, False) is x
    assert clgrad.feature_dropout(x, 0.0, True) is x
    y = _np(clgrad.feature_dropout(_t((40, 3)), 0.5, True))  # 2-D: (N, C) elements
    assert ((y == 0).any() and (y != 0).any())
    with pytest.raises(RuntimeError, match="^Feature dropout requires at least 2 dimensions"):
        clgrad.feature_dropout(_t((5,)), 0.5, True)


def test_feature_dropout_gradient_is_its_mask():
    x = _t((4, 5, 3)).requires_grad_()
    clgrad.manual_seed(3)
    y = clgrad.feature_dropout(x * 1, 0.5, True)
    y.backward(clgrad.ones_like(y))
    mask = (_np(y) != 0) * 2.0
    np.testing.assert_allclose(_np(x.grad), mask, rtol=1e-12)


# -- normalization ----------------------------------------------------------------------------
def test_batch_and_instance_norm_take_atens_argument_order():
    x = strided(RNG.uniform(-2, 2, size=(4, 3, 5)))
    w, b = _t((3,)), _t((3,))
    for training in (True, False):
        rm, rv = _t((3,)), _t((3,), lo=0.5, hi=1.5)
        rm2, rv2 = rm.clone(), rv.clone()
        got = clgrad.batch_norm(x, w, b, rm, rv, training, 0.2, 1e-3, True)
        want = F.batch_norm(x, rm2, rv2, w, b, training, 0.2, 1e-3)
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
        np.testing.assert_allclose(_np(rm), _np(rm2), rtol=1e-12)  # the same running update
        np.testing.assert_allclose(_np(rv), _np(rv2), rtol=1e-12)
    with pytest.raises(TypeError):
        clgrad.batch_norm(x, w, b, None, None, True, 0.1, 1e-5)  # cudnn_enabled is required
    got = clgrad.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False)
    np.testing.assert_allclose(_np(got), _np(F.instance_norm(x, None, None, w, b, True, 0.1,
                                                             1e-5)), rtol=1e-12)


def test_layer_and_group_norm_accept_the_cudnn_flag():
    x = strided(RNG.uniform(-2, 2, size=(2, 4, 6)))
    w, b = _t((6,)), _t((6,))
    np.testing.assert_allclose(_np(clgrad.layer_norm(x, (6,), w, b, 1e-3, False)),
                               _np(F.layer_norm(x, (6,), w, b, 1e-3)), rtol=1e-12)
    np.testing.assert_allclose(_np(clgrad.layer_norm(x, [4, 6])),
                               _np(F.layer_norm(x, [4, 6])), rtol=1e-12)
    w, b = _t((4,)), _t((4,))
    np.testing.assert_allclose(_np(clgrad.group_norm(x, 2, w, b, 1e-3, True)),
                               _np(F.group_norm(x, 2, w, b, 1e-3)), rtol=1e-12)


# -- embedding, losses, padding, rsub ---------------------------------------------------------
def test_embedding_takes_weight_first_and_a_negative_padding_idx_means_none():
    w = _t((5, 3)).requires_grad_()
    idx = clgrad.tensor([[0, 4], [4, 1]])
    out = clgrad.embedding(w, idx)
    np.testing.assert_array_equal(_np(out), _np(F.embedding(idx, w)))
    for padding_idx, want in ((-1, [1, 1, 0, 0, 2]), (-2, [1, 1, 0, 0, 2]),
                              (4, [1, 1, 0, 0, 0])):
        w.grad = None
        clgrad.embedding(w, idx, padding_idx).sum().backward()
        np.testing.assert_array_equal(_np(w.grad)[:, 0], want)


def test_losses_take_the_reduction_as_an_int():
    x, t = _t((4, 3)), _t((4, 3), lo=0.0, hi=1.0)
    wt, pw = _t((3,), lo=0.5, hi=2), _t((3,), lo=0.5, hi=2)
    for red, name in ((0, "none"), (1, "mean"), (2, "sum")):
        np.testing.assert_allclose(
            _np(clgrad.binary_cross_entropy_with_logits(x, t, wt, pw, red)),
            _np(F.binary_cross_entropy_with_logits(x, t, wt, name, pw)), rtol=1e-12)
        lx = clgrad.log_softmax(x, 1)
        np.testing.assert_allclose(_np(clgrad.kl_div(lx, t, red, log_target=False)),
                                   _np(F.kl_div(lx, t, name)), rtol=1e-12)
        np.testing.assert_allclose(_np(clgrad.kl_div(lx, lx, red, log_target=True)),
                                   _np(F.kl_div(lx, lx, name, True)), rtol=1e-12)
    with pytest.raises(TypeError, match=r"argument 'reduction' \(position 5\) must be int, not "
                                        r"str"):
        clgrad.binary_cross_entropy_with_logits(x, t, None, None, "mean")
    with pytest.raises(TypeError):
        clgrad.kl_div(x, t, 1, True)  # log_target is keyword-only


def test_constant_pad_nd_is_a_constant_pad():
    x = strided(RNG.uniform(-2, 2, size=(2, 3, 4)))
    got = clgrad.constant_pad_nd(x, [1, -1, 2, 0], 2.5)
    np.testing.assert_array_equal(_np(got), _np(F.pad(x, (1, -1, 2, 0), value=2.5)))
    want = np.pad(_np(x), ((0, 0), (2, 0), (1, 0)), constant_values=2.5)[:, :, :-1]
    np.testing.assert_array_equal(_np(got), want)


def test_rsub_is_other_minus_alpha_input():
    x, y = _t((3, 4)), _t((4,))
    np.testing.assert_allclose(_np(clgrad.rsub(x, y)), _np(y) - _np(x), rtol=1e-12)
    np.testing.assert_allclose(_np(clgrad.rsub(x, y, alpha=3)), _np(y) - 3 * _np(x),
                               rtol=1e-12)
    np.testing.assert_allclose(_np(clgrad.rsub(x, 2.0, 0.5)), 2.0 - 0.5 * _np(x), rtol=1e-12)
    i = clgrad.tensor([1, 2, 3])
    got = clgrad.rsub(i, 2.5)
    assert got.dtype == clgrad.get_default_dtype()
    np.testing.assert_allclose(got.numpy(), [1.5, 0.5, -0.5])
    assert clgrad.rsub(i, 5).dtype == clgrad.int64
    a = _t((3,)).requires_grad_()
    assert gradcheck(lambda a: clgrad.rsub(a, y[:3], alpha=2), (a,))


def test_detach_in_place_at_the_top_level():
    x = _t((3,)).requires_grad_()
    y = x * 2
    assert clgrad.detach_(y) is y
    assert not y.requires_grad and y.grad_fn is None


def test_the_top_level_forms_agree_with_torch():
    torch = pytest.importorskip("torch")
    xs = RNG.uniform(-2, 2, size=(2, 4, 6))
    ws = RNG.uniform(-1, 1, size=(3, 4, 3))
    w4, b4 = RNG.uniform(0.5, 1.5, size=4), RNG.uniform(-1, 1, size=4)
    calls = [
        ("convolution", lambda m, x: m.convolution(x, m.tensor(ws), None, [2], [1], [1], False,
                                                   [0], 1)),
        ("max_pool1d", lambda m, x: m.max_pool1d(x, 3, [], 1, 1, True)),
        ("max_pool1d_with_indices", lambda m, x: m.max_pool1d_with_indices(x, 2)[1]),
        ("adaptive_max_pool1d", lambda m, x: m.adaptive_max_pool1d(x, 4)[1]),
        ("batch_norm", lambda m, x: m.batch_norm(x, m.tensor(w4), m.tensor(b4), None, None,
                                                 True, 0.1, 1e-5, False)),
        ("instance_norm", lambda m, x: m.instance_norm(x, None, None, None, None, True, 0.1,
                                                       1e-5, False)),
        ("group_norm", lambda m, x: m.group_norm(x, 2, m.tensor(w4), m.tensor(b4))),
        ("layer_norm", lambda m, x: m.layer_norm(x, [6])),
        ("embedding", lambda m, x: m.embedding(x[0], m.tensor([[3, 0], [1, 1]]))),
        ("bce", lambda m, x: m.binary_cross_entropy_with_logits(x, m.sigmoid(x), None, None, 2)),
        ("kl_div", lambda m, x: m.kl_div(x, m.sigmoid(x), 0)),
        ("constant_pad_nd", lambda m, x: m.constant_pad_nd(x, [2, -1], -3.0)),
        ("rsub", lambda m, x: m.rsub(x, 1.5, 2)),
        ("dropout", lambda m, x: m.dropout(x, 0.3, False)),
    ]
    for name, call in calls:
        got = call(clgrad, clgrad.tensor(xs))
        want = call(torch, torch.tensor(xs))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


# -- in-place forms ---------------------------------------------------------------------------
# PyTorch's module-level in-place forms of clgrad's ops (PyTorch has no torch.add_, torch.cos_
# is there): name -> (extra arguments, input kind)
MODULE_INPLACE = {
    "abs_": (), "ceil_": (), "clamp_": (-0.5, 0.7), "clamp_max_": (0.5,), "clamp_min_": (-0.5,),
    "clip_": (-0.5, 0.7), "cos_": (), "deg2rad_": (), "erf_": (), "erfc_": (), "exp_": (),
    "expm1_": (), "fix_": (), "floor_": (), "frac_": (), "log1p_": (), "log_": (),
    "nan_to_num_": (), "neg_": (), "rad2deg_": (), "reciprocal_": (), "relu_": (),
    "round_": (), "rsqrt_": (), "sigmoid_": (), "sin_": (), "sqrt_": (), "square_": (),
    "tanh_": (), "trunc_": (), "xlogy_": (1.5,),
}
POSITIVE = {"log_", "log1p_", "rsqrt_", "sqrt_", "reciprocal_", "xlogy_"}


@pytest.mark.parametrize("name", sorted(MODULE_INPLACE))
def test_module_level_in_place_form(name):
    """clgrad.<op>_(input, ...) writes input.<op>(...) into input, returns it, bumps its
    version; a leaf that requires grad raises; a NumPy array raises PyTorch's TypeError."""
    extra = MODULE_INPLACE[name]
    lo = 0.2 if name in POSITIVE else -2.0
    x = _t((3, 5), lo=lo)
    want = getattr(x, name[:-1])(*extra)
    view = x.t()  # a non-contiguous view of it
    v = x._version
    assert getattr(clgrad, name)(view, *extra) is view
    assert x._version > v
    np.testing.assert_allclose(_np(x), _np(want), rtol=1e-12)
    assert name in clgrad.__all__
    leaf = _t((2,), lo=lo).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        getattr(clgrad, name)(leaf, *extra)
    with pytest.raises(TypeError, match=rf"^{name}\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not numpy\.ndarray$"):
        getattr(clgrad, name)(np.ones(2), *extra)


def test_the_module_level_in_place_forms_are_pytorchs():
    """Exactly the names PyTorch has (of the ops clgrad has): torch.add_ does not exist."""
    torch = pytest.importorskip("torch")
    ours = {n for n in clgrad.__all__ if n.endswith("_")}
    theirs = {n for n in dir(torch) if n.endswith("_") and not n.startswith("_")}
    assert set(MODULE_INPLACE) <= ours and set(MODULE_INPLACE) <= theirs
    assert ours <= theirs, sorted(ours - theirs)
    assert not hasattr(clgrad, "add_") and not hasattr(clgrad, "eq_")
    assert F.relu_ is not None and "relu_" in F.__all__


def test_functional_relu_in_place():
    x = _t((4,))
    want = np.maximum(_np(x), 0)
    assert F.relu_(x) is x
    np.testing.assert_array_equal(_np(x), want)


# Tensor methods added: name -> (arguments, input low bound)
METHOD_INPLACE = {
    "cos_": ((), -2.0), "sin_": ((), -2.0), "reciprocal_": ((), 0.2), "rsqrt_": ((), 0.2),
    "square_": ((), -2.0), "sign_": ((), -2.0), "logical_not_": ((), -2.0),
}


@pytest.mark.parametrize("name", sorted(METHOD_INPLACE))
def test_unary_method_in_place(name):
    args, lo = METHOD_INPLACE[name]
    x = _t((4, 3), lo=lo)
    x[0, 0] = 0.0
    want = getattr(x, name[:-1])(*args)
    view = x[::2]
    v = x._version
    assert getattr(view, name)(*args) is view
    assert x._version > v
    np.testing.assert_allclose(_np(x)[::2], _np(want)[::2].astype(np.float64), rtol=1e-12)


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                                  "logical_or"])
def test_comparisons_in_place_write_ones_and_zeros_in_self_dtype(name):
    a = clgrad.tensor([[0.0, 1.0, 2.0], [3.0, 2.0, 0.0]])
    b = clgrad.tensor([2.0, 1.0, 0.0])
    ref = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal, "logical_and": np.logical_and,
           "logical_or": np.logical_or}[name]
    for other in (b,) if name.startswith("logical") else (b, 1.0):  # (PyTorch's: no numbers)
        x = a.clone()
        want = ref(a.numpy(), other.numpy() if isinstance(other, clgrad.Tensor) else other)
        assert getattr(x, name + "_")(other) is x
        assert x.dtype == clgrad.float32
        np.testing.assert_array_equal(x.numpy(), want.astype(np.float32))
    i = clgrad.tensor([1, 2, 3])
    assert getattr(i, name + "_")(clgrad.tensor([2.0, 2.0, 2.0])).dtype == clgrad.int64


def test_matrix_and_scan_in_place_methods():
    m, v = _t((3, 2)), _t((2,))
    x = _t((3,))
    want = 0.5 * _np(x) + 2 * _np(m) @ _np(v)
    assert x.addmv_(m, v, beta=0.5, alpha=2) is x
    np.testing.assert_allclose(_np(x), want, rtol=1e-12)
    y = _t((3,))
    want = _np(y) + _np(m) @ _np(v)
    assert clgrad.addmv_(y, m, v) is y
    np.testing.assert_allclose(_np(y), want, rtol=1e-12)
    with pytest.raises(RuntimeError):
        _t((1,)).addmv_(m, v)  # self is not broadcast
    r = _t((3, 4))
    want = clgrad.renorm(r, 2, 0, 1.0)
    assert r.renorm_(2, 0, 1.0) is r
    np.testing.assert_allclose(_np(r), _np(want), rtol=1e-12)
    c = clgrad.tensor([[1.0, 2.0, 3.0], [0.5, 2.0, 4.0]])
    assert c.cumprod_(1) is c
    np.testing.assert_allclose(c.numpy(), [[1, 2, 6], [0.5, 1, 4]])
    assert clgrad.tensor([1, 2, 3]).cumprod_(0, dtype=clgrad.int64).tolist() == [1, 2, 6]


def test_fill_zero_index_put_at_the_top_level():
    x = _t((2, 3))
    assert clgrad.fill_(x, 2.5) is x and (x.numpy() == 2.5).all()
    assert clgrad.zero_(x) is x and (x.numpy() == 0).all()
    assert x.zero_() is x
    idx = (clgrad.tensor([0, 1]), clgrad.tensor([2, 0]))
    assert clgrad.index_put_(x, idx, clgrad.tensor([1.0, 2.0], dtype=F64), True) is x
    np.testing.assert_array_equal(x.numpy(), [[0, 0, 1], [2, 0, 0]])
    with pytest.raises(TypeError, match=r"^fill_\(\): argument 'input' \(position 1\)"):
        clgrad.fill_(np.ones(2), 1)
    v = x._version
    clgrad.zero_(x)
    assert x._version > v


# in-place forms with a gradient: written into a non-leaf (a fresh product) and through a view
GRAD_CASES = {
    "cos_": lambda y: y.cos_(), "sin_": lambda y: y.sin_(),
    "reciprocal_": lambda y: y.reciprocal_(), "rsqrt_": lambda y: y.rsqrt_(),
    "square_": lambda y: y.square_(), "abs_": lambda y: clgrad.abs_(y),
    "exp_": lambda y: clgrad.exp_(y), "sqrt_": lambda y: clgrad.sqrt_(y),
    "xlogy_": lambda y: clgrad.xlogy_(y, 2.5), "clamp_": lambda y: clgrad.clamp_(y, 0.6, 1.4),
    "addmv_": lambda y: y[0].addmv_(y[1:3].t(), y[3, :2]),
    "renorm_": lambda y: y.renorm_(2, 0, 1.0),
    "cumprod_": lambda y: y.cumprod_(1),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradient_through_in_place_on_a_non_leaf(name):
    x = _t((4, 3), lo=0.3, hi=1.8).requires_grad_()
    op = GRAD_CASES[name]

    def whole(x):
        y = x * 1.5
        op(y)
        return y

    def through_view(x):
        y = x * 1.5
        op(y[:, 1:]) if name not in ("addmv_",) else op(y)
        return y
    assert gradcheck(whole, (x,))
    assert gradcheck(through_view, (x,))


def test_comparison_in_place_on_a_non_leaf_keeps_requires_grad():
    """PyTorch: y.eq_(0) on a tensor requiring grad keeps requires_grad (EqBackward: zeros);
    clgrad's gradient to the operands is absent (None) rather than zeros."""
    x = _t((3,)).requires_grad_()
    y = x * 1
    y.eq_(0.0)
    assert y.requires_grad and y.grad_fn is not None
    y.sum().backward()
    assert x.grad is None or not _np(x.grad).any()


@pytest.mark.parametrize("name", ["sqrt_", "cos_", "sin_", "reciprocal_", "rsqrt_", "exp_",
                                  "sigmoid_", "deg2rad_"])
def test_integer_self_with_a_float_result_raises(name):
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        getattr(clgrad.tensor([1, 4]), name)()


@pytest.mark.parametrize("name", ["square_", "sign_", "abs_", "neg_", "relu_", "round_",
                                  "cumprod_"])
def test_integer_self_with_an_integer_result_stays_integer(name):
    x = clgrad.tensor([-2, 3])
    args = (0,) if name == "cumprod_" else ()
    want = getattr(x, name[:-1])(*args).tolist()
    assert getattr(x, name)(*args) is x and x.tolist() == want and x.dtype == clgrad.int64


def test_integer_in_place_dtype_rules_are_pytorchs():
    torch = pytest.importorskip("torch")
    for name in ("sqrt_", "cos_", "sin_", "reciprocal_", "rsqrt_", "square_", "sign_",
                 "exp_", "abs_", "neg_", "deg2rad_", "relu_", "round_"):
        outcome = []
        for m in (torch, clgrad):
            try:
                getattr(m.tensor([-2, 3]), name)()
                outcome.append("ok")
            except RuntimeError:
                outcome.append("raises")
        assert outcome[0] == outcome[1], name


def test_out_aliasing_self_is_the_in_place_form():
    x = _t((5,))
    y = x.clone()
    assert clgrad.cos(x, out=x) is x
    np.testing.assert_allclose(_np(x), _np(y.cos_()), rtol=1e-12)
