"""Piecewise-linear ops under create_graph (autograd.graph._linked): their gradient requires
grad as PyTorch's (the backward formula reads the op's input or output), and a second
derivative through it is exact zeros (pools, reflect/replicate pads, the ReLU family,
nll_loss) or no gradient at all (convolutions with a constant weight, grid_sample: PyTorch's
undefined one). Ops whose gradient does not read the input (x * 2, slicing, clamp, sort...)
keep a gradient without a graph, and a second backward raises, as PyTorch's.

Oracles: hand-derived expectations (hard-coded below: the second derivative of a piecewise-
linear function is 0 away from its kinks), and PyTorch (/tmp/torchlib, when importable)."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import graph

F64 = clgrad.float64


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _const(lib, shape, seed):
    return lib.tensor(_rand(shape, seed), dtype=lib.float64)


# name -> (fn(lib, F, x), x's shape, expected (g.requires_grad, second)), second: "zeros"
# (x.grad exact zeros after a second backward), "none" (x.grad stays None), "raise"
CASES = {
    "relu": (lambda T, F, x: T.relu(x), (4, 6), (True, "zeros")),
    "relu_": (lambda T, F, x: (x * 1.0).relu_(), (4, 6), (True, "zeros")),
    "leaky_relu": (lambda T, F, x: F.leaky_relu(x, 0.1), (4, 6), (True, "zeros")),
    "rrelu_eval": (lambda T, F, x: F.rrelu(x, training=False), (4, 6), (True, "zeros")),
    "hardtanh": (lambda T, F, x: F.hardtanh(x, -0.5, 0.5), (4, 6), (True, "zeros")),
    "hardtanh_": (lambda T, F, x: F.hardtanh(x * 1.0, -0.5, 0.5, inplace=True), (4, 6),
                  (True, "zeros")),
    "relu6": (lambda T, F, x: F.relu6(x * 4), (4, 6), (True, "zeros")),
    "threshold": (lambda T, F, x: F.threshold(x, 0.1, 2.0), (4, 6), (True, "zeros")),
    "hardshrink": (lambda T, F, x: F.hardshrink(x), (4, 6), (True, "zeros")),
    "softshrink": (lambda T, F, x: F.softshrink(x), (4, 6), (True, "zeros")),
    "nll_loss": (lambda T, F, x: F.nll_loss(x, T.tensor([0, 2, 1, 5])), (4, 6),
                 (True, "zeros")),
    "max_pool2d": (lambda T, F, x: F.max_pool2d(x, 2), (2, 3, 6, 6), (True, "zeros")),
    "max_pool2d_dilated": (lambda T, F, x: F.max_pool2d(x, 2, 1, dilation=2), (2, 3, 6, 6),
                           (True, "zeros")),
    "max_pool1d": (lambda T, F, x: F.max_pool1d(x, 2), (3, 6, 6), (True, "zeros")),
    "max_pool3d": (lambda T, F, x: F.max_pool3d(x, 2), (1, 2, 4, 4, 4), (True, "zeros")),
    "avg_pool2d": (lambda T, F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                count_include_pad=False), (2, 3, 6, 6),
                   (True, "zeros")),
    "avg_pool3d": (lambda T, F, x: F.avg_pool3d(x, 2), (1, 2, 4, 4, 4), (True, "zeros")),
    "adaptive_max_pool2d": (lambda T, F, x: F.adaptive_max_pool2d(x, 3), (2, 3, 6, 6),
                            (True, "zeros")),
    "adaptive_avg_pool2d": (lambda T, F, x: F.adaptive_avg_pool2d(x, 3), (2, 3, 6, 6),
                            (True, "zeros")),
    "interpolate_area": (lambda T, F, x: F.interpolate(x, size=(3, 3), mode="area"),
                         (2, 3, 6, 6), (True, "zeros")),
    "pad_reflect": (lambda T, F, x: F.pad(x, (1, 1, 1, 1), mode="reflect"), (2, 3, 6, 6),
                    (True, "zeros")),
    "pad_replicate": (lambda T, F, x: F.pad(x, (1, 2, 0, 1), mode="replicate"),
                      (2, 3, 6, 6), (True, "zeros")),
    "pad_reflect1d": (lambda T, F, x: F.pad(x, (2, 1), mode="reflect"), (3, 6, 6),
                      (True, "zeros")),
    "conv2d_const_weight": (lambda T, F, x: F.conv2d(x, _const(T, (2, 3, 3, 3), 1)),
                            (2, 3, 6, 6), (True, "none")),
    "conv1d_const_weight": (lambda T, F, x: F.conv1d(x, _const(T, (2, 6, 3), 2)), (3, 6, 6),
                            (True, "none")),
    "conv_transpose2d_const_weight": (
        lambda T, F, x: F.conv_transpose2d(x, _const(T, (3, 2, 3, 3), 3)), (2, 3, 6, 6),
        (True, "none")),
    "grid_sample": (lambda T, F, x: F.grid_sample(x, _const(T, (2, 3, 3, 2), 4) * 0.5,
                                                  align_corners=False), (2, 3, 6, 6),
                    (True, "none")),
    # the gradient does not read x: no graph, a second backward raises (PyTorch's too)
    "mul_2": (lambda T, F, x: x * 2, (4, 6), (False, "raise")),
    "neg": (lambda T, F, x: -x, (4, 6), (False, "raise")),
    "clamp": (lambda T, F, x: T.clamp(x, -0.5, 0.5), (4, 6), (False, "raise")),
    "sign": (lambda T, F, x: T.sign(x), (4, 6), (False, "raise")),
    "max_dim": (lambda T, F, x: x.max(1).values, (4, 6), (False, "raise")),
    "amin": (lambda T, F, x: x.amin(1), (4, 6), (False, "raise")),
    "sort": (lambda T, F, x: T.sort(x, 1).values, (4, 6), (False, "raise")),
    "topk": (lambda T, F, x: T.topk(x, 2, 1).values, (4, 6), (False, "raise")),
    "gather": (lambda T, F, x: T.gather(x, 1, T.tensor([[0, 1]] * 4)), (4, 6),
               (False, "raise")),
    "index_select": (lambda T, F, x: T.index_select(x, 1, T.tensor([0, 2, 2])), (4, 6),
                     (False, "raise")),
    "slice": (lambda T, F, x: x[1:3], (4, 6), (False, "raise")),
    "pad_constant": (lambda T, F, x: F.pad(x, (1, 1, 1, 1)), (2, 3, 6, 6), (False, "raise")),
    "pad_circular": (lambda T, F, x: F.pad(x, (1, 1, 1, 1), mode="circular"), (2, 3, 6, 6),
                     (False, "raise")),
    "interpolate_nearest": (lambda T, F, x: F.interpolate(x, scale_factor=2), (2, 3, 6, 6),
                            (False, "raise")),
}


def _second(lib, fn, shape, seed):
    """(g.requires_grad, x.grad after backward of <g, u> or the exception) for g = d sum f / dx
    taken with create_graph."""
    Fl = lib.nn.functional
    x = lib.tensor(_rand(shape, seed), dtype=lib.float64, requires_grad=True)
    g, = lib.autograd.grad(fn(lib, Fl, x).sum(), x, create_graph=True)
    u = _const(lib, shape, seed + 100)
    try:
        (g * u).sum().backward()
    except RuntimeError as e:
        return g.requires_grad, e, g
    return g.requires_grad, x.grad, g


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivative_of_piecewise_linear_ops(name):
    fn, shape, (requires, second) = CASES[name]
    rg, got, g = _second(clgrad, fn, shape, 7)
    assert rg is requires
    if second == "raise":
        assert isinstance(got, RuntimeError) and "does not require grad" in str(got)
        assert g.grad_fn is None
    elif second == "none":
        assert got is None
    else:
        assert got is not None and got.dtype == F64 and tuple(got.shape) == shape
        assert np.array_equal(got.numpy(), np.zeros(shape))  # exact zeros
    assert (g.grad_fn is not None) is requires


@pytest.mark.parametrize("name", sorted(CASES))
def test_second_derivative_as_pytorch(name):
    torch = pytest.importorskip("torch")
    fn, shape, (requires, second) = CASES[name]
    rg, got, _ = _second(torch, fn, shape, 7)
    assert rg is requires  # the hard-coded expectation is PyTorch's (2.13)
    if name == "grid_sample" and isinstance(got, RuntimeError):
        # PyTorch 2.11 (the GPU machine's) raised here; 2.13 gives no gradient, as clgrad
        assert "grid_sampler_2d_backward is not implemented" in str(got)
        assert tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 13)
    elif second == "raise":
        assert isinstance(got, RuntimeError)
    elif second == "none":
        assert got is None
    else:
        assert np.array_equal(got.numpy(), np.zeros(shape))


def test_the_gradient_is_the_first_order_one_unchanged():
    # the link returns the gradient itself: same values as without create_graph, inf and NaN
    # included (no arithmetic on it)
    x = clgrad.tensor([1.0, -2.0, 3.0, 0.5], dtype=F64, requires_grad=True)
    go = clgrad.tensor([np.inf, 2.0, np.nan, -1.0], dtype=F64)
    g1, = clgrad.autograd.grad(clgrad.relu(x), x, go)
    g2, = clgrad.autograd.grad(clgrad.relu(x), x, go, create_graph=True)
    np.testing.assert_array_equal(g1.numpy(), [np.inf, 0.0, np.nan, -1.0])
    np.testing.assert_array_equal(g2.detach().numpy(), g1.numpy())
    assert g2.grad_fn.name() == "ThresholdBackwardBackward0"
    assert g2.grad_fn.next_functions[1][0].variable is x
    h, = clgrad.autograd.grad(g2.sum(), x)
    np.testing.assert_array_equal(h.numpy(), np.zeros(4))


def test_grad_through_a_none_link_is_unused_as_pytorch():
    x = clgrad.tensor(_rand((1, 1, 4, 4), 20), dtype=F64, requires_grad=True)
    w = _const(clgrad, (1, 1, 3, 3), 21)
    g, = clgrad.autograd.grad(F.conv2d(x, w).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        clgrad.autograd.grad(g.sum(), x, retain_graph=True)
    assert clgrad.autograd.grad(g.sum(), x, allow_unused=True) == (None,)


def test_an_upstream_graph_still_flows_through_the_link():
    # relu(x)^2: the gradient 2 relu(x) 1[x > 0] has a real second derivative 2 1[x > 0]
    x = clgrad.tensor([1.5, -2.0, 0.25], dtype=F64, requires_grad=True)
    g, = clgrad.autograd.grad((clgrad.relu(x) ** 2).sum(), x, create_graph=True)
    h, = clgrad.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(h.numpy(), [2.0, 0.0, 2.0])
    # a leaf reached only through the link gets zeros, as PyTorch's
    c = clgrad.tensor([3.0, 4.0, 5.0], dtype=F64, requires_grad=True)
    g, = clgrad.autograd.grad((clgrad.relu(x) * c).sum(), x, create_graph=True)
    hx, hc = clgrad.autograd.grad(g.sum(), (x, c))
    np.testing.assert_array_equal(hx.numpy(), np.zeros(3))
    np.testing.assert_array_equal(hc.numpy(), [1.0, 0.0, 1.0])


@pytest.mark.parametrize("strict", [False, True])
def test_hessian_of_piecewise_linear_functions_is_zeros(strict):
    H = clgrad.autograd.functional.hessian
    x = clgrad.tensor([1.0, -2.0, 3.0, 0.5], dtype=F64)
    for f in (lambda t: clgrad.relu(t).sum(),
              lambda t: F.leaky_relu(t, 0.2).sum(),
              lambda t: F.max_pool1d(t.view(1, 1, 4), 2).sum(),
              lambda t: F.pad(t.view(1, 1, 4), (1, 1), mode="reflect").sum()):
        h = H(f, x, strict=strict)
        assert tuple(h.shape) == (4, 4) and h.dtype == F64
        np.testing.assert_array_equal(h.numpy(), np.zeros((4, 4)))
    # plus a quadratic: the quadratic's Hessian exactly
    h = H(lambda t: clgrad.relu(t).sum() + (t * t).sum(), x, strict=strict)
    np.testing.assert_array_equal(h.numpy(), 2 * np.eye(4))
    if strict:  # (d grad_b / db is None: strict raises there, as PyTorch's)
        return
    # tuple inputs: a block per pair, zeros where relu links and the pair is not mixed
    a, b = clgrad.tensor([1.0, -1.0], dtype=F64), clgrad.tensor([2.0], dtype=F64)
    (haa, hab), (hba, hbb) = H(lambda p, q: (clgrad.relu(p) * q).sum(), (a, b))
    np.testing.assert_array_equal(haa.numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(hab.numpy(), [[1.0], [0.0]])
    np.testing.assert_array_equal(hbb.numpy(), np.zeros((1, 1)))


def test_hessian_strict_raises_where_pytorch_raises():
    H = clgrad.autograd.functional.hessian
    x = clgrad.tensor([1.0, -2.0, 3.0], dtype=F64)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        H(lambda t: (t * 2).sum(), x, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 0"):  # the conv's None link
        H(lambda t: F.conv1d(t.view(1, 1, 3), clgrad.ones(1, 1, 2, dtype=F64)).sum(), x,
          strict=True)
    np.testing.assert_array_equal(H(lambda t: (t * 2).sum(), x).numpy(), np.zeros((3, 3)))


def test_hessian_strict_as_pytorch():
    torch = pytest.importorskip("torch")
    for lib in (clgrad, torch):
        x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64)
        h = lib.autograd.functional.hessian(lambda t: lib.relu(t).sum(), x, strict=True)
        np.testing.assert_array_equal(h.numpy(), np.zeros((3, 3)))
        with pytest.raises(RuntimeError, match="is independent of the input"):
            lib.autograd.functional.hessian(lambda t: (t * 2).sum(), x, strict=True)


@pytest.fixture
def link_calls(monkeypatch):
    """The names of the nodes graph._linked is called for while the test runs (a spy)."""
    calls = []
    orig = graph._linked

    def spy(*a):
        calls.append(a[0].name)
        return orig(*a)
    monkeypatch.setattr(graph, "_linked", spy)
    return calls


def test_first_order_never_links(link_calls):
    calls = link_calls
    x = clgrad.tensor(_rand((2, 3, 6, 6), 30), dtype=F64, requires_grad=True)

    def program():
        y = F.max_pool2d(F.pad(F.relu(x), (1, 1, 1, 1), mode="reflect"), 2)
        return F.conv2d(F.leaky_relu(y), _const(clgrad, (2, 3, 3, 3), 31)).sum()
    program().backward()
    g1 = x.grad.numpy().copy()
    assert calls == []
    g2, = clgrad.autograd.grad(program(), x, create_graph=True)
    assert sorted(set(calls)) == ["conv2d", "leaky_relu", "max_pool2d", "pad", "relu"]
    np.testing.assert_allclose(g2.detach().numpy(), g1, rtol=1e-12, atol=1e-14)  # (composed)
    x.grad = None
    g2.sum().backward()
    # relu's link (the last backward) gives x zeros; the conv's link gives none
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3, 6, 6)))


# -- composed and batch-norm ops, pow's Hessian, hvp(strict) ----------------------------------
_W3 = [0.2, 0.3, 0.4]


def _bn(T, F, x, weight=False, act=False):
    y = F.batch_norm(x, T.tensor([0.1, -0.2, 0.3], dtype=T.float64),
                     T.tensor([0.5, 1.5, 0.8], dtype=T.float64),
                     T.tensor(_W3, dtype=T.float64) if weight else None,
                     T.tensor(_W3, dtype=T.float64) if weight else None, training=False)
    return T.relu(y) if act else y


# name -> (fn(lib, F, x), x's shape, (g.requires_grad, second)), as CASES
MORE = {
    "prelu_const": (lambda T, F, x: F.prelu(x, T.tensor(_W3, dtype=T.float64)), (4, 3, 5),
                    (True, "zeros")),
    "prelu_one": (lambda T, F, x: F.prelu(x, T.tensor([0.25], dtype=T.float64)), (4, 3),
                  (True, "zeros")),
    "rrelu_train": (lambda T, F, x: F.rrelu(x, training=True), (4, 6), (True, "zeros")),
    "batch_norm_eval": (lambda T, F, x: _bn(T, F, x), (4, 3, 5), (True, "none")),
    "batch_norm_eval_affine": (lambda T, F, x: _bn(T, F, x, weight=True), (4, 3, 5),
                               (True, "none")),
    "batch_norm_eval_relu": (lambda T, F, x: _bn(T, F, x, act=True), (4, 3, 5),
                             (True, "zeros")),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_composed_ops_link_their_input(name):
    fn, shape, (requires, second) = MORE[name]
    rg, got, g = _second(clgrad, fn, shape, 11)
    assert rg is requires and g.grad_fn is not None
    if second == "none":
        assert got is None
    else:
        assert got.dtype == F64 and np.array_equal(got.numpy(), np.zeros(shape))


@pytest.mark.parametrize("name", sorted(MORE))
def test_composed_ops_link_their_input_as_pytorch(name):
    torch = pytest.importorskip("torch")
    fn, shape, (requires, second) = MORE[name]
    rg, got, _ = _second(torch, fn, shape, 11)
    assert rg is requires
    assert got is None if second == "none" else np.array_equal(got.numpy(), np.zeros(shape))


def test_prelu_weight_gradient_still_flows():
    # with a weight that requires grad: zeros for x, d/dw <g, u> = sum of u where x <= 0
    x = clgrad.tensor([[1.0, -2.0], [-0.5, 3.0]], dtype=F64, requires_grad=True)
    w = clgrad.tensor([0.25, 0.5], dtype=F64, requires_grad=True)
    g, = clgrad.autograd.grad(F.prelu(x, w).sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [[1.0, 0.5], [0.25, 1.0]])
    u = clgrad.tensor([[3.0, 5.0], [7.0, 11.0]], dtype=F64)
    hx, hw = clgrad.autograd.grad((g * u).sum(), (x, w))
    np.testing.assert_array_equal(hx.numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(hw.numpy(), [7.0, 5.0])


def test_batch_norm_eval_with_a_weight_gives_x_none_and_w_its_gradient():
    x = clgrad.tensor(_rand((4, 3, 5), 12), dtype=F64, requires_grad=True)
    w = clgrad.tensor(_W3, dtype=F64, requires_grad=True)
    rm = clgrad.tensor([0.1, -0.2, 0.3], dtype=F64)
    rv = clgrad.tensor([0.5, 1.5, 0.8], dtype=F64)
    g, = clgrad.autograd.grad(F.batch_norm(x, rm, rv, w, training=False).sum(), x,
                              create_graph=True)
    hx, hw = clgrad.autograd.grad(g.sum(), (x, w), allow_unused=True)
    assert hx is None
    # d/dw sum(w / sqrt(rv + eps)) over N * L = 20 elements per channel
    np.testing.assert_allclose(hw.numpy(), 20 / np.sqrt(np.array([0.5, 1.5, 0.8]) + 1e-5),
                               rtol=1e-13)


@pytest.mark.parametrize("f", ["pow", "square"])
def test_hessian_of_a_square_requires_grad_and_differentiates_to_zeros(f):
    sq = (lambda t: t ** 2) if f == "pow" else clgrad.square
    x = clgrad.tensor([1.0, -2.0, 3.0], dtype=F64, requires_grad=True)
    h = clgrad.autograd.functional.hessian(lambda t: sq(t).sum(), x, create_graph=True)
    np.testing.assert_array_equal(h.detach().numpy(), 2 * np.eye(3))
    assert h.requires_grad
    d, = clgrad.autograd.grad(h.sum(), x)
    np.testing.assert_array_equal(d.numpy(), np.zeros(3))
    # the first-order gradient is unchanged: 2x
    g, = clgrad.autograd.grad(sq(x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [2.0, -4.0, 6.0])


def test_hessian_of_a_square_as_pytorch():
    torch = pytest.importorskip("torch")
    for lib in (clgrad, torch):
        x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        h = lib.autograd.functional.hessian(lambda t: (t ** 2).sum(), x, create_graph=True)
        assert h.requires_grad
        d, = lib.autograd.grad(h.sum(), x)
        np.testing.assert_array_equal(d.numpy(), np.zeros(3))


_HVP_INDEPENDENT = "hessian of the user-provided function is independent of entry 0"


@pytest.mark.parametrize("lib_name", ["clgrad", "torch"])
def test_hvp_strict_raises_for_piecewise_linear_functions(lib_name):
    lib = clgrad if lib_name == "clgrad" else pytest.importorskip("torch")
    Fl = lib.nn.functional
    hvp = lib.autograd.functional.hvp
    x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64)
    v = lib.tensor([0.5, 1.0, -2.0], dtype=lib.float64)
    for f in (lambda t: lib.relu(t).sum(), lambda t: Fl.max_pool1d(t.view(1, 1, 3), 2).sum()):
        with pytest.raises(RuntimeError, match=_HVP_INDEPENDENT):
            hvp(f, x, v, strict=True)
        _, r = hvp(f, x, v)  # non-strict: zeros
        np.testing.assert_array_equal(r.numpy(), np.zeros(3))
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        hvp(lambda t: (t * 2).sum(), x, v, strict=True)
    # H v of sum(relu(t) t^2) = 6 t v where t > 0 (hand-derived), strict or not
    for strict in (False, True):
        _, r = hvp(lambda t: (lib.relu(t) * t * t).sum(), x, v, strict=strict)
        np.testing.assert_array_equal(r.numpy(), [3.0, 0.0, -36.0])
    _, r = hvp(lambda t: (t ** 3).sum(), x, v, strict=True, create_graph=True)
    assert r.requires_grad
    np.testing.assert_array_equal(r.detach().numpy(), [3.0, -12.0, -36.0])


def test_first_order_never_links_composed_ops(link_calls):
    calls = link_calls
    x = clgrad.tensor(_rand((4, 3, 5), 40), dtype=F64, requires_grad=True)
    w = clgrad.tensor(_W3, dtype=F64)

    def program():
        y = _bn(clgrad, F, F.prelu(x, w), weight=True)
        return (F.rrelu(y, training=True) ** 2).sum()
    clgrad.manual_seed(3)
    program().backward()
    g1 = x.grad.numpy().copy()
    assert calls == []
    clgrad.manual_seed(3)
    g2, = clgrad.autograd.grad(program(), x, create_graph=True)
    assert sorted(set(calls)) == ["batch_norm", "mul", "where"]
    np.testing.assert_allclose(g2.detach().numpy(), g1, rtol=1e-12, atol=1e-14)
