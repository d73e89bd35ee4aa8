"""Second derivatives (create_graph) of the ops made differentiable twice: the max/min
reductions, the adaptive pools, group/instance/local-response norm, gelu's tanh form, mish,
hardswish, hardsigmoid, threshold and the shrinks, the transposed and 3-D convolutions,
linalg.solve, digamma/polygamma, logaddexp(2), fmax/fmin.

Oracles: gradgradcheck (float64 central differences of the first-order gradients: those run
the ops' own backward kernels, independent of the recorded second-order path), hand numbers
for the tie rules and a Hessian, finite differences of whole gradient-penalty programs along
random directions, and PyTorch (/tmp/torchlib, skipped without it): Hessian-vector products
and the parameter gradients of the same programs."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F

from test_higher_order import F64, _rand


def _spd(n, seed):
    """A well-conditioned n x n matrix (3 I + noise)."""
    return 3.0 * np.eye(n) + _rand((n, n), seed)


# name -> (fn(lib, F, *inputs), input arrays); lib is clgrad or torch (the same spelling).
# The products with x give kinked (piecewise linear) ops a second derivative that is not 0.
CASES = {
    "amax": (lambda T, F, x: (x * x).amax(1), [_rand((3, 4), 1)]),
    "amin_keepdim": (lambda T, F, x: (x * x).amin((0, 1), keepdim=True), [_rand((3, 4), 2)]),
    "max_dim": (lambda T, F, x: (x * x).max(1)[0], [_rand((3, 4), 3)]),
    "min_dim_keepdim": (lambda T, F, x: (x * x).min(0, keepdim=True).values,
                        [_rand((3, 4), 4)]),
    "max_all": (lambda T, F, x: (x * x * x).max(), [_rand((3, 4), 5)]),
    "min_all": (lambda T, F, x: (x * x * x).min(), [_rand((3, 4), 6)]),
    "fmax": (lambda T, F, a, b: T.fmax(a * a, b), [_rand((2, 3), 7), _rand(3, 8)]),
    "fmin": (lambda T, F, a, b: T.fmin(a, b * b), [_rand((2, 3), 9), _rand((2, 3), 10)]),
    "adaptive_avg_pool2d": (lambda T, F, x: F.adaptive_avg_pool2d(x * x, (2, 3)),
                            [_rand((2, 2, 5, 7), 11)]),
    "adaptive_avg_pool2d_global": (lambda T, F, x: F.adaptive_avg_pool2d(x * x, 1),
                                   [_rand((2, 2, 3, 3), 12)]),
    "adaptive_avg_pool1d": (lambda T, F, x: F.adaptive_avg_pool1d(x * x, 3),
                            [_rand((2, 3, 7), 13)]),
    "adaptive_avg_pool3d": (lambda T, F, x: F.adaptive_avg_pool3d(x * x, (2, 2, 3)),
                            [_rand((1, 2, 3, 4, 5), 14)]),
    "adaptive_max_pool2d": (lambda T, F, x: F.adaptive_max_pool2d(x * x, (2, 3)),
                            [_rand((2, 2, 5, 7), 15)]),
    "adaptive_max_pool1d": (lambda T, F, x: F.adaptive_max_pool1d(x * x, 3),
                            [_rand((2, 3, 7), 16)]),
    "adaptive_max_pool3d": (lambda T, F, x: F.adaptive_max_pool3d(x * x, 2),
                            [_rand((1, 2, 3, 4, 5), 17)]),
    "group_norm": (lambda T, F, x, w, b: F.group_norm(x, 3, w, b) ** 2,
                   [_rand((2, 6, 3, 2), 18), _rand(6, 19), _rand(6, 20)]),
    "group_norm_plain": (lambda T, F, x: F.group_norm(x, 2) ** 2, [_rand((3, 4, 5), 21)]),
    "instance_norm": (lambda T, F, x, w, b: F.instance_norm(x, weight=w, bias=b) ** 2,
                      [_rand((2, 3, 4, 3), 22), _rand(3, 23), _rand(3, 24)]),
    "local_response_norm": (lambda T, F, x: F.local_response_norm(x, 3, alpha=0.5, k=1.5),
                            [_rand((2, 5, 3, 2), 25)]),
    "local_response_norm_even": (lambda T, F, x: F.local_response_norm(x, 4, beta=0.6),
                                 [_rand((2, 5, 4), 26)]),
    "gelu_tanh": (lambda T, F, x: F.gelu(x, approximate="tanh"), [_rand((3, 4), 27) * 2]),
    "mish": (lambda T, F, x: F.mish(x), [_rand((3, 4), 28) * 2]),
    "hardswish": (lambda T, F, x: F.hardswish(x) * x, [_rand((3, 4), 29, -4.5, 4.5)]),
    "hardsigmoid": (lambda T, F, x: F.hardsigmoid(x) * x, [_rand((3, 4), 30, -4.5, 4.5)]),
    "threshold": (lambda T, F, x: F.threshold(x, 0.1, 2.0) * x, [_rand((3, 4), 31)]),
    "softshrink": (lambda T, F, x: F.softshrink(x, 0.3) * x, [_rand((3, 4), 32)]),
    "hardshrink": (lambda T, F, x: F.hardshrink(x, 0.3) * x, [_rand((3, 4), 33)]),
    "conv_transpose2d": (lambda T, F, x, w, b: F.conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1) ** 2,
        [_rand((2, 2, 3, 3), 34), _rand((2, 3, 3, 3), 35), _rand(3, 36)]),
    "conv_transpose2d_groups": (lambda T, F, x, w: F.conv_transpose2d(
        x, w, stride=(1, 2), padding=(2, 0), groups=2, dilation=2) ** 2,
        [_rand((1, 4, 4, 3), 37), _rand((4, 1, 3, 2), 38)]),
    "conv_transpose2d_unbatched": (lambda T, F, x, w: F.conv_transpose2d(x, w, stride=2) ** 2,
                                   [_rand((2, 2, 3), 39), _rand((2, 2, 2, 2), 40)]),
    "conv_transpose1d": (lambda T, F, x, w, b: F.conv_transpose1d(x, w, b, stride=2) ** 2,
                         [_rand((2, 2, 4), 41), _rand((2, 3, 3), 42), _rand(3, 43)]),
    "conv_transpose3d": (lambda T, F, x, w, b: F.conv_transpose3d(
        x, w, b, stride=2, padding=1, output_padding=1) ** 2,
        [_rand((1, 2, 2, 2, 2), 44), _rand((2, 2, 3, 2, 2), 45), _rand(2, 46)]),
    "conv3d": (lambda T, F, x, w, b: F.conv3d(x, w, b, padding=1) ** 2,
               [_rand((1, 2, 3, 3, 3), 47), _rand((2, 2, 2, 2, 2), 48), _rand(2, 49)]),
    "linalg_solve": (lambda T, F, a, b: T.linalg.solve(a, b) ** 2,
                     [_spd(3, 50), _rand((3, 2), 51)]),
    "linalg_solve_batched": (lambda T, F, a, b: T.linalg.solve(a, b) ** 2,
                             [_spd(3, 52), _rand((2, 3, 2), 53)]),
    "linalg_solve_vector_left_false": (
        lambda T, F, a, b, c: T.linalg.solve(a, b) * T.linalg.solve(a, c, left=False),
        [_spd(3, 54), _rand(3, 55), _rand((2, 3), 56)]),
    "digamma": (lambda T, F, x: T.digamma(x), [_rand(5, 57, 0.3, 4.0)]),
    "polygamma": (lambda T, F, x: T.polygamma(1, x) * T.polygamma(2, x),
                  [_rand(5, 58, 0.3, 4.0)]),
    "logaddexp": (lambda T, F, a, b: T.logaddexp(a, b), [_rand((2, 3), 59), _rand(3, 60)]),
    "logaddexp2": (lambda T, F, a, b: T.logaddexp2(a, b), [_rand(4, 61), _rand(4, 62)]),
}


def _inputs(lib, arrays):
    return [lib.tensor(np.asarray(a, np.float64), requires_grad=True) for a in arrays]


@pytest.mark.parametrize("name", list(CASES))
def test_gradgradcheck(name):
    fn, arrays = CASES[name]
    assert clgrad.autograd.gradgradcheck(lambda *xs: fn(clgrad, F, *xs),
                                         _inputs(clgrad, arrays))


def _hvp(lib, fnn, fn, arrays, seed=99):
    """d/dx of sum_i <v_i, d<w, fn(x)>/dx_i>: a Hessian-vector product (w, v fixed random),
    one create_graph backward then one plain backward; NumPy arrays, zeros where unused."""
    xs = _inputs(lib, arrays)
    out = fn(lib, fnn, *xs)
    rng = np.random.default_rng(seed)
    w = lib.tensor(rng.standard_normal(tuple(out.shape)))
    gs = lib.autograd.grad((out * w).sum(), xs, create_graph=True)
    s = sum((g * lib.tensor(rng.standard_normal(tuple(g.shape)))).sum() for g in gs)
    hv = lib.autograd.grad(s, xs, allow_unused=True)
    return [np.zeros(a.shape) if h is None else h.detach().numpy() for h, a in zip(hv, arrays)]


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# PyTorch 2.13 has no derivative of hardsigmoid's backward (it raises); clgrad's is the
# masked constant g / 6 (gradgradcheck above)
TORCH_RAISES = {"hardsigmoid": "hardsigmoid_backward"}


@pytest.mark.parametrize("name", list(CASES))
def test_hessian_vector_products_match_pytorch(name, torch):
    fn, arrays = CASES[name]
    ours = _hvp(clgrad, F, fn, arrays)
    if name in TORCH_RAISES:
        with pytest.raises(RuntimeError, match=TORCH_RAISES[name]):
            _hvp(torch, torch.nn.functional, fn, arrays)
        return
    theirs = _hvp(torch, torch.nn.functional, fn, arrays)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11, err_msg=f"{name} input {i}")


# -- the tie rules --------------------------------------------------------------------------------
TIES = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 0.5]])
V = np.array([[0.5, 1.0, 2.0, 4.0], [8.0, 16.0, 32.0, 64.0]])


def _tie_grads(lib, reduce):
    """(g, d<g, V>/dw): g = d<w, reduce(x)>/dx with create_graph at w = 1, then its
    derivative in w (the gradient's own gradient in the output gradient)."""
    x = lib.tensor(TIES, requires_grad=True)
    y = reduce(x)
    w = lib.ones(tuple(y.shape), dtype=lib.float64, requires_grad=True)
    g, = lib.autograd.grad(y, x, w, create_graph=True)
    gw, = lib.autograd.grad((g * lib.tensor(V)).sum(), w)
    return g.detach().numpy(), gw.numpy()


TIE_CASES = {  # reduce, its gradient at w = 1, d<g, V>/dw (by hand)
    "amax": (lambda x: x.amax(1), [[0, .5, .5, 0], [1 / 3, 1 / 3, 1 / 3, 0]],
             [(1.0 + 2.0) / 2, (8.0 + 16.0 + 32.0) / 3]),
    "amin_all": (lambda x: x.amin(), [[0, 0, 0, 1], [0, 0, 0, 0]], 4.0),
    "max_all": (lambda x: x.max(), [[0, .5, .5, 0], [0, 0, 0, 0]], (1.0 + 2.0) / 2),
    "max_dim": (lambda x: x.max(1).values, [[0, 1, 0, 0], [1, 0, 0, 0]], [1.0, 8.0]),
    "min_dim_keepdim": (lambda x: x.min(0, keepdim=True)[0], [[1, 0, 0, 1], [0, 1, 1, 0]],
                        [[0.5, 16.0, 32.0, 4.0]]),
}


@pytest.mark.parametrize("name", list(TIE_CASES))
def test_ties_follow_pytorch_rules_under_create_graph(name):
    # amax/amin and max()/min() of all elements split evenly among the ties; max(dim)/min(dim)
    # send everything to the returned (first) index: in the gradient and in its own gradient
    reduce, g_want, gw_want = TIE_CASES[name]
    g, gw = _tie_grads(clgrad, reduce)
    np.testing.assert_allclose(g, g_want, rtol=1e-15)
    np.testing.assert_allclose(gw, gw_want, rtol=1e-15)


@pytest.mark.parametrize("name", list(TIE_CASES))
def test_ties_match_pytorch(name, torch):
    reduce = TIE_CASES[name][0]
    for a, b in zip(_tie_grads(clgrad, reduce), _tie_grads(torch, reduce)):
        np.testing.assert_allclose(a, b, rtol=1e-15)


def test_max_dim_nan_sends_the_gradient_to_the_nan():
    x = clgrad.tensor([[1.0, float("nan"), 2.0, float("nan")]], dtype=F64, requires_grad=True)
    w = clgrad.ones(1, dtype=F64, requires_grad=True)
    g, = clgrad.autograd.grad(x.max(1).values, x, w, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [[0.0, 1.0, 0.0, 0.0]])
    gw, = clgrad.autograd.grad((g * clgrad.tensor([[1.0, 2.0, 4.0, 8.0]])).sum(), w)
    np.testing.assert_array_equal(gw.numpy(), [2.0])


def test_hessian_of_max_reductions_by_hand():
    # f(x) = max_j (x_ij^3) summed over i + amax(x^2): Hessian diag 6 x at each row's argmax
    # plus 2 at the overall argmax of x^2, zero elsewhere
    xs = np.array([[0.5, -1.5, 1.0], [2.0, -0.3, 0.1]])
    h = clgrad.autograd.functional.hessian(
        lambda x: (x ** 3).max(1).values.sum() + (x * x).amax(), clgrad.tensor(xs))
    want = np.zeros((6, 6))
    want[2, 2] = 6 * 1.0
    want[3, 3] = 6 * 2.0 + 2
    np.testing.assert_allclose(h.numpy().reshape(6, 6), want, rtol=1e-14)


# -- whole programs: gradient penalties ---------------------------------------------------------
def _critic(lib):
    """A WGAN-GP critic of (N, 1, 4, 4) images through every kind of op made double here."""
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.GroupNorm(2, 4), nn.GELU(approximate="tanh"),
        nn.Conv2d(4, 4, 3, stride=2, padding=1), nn.InstanceNorm2d(4, affine=True), nn.Mish(),
        nn.LocalResponseNorm(3), nn.Hardswish(), nn.AdaptiveMaxPool2d((2, 1)),
        nn.Flatten(), nn.Linear(8, 1)).double()


def _generator(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 8), nn.SELU(), nn.Unflatten(1, (2, 2, 2)),
                         nn.ConvTranspose2d(2, 1, 4, stride=2, padding=1), nn.Tanh()).double()


def _penalty_loss(lib, critic, gen, real, z, alpha, lam=10.0):
    """WGAN-GP's critic loss (Gulrajani et al. 2017, as PyTorch programs write it) on the
    generator's fakes, whose gradient penalty at interpolates runs back through the critic
    and, as the fakes are not detached, through the generator's ConvTranspose2d; plus a
    penalty on the critic's gradient in the latent z (through the generator too)."""
    fake = gen(z)
    interp = alpha * real + (1 - alpha) * fake
    d = critic(interp)
    g, = lib.autograd.grad(d, interp, lib.ones_like(d), create_graph=True)
    gp = ((g.reshape(g.shape[0], -1).norm(2, dim=1) - 1) ** 2).mean()
    dz = critic(gen(z))
    gz, = lib.autograd.grad(dz.sum(), z, create_graph=True)
    return critic(fake).mean() - critic(real).mean() + lam * gp + (gz ** 2).sum() + \
        (d.amax() - d.amin()) ** 2


def _program_data():
    rng = np.random.default_rng(8)
    return (rng.standard_normal((3, 1, 4, 4)), rng.standard_normal((3, 3)),
            rng.uniform(size=(3, 1, 1, 1)))


def _models(lib, seed):
    lib.manual_seed(seed)
    return _critic(lib), _generator(lib)


def _loss_of(critic, gen):
    real, z, alpha = _program_data()
    zt = clgrad.tensor(z, requires_grad=True)
    return _penalty_loss(clgrad, critic, gen, clgrad.tensor(real), zt, clgrad.tensor(alpha))


def check_directional_fd(params, loss_fn, seed=12, eps=1e-5, rtol=1e-6):
    """The parameters' gradients of ``loss_fn()`` (one backward) against central float64 finite
    differences along two random directions of every parameter at once; the parameters are
    restored afterwards."""
    loss_fn().backward()
    grads = [p.grad.numpy().copy() for p in params]
    base = [p.detach().numpy().copy() for p in params]
    rng = np.random.default_rng(seed)
    for _ in range(2):
        u = [rng.standard_normal(b.shape) for b in base]
        vals = []
        for sign in (1, -1):
            with clgrad.no_grad():
                for p, b, d in zip(params, base, u):
                    p.copy_(clgrad.tensor(b + sign * eps * d))
            vals.append(loss_fn().item())
        numeric = (vals[0] - vals[1]) / (2 * eps)
        analytic = sum(float((g * d).sum()) for g, d in zip(grads, u))
        np.testing.assert_allclose(analytic, numeric, rtol=rtol)
    with clgrad.no_grad():
        for p, b in zip(params, base):
            p.copy_(clgrad.tensor(b))


def test_gradient_penalty_program_matches_finite_differences():
    critic, gen = _models(clgrad, 3)
    params = list(critic.parameters()) + list(gen.parameters())
    check_directional_fd(params, lambda: _loss_of(critic, gen))


def test_gradient_penalty_program_matches_pytorch(torch):
    tc, tg = _models(torch, 3)
    cc, cg = _critic(clgrad), _generator(clgrad)
    for ours, theirs in ((cc, tc), (cg, tg)):
        ours.load_state_dict({k: clgrad.tensor(v.detach().numpy())
                              for k, v in theirs.state_dict().items()})
    real, z, alpha = _program_data()
    _loss_of(cc, cg).backward()
    _penalty_loss(torch, tc, tg, torch.tensor(real), torch.tensor(z, requires_grad=True),
                  torch.tensor(alpha)).backward()
    for ours, theirs in ((cc, tc), (cg, tg)):
        for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=name)


# -- what is still not differentiable twice ----------------------------------------------------
def test_ops_still_without_a_second_derivative_raise_naming_them():
    x = clgrad.tensor([[0.3, 0.7], [1.1, 0.4]], dtype=F64, requires_grad=True)
    cases = (("linalg_svdvals", lambda: clgrad.linalg.svdvals(x)),  # (prod, interpolate: now
             ("bessel_y0", lambda: clgrad.special.bessel_y0(x)))    # test_higher_order_more)
    for name, fn in cases:
        with pytest.raises(RuntimeError, match=f"backward of '{name}'.*not differentiable"):
            clgrad.autograd.grad(fn().sum(), x, create_graph=True)
        g, = clgrad.autograd.grad(fn().sum(), x)  # first order: unchanged
        assert g.shape == x.shape


def test_first_order_gradients_do_not_take_the_create_graph_path(monkeypatch):
    # without create_graph the fused kernels' backward runs, never the recorded composition
    from clgrad.autograd.graph import recomputed
    from clgrad.ops import norm
    from clgrad.ops.conv import transpose
    calls = []

    def spy(forward, inputs):
        calls.append(forward)
        return recomputed(forward, inputs)
    monkeypatch.setattr(norm, "recomputed", spy)
    monkeypatch.setattr(transpose, "recomputed", spy)
    x = clgrad.tensor(_rand((2, 4, 3, 3), 70), requires_grad=True)
    w = clgrad.tensor(_rand((4, 2, 2, 2), 71), requires_grad=True)
    y = F.conv_transpose2d(F.local_response_norm(F.group_norm(x, 2), 3), w, stride=2)
    y.sum().backward()
    assert calls == [] and x.grad is not None and w.grad is not None
    x.grad = None
    y = F.conv_transpose2d(F.local_response_norm(F.group_norm(x, 2), 3), w, stride=2)
    g, = clgrad.autograd.grad((y * y).sum(), x, create_graph=True)
    assert len(calls) == 3 and g.requires_grad
