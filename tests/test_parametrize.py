"""torch.nn.utils.parametrize, .parametrizations and the legacy weight_norm / spectral_norm.

Oracles: float64 NumPy (weight_norm = g v / ||v||, the power method's iterate written out,
numpy.linalg.svd's top singular value once converged, orthogonality Q^T Q = I), float64
central finite differences (clgrad.autograd.gradcheck) for gradients through the
parametrizations, and PyTorch 2.14 where importable (same weights and u/v copied in: values,
state_dict keys, checkpoints loaded both ways).
"""
import copy
import pickle

import numpy as np
import pytest

import clgrad
import clgrad.nn as nn
import clgrad.nn.utils.parametrize as P
from clgrad.autograd import gradcheck
from clgrad.nn.utils import parametrizations as PZ
from test_programs import load_program


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return t.detach().numpy().astype(np.float64)


# the tutorial's Symmetric and Skew (with right_inverse), as its program defines them
_TUTORIAL = load_program("parametrizations_tutorial")
Symmetric, Skew = _TUTORIAL.Symmetric, _TUTORIAL.Skew


class Double(nn.Module):
    calls = 0

    def forward(self, X):
        Double.calls += 1
        return 2 * X

    def right_inverse(self, A):
        return A / 2


class RankOne(nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        return Z[:, 0].clone(), Z[0, :].clone() / Z[0, 0]


def _lin(n_in=3, n_out=3, dtype=None):
    clgrad.manual_seed(0)
    m = nn.Linear(n_in, n_out)
    if dtype is not None:
        m.to(dtype)
    return m


# -- parametrize -----------------------------------------------------------------------------

def test_register_swaps_class_keeps_the_parameter_and_names_pytorchs_keys():
    layer = _lin()
    w = layer.weight
    w0 = _np(w)
    P.register_parametrization(layer, "weight", Symmetric())
    assert type(layer).__name__ == "ParametrizedLinear"
    assert isinstance(layer, nn.Linear)
    assert P.type_before_parametrizations(layer) is nn.Linear
    assert P.is_parametrized(layer) and P.is_parametrized(layer, "weight")
    assert not P.is_parametrized(layer, "bias")
    assert layer.parametrizations.weight.original is w  # the optimizer's object
    np.testing.assert_allclose(_np(layer.weight), np.triu(w0) + np.triu(w0, 1).T, rtol=1e-6)
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in layer.named_parameters()] == ["bias",
                                                        "parametrizations.weight.original"]
    assert "ParametrizationList(\n      (0): Symmetric()" in repr(layer)
    # the class is per module: another Linear is untouched
    assert type(_lin()) is nn.Linear and not P.is_parametrized(_lin())


def test_remove_leave_parametrized_true_and_false():
    layer = _lin()
    w = layer.weight
    w0 = _np(w)
    P.register_parametrization(layer, "weight", Symmetric())
    P.remove_parametrizations(layer, "weight")
    assert type(layer) is nn.Linear and not hasattr(layer, "parametrizations")
    assert layer.weight is w and isinstance(layer.weight, nn.Parameter)
    np.testing.assert_allclose(_np(layer.weight), np.triu(w0) + np.triu(w0, 1).T, rtol=1e-6)
    assert list(layer.state_dict()) == ["bias", "weight"]
    layer = _lin()
    w0 = _np(layer.weight)
    P.register_parametrization(layer, "weight", Symmetric())
    P.remove_parametrizations(layer, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(_np(layer.weight), w0)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(layer, "weight")


def test_two_parametrized_tensors_restore_the_class_after_the_last():
    layer = _lin()
    P.register_parametrization(layer, "weight", Symmetric())
    P.register_parametrization(layer, "bias", Double())
    assert list(layer.state_dict()) == ["parametrizations.weight.original",
                                        "parametrizations.bias.original"]
    b0 = _np(layer.parametrizations.bias.original)
    np.testing.assert_allclose(_np(layer.bias), 2 * b0)
    P.remove_parametrizations(layer, "weight")
    assert type(layer).__name__ == "ParametrizedLinear"
    P.remove_parametrizations(layer, "bias")
    assert type(layer) is nn.Linear


def test_chained_parametrizations_and_right_inverse_by_assignment():
    layer = _lin()
    P.register_parametrization(layer, "weight", Skew())
    P.register_parametrization(layer, "weight", Double())
    assert len(layer.parametrizations.weight) == 2
    orig = _np(layer.parametrizations.weight.original)
    A = np.triu(orig, 1) - np.triu(orig, 1).T
    np.testing.assert_allclose(_np(layer.weight), 2 * A, rtol=1e-6)
    X = np.array([[0., 1., 2.], [-1., 0., 3.], [-2., -3., 0.]], np.float32)
    p = layer.parametrizations.weight.original
    layer.weight = clgrad.tensor(X)  # Double's then Skew's right_inverse, in place
    assert layer.parametrizations.weight.original is p
    np.testing.assert_allclose(_np(p), np.triu(X / 2, 1))
    np.testing.assert_allclose(_np(layer.weight), X)


def test_assigning_a_parameter_to_a_parametrized_name_raises():
    layer = _lin()
    P.register_parametrization(layer, "weight", Double())
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        layer.weight = nn.Parameter(clgrad.zeros(3, 3))
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    layer.weight = clgrad.ones(3, 3)  # a plain tensor goes through right_inverse
    np.testing.assert_array_equal(_np(layer.parametrizations.weight.original), 0.5)


def test_right_inverse_missing_and_shape_checks():
    layer = _lin()
    P.register_parametrization(layer, "weight", Symmetric())
    with pytest.raises(RuntimeError, match="Symmetric does not implement right_inverse"):
        layer.weight = clgrad.zeros(3, 3)

    class Shrink(nn.Module):
        def forward(self, X):
            return X[:2]

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(_lin(), "weight", Shrink())
    m = P.register_parametrization(_lin(), "weight", Shrink(), unsafe=True)
    assert tuple(m.weight.shape) == (2, 3)
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(layer, "weight", Shrink())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                       "parametrized element with name 'nope'"):
        P.register_parametrization(_lin(), "nope", Symmetric())


def test_several_originals_and_leave_parametrized():
    layer = _lin()
    P.register_parametrization(layer, "weight", RankOne())
    pl = layer.parametrizations.weight
    assert pl.ntensors == 2 and not hasattr(pl, "original")
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original0",
                                        "parametrizations.weight.original1"]
    x, y = _np(pl.original0), _np(pl.original1)
    np.testing.assert_allclose(_np(layer.weight), np.outer(x, y), rtol=1e-6)
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        P.remove_parametrizations(layer, "weight", leave_parametrized=False)
    P.remove_parametrizations(layer, "weight")
    assert isinstance(layer.weight, nn.Parameter)
    np.testing.assert_allclose(_np(layer.weight), np.outer(x, y), rtol=1e-6)


def test_buffers_are_parametrized_as_buffers():
    m = nn.BatchNorm1d(3)
    P.register_parametrization(m, "running_var", Double())
    assert "parametrizations.running_var.original" in m.state_dict()
    assert dict(m.named_buffers())["parametrizations.running_var.original"] is not None
    # right_inverse ran at registration: original = 1 / 2, the value stays 1
    np.testing.assert_allclose(_np(m.parametrizations.running_var.original), [.5, .5, .5])
    np.testing.assert_allclose(_np(m.running_var), [1, 1, 1])


def test_cached_computes_once_per_block():
    layer = _lin()
    P.register_parametrization(layer, "weight", Double())
    Double.calls = 0
    a = layer.weight + layer.weight
    assert Double.calls == 2
    with P.cached():
        with P.cached():
            b = layer.weight + layer.weight
        c = layer.weight
    assert Double.calls == 3
    np.testing.assert_allclose(_np(b), _np(a))
    assert c is not None
    layer.weight.sum()
    assert Double.calls == 4


def test_gradient_through_a_parametrization_and_training():
    layer = _lin(dtype="float64")
    P.register_parametrization(layer, "weight", Symmetric())
    x = clgrad.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
    orig = layer.parametrizations.weight.original
    assert gradcheck(lambda o: layer(x), [orig])
    opt = clgrad.optim.SGD(layer.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((layer(x) - 1) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    W = _np(layer.weight)
    np.testing.assert_allclose(W, W.T)


def test_deepcopy_works_and_pickle_refuses():
    layer = _lin()
    P.register_parametrization(layer, "weight", Double())
    twin = copy.deepcopy(layer)
    assert type(twin).__name__ == "ParametrizedLinear"
    np.testing.assert_array_equal(_np(twin.weight), _np(layer.weight))
    assert twin.parametrizations.weight.original is not layer.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(layer)


def test_transfer_parametrizations_and_params():
    src = _lin()
    P.register_parametrization(src, "weight", Double())
    dst = _lin(4, 3)
    dst.weight = nn.Parameter(clgrad.zeros(3, 3))
    P.transfer_parametrizations_and_params(src, dst)
    assert dst.parametrizations.weight.original is src.parametrizations.weight.original
    np.testing.assert_array_equal(_np(dst.weight), _np(src.weight))


# -- weight_norm -----------------------------------------------------------------------------

def _wn_oracle(v, g, dim):
    if dim is None:
        return g * v / np.linalg.norm(v)
    axes = tuple(a for a in range(v.ndim) if a != dim % v.ndim)
    return g * v / np.sqrt((v ** 2).sum(axis=axes, keepdims=True))


@pytest.mark.parametrize("dim", [0, 1, 2, None, -3])
def test_weight_norm_parametrization_values(dim):
    clgrad.manual_seed(1)
    conv = nn.Conv2d(3, 4, 3)
    w0 = _np(conv.weight)
    PZ.weight_norm(conv, dim=dim)
    g = _np(conv.parametrizations.weight.original0)
    v = _np(conv.parametrizations.weight.original1)
    np.testing.assert_array_equal(v, w0)
    if dim is None:
        assert g.shape == ()
        np.testing.assert_allclose(g, np.linalg.norm(w0), rtol=1e-6)
    else:
        want = [1] * 4
        want[dim % 4] = w0.shape[dim]
        assert g.shape == tuple(want)
    np.testing.assert_allclose(_np(conv.weight), w0, rtol=1e-5, atol=1e-7)  # g v/||v|| = w
    with clgrad.no_grad():
        conv.parametrizations.weight.original0.mul_(0.5)
    np.testing.assert_allclose(_np(conv.weight), _wn_oracle(v, 0.5 * g, dim), rtol=1e-5,
                               atol=1e-7)
    assert list(conv.state_dict()) == ["bias", "parametrizations.weight.original0",
                                       "parametrizations.weight.original1"]


@pytest.mark.parametrize("legacy", [False, True])
def test_weight_norm_gradients_against_finite_differences(legacy):
    clgrad.manual_seed(2)
    lin = nn.Linear(4, 3).double()
    x = clgrad.tensor(np.linspace(-1, 1, 8).reshape(2, 4))
    if legacy:
        with pytest.warns(FutureWarning, match="deprecated"):
            nn.utils.weight_norm(lin)
        g, v = lin.weight_g, lin.weight_v
    else:
        PZ.weight_norm(lin)
        g, v = lin.parametrizations.weight.original0, lin.parametrizations.weight.original1
    assert gradcheck(lambda g, v: lin(x), [g, v])
    (lin(x) ** 2).sum().backward()
    # d/dg of sum(g v/||v|| . c) is (v/||v|| . c) per row: check one row by hand
    c = 2 * (_np(lin(x)).T @ _np(x))  # dL/dW (3, 4)
    vn = _np(v) / np.linalg.norm(_np(v), axis=1, keepdims=True)
    np.testing.assert_allclose(_np(g.grad)[:, 0], (vn * c).sum(1), rtol=1e-10)


def test_legacy_weight_norm_hook_keys_and_remove():
    clgrad.manual_seed(3)
    lin = nn.Linear(4, 3)
    w0 = _np(lin.weight)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(lin, dim=None)
    assert list(lin.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert _np(lin.weight_g).shape == ()
    with clgrad.no_grad():
        lin.weight_g.fill_(2.0)
    lin(clgrad.zeros(1, 4))  # the pre-hook recomputes weight
    np.testing.assert_allclose(_np(lin.weight), 2 * w0 / np.linalg.norm(w0), rtol=1e-6)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        with pytest.warns(FutureWarning):
            nn.utils.weight_norm(lin, dim=None)
    nn.utils.remove_weight_norm(lin)
    assert list(lin.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(_np(lin.weight), 2 * w0 / np.linalg.norm(w0), rtol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(lin)


def test_legacy_weight_norm_checkpoint_loads_into_the_parametrization():
    clgrad.manual_seed(4)
    old = nn.Linear(4, 3)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(old)
    with clgrad.no_grad():
        old.weight_g.mul_(3.0)
    new = PZ.weight_norm(nn.Linear(4, 3))
    new.load_state_dict(old.state_dict())
    x = clgrad.tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))
    np.testing.assert_allclose(new(x).detach().numpy(), old(x).detach().numpy(), rtol=1e-6)


def test_nan_in_gives_nan_out():
    lin = PZ.weight_norm(_lin())
    with clgrad.no_grad():
        lin.parametrizations.weight.original1[1, 2] = float("nan")
    w = _np(lin.weight)
    assert np.isnan(w[1]).all() and np.isfinite(w[[0, 2]]).all()  # the NaN row's norm
    sn = PZ.spectral_norm(_lin())
    with clgrad.no_grad():
        sn.parametrizations.weight.original[0, 0] = float("nan")
    assert np.isnan(_np(sn.weight)).all()  # sigma is NaN


# -- spectral_norm ---------------------------------------------------------------------------

def _power(W, u, v, n):
    """The power method as PyTorch's parametrization writes it (float64)."""
    for _ in range(n):
        u = W @ v
        u = u / max(np.linalg.norm(u), 1e-12)
        v = W.T @ u
        v = v / max(np.linalg.norm(v), 1e-12)
    return u, v


def test_spectral_norm_iterate_and_eval_mode():
    clgrad.manual_seed(5)
    conv = nn.Conv2d(3, 4, 3).double()
    PZ.spectral_norm(conv)
    sn = conv.parametrizations.weight[0]
    W = _np(conv.parametrizations.weight.original).reshape(4, -1)
    u0, v0 = _np(sn._u), _np(sn._v)
    got = _np(conv.weight)  # training: one step of the power method, then W / sigma
    u1, v1 = _power(W, u0, v0, 1)
    np.testing.assert_allclose(_np(sn._u), u1, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(sn._v), v1, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got.reshape(4, -1), W / (u1 @ W @ v1), rtol=1e-12)
    conv.eval()
    u_now = _np(sn._u)
    again = _np(conv.weight)
    np.testing.assert_array_equal(_np(sn._u), u_now)  # no update in eval mode
    np.testing.assert_allclose(again, got, rtol=1e-14)
    assert list(conv.state_dict()) == ["bias", "parametrizations.weight.original",
                                       "parametrizations.weight.0._u",
                                       "parametrizations.weight.0._v"]


@pytest.mark.parametrize("legacy", [False, True])
def test_spectral_norm_sigma_converges_to_the_top_singular_value(legacy):
    clgrad.manual_seed(6)
    lin = nn.Linear(7, 5).double()
    W = _np(lin.weight)
    if legacy:
        nn.utils.spectral_norm(lin, n_power_iterations=3)
    else:
        PZ.spectral_norm(lin, n_power_iterations=3)
    x = clgrad.eye(7, dtype=clgrad.float64)
    for _ in range(100):
        lin(x)
    s_top = np.linalg.svd(W, compute_uv=False)[0]
    np.testing.assert_allclose(np.linalg.norm(_np(lin.weight), 2), 1.0, rtol=1e-9)
    np.testing.assert_allclose(_np(lin.weight), W / s_top, rtol=1e-9, atol=1e-12)


def test_spectral_norm_1d_and_convtranspose_dim():
    m = nn.Module()
    m.register_buffer("w", clgrad.tensor([3.0, 4.0]))
    PZ.spectral_norm(m, "w")
    np.testing.assert_allclose(_np(m.w), [0.6, 0.8], rtol=1e-6)
    ct = nn.ConvTranspose2d(2, 5, 3)
    PZ.spectral_norm(ct)
    assert ct.parametrizations.weight[0].dim == 1
    assert tuple(ct.parametrizations.weight[0]._u.shape) == (5,)
    nn.utils.spectral_norm(nn.ConvTranspose2d(2, 5, 3))
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        PZ.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        PZ.spectral_norm(nn.Linear(2, 2), dim=2)


@pytest.mark.parametrize("legacy", [False, True])
def test_spectral_norm_gradient_and_two_forwards(legacy):
    clgrad.manual_seed(7)
    lin = nn.Linear(4, 3).double()
    (nn.utils.spectral_norm if legacy else PZ.spectral_norm)(lin)
    x = clgrad.tensor(np.linspace(-1, 1, 8).reshape(2, 4))
    # GAN pattern: two training forwards, one backward (u, v cloned before use)
    loss = lin(x).sum() - lin(2 * x).sum()
    loss.backward()
    lin.eval()
    orig = lin.weight_orig if legacy else lin.parametrizations.weight.original
    assert gradcheck(lambda o: lin(x), [orig])


def test_legacy_spectral_norm_keys_metadata_and_remove():
    clgrad.manual_seed(8)
    lin = nn.Linear(4, 3)
    nn.utils.spectral_norm(lin)
    sd = lin.state_dict()
    assert list(sd) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert sd._metadata[""]["spectral_norm"] == {"weight.version": 1}
    lin(clgrad.zeros(1, 4))
    w = _np(lin.weight)
    nn.utils.remove_spectral_norm(lin)
    assert list(lin.state_dict()) == ["bias", "weight"]
    lin.eval()
    np.testing.assert_allclose(_np(lin.weight), w, rtol=1e-6)
    assert not lin._state_dict_hooks and not lin._load_state_dict_pre_hooks
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(lin)


def test_legacy_spectral_norm_loads_a_version_0_checkpoint():
    from collections import OrderedDict
    clgrad.manual_seed(11)
    lin = nn.utils.spectral_norm(nn.Linear(5, 4).double())
    rng = np.random.default_rng(0)
    W_orig = rng.standard_normal((4, 5))
    u = rng.standard_normal(4)
    u /= np.linalg.norm(u)
    sigma = 2.5
    # PyTorch < 1.0's layout: weight (W_orig / sigma), weight_orig, weight_u; no weight_v
    sd = OrderedDict(bias=clgrad.zeros(4, dtype=clgrad.float64),
                     weight_orig=clgrad.tensor(W_orig), weight_u=clgrad.tensor(u),
                     weight=clgrad.tensor(W_orig / sigma))
    sd._metadata = {"": {"version": 1}}  # no "spectral_norm" entry: version None
    lin.load_state_dict(sd)
    v = _np(lin.weight_v)
    np.testing.assert_allclose(u @ W_orig @ v, sigma, rtol=1e-10)  # u . W v = sigma
    lin.eval()
    lin(clgrad.zeros(1, 5, dtype=clgrad.float64))
    np.testing.assert_allclose(_np(lin.weight), W_orig / sigma, rtol=1e-10)


# -- orthogonal ------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_cayley_is_orthogonal_and_trains(shape):
    clgrad.manual_seed(9)
    lin = nn.Linear(shape[1], shape[0]).double()
    W0 = _np(lin.weight)
    PZ.orthogonal(lin, orthogonal_map="cayley")
    Q = _np(lin.weight)
    k = min(shape)
    G = Q.T @ Q if shape[0] >= shape[1] else Q @ Q.T
    np.testing.assert_allclose(G, np.eye(k), atol=1e-12)
    if shape[0] == shape[1]:  # the initial value: QR's Q of W0 with diag(R) > 0
        q, r = np.linalg.qr(W0)
        np.testing.assert_allclose(Q, q * np.sign(np.diag(r)), atol=1e-12)
    x = clgrad.tensor(np.linspace(-1, 1, 2 * shape[1]).reshape(2, shape[1]))
    opt = clgrad.optim.SGD(lin.parameters(), lr=0.5)
    for _ in range(3):
        opt.zero_grad()
        (lin(x) ** 2).sum().backward()
        opt.step()
    Q = _np(lin.weight)
    G = Q.T @ Q if shape[0] >= shape[1] else Q @ Q.T
    np.testing.assert_allclose(G, np.eye(k), atol=1e-12)
    assert "parametrizations.weight.0.base" in lin.state_dict()


def test_orthogonal_bad_arguments_raise():
    """(matrix_exp, householder and the default map: tests/test_matrix_exp.py)"""
    with pytest.raises(ValueError, match='orthogonal_map has to be one of'):
        PZ.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="Got a tensor of 1 dimensions"):
        PZ.orthogonal(nn.Linear(3, 3), "bias", orthogonal_map="cayley")


def test_orthogonal_gradient_against_finite_differences():
    clgrad.manual_seed(10)
    lin = nn.Linear(3, 3).double()
    PZ.orthogonal(lin, orthogonal_map="cayley")
    x = clgrad.tensor(np.linspace(-1, 1, 6).reshape(2, 3))
    assert gradcheck(lambda o: lin(x), [lin.parametrizations.weight.original])


# -- PyTorch 2.14 ----------------------------------------------------------------------------

def _to_torch(torch, sd):
    return {k: torch.tensor(v.numpy()) for k, v in sd.items()}


def _to_clgrad(sd):
    return {k: clgrad.tensor(v.detach().numpy()) for k, v in sd.items()}


@pytest.mark.parametrize("kind", ["weight_norm", "spectral_norm", "orthogonal",
                                  "legacy_weight_norm", "legacy_spectral_norm"])
def test_state_dicts_load_both_ways_with_pytorch(kind):
    torch = _torch()
    import warnings
    tfn = {"weight_norm": lambda m: torch.nn.utils.parametrizations.weight_norm(m, dim=1),
           "spectral_norm": torch.nn.utils.parametrizations.spectral_norm,
           "orthogonal": lambda m: torch.nn.utils.parametrizations.orthogonal(
               m, orthogonal_map="cayley"),
           "legacy_weight_norm": torch.nn.utils.weight_norm,
           "legacy_spectral_norm": torch.nn.utils.spectral_norm}[kind]
    cfn = {"weight_norm": lambda m: PZ.weight_norm(m, dim=1),
           "spectral_norm": PZ.spectral_norm,
           "orthogonal": lambda m: PZ.orthogonal(m, orthogonal_map="cayley"),
           "legacy_weight_norm": nn.utils.weight_norm,
           "legacy_spectral_norm": nn.utils.spectral_norm}[kind]
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = tfn(torch.nn.Linear(5, 4).double())
        cm = cfn(nn.Linear(5, 4).double())
    tsd, csd = tm.state_dict(), cm.state_dict()
    assert list(csd) == list(tsd)
    assert [tuple(v.shape) for v in csd.values()] == [tuple(v.shape) for v in tsd.values()]
    x = np.linspace(-1, 1, 10).reshape(2, 5)
    for train in (True, False):
        cm.load_state_dict(_to_clgrad(tm.state_dict()))  # PyTorch -> clgrad
        tm.train(train), cm.train(train)
        np.testing.assert_allclose(cm(clgrad.tensor(x)).detach().numpy(),
                                   tm(torch.tensor(x)).detach().numpy(), rtol=1e-12)
        for k, v in tm.state_dict().items():  # the same power-method iterate
            np.testing.assert_allclose(_np(cm.state_dict()[k]), v.numpy(), rtol=1e-12,
                                       atol=1e-15, err_msg=k)
    with clgrad.no_grad():
        for p in cm.parameters():
            p.mul_(1.5)
    tm.load_state_dict(_to_torch(torch, cm.state_dict()))  # clgrad -> PyTorch
    tm.eval(), cm.eval()
    np.testing.assert_allclose(tm(torch.tensor(x)).detach().numpy(),
                               cm(clgrad.tensor(x)).detach().numpy(), rtol=1e-12)


def test_checkpoint_files_load_both_ways_with_pytorch(tmp_path):
    torch = _torch()

    def net(lib, utils):
        m = lib.nn.Sequential(lib.nn.Conv1d(2, 4, 3), lib.nn.Flatten(), lib.nn.Linear(12, 3))
        utils.parametrizations.weight_norm(m[0])
        utils.parametrizations.spectral_norm(m[2])
        return m

    tm, cm = net(torch, torch.nn.utils), net(clgrad, nn.utils)
    torch.save(tm.state_dict(), tmp_path / "t.pt")
    cm.load_state_dict(clgrad.load(tmp_path / "t.pt"))
    x = np.linspace(-1, 1, 20, dtype=np.float32).reshape(2, 2, 5)
    tm.eval(), cm.eval()
    np.testing.assert_allclose(cm(clgrad.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    with clgrad.no_grad():
        cm[2].parametrizations.weight.original.mul_(-2.0)
    clgrad.save(cm.state_dict(), tmp_path / "c.pt")
    tm.load_state_dict(torch.load(tmp_path / "c.pt"))
    np.testing.assert_allclose(tm(torch.tensor(x)).detach().numpy(),
                               cm(clgrad.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_parametrize_values_match_pytorch():
    torch = _torch()
    import torch.nn.utils.parametrize as TP

    TSkew = load_program("parametrizations_tutorial", "torch").Skew

    class TDouble(torch.nn.Module):
        def forward(self, X):
            return 2 * X

        def right_inverse(self, A):
            return A / 2

    tm = torch.nn.Linear(3, 3).double()
    cm = nn.Linear(3, 3).double()
    cm.load_state_dict(_to_clgrad(tm.state_dict()))
    TP.register_parametrization(tm, "weight", TSkew())
    TP.register_parametrization(tm, "weight", TDouble())
    P.register_parametrization(cm, "weight", Skew())
    P.register_parametrization(cm, "weight", Double())
    assert repr(cm).replace("Double", "TDouble") == repr(tm)
    np.testing.assert_allclose(_np(cm.weight), tm.weight.detach().numpy(), rtol=1e-15)
    X = np.arange(9.0).reshape(3, 3)
    X = X - X.T
    tm.weight, cm.weight = torch.tensor(X), clgrad.tensor(X)
    np.testing.assert_allclose(_np(cm.parametrizations.weight.original),
                               tm.parametrizations.weight.original.detach().numpy())
    TP.remove_parametrizations(tm, "weight", leave_parametrized=False)
    P.remove_parametrizations(cm, "weight", leave_parametrized=False)
    np.testing.assert_allclose(_np(cm.weight), tm.weight.detach().numpy())


def test_orthogonal_right_inverse_matches_pytorch():
    torch = _torch()
    tm = torch.nn.Linear(4, 4).double()
    cm = nn.Linear(4, 4).double()
    cm.load_state_dict(_to_clgrad(tm.state_dict()))
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map="cayley")
    PZ.orthogonal(cm, orthogonal_map="cayley")
    np.testing.assert_allclose(_np(cm.weight), tm.weight.detach().numpy(), atol=1e-12)
    Q = np.linalg.qr(np.arange(16.0).reshape(4, 4) ** 0.5)[0]
    tm.weight, cm.weight = torch.tensor(Q), clgrad.tensor(Q)
    np.testing.assert_allclose(_np(cm.weight), Q, atol=1e-12)
    np.testing.assert_allclose(_np(cm.weight), tm.weight.detach().numpy(), atol=1e-12)
