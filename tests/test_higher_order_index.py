"""Higher-order gradients through the gather family, region writes, cumsum/cumprod and custom
autograd.Functions (create_graph=True; clgrad/ops/index.py gather_rec / scatter_add_rec,
ops/indexing.py, ops/inplace.py region_grads, ops/scan.py, autograd/function.py).

Oracles: gradgradcheck (float64 central differences of the first-order gradients, which take
the kernels' own first-order path, and of the gradients w.r.t. grad_outputs), hand formulas,
and PyTorch (Hessian-vector products, gradient penalties, a MAML step, once_differentiable's
error) where importable."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.autograd import Function, gradgradcheck
from clgrad.autograd.function import once_differentiable

F64 = clgrad.float64


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _leaf(a):
    return clgrad.tensor(np.asarray(a, np.float64), requires_grad=True)


def _long(a):
    return clgrad.tensor(np.asarray(a, np.int64))


def _write(x, key, v, view=None):
    """A copy of x with v written at key (into ``view(copy)`` when given)."""
    h = x * 1.0
    (h if view is None else view(h))[key] = v
    return h


# -- gathers: their backward (a scatter-add) differentiable again ------------------------------
GATHERS = {
    "index_select": (lambda x: x.index_select(0, _long([2, 0, 2, 3])) ** 2, (4, 3)),
    "index_select_dim1": (lambda x: clgrad.index_select(x.t(), 1, _long([1, 1, 3])).sin(),
                          (4, 3)),
    "gather": (lambda x: clgrad.gather(x, 1, _long([[0, 2], [1, 1], [2, 0], [0, 0]])) ** 2 *
               x[:, :2], (4, 3)),
    "take": (lambda x: clgrad.take(x, _long([[0, 11], [5, -1]])) ** 3, (4, 3)),
    "take_along_dim": (lambda x: clgrad.take_along_dim(x, _long([[0], [2], [1], [0]]), 1) *
                       x, (4, 3)),
    "getitem_index": (lambda x: x[_long([2, 0, 2])] ** 2, (4, 3)),
    "getitem_list_negative": (lambda x: x[[-1, 0, -1]].exp(), (4, 3)),
    "getitem_mask": (lambda x: x[clgrad.tensor([True, False, True, True])] ** 2, (4, 3)),
    "getitem_mask_2d": (lambda x: x[x.detach() > 0] ** 3, (4, 3)),
    "getitem_pairs": (lambda x: x[_long([0, 3, 3]), _long([2, 1, 1])] ** 2, (4, 3)),
    "getitem_slices_between": (lambda x: x[_long([1, 0]), :, _long([3, 1])] ** 2, (2, 3, 4)),
    "getitem_with_step": (lambda x: x[:, _long([2, 0]), ::2].sin() * 2.0, (2, 3, 4)),
    "getitem_of_transpose": (lambda x: x.t()[_long([1, 2, 1])] ** 2, (4, 3)),
    "embedding": (lambda w: F.embedding(_long([[1, 4], [1, 0]]), w) ** 2, (5, 3)),
    "embedding_padding": (lambda w: F.embedding(_long([[1, 4, 2], [1, 0, 2]]), w,
                                                padding_idx=2).tanh(), (5, 3)),
    "embedding_bag_sum": (lambda w: F.embedding_bag(_long([1, 2, 4, 1, 4, 3]), w,
                                                    _long([0, 3, 4])) ** 2, (5, 3)),
    "embedding_bag_mean_max": (lambda w: F.embedding_bag(_long([1, 2, 4, 1]), w, _long([0, 3]),
                                                         mode="mean") ** 2 *
                               F.embedding_bag(_long([[0, 4], [2, 2]]), w, mode="max"),
                               (5, 3)),
    "sort": (lambda x: x.sort(1)[0] ** 2 * x, (4, 3)),
    "topk": (lambda x: x.topk(2, 0)[0] ** 3, (4, 3)),
    "cummax": (lambda x: x.cummax(1)[0] ** 2, (4, 3)),
    "masked_scatter_source": (lambda x: clgrad.zeros(2, 3, dtype=F64).masked_scatter(
        clgrad.tensor([[True, False, True], [False, True, True]]), x.reshape(-1)) ** 2,
        (4, 3)),
}


@pytest.mark.parametrize("name", list(GATHERS))
def test_gathers_are_differentiable_twice(name):
    fn, shape = GATHERS[name]
    assert gradgradcheck(fn, (_leaf(_rand(shape, 1)),))


def test_embedding_scaled_by_frequency_differentiates_its_own_gradient():
    # with scale_grad_by_freq the gradient of row r is sum_{p: idx[p] = r} go[p] / count(r)
    # (not a true gradient): linear in go, so d<gw, u>/d go[p] = u[idx[p]] / count(idx[p])
    # exactly, 0 for the padding row. PyTorch's double backward leaves out the 1 / count
    # (embedding_dense_double_backward), which is not the derivative of its own gradient.
    w = _leaf(_rand((5, 3), 12))
    idx = _long([[1, 4, 2], [1, 0, 2]])
    go = clgrad.tensor(_rand((2, 3, 3), 13), requires_grad=True)
    out = F.embedding(idx, w, padding_idx=2, scale_grad_by_freq=True)
    gw, = clgrad.autograd.grad(out, w, go, create_graph=True)
    u = _rand((5, 3), 14)
    h, = clgrad.autograd.grad((gw * clgrad.tensor(u)).sum(), go)
    rows = np.array([[1, 4, 2], [1, 0, 2]])
    count = np.array([1.0, 2.0, 2.0, 0.0, 1.0])[rows][..., None]
    expect = np.where((rows == 2)[..., None], 0.0, u[rows] / count)
    np.testing.assert_allclose(h.numpy(), expect, rtol=1e-14)


def test_nn_embedding_module_hessian_vector_product():
    # the module's own forward: d2/dw2 sum(emb(idx)^3) = 6 * count(row) * w (padding row 0)
    emb = clgrad.nn.Embedding(4, 2, padding_idx=3).double()
    idx = _long([[0, 2, 0], [3, 0, 1]])
    g, = clgrad.autograd.grad((emb(idx) ** 3).sum(), emb.weight, create_graph=True)
    h, = clgrad.autograd.grad(g.sum(), emb.weight)
    w = emb.weight.detach().numpy()
    count = np.array([3.0, 1.0, 1.0, 0.0]).reshape(4, 1)
    np.testing.assert_allclose(h.numpy(), 6 * count * w, rtol=1e-12)


SCATTERS = {
    "scatter_add": lambda x, s: clgrad.scatter_add(x, 0, _long([[0, 1, 1], [3, 3, 0]]), s) ** 2,
    "scatter_src": lambda x, s: clgrad.scatter(x, 0, _long([[0, 1], [3, 2]]), s) ** 2,
    "scatter_value": lambda x, s: clgrad.scatter(x * s.sum(), 1, _long([[0], [2], [1], [0]]),
                                                 0.5) ** 2,
    "scatter_reduce_add": lambda x, s: clgrad.scatter(x, 0, _long([[0, 1, 1], [0, 3, 0]]), s,
                                                      reduce="add") ** 2,
    "index_add": lambda x, s: clgrad.index_add(x, 0, _long([1, 1]), s, alpha=2.0) ** 2,
    "index_add_dim1": lambda x, s: clgrad.index_add(x, 1, _long([2, 0, 2]),
                                                    s[:1].expand(4, 3) * s[1]) ** 2,
    "index_copy": lambda x, s: x.index_copy(0, _long([3, 1]), s) ** 2,
    "put_accumulate": lambda x, s: x.put(_long([3, 1, 3]), s.reshape(-1)[:3],
                                         accumulate=True) ** 2,
    "masked_scatter": lambda x, s: x.masked_scatter(
        clgrad.tensor([[True, False, True], [False, False, True], [True, True, False],
                       [False, True, False]]), s) ** 2,
    "masked_fill": lambda x, s: x.masked_fill(clgrad.tensor([[True, False, True]]), 0.5) ** 2 *
    s.sum(),
    "slice_scatter": lambda x, s: clgrad.slice_scatter(x, s.sin(), 0, 1, 3) ** 2,
    "select_scatter": lambda x, s: clgrad.select_scatter(x, s[0], 0, 2) ** 2,
    "diagonal_scatter": lambda x, s: clgrad.diagonal_scatter(x, s[1, :2] * s[0, :2], 1) ** 2,
}


@pytest.mark.parametrize("name", list(SCATTERS))
def test_scatters_are_differentiable_twice_in_self_and_source(name):
    fn = SCATTERS[name]
    assert gradgradcheck(fn, (_leaf(_rand((4, 3), 2)), _leaf(_rand((2, 3), 3))))


# -- writes into a region of a tensor ----------------------------------------------------------
def _view_then_write(x, v):
    h = x * 1.0
    row = h[1]  # a view taken before the write: its grad_fn is regenerated (as_strided)
    h[2] = v[0].exp()
    return row ** 2 * h.sum(0)


def _expanded_view_then_write(x, v):
    h = x * 1.0
    e = h[0].expand(3, 3)  # an overlapping view: its regenerated gradient adds up
    h[1] = v[0] * 2.0
    return e ** 2 * h[1]


def _in_place_through_view(x, v):
    h = x * 1.0
    h[1:3].mul_(v[:2])
    h[:, 0].masked_fill_(clgrad.tensor([True, False, False, True]), 0.25)
    return h.sin()


WRITES = {
    "index_tensor": lambda x, v: _write(x, _long([2, 0, 3]), v * v) ** 2,
    "index_pairs": lambda x, v: _write(x, (_long([0, 2, 3]), _long([1, 1, 0])), v[0]) ** 2,
    "mask_tensor_value": lambda x, v: _write(x, clgrad.tensor([True, False, True, False]),
                                             v[:2]) ** 2,
    "mask_scalar_into_view": lambda x, v: _write(x, x.detach()[1:] > 0, 0.5,
                                                 lambda h: h[1:]) ** 2 * v[0, 0],
    "slice": lambda x, v: _write(x, slice(1, 3), v[:2].sin()) ** 2,
    "int_and_slice": lambda x, v: _write(x, (1, slice(1, None)), v[0, :2] * v[1, :2]) ** 3,
    "strided_view": lambda x, v: _write(x, (1, slice(None, None, 2)), v[0, :2],
                                        lambda h: h.t()) ** 2,
    "index_into_view": lambda x, v: _write(x, _long([0, 2]), v[0, :2].exp(),
                                           lambda h: h[:, 1]) ** 2,
    "index_put_accumulate": lambda x, v: (x * 1.0).index_put_(
        (_long([0, 0, 3]), _long([1, 1, 2])), v[0] * 2.0, accumulate=True) ** 2,
    "index_put": lambda x, v: clgrad.index_put(x, (_long([0, 2, 3]),), v[:1] * 2.0) ** 2,
    "view_then_write": _view_then_write,
    "expanded_view_then_write": _expanded_view_then_write,
    "in_place_through_view": _in_place_through_view,
}


@pytest.mark.parametrize("name", list(WRITES))
def test_region_writes_are_differentiable_twice(name):
    assert gradgradcheck(WRITES[name], (_leaf(_rand((4, 3), 4)), _leaf(_rand((3, 3), 5))))


# -- cumsum, cumprod ---------------------------------------------------------------------------
def test_cumsum_and_cumprod_are_differentiable_twice():
    x = _leaf(_rand((3, 4), 6))
    assert gradgradcheck(lambda a: a.cumsum(1) ** 2, (x,))
    assert gradgradcheck(lambda a: a.t().cumsum(1).sin(), (x,))
    assert gradgradcheck(lambda a: a.cumprod(0) * a, (x,))
    zeros = _leaf([[0.5, 0.0, 1.2, -0.7], [1.1, 0.9, 0.0, 0.0], [0.0, 1.3, -0.8, 2.0]])
    assert gradgradcheck(lambda a: a.cumprod(1) * a, (zeros,))  # exact through zeros
    # third order through cumsum's and cumprod's recorded backwards: d3/dx3 of x0 * x1 * x2
    # summed is 1 (the cumprod's last entry), so d/dx (d2 f / dx0 dx1) = e_2
    t = _leaf([0.5, 2.0, -1.5])
    g, = clgrad.autograd.grad(t.cumprod(0)[-1], t, create_graph=True)
    h, = clgrad.autograd.grad(g[0], t, create_graph=True)
    k, = clgrad.autograd.grad(h[1], t)
    np.testing.assert_allclose(k.numpy(), [0.0, 0.0, 1.0])
    s, = clgrad.autograd.grad((t.cumsum(0) ** 3).sum(), t, create_graph=True)
    hs, = clgrad.autograd.grad(s[0], t)  # d/dx_j sum_{i} 3 c_i^2 = 6 sum_{i >= j} c_i
    c = np.cumsum([0.5, 2.0, -1.5])
    np.testing.assert_allclose(hs.numpy(), 6 * np.cumsum(c[::-1])[::-1])


# -- custom autograd.Functions -----------------------------------------------------------------
def _functions(lib):
    """The test Functions, written once for clgrad and for PyTorch (lib: either module)."""
    class MyExp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)  # an output: re-attached for the double backward
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class MyMul(lib.autograd.Function):  # saved inputs, a non-tensor argument
        @staticmethod
        def forward(ctx, a, b, scale):
            ctx.save_for_backward(a, b)
            ctx.scale = scale
            return a * b * scale

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b * ctx.scale, g * a * ctx.scale, None

    class SinCos(lib.autograd.Function):  # two outputs, both saved
        @staticmethod
        def forward(ctx, x):
            s, c = x.sin(), x.cos()
            ctx.save_for_backward(s, c)
            return s, c

        @staticmethod
        def backward(ctx, gs, gc):
            s, c = ctx.saved_tensors
            return gs * c - gc * s

    class Square(lib.autograd.Function):  # a once-differentiable backward
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @(once_differentiable if lib is clgrad else
          lib.autograd.function.once_differentiable)
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2.0 * g * x
    return MyExp, MyMul, SinCos, Square


def test_function_backward_is_differentiable_twice():
    my_exp, my_mul, sin_cos, _ = _functions(clgrad)
    x, y = _leaf(_rand(3, 7)), _leaf(_rand(3, 8))
    assert gradgradcheck(lambda a: my_exp.apply(a * 1.0), (x,))
    assert gradgradcheck(lambda a, b: my_mul.apply(a, b * b, 1.5), (x, y))
    assert gradgradcheck(lambda a: sin_cos.apply(a), (x,))
    assert gradgradcheck(lambda a: sin_cos.apply(a)[1] * a, (x,))
    assert gradgradcheck(lambda a: my_exp.apply(sin_cos.apply(a)[0]) * a, (x,))
    # by hand: d2/dx2 exp(x) = exp(x) reaches x through the saved output only
    g, = clgrad.autograd.grad(my_exp.apply(x).sum(), x, create_graph=True)
    h, = clgrad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), np.exp(x.detach().numpy()), rtol=1e-14)


def test_function_saved_tensors_are_the_originals_in_double_backward():
    my_exp, my_mul, _, _ = _functions(clgrad)
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a):
            b = a * 2.0
            ctx.save_for_backward(a, b)
            return b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen.append((a, b.requires_grad, b.grad_fn))
            return g * 2.0
    x = _leaf([1.0, 2.0])
    h = x * 3.0
    out = Probe.apply(h)
    clgrad.autograd.grad(out.sum(), x, create_graph=True)
    a, b_rg, b_fn = seen[-1]
    assert a is h and a.grad_fn is h.grad_fn  # the saved input itself, with its grad_fn
    assert b_rg and b_fn is out.grad_fn  # the saved output, re-attached to the Function
    clgrad.autograd.grad(Probe.apply(h).sum(), x)  # first order: no graph asked for
    assert seen[-1][0] is h


def test_once_differentiable_raises_when_differentiated_twice():
    _, _, _, square = _functions(clgrad)
    x = _leaf([0.5, -1.0, 2.0])
    g, = clgrad.autograd.grad(square.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [1.0, -2.0, 4.0])  # first order works
    assert not g.requires_grad  # its grad_output needed none: no graph (as PyTorch)
    go = clgrad.ones(3, dtype=F64, requires_grad=True)
    g, = clgrad.autograd.grad(square.apply(x), x, go, create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked "
                                           "with @once_differentiable"):
        g.sum().backward()
    with pytest.raises(RuntimeError, match="@once_differentiable"):
        gradgradcheck(lambda a: square.apply(a), (x,))
    y = square.apply(x).sum()  # a plain backward is unchanged
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -2.0, 4.0])


def test_still_not_differentiable_twice_raises_naming_the_op():
    # svdvals' backward reads the host SVD's singular vectors as constants (README lists
    # what is differentiable; scatter_reduce is now: tests/test_higher_order_more.py)
    x = _leaf(_rand((2, 3), 9))
    with pytest.raises(RuntimeError, match="backward of 'linalg_svdvals'.*not differentiable"):
        gradgradcheck(lambda a: clgrad.linalg.svdvals(a) ** 2, (x,))


# -- against PyTorch ---------------------------------------------------------------------------
@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def _hvp(lib, fn, arrays, vs, idx):
    """(gradients, Hessian-vector products) of fn(lib, idx, *xs) as NumPy arrays."""
    xs = [lib.tensor(a, requires_grad=True) for a in arrays]
    gs = lib.autograd.grad(fn(lib, idx, *xs), xs, create_graph=True)
    dot = sum((g * lib.tensor(v)).sum() for g, v in zip(gs, vs))
    hs = lib.autograd.grad(dot, xs)
    return [g.detach().numpy() for g in gs], [h.numpy() for h in hs]


def _embedding_net(lib, idx, w, lin):
    e = lib.nn.functional.embedding(idx[0], w, padding_idx=2)
    return ((e.tanh() @ lin) ** 2).sum()


def _gather_net(lib, idx, x, w):
    h = (x[idx[1]] * w[:3]).tanh()                   # getitem with an index tensor
    h = lib.gather(h, 1, idx[2]) + x.index_select(0, idx[3])[:, :1]
    m = lib.zeros(5, 3, dtype=lib.float64).index_add(0, idx[3], (x * w)[:3])
    return (h.sin() * m[:3, :1]).sum() + lib.scatter_add(x, 0, idx[2], w[:3, :1]
                                                         .expand(3, 2) * 1.0).pow(3).sum()


def _write_net(lib, idx, x, v):
    h = x * 1.0
    h[idx[1]] = v[:3].sin()
    h[1:3, 0] = v[3, :2] * v[4, :2]
    h.index_put_((idx[3], idx[2][:, 0]), v[:3, 2], accumulate=True)
    return (h ** 3).sum() + (h.cumsum(1) * h.cumprod(0)).sum()


NETS = {
    "embedding": (_embedding_net, [(5, 3), (3, 4)]),
    "gathers": (_gather_net, [(4, 3), (4, 3)]),
    "writes": (_write_net, [(4, 3), (5, 3)]),
}


@pytest.mark.parametrize("name", list(NETS))
def test_hessian_vector_products_match_pytorch(torch, name):
    fn, shapes = NETS[name]
    arrays = [_rand(s, 10 + k) for k, s in enumerate(shapes)]
    vs = [_rand(s, 20 + k) for k, s in enumerate(shapes)]
    raw = [np.array([[1, 4, 2], [1, 0, 2]]), np.array([2, 0, 3]),
           np.array([[0, 1], [2, 0], [1, 1]]), np.array([3, 1, 3])]
    ours = _hvp(clgrad, fn, arrays, vs, [clgrad.tensor(r) for r in raw])
    theirs = _hvp(torch, fn, arrays, vs, [torch.tensor(r) for r in raw])
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _penalty_grads(lib, x0, w0, idx):
    """A WGAN-GP style gradient penalty through gathers: d/dw (|d critic / dx| - 1)^2."""
    x = lib.tensor(x0, requires_grad=True)
    w = lib.tensor(w0, requires_grad=True)
    critic = (lib.take_along_dim(x, idx, 1) * w[:, :2]).tanh().sum() + \
        lib.embedding(x, idx[:, 0]).pow(2).sum() + x[x.detach() > 0].pow(3).sum()
    g, = lib.autograd.grad(critic, x, create_graph=True)
    penalty = (g.norm() - 1.0) ** 2
    return [t.numpy() for t in lib.autograd.grad(penalty, (x, w))]


def test_gradient_penalty_through_gathers_matches_pytorch(torch):
    x0, w0 = _rand((4, 3), 30), _rand((4, 3), 31)
    idx = np.array([[0, 2], [1, 1], [2, 0], [0, 1]])
    ours = _penalty_grads(clgrad, x0, w0, clgrad.tensor(idx))
    theirs = _penalty_grads(torch, x0, w0, torch.tensor(idx))
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def _maml(lib, w0, e0, idx, y0):
    """One MAML inner step through an embedding and a custom Function, then the outer
    gradient of the adapted parameters' loss w.r.t. the initial ones."""
    my_exp, my_mul, sin_cos, _ = _functions(lib)
    w = lib.tensor(w0, requires_grad=True)
    e = lib.tensor(e0, requires_grad=True)
    y = lib.tensor(y0)

    def loss(w, e):
        h = lib.nn.functional.embedding(idx, e)             # (2, 3, 3)
        s, c = sin_cos.apply(h @ w)
        p = my_mul.apply(my_exp.apply(s * 0.5), c, 0.7).sum(1)
        return ((p - y) ** 2).mean()
    gw, ge = lib.autograd.grad(loss(w, e), (w, e), create_graph=True)
    w1, e1 = w - 0.1 * gw, e - 0.1 * ge
    return [t.numpy() for t in lib.autograd.grad(loss(w1, e1), (w, e))]


def test_maml_step_through_embedding_and_functions_matches_pytorch(torch):
    w0, e0, y0 = _rand((3, 2), 40), _rand((5, 3), 41), _rand((2, 2), 42)
    idx = np.array([[0, 3, 3], [4, 1, 0]])
    ours = _maml(clgrad, w0, e0, clgrad.tensor(idx), y0)
    theirs = _maml(torch, w0, e0, torch.tensor(idx), y0)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_once_differentiable_error_matches_pytorch(torch):
    errors = []
    for lib in (clgrad, torch):
        square = _functions(lib)[3]
        x = lib.tensor([0.5, 2.0], dtype=lib.float64, requires_grad=True)
        go = lib.ones(2, dtype=lib.float64, requires_grad=True)
        g, = lib.autograd.grad(square.apply(x), x, go, create_graph=True)
        with pytest.raises(RuntimeError) as info:
            g.sum().backward()
        errors.append(str(info.value))
    assert errors[0] == errors[1]
