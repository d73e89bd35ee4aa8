"""User-defined autograd Functions, tensor hooks, inference_mode and create_graph through a
Function (clgrad/autograd/), against hand values and float64 finite differences."""
import gc

import numpy as np
import pytest

import clgrad
from clgrad.autograd import Function, gradcheck

F64 = clgrad.float64


def leaf(*shape, seed=0):
    return clgrad.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


class MyExp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)  # saving the output: held as an alias, no reference cycle
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class MyLinear(Function):
    """y = x @ w.T + b, with a non-tensor scale argument and ctx.needs_input_grad."""

    @staticmethod
    def forward(ctx, x, w, b, scale):
        ctx.save_for_backward(x, w)
        ctx.scale = scale
        return (x @ w.t() + b) * scale

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        g = g * ctx.scale
        gx = g @ w if ctx.needs_input_grad[0] else None
        gw = g.t() @ x if ctx.needs_input_grad[1] else None
        gb = g.sum(0) if ctx.needs_input_grad[2] else None
        return gx, gw, gb, None


class SplitTwo(Function):
    """Two differentiable outputs and an int output marked non-differentiable."""

    @staticmethod
    def forward(x):  # the newer style: forward without ctx, plus setup_context
        return x * 2.0, x.sin(), clgrad.tensor([0, 1])

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.mark_non_differentiable(output[2])

    @staticmethod
    def backward(ctx, ga, gb, gidx):
        (x,) = ctx.saved_tensors
        return ga * 2.0 + gb * x.cos()


def test_custom_exp_values_and_gradcheck():
    x = leaf(5)
    y = MyExp.apply(x)
    assert y.grad_fn is not None and y.grad_fn.name == "MyExp"
    np.testing.assert_allclose(y.detach().numpy(), np.exp(x.detach().numpy()))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()))
    assert gradcheck(MyExp.apply, (leaf(3, 2, seed=1),))


def test_custom_linear_gradcheck_and_needs_input_grad():
    x, w, b = leaf(4, 3, seed=1), leaf(2, 3, seed=2), leaf(2, seed=3)
    assert gradcheck(lambda x, w, b: MyLinear.apply(x, w, b, 0.5), (x, w, b))
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, k, c):
            seen.append(ctx.needs_input_grad)
            return a * k + c

        @staticmethod
        def backward(ctx, g):
            return g * 3.0, None, None

    c = clgrad.tensor(np.ones(4))  # does not require grad
    Probe.apply(x[:, 0], 3, c).sum().backward()
    assert seen == [(True, False, False)]


def test_several_outputs_and_non_differentiable():
    x = leaf(3, seed=4)
    a, s, idx = SplitTwo.apply(x)
    assert not idx.requires_grad and idx.dtype is clgrad.int64
    (a.sum() + (s * 3.0).sum()).backward()
    xn = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 + 3.0 * np.cos(xn))
    assert gradcheck(lambda t: SplitTwo.apply(t)[:2], (leaf(4, seed=5),))


def test_unused_output_gets_zeros_or_none():
    got = []

    class Two(Function):
        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 1.0, x * 2.0

        @staticmethod
        def backward(ctx, g1, g2):
            got.append(g2 if g2 is None else g2.numpy().tolist())
            return g1, None

    for materialize in (True, False):
        x = leaf(2)
        Two.apply(x, materialize)[0].sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])
    assert got == [[0.0, 0.0], None]


def test_input_returned_as_is_gets_a_new_alias():
    class Ident(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5.0

    x = leaf(3)
    y = Ident.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0] * 3)


def test_saved_tensor_modified_in_place_raises():
    x = leaf(3)
    y = MyExp.apply(x)
    with clgrad.no_grad():
        y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("ret,match", [
    (lambda g: (g, g), r"incorrect number of gradients \(expected 1, got 2\)"),
    (lambda g: g[:1], r"invalid gradient at index 0 - got \(1,\) but expected shape"),
])
def test_bad_backward_results_raise(ret, match):
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return ret(g)

    with pytest.raises(RuntimeError, match=match):
        Bad.apply(leaf(3)).sum().backward()


def test_gradient_for_a_non_tensor_argument_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="position 1, but the corresponding forward input "
                                           "was not a Tensor"):
        Bad.apply(leaf(3), 2.0).sum().backward()


def test_function_graph_is_freed_without_cycles():
    gc.collect()
    before = clgrad.memory_allocated()
    gc.disable()
    try:
        for _ in range(3):
            MyExp.apply(leaf(1000)).sum().backward()
    finally:
        gc.enable()
    assert clgrad.memory_allocated() == before


def test_once_differentiable_import_path():
    from clgrad.autograd.function import FunctionCtx, once_differentiable
    assert once_differentiable is clgrad.autograd.function.once_differentiable
    assert FunctionCtx is clgrad.autograd.FunctionCtx
    wrapped = once_differentiable(MyExp.backward)
    assert wrapped.__name__ == "backward" and wrapped.__wrapped__ is MyExp.backward


def test_function_against_pytorch():
    torch = pytest.importorskip("torch")
    x, w, b = (np.random.default_rng(s).standard_normal(sh) for s, sh in
               [(1, (4, 3)), (2, (2, 3)), (3, (2,))])
    ct = [clgrad.tensor(a, requires_grad=True) for a in (x, w, b)]
    tt = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    (MyLinear.apply(*ct, 0.5) ** 2).sum().backward()
    (torch.nn.functional.linear(*tt) * 0.5).pow(2).sum().backward()
    for c, t in zip(ct, tt):
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=1e-12)


# -- hooks ------------------------------------------------------------------------------------
def test_hook_on_a_leaf_sees_and_replaces_the_gradient():
    x = leaf(3)
    seen = []
    h = x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10.0)
    y = x * 2.0
    (y + x).sum().backward()  # two paths: the hook sees their total once
    np.testing.assert_array_equal(seen[0], [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), [30.0] * 3)
    h.remove()
    x.grad = None
    (x * 2.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0] * 3)
    assert len(seen) == 1


def test_hook_on_a_non_leaf_runs_before_retain_grad_and_flows_on():
    x = leaf(3)
    y = x * 3.0
    y.retain_grad()
    calls = []
    y.register_hook(lambda g: calls.append(1))  # returns None: gradient unchanged
    y.register_hook(lambda g: g + 1.0)
    (y * 2.0).sum().backward()
    assert calls == [1]
    np.testing.assert_array_equal(y.grad.numpy(), [3.0] * 3)  # 2 + 1
    np.testing.assert_array_equal(x.grad.numpy(), [9.0] * 3)


def test_hook_runs_in_autograd_grad_and_on_tensor_without_grad_raises():
    x = leaf(2)
    x.register_hook(lambda g: g * 0.5)
    (g,) = clgrad.autograd.grad((x * 4.0).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        clgrad.zeros(2).register_hook(lambda g: g)


def test_hook_returning_a_wrong_shape_raises():
    x = leaf(3)
    x.register_hook(lambda g: g[:2])
    with pytest.raises(RuntimeError, match=r"has changed the size of value \(was \(3,\)"):
        (x * 1.0).sum().backward()


def test_hook_handle_as_context_manager():
    x = leaf(2)
    with x.register_hook(lambda g: g * 0.0):
        (x * 1.0).sum().backward()
    (x * 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


# -- inference_mode, create_graph -------------------------------------------------------------
def test_inference_mode_context_and_decorators():
    x = leaf(2)
    with clgrad.inference_mode():
        assert not (x * 2.0).requires_grad
    with clgrad.inference_mode(False):
        assert (x * 2.0).requires_grad
    for decorate in (clgrad.inference_mode(), clgrad.inference_mode):  # @x() and bare @x
        double = decorate(lambda t: t * 2.0)
        assert clgrad.is_grad_enabled() and not double(x).requires_grad


def test_create_graph_through_a_function_differentiates_its_backward():
    # PyTorch's double backward of a Function: its backward runs with grad mode on, the saved
    # output re-attached to the Function's node, so d2/dx2 exp(x) = exp(x) flows through
    # both the saved output and the gradient (tests/test_higher_order_index.py has more)
    x = leaf(2)
    y = MyExp.apply(x).sum()
    g, = clgrad.autograd.grad(y, x, create_graph=True)
    assert g.grad_fn is not None
    h, = clgrad.autograd.grad(g.sum(), x, retain_graph=True)
    np.testing.assert_allclose(h.numpy(), np.exp(x.detach().numpy()))
    y.backward(create_graph=True)
    assert x.grad.grad_fn is not None
    np.testing.assert_allclose(x.grad.detach().numpy(), np.exp(x.detach().numpy()))
