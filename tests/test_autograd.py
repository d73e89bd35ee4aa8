"""The tape (clgrad/autograd/): PyTorch's autograd semantics, in-place writes through views,
version checks, grad modes, memory, deep graphs, and a property test of view gradients.

Oracles: NumPy in float64 (analytic derivatives, ``np.add.at`` for scatters) and gradcheck.
"""
import gc
import os
import sys
import threading
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from clgrad import autograd, layout
from clgrad.autograd import gradcheck

f64 = clgrad.float64
RNG = np.random.default_rng(7)


def leaf(values, requires_grad=True):
    return clgrad.tensor(np.asarray(values, dtype=np.float64), dtype=f64,
                         requires_grad=requires_grad)


def rand_leaf(*shape, lo=-2.0, hi=2.0):
    return leaf(RNG.uniform(lo, hi, size=shape))


def close(t, expected, **kw):
    np.testing.assert_allclose(t.detach().numpy(), expected, rtol=1e-10, atol=1e-12, **kw)


# -- attributes -------------------------------------------------------------------------------
def test_leaf_and_non_leaf_attributes():
    x = leaf([1.0, 2.0, 3.0], requires_grad=False)
    assert not x.requires_grad and x.is_leaf and x.grad is None and x.grad_fn is None
    assert x.requires_grad_() is x
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    y = x * 2.0
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name == "mul"
    edges = y.grad_fn.next_functions  # PyTorch's (node, input_nr) pairs
    assert len(edges) == 2 and edges[0][0].variable is x and edges[1] == (None, 0)
    assert "grad_fn=<MulBackward0>" in repr(y)  # PyTorch's name
    z = leaf([1.0]) * leaf([2.0], requires_grad=False)
    assert z.grad_fn.next_functions[1] == (None, 0)
    plain = leaf([1.0], requires_grad=False) * 3.0
    assert not plain.requires_grad and plain.grad_fn is None and plain.is_leaf


def test_requires_grad_rules():
    y = rand_leaf(3) * 2.0
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False
    assert y.requires_grad_(True) is y  # allowed on a non-leaf, as PyTorch
    with pytest.raises(RuntimeError, match="floating point"):
        clgrad.tensor([1, 2, 3]).requires_grad_()
    x = rand_leaf(2)
    x.requires_grad = False
    assert not (x * 2.0).requires_grad


def test_grad_setter_checks_shape():
    x = rand_leaf(2, 3)
    with pytest.raises(RuntimeError, match=r"expected shape \(2, 3\)"):
        x.grad = clgrad.zeros(3, dtype=f64)
    with pytest.raises(TypeError):
        x.grad = np.zeros((2, 3))
    x.grad = clgrad.ones(2, 3, dtype=f64)
    (x * 2.0).sum().backward()
    close(x.grad, np.full((2, 3), 3.0))


# -- backward ---------------------------------------------------------------------------------
def test_backward_matches_numpy_with_broadcasting():
    a_np, b_np = RNG.normal(size=(3, 1)), RNG.normal(size=(4,))
    a, b = leaf(a_np), leaf(b_np)
    ((a * b).exp() + a).sum().backward()
    e = np.exp(a_np * b_np)
    close(a.grad, (e * b_np).sum(1, keepdims=True) + 4)
    close(b.grad, (e * a_np).sum(0))
    assert a.grad.shape == (3, 1) and a.grad.is_contiguous()


def test_backward_implicit_gradient_only_for_one_element():
    x = rand_leaf(3)
    (x * 2.0).sum().reshape(1, 1).backward()
    close(x.grad, [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        (x * 2.0).backward()
    g = RNG.normal(size=3)
    x.grad = None
    (x * 2.0).backward(leaf(g, requires_grad=False))
    close(x.grad, 2 * g)
    x.grad = None
    (x * 2.0).backward(g.tolist())  # anything clgrad.tensor takes
    close(x.grad, 2 * g)
    with pytest.raises(RuntimeError, match=r"expected gradient of shape \(3,\), got \(2,\)"):
        (x * 2.0).backward(clgrad.zeros(2, dtype=f64))


def test_backward_of_several_tensors():
    x_np = RNG.normal(size=3)
    x = leaf(x_np)
    g = RNG.normal(size=3)
    autograd.backward([x.sin(), (x * x).sum()], [leaf(g, False), None])
    close(x.grad, np.cos(x_np) * g + 2 * x_np)
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad"):
        autograd.backward([x.sum(), leaf([1.0], False).sum()])


def test_backward_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        leaf([1.0], requires_grad=False).sum().backward()


def test_backward_of_a_leaf_copies_the_gradient():
    x = rand_leaf(3)
    g = leaf([1.0, 2.0, 3.0], requires_grad=False)
    x.backward(g)
    close(x.grad, [1.0, 2.0, 3.0])
    g.add_(1.0)
    close(x.grad, [1.0, 2.0, 3.0])  # x.grad is not an alias of g


def test_gradients_accumulate_across_backward_calls():
    x_np = RNG.normal(size=(2, 3))
    x = leaf(x_np)
    (x * x).sum().backward()
    first = x.grad
    close(first, 2 * x_np)
    (x.sin()).sum().backward()
    assert x.grad is first  # accumulated in place into the same dense tensor
    close(x.grad, 2 * x_np + np.cos(x_np))
    x.grad.zero_()
    (x * 3.0).sum().backward()
    close(x.grad, np.full((2, 3), 3.0))


def test_leaf_gradients_never_alias_each_other():
    a, b = rand_leaf(3), rand_leaf(3)
    (a + b).sum().backward()  # add sends the same gradient tensor to both inputs
    a.grad.add_(1.0)
    close(b.grad, np.ones(3))
    close(a.grad, np.full(3, 2.0))
    assert a.grad.untyped_storage() is not b.grad.untyped_storage()


def test_a_tensor_used_twice_gets_both_gradients():
    x_np = RNG.normal(size=4)
    x = leaf(x_np)
    y = x.exp()
    (y * y + y[::-1] * x).sum().backward()
    e = np.exp(x_np)
    close(x.grad, 2 * e * e + e * x_np[::-1] + e[::-1])


def test_gradient_dtype_follows_the_leaf():
    x = clgrad.tensor([1.0, 2.0], requires_grad=True)  # float32
    (x.double() * 3.0).sum().backward()
    assert x.grad.dtype is clgrad.float32
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_second_backward_raises_unless_retain_graph():
    x_np = RNG.normal(size=3)
    x = leaf(x_np)
    y = x.exp().sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, 2 * np.exp(x_np))
    with pytest.raises(RuntimeError, match=r"backward through the graph a second time "
                                           r"\(through exp\).*retain_graph=True"):
        y.backward()


def test_second_backward_through_nodes_that_saved_nothing_works():
    x = rand_leaf(3)
    y = (x * 2.0 + 1.0).sum()  # mul by a number, add, sum: nothing saved (as PyTorch)
    y.backward()
    y.backward()
    close(x.grad, np.full(3, 4.0))


def test_saved_tensors_are_freed_by_backward(no_gc):
    x = rand_leaf(1000)
    m0 = clgrad.memory_allocated()
    y = x.exp()
    z = y.sum()
    del y  # exp's Node still holds its output (saved for backward)
    held = clgrad.memory_allocated()
    assert held == m0 + 8000 + 8  # y's buffer and z
    z.backward()
    assert clgrad.memory_allocated() == m0 + 8 + 8000  # y's buffer freed; x.grad added


# -- autograd.grad ----------------------------------------------------------------------------
def test_grad_returns_without_accumulating():
    x_np, w_np = RNG.normal(size=3), RNG.normal(size=3)
    x, w = leaf(x_np), leaf(w_np)
    h = x * w
    out = h.tanh().sum()
    gx, gh = autograd.grad(out, [x, h], retain_graph=True)
    t = 1 - np.tanh(x_np * w_np) ** 2
    close(gh, t)
    close(gx, t * w_np)
    assert x.grad is None and w.grad is None and h.grad is None
    (gw,) = autograd.grad(out, w)
    close(gw, t * x_np)
    with pytest.raises(RuntimeError, match="second time"):
        autograd.grad(out, w)


def test_grad_with_grad_outputs_and_several_outputs():
    x_np = RNG.normal(size=(2, 2))
    x = leaf(x_np)
    g1, g2 = RNG.normal(size=(2, 2)), RNG.normal(size=(2,))
    (gx,) = autograd.grad([x * 2.0, x.sum(0)], [x],
                          grad_outputs=[leaf(g1, False), leaf(g2, False)])
    close(gx, 2 * g1 + g2[None, :])


def test_grad_unused_and_non_differentiable_inputs():
    x, y = rand_leaf(2), rand_leaf(2)
    out = (x * 2.0).sum()
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        autograd.grad(out, [x, y], retain_graph=True)
    gx, gy = autograd.grad(out, [x, y], allow_unused=True)
    close(gx, [2.0, 2.0])
    assert gy is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(out, [leaf([1.0], requires_grad=False)])


# -- retain_grad, detach ----------------------------------------------------------------------
def test_retain_grad():
    x_np = RNG.normal(size=3)
    x = leaf(x_np)
    h = x.sin()
    h.retain_grad()
    assert h.retains_grad
    x.retain_grad()  # a no-op on a leaf
    assert not x.retains_grad
    (h * h).sum().backward(retain_graph=True)
    close(h.grad, 2 * np.sin(x_np))
    (h * h).sum().backward()
    close(h.grad, 4 * np.sin(x_np))  # accumulates too
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        leaf([1.0], requires_grad=False).retain_grad()


def test_retain_grad_follows_an_in_place_write():
    x_np = RNG.normal(size=3)
    x = leaf(x_np)
    h = x.sin()
    h.retain_grad()
    h.mul_(3.0)
    (h * 2.0).sum().backward()
    close(h.grad, np.full(3, 2.0))  # the gradient w.r.t. h's current value, counted once
    close(x.grad, 6 * np.cos(x_np))


def test_detach_shares_storage_and_leaves_the_graph():
    x = rand_leaf(2, 3)
    y = x * 2.0
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.untyped_storage() is y.untyped_storage()
    d.fill_(1.0)  # no autograd error: d is outside the graph
    close(y, np.ones((2, 3)))
    assert y.grad_fn.name == "mul"  # y's graph is untouched
    y.sum().backward()
    close(x.grad, np.full((2, 3), 2.0))


def test_detached_view_of_a_parameter_writes_without_no_grad():
    w = leaf(np.arange(6.0).reshape(2, 3))
    dv = w[:, 1:].detach()
    assert dv.is_leaf and not dv.requires_grad
    dv.zero_()
    close(w, [[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]])
    w.detach()[1].mul_(2.0)
    close(w, [[0.0, 0.0, 0.0], [6.0, 0.0, 0.0]])
    # a detached view keeps a graph of its own when written with a value that needs one
    v = leaf([5.0, 7.0])
    dv[:, 0].copy_(v * 2.0)
    assert dv.requires_grad and w.grad_fn is None
    (dv * leaf([[1.0, 10.0], [100.0, 1000.0]], False)).sum().backward()
    close(v.grad, [2.0, 200.0])
    assert w.grad is None


def test_detach_bumps_the_shared_version():
    x = rand_leaf(3)
    y = x.exp()
    s = y.sum()
    y.detach().zero_()
    with pytest.raises(RuntimeError, match=r"saved by exp is at version 1; expected version 0"):
        s.backward()


def test_detach_in_place():
    x_np = RNG.normal(size=3)
    x = leaf(x_np)
    y = x * 2.0
    assert y.detach_() is y
    assert y.is_leaf and not y.requires_grad
    z = x * y
    z.sum().backward()
    close(x.grad, 2 * x_np)  # no path through y any more
    v = (x * 1.0)[1:]
    with pytest.raises(RuntimeError, match="can't detach views in-place"):
        v.detach_()


# -- grad modes -------------------------------------------------------------------------------
def test_no_grad_records_nothing():
    x = rand_leaf(3)
    with clgrad.no_grad():
        assert not clgrad.is_grad_enabled()
        y = (x * 2.0).exp()[1:]
        z = clgrad.cat([x, x]).sum()
        with clgrad.enable_grad():
            w = x * 3.0
        assert not clgrad.is_grad_enabled()
    assert clgrad.is_grad_enabled()
    for t in (y, z):
        assert not t.requires_grad and t.grad_fn is None and t.is_leaf
    assert w.grad_fn.name == "mul"


def test_grad_modes_as_decorators():
    @clgrad.no_grad()
    def f(x):
        return x * 2.0

    @clgrad.no_grad
    def g(x):
        return x * 2.0

    @clgrad.enable_grad()
    def h(x):
        return x * 2.0

    @clgrad.set_grad_enabled(False)
    def k(x):
        return x * 2.0

    assert clgrad.is_grad_enabled()  # decorating changes nothing
    x = rand_leaf(2)
    assert not f(x).requires_grad and not g(x).requires_grad and not k(x).requires_grad
    with clgrad.no_grad():
        assert h(x).requires_grad
        assert not clgrad.is_grad_enabled()
    assert clgrad.is_grad_enabled()


def test_decorated_recursion_and_exceptions_restore_the_mode():
    @clgrad.no_grad()
    def rec(n):
        assert not clgrad.is_grad_enabled()
        return 0 if n == 0 else rec(n - 1) + 1

    assert rec(5) == 5 and clgrad.is_grad_enabled()
    with pytest.raises(ValueError):
        with clgrad.no_grad():
            raise ValueError
    assert clgrad.is_grad_enabled()


def test_set_grad_enabled_as_statement_and_context():
    x = rand_leaf(2)
    with clgrad.set_grad_enabled(False):
        assert not (x * 2.0).requires_grad
    assert clgrad.is_grad_enabled()
    try:
        clgrad.set_grad_enabled(False)
        assert not clgrad.is_grad_enabled()
        with clgrad.set_grad_enabled(True):
            assert (x * 2.0).requires_grad
        assert not clgrad.is_grad_enabled()
    finally:
        clgrad.set_grad_enabled(True)
    assert clgrad.is_grad_enabled()


def test_grad_mode_is_per_thread():
    seen = []
    with clgrad.no_grad():
        t = threading.Thread(target=lambda: seen.append(clgrad.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


# -- in-place writes: what raises -------------------------------------------------------------
def test_in_place_on_a_leaf_raises_outside_no_grad():
    w = rand_leaf(2, 3)
    for write in (lambda: w.add_(1.0), lambda: w.mul_(w), lambda: w.zero_(),
                  lambda: w.__setitem__(0, 1.0), lambda: w[:, 1].mul_(2.0),
                  lambda: w.T[0].copy_(clgrad.zeros(2, dtype=f64))):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            write()
    assert w._version == 0


def test_in_place_on_a_leaf_works_under_no_grad():
    w_np = RNG.normal(size=(2, 3))
    w = leaf(w_np)
    (w * w).sum().backward()
    with clgrad.no_grad():
        w.sub_(w.grad * 0.25)  # an SGD step
        w[0, 0] = 5.0
    expected = w_np - 0.5 * w_np
    expected[0, 0] = 5.0
    close(w, expected)
    assert w.is_leaf and w.requires_grad and w._version == 2


def test_writes_into_overlapping_targets_raise():
    x = leaf([1.0, 2.0], requires_grad=False)
    with pytest.raises(RuntimeError, match="more than one element"):
        x[:1].expand(3).add_(1.0)
    with pytest.raises(RuntimeError, match="more than one element"):
        (rand_leaf(5) * 1.0).unfold(0, 3, 1).mul_(2.0)


def test_op_in_place_through_a_view_made_under_no_grad_raises():
    y = rand_leaf(4) * 1.0
    with clgrad.no_grad():
        v = y[1:3]
    with pytest.raises(RuntimeError, match="created in no_grad mode"):
        v.mul_(2.0)


# -- version checks ---------------------------------------------------------------------------
@pytest.mark.parametrize("write", ["direct", "view", "other_view", "detached", "no_grad"])
def test_modified_saved_output_raises_naming_op_and_versions(write):
    x = rand_leaf(4)
    y = x.exp()
    loss = y.sum()
    if write == "direct":
        y.add_(1.0)
    elif write == "view":
        y.narrow(0, 1, 1).mul_(2.0)  # the example of the issue: exp saved y
    elif write == "other_view":
        y.view(2, 2).T[0].zero_()
    elif write == "detached":
        y.detach()[3:].fill_(0.0)
    else:
        with clgrad.no_grad():
            y[0] = 3.0
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: a tensor of "
                                           r"shape \(4,\) saved by exp is at version 1; "
                                           r"expected version 0"):
        loss.backward()


def test_modified_saved_input_raises():
    x, w = rand_leaf(3), rand_leaf(3)
    y = x * 1.0
    z = y * w  # mul saves y for w's gradient
    y.add_(1.0)
    with pytest.raises(RuntimeError, match=r"saved by mul is at version 1; expected version 0"):
        z.sum().backward()


def test_modified_index_raises():
    x = rand_leaf(4, 3)
    idx = clgrad.tensor([0, 2, 2])
    out = x.index_select(0, idx)
    idx[0] = 1
    with pytest.raises(RuntimeError, match="saved by index_select"):
        out.sum().backward()
    vals, ind = x.max(1)
    ind.zero_()
    with pytest.raises(RuntimeError, match="saved by max"):
        vals.sum().backward()


def test_writes_that_nothing_saved_are_fine():
    x_np = RNG.normal(size=4)
    x = leaf(x_np)
    y = x * 2.0
    z = (y + 1.0).sum()  # add and sum save nothing
    with clgrad.no_grad():
        y.zero_()
    z.backward()
    close(x.grad, np.full(4, 2.0))


# -- in-place writes: what rebases ------------------------------------------------------------
def test_in_place_through_a_view_of_a_non_leaf_rebases():
    # The example of the issue: y = x.sin(); y.narrow(0, 1, 1).mul_(2).
    x_np = RNG.normal(size=5)
    x = leaf(x_np)
    y = x.sin()
    y.narrow(0, 1, 1).mul_(2)
    assert y.grad_fn.name == "copy_slices"
    expected_y = np.sin(x_np)
    expected_y[1] *= 2
    close(y, expected_y)
    y.sum().backward()
    expected = np.cos(x_np)
    expected[1] *= 2
    close(x.grad, expected)


def test_in_place_ops_that_read_self_use_the_old_value():
    x_np, w_np = RNG.uniform(0.5, 2.0, size=4), RNG.normal(size=4)
    x, w = leaf(x_np), leaf(w_np)
    y = x.sin()
    y.mul_(w)     # w's gradient needs the old y
    y.pow_(2.0)   # needs the value before pow
    y.log_()      # needs the value before log
    y.sum().backward()
    # y = log((sin x * w)^2) = 2 log|sin x| + 2 log|w|
    close(x.grad, 2 * np.cos(x_np) / np.sin(x_np))
    close(w.grad, 2 / w_np)


def test_write_a_value_that_requires_grad_into_a_plain_buffer():
    # Building a tensor slice by slice: the buffer joins the graph.
    a_np, b_np = RNG.normal(size=(2, 3)), RNG.normal(size=3)
    a, b = leaf(a_np), leaf(b_np)
    buf = clgrad.zeros(4, 3, dtype=f64)
    buf[1:3] = a * 2.0
    buf[3].copy_(b.exp())
    buf[0, ::2] = 7.0
    assert buf.requires_grad and not buf.is_leaf
    w_np = RNG.normal(size=(4, 3))
    (buf * leaf(w_np, False)).sum().backward()
    close(a.grad, 2 * w_np[1:3])
    close(b.grad, np.exp(b_np) * w_np[3])


def test_overwriting_a_region_cuts_its_gradient():
    x_np = RNG.normal(size=(3, 4))
    x = leaf(x_np)
    y = x * 3.0
    y[:, 1::2] = 0.0
    y.T[0].fill_(2.0)
    w_np = RNG.normal(size=(3, 4))
    (y * leaf(w_np, False)).sum().backward()
    expected = 3 * w_np
    expected[:, 1::2] = 0
    expected[:, 0] = 0
    close(x.grad, expected)


def test_whole_tensor_copy_rebases_onto_the_source():
    x, v = rand_leaf(3), rand_leaf(3)
    y = x.sin()
    y.copy_(v * 5.0)  # y's old value is gone: no gradient to x
    y.sum().backward()
    close(v.grad, np.full(3, 5.0))
    assert x.grad is None


def test_views_taken_before_a_write_see_the_new_graph():
    x_np = RNG.normal(size=6)
    x = leaf(x_np)
    y = x.cos()
    early = y[2:5]           # taken before the write
    other = y.view(2, 3).T   # also
    y[0:3].mul_(3.0)         # overlaps early at index 2
    assert early.grad_fn.name == "as_strided"
    w1, w2 = RNG.normal(size=3), RNG.normal(size=(3, 2))
    ((early * leaf(w1, False)).sum() + (other * leaf(w2, False)).sum()).backward()
    d = -np.sin(x_np)
    scale = np.array([3.0, 3, 3, 1, 1, 1])
    expected = np.zeros(6)
    expected[2:5] += w1
    expected += w2.T.reshape(-1)
    close(x.grad, expected * scale * d)


def test_write_through_views_of_views_with_steps():
    x_np = RNG.normal(size=(4, 5))
    x = leaf(x_np)
    y = x.exp() * 1.0  # exp's saved output is not y
    v = y.T[::-2, 1:].diagonal()  # y[3, 4], y[2, 3]... walked with negative steps
    pos = [(1 + i, 4 - 2 * i) for i in range(v.shape[0])]
    v.add_(leaf([10.0, 20.0, 30.0], False))
    v.mul_(v)  # reads its own old value
    w_np = RNG.normal(size=(4, 5))
    (y * leaf(w_np, False)).sum().backward()
    e = np.exp(x_np)
    expected = e * w_np
    for k, (i, j) in enumerate(pos):
        expected[i, j] = 2 * (e[i, j] + 10.0 * (k + 1)) * e[i, j] * w_np[i, j]
    close(x.grad, expected)


INPLACE_CASES = {
    "narrow_mul": lambda x, w: _w(x.sin(), lambda y: y.narrow(0, 1, 2).mul_(w[0])),
    "select_add": lambda x, w: _w(x.sin(), lambda y: y.select(1, 0).add_(w)),
    "negative_step_div": lambda x, w: _w(x.tanh() * 1.0, lambda y: y[::-2].div_(w[1] + 3.0)),
    "transpose_copy": lambda x, w: _w(x.sin(), lambda y: y.t()[1].copy_(w * w)),
    "diagonal_fill": lambda x, w: _w(x.cos(), lambda y: y.diagonal().fill_(0.5)),
    "setitem_tensor": lambda x, w: _w(x * x, lambda y: y.__setitem__((1, slice(1, 3)),
                                                                     w[:2].exp())),
    "setitem_mask": lambda x, w: _w(x.sin(), lambda y: y.__setitem__(
        clgrad.tensor(np.array([True, False, True])), 2.0)),
    "root_op_then_view": lambda x, w: _w(x.sin(), lambda y: (y.mul_(w[0]),
                                                             y[0].sub_(w))),
    "split_piece_pow": lambda x, w: _w(x.sin() + 2.0, lambda y: y.split(2)[1].pow_(w[2])),
    "unbind_clamp": lambda x, w: _w(x * 2.0, lambda y: y.unbind(1)[1].clamp_(-0.5, 0.5)),
    "unfold_no_overlap_relu": lambda x, w: _w(x.sin(), lambda y: y.view(-1).unfold(
        0, 2, 3).relu_()),
    "chained": lambda x, w: _w(x.sin(), lambda y: (y[1:].mul_(y[:-1] + 1.0),
                                                   y[:, ::2].sigmoid_(),
                                                   y.add_(w[:1]))),
    "self_operand": lambda x, w: _w(x.sin(), lambda y: y[1].mul_(y[1])),
    "operand_sharing_storage": lambda x, w: _w(x.sin(), lambda y: y[1:].mul_(y[:-1])),
}


def _w(y, write):
    write(y)
    return y


@pytest.mark.parametrize("name", sorted(INPLACE_CASES))
def test_in_place_rebase_gradcheck(name):
    x = leaf(RNG.uniform(-1.5, 1.5, size=(3, 3))).t().detach().requires_grad_()
    assert not x.is_contiguous() and x.is_leaf
    w = leaf(RNG.uniform(0.5, 1.5, size=3))
    assert gradcheck(INPLACE_CASES[name], [x, w])


# -- memory -----------------------------------------------------------------------------------
def _forward(x, w1, w2, b):
    """A small net: ops that save inputs, outputs and indices, and a view."""
    h = (x @ w1 + b).tanh()
    logits = (h / h.exp()) @ w2
    return logits.max(1).values.mean() + logits.T[1].sum()


def test_forward_passes_without_backward_keep_memory_flat(no_gc):
    x = leaf(RNG.normal(size=(8, 4)), False)
    w1, w2, b = rand_leaf(4, 5), rand_leaf(5, 3), rand_leaf(5)
    m0 = clgrad.memory_allocated()
    node = None
    for _ in range(1000):
        loss = _forward(x, w1, w2, b)
        assert loss.requires_grad
        node = weakref.ref(loss.grad_fn)
        del loss
        assert node() is None  # freed by refcounting alone: no reference cycles
        assert clgrad.memory_allocated() == m0


def test_training_steps_keep_memory_flat(no_gc):
    rng = np.random.default_rng(3)
    x_np = rng.normal(size=(32, 4))
    true_w = np.array([[1.5], [-2.0], [0.5], [1.0]])
    x, t = leaf(x_np, False), leaf(x_np @ true_w + 0.3, False)
    w, b = leaf(rng.normal(size=(4, 1)) * 0.1), leaf([0.0])
    lr = 0.1
    memory, losses = [], []
    for step in range(1000):
        loss = ((x @ w + b - t) ** 2).mean()
        loss.backward()
        with clgrad.no_grad():
            w.sub_(w.grad * lr)
            b.sub_(b.grad * lr)
        if step % 2:
            w.grad, b.grad = None, None
        else:
            w.grad.zero_()
            b.grad.zero_()
        if step % 100 == 0 or step == 999:
            losses.append(loss.item())
        del loss
        memory.append(clgrad.memory_allocated())
    assert len(set(memory[2:])) <= 2  # steps alternate between grads kept and dropped
    assert max(memory) - min(memory) <= 5 * 8
    assert losses[-1] < 1e-12 < losses[0]
    close(w, true_w)
    close(b, [0.3])


def test_no_reference_cycles_in_any_op_graph(no_gc):
    x, y = rand_leaf(3, 4, lo=0.5, hi=2.0), rand_leaf(4, 3, lo=0.5, hi=2.0)
    graphs = [
        lambda: x.exp(), lambda: x.sqrt(), lambda: x.rsqrt(), lambda: x.tanh(),
        lambda: x.sigmoid(), lambda: x.relu(), lambda: clgrad.reciprocal(x),
        lambda: x.log(), lambda: x.sin(), lambda: x / y.T, lambda: x ** y.T,
        lambda: 2.0 ** x, lambda: x ** 2, lambda: x.prod(1), lambda: x.max(1).values,
        lambda: x.amax(), lambda: x.softmax(1), lambda: x.log_softmax(0),
        lambda: x.logsumexp(1), lambda: x @ y, lambda: x.clamp(1.0, 1.5),
        lambda: clgrad.maximum(x, y.T), lambda: clgrad.where(x > 1, x, y.T),
        lambda: x.index_select(0, clgrad.tensor([1, 1])), lambda: x.var(1),
        lambda: x.gather(1, clgrad.tensor([[0], [1], [2]])), lambda: x.norm(p=3),
        lambda: clgrad.cat([x, y.T]), lambda: x.unfold(1, 2, 1), lambda: x[::2, ::-1],
        lambda: x.as_strided((2, 2), (1, 1)), lambda: x.float(), lambda: x[:, None],
        # bfloat16 (its ops through float32; its gathers' backward scatter-adds in float32)
        lambda: x.bfloat16().exp(), lambda: x.bfloat16() @ y.bfloat16(),
        lambda: x.bfloat16().gather(1, clgrad.tensor([[0], [1], [2]])),
        lambda: x.bfloat16()[clgrad.tensor([0, 2])], lambda: x.bfloat16().softmax(1),
        lambda: x.bfloat16().index_select(0, clgrad.tensor([1, 1])),
    ]
    m0 = clgrad.memory_allocated()
    for make in graphs:
        out = make()
        node = weakref.ref(out.grad_fn)
        out.sum().backward(retain_graph=True)
        del out
        assert node() is None, make
    x.grad = y.grad = None
    assert clgrad.memory_allocated() == m0


def test_in_place_rebase_leaves_no_cycles(no_gc):
    x = rand_leaf(4, 4)
    m0 = clgrad.memory_allocated()
    y = x.sin()
    v = y[1:3]
    y.T[0].mul_(2.0)
    y[2:].add_(v.sum())  # regenerates v's grad_fn after the first write
    node = weakref.ref(y.grad_fn)
    del y, v
    assert node() is None
    assert clgrad.memory_allocated() == m0


# -- deep graphs ------------------------------------------------------------------------------
def test_chain_of_10000_ops_without_recursion(no_gc):
    assert sys.getrecursionlimit() < 10000
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    # the device's launch plans cleared first: a clear while the chain runs (the cache full
    # from earlier tests) frees the scratch tensors some plans keep, moving the count
    x._storage.device.plans.clear()
    m0 = clgrad.memory_allocated()
    y = x
    for i in range(10000):
        y = y * 1.0001 if i % 2 else y.t()
    node = weakref.ref(y.grad_fn)
    (y * leaf([[1.0, 0.0], [0.0, 0.0]], False)).sum().backward()
    close(x.grad, [[1.0001 ** 5000, 0.0], [0.0, 0.0]])
    del y  # freeing 10 000 Nodes must not recurse either
    assert node() is None
    assert clgrad.memory_allocated() == m0 + 32  # x.grad


# -- as_strided and views with overlaps -------------------------------------------------------
def test_overlapping_narrows_and_as_strided_add_up():
    x = leaf(np.arange(5.0))
    sum(x.narrow(0, i, 3) for i in range(3)).sum().backward()
    close(x.grad, [1.0, 2.0, 3.0, 2.0, 1.0])
    x.grad = None
    x.as_strided((3, 3), (1, 1)).sum().backward()
    close(x.grad, [1.0, 2.0, 3.0, 2.0, 1.0])
    x.grad = None
    x.unfold(0, 3, 1).sum().backward()
    close(x.grad, [1.0, 2.0, 3.0, 2.0, 1.0])


def test_max_min_ties_send_the_gradient_to_one_index():
    x_np = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 5.0], [4.0, 4.0, -1.0, -1.0]])
    for op, pick in (("max", np.argmax), ("min", np.argmin)):
        x = leaf(x_np)
        vals, idx = getattr(x, op)(1)
        (vals * leaf([1.0, 2.0, 3.0], False)).sum().backward()
        expected = np.zeros_like(x_np)
        expected[np.arange(3), pick(x_np, 1)] = [1.0, 2.0, 3.0]
        close(x.grad, expected)
        np.testing.assert_array_equal(idx.numpy(), pick(x_np, 1))
    x = leaf(x_np)
    (x.max() * 2.0).backward()
    assert x.grad.numpy().sum() == 2.0 and np.count_nonzero(x.grad.numpy()) == 1
    assert x.grad.numpy()[1, 3] == 2.0


def test_elementwise_maximum_ties_split_the_gradient():
    a, b = leaf([1.0, 2.0, 3.0]), leaf([1.0, 5.0, 0.0])
    clgrad.maximum(a, b).sum().backward()
    close(a.grad, [0.5, 0.0, 1.0])
    close(b.grad, [0.5, 1.0, 0.0])


# -- property: random view chains -------------------------------------------------------------
def _int(rng, lo, hi):
    """A random int in [lo, hi]."""
    return int(rng.integers(lo, hi + 1))


def random_view(rng, t):
    """One random view op applicable to ``t``: (description, view). Ops that make
    overlapping views (expand, unfold, as_strided) come up often."""
    nd, shape = t.ndim, tuple(t.shape)
    names = ["getitem", "unsqueeze", "expand", "expand", "reshape", "as_strided",
             "as_strided"]
    if nd:
        names += ["narrow", "select", "steps", "split", "unfold", "unfold", "flatten"]
    if nd >= 2:
        names += ["transpose", "permute", "diagonal", "movedim"]
    name = names[_int(rng, 0, len(names) - 1)]
    d = _int(rng, 0, nd - 1) if nd else 0
    n = shape[d] if nd else 1
    if name == "narrow":
        start = _int(rng, 0, n)
        length = _int(rng, min(1, n - start), n - start)
        return f"narrow({d}, {start}, {length})", t.narrow(d, start, length)
    if name == "select":
        if n == 0:
            return "noop", t
        i = _int(rng, -n, n - 1)
        return f"select({d}, {i})", t.select(d, i)
    if name in ("getitem", "steps"):
        key = [slice(_int(rng, -s, s - 1) if rng.random() < 0.5 and s else None, None,
                     int(rng.choice([1, 2, -1, -2, 3]))) for s in shape]
        if name == "getitem" and nd:
            i = _int(rng, 0, nd - 1)
            if shape[i]:
                key[i] = _int(rng, -shape[i], shape[i] - 1)
            key.insert(_int(rng, 0, nd), None)
        return f"[{key}]", t[tuple(key)]
    if name == "transpose":
        e = _int(rng, 0, nd - 1)
        return f"transpose({d}, {e})", t.transpose(d, e)
    if name == "permute":
        p = [int(k) for k in rng.permutation(nd)]
        return f"permute{tuple(p)}", t.permute(*p)
    if name == "movedim":
        e = _int(rng, 0, nd - 1)
        return f"movedim({d}, {e})", t.movedim(d, e)
    if name == "diagonal":
        e = int(rng.choice([k for k in range(nd) if k != d]))
        off = _int(rng, -2, 2)
        return f"diagonal({off}, {d}, {e})", t.diagonal(off, d, e)
    if name == "unsqueeze":
        i = _int(rng, 0, nd)
        return f"unsqueeze({i})", t.unsqueeze(i)
    if name == "expand":
        lead = _int(rng, 0, 1)
        sizes = [int(rng.choice([0, 2, 3, 2, 3, 2, 3, 1])) if s == 1 else s for s in shape]
        return f"expand({[2] * lead + sizes})", t.expand(*([2] * lead), *sizes)
    if name == "reshape":
        if rng.random() < 0.5 and t.numel() and nd:
            return "reshape(-1, ...)", t.unsqueeze(nd).squeeze(nd).reshape(-1, *shape[1:])
        return "reshape(-1)", t.reshape(-1)  # copies when no view exists: still positions
    if name == "flatten":
        e = _int(rng, d, nd - 1)
        return f"flatten({d}, {e})", t.flatten(d, e)
    if name == "split":
        size = _int(rng, 1, max(n, 1))
        pieces = t.split(size, d)
        i = _int(rng, 0, len(pieces) - 1)
        return f"split({size}, {d})[{i}]", pieces[i]
    if name == "unfold":
        size = _int(rng, min(1, n), n)
        step = _int(rng, 1, 3)
        return f"unfold({d}, {size}, {step})", t.unfold(d, size, step)
    storage = t.untyped_storage().size
    if storage != t.numel() or layout.has_overlap(shape, t.stride()):
        return "noop", t  # as_strided reaching past x's elements has no gradient to them
    k = _int(rng, 1, 2)
    size = tuple(_int(rng, 1, 3) for _ in range(k))
    stride = tuple(_int(rng, 0, 3) for _ in range(k))
    reach = sum((a - 1) * b for a, b in zip(size, stride))
    if reach >= storage:
        return "noop", t
    off = _int(rng, 0, storage - 1 - reach)
    return f"as_strided({size}, {stride}, {off})", t.as_strided(size, stride, off)


def examples(n: int) -> int:
    """``n`` hypothesis examples, or CLGRAD_HYPOTHESIS_EXAMPLES when set (for a long soak)."""
    return int(os.environ.get("CLGRAD_HYPOTHESIS_EXAMPLES", n))


def view_chain(seed, base):
    """A random chain of 1 to 5 view ops on ``base``: (view, description)."""
    rng = np.random.default_rng(seed)
    t, log = base, ["base"]
    for _ in range(_int(rng, 1, 5)):
        if t.ndim > 5 or t.numel() > 200:
            break
        desc, t = random_view(rng, t)
        log.append(desc)
    return t, " -> ".join(log)


base_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


@settings(max_examples=examples(60))
@given(shape=base_shapes, seed=st.integers(0, 2**32 - 1))
def test_view_chain_gradient_is_w_scattered_onto_the_base(shape, seed):
    n = int(np.prod(shape))
    base = leaf(np.arange(n, dtype=np.float64).reshape(shape))  # values = positions
    view, what = view_chain(seed, base)
    pos = view.detach().numpy().astype(np.int64)
    w = np.random.default_rng(seed + 1).normal(size=view.shape)
    (view * leaf(w, False)).sum().backward()
    expected = np.zeros(n)
    np.add.at(expected, pos.reshape(-1), w.reshape(-1))  # overlapping elements add up
    np.testing.assert_allclose(base.grad.numpy().reshape(-1), expected, rtol=1e-12,
                               atol=1e-12, err_msg=what)


@settings(max_examples=examples(60))
@given(shape=base_shapes, seed=st.integers(0, 2**32 - 1))
def test_write_through_a_view_chain_rebases(shape, seed):
    n = int(np.prod(shape))
    base = leaf(np.arange(n, dtype=np.float64).reshape(shape))
    y = base * 1.0  # a non-leaf holding positions
    view, what = view_chain(seed, y)
    shares = view.untyped_storage() is y.untyped_storage()
    pos = view.detach().numpy().astype(np.int64).reshape(-1)
    if view.numel() > 1 and layout.has_overlap(view.shape, view.stride()):
        with pytest.raises(RuntimeError, match="more than one element"):
            view.mul_(3.0)
        return
    assert not shares or len(set(pos.tolist())) == len(pos), what  # else a copy
    c = leaf(3.0)
    view.mul_(c)
    w = np.random.default_rng(seed + 1).normal(size=shape)
    (y * leaf(w, False)).sum().backward()
    expected_x = w.reshape(-1).copy()
    expected_y = np.arange(n, dtype=np.float64)
    if shares:
        expected_x[pos] *= 3.0
        expected_y[pos] *= 3.0
    np.testing.assert_allclose(y.detach().numpy().reshape(-1), expected_y, err_msg=what)
    np.testing.assert_allclose(base.grad.numpy().reshape(-1), expected_x, rtol=1e-12,
                               err_msg=what)
    expected_c = (w.reshape(-1)[pos] * pos).sum() if shares else 0.0
    np.testing.assert_allclose(c.grad.numpy() if c.grad is not None else 0.0, expected_c,
                               rtol=1e-10, atol=1e-12, err_msg=what)


# -- post-accumulate-grad hooks (used by DistributedDataParallel) -----------------------------
def test_post_accumulate_grad_hook_sees_the_final_grad_before_backward_ends():
    # y = sum(w1 * x) * w2: the hook of w2 runs before w1's grad exists (w2's edge comes from
    # the last-recorded Node, which runs first), and each hook sees its leaf's final .grad.
    x = leaf([1.0, 2.0, 3.0], requires_grad=False)
    w1, w2 = leaf([0.5, -1.0, 2.0]), leaf(3.0)
    seen = []

    def hook(t):
        seen.append((t is w1, t.grad.numpy().copy(), w1.grad is None))

    h1 = w1.register_post_accumulate_grad_hook(hook)
    w2.register_post_accumulate_grad_hook(hook)
    ((w1 * x).sum() * w2).backward()
    assert [s[0] for s in seen] == [False, True]
    np.testing.assert_allclose(seen[0][1], 0.5 - 2.0 + 6.0)  # dy/dw2 = sum(w1 * x)
    assert seen[0][2]  # w1's grad not yet accumulated when w2's hook ran
    np.testing.assert_allclose(seen[1][1], 3.0 * np.array([1.0, 2.0, 3.0]))  # w2 * x
    # A leaf used twice: one call, after both contributions; accumulation across backwards.
    seen.clear()
    (w1 * w1).sum().backward()
    np.testing.assert_allclose(seen[0][1],
                               3.0 * np.array([1.0, 2.0, 3.0]) + 2 * w1.detach().numpy())
    h1.remove()
    h1.remove()
    seen.clear()
    (w1 * 2).sum().backward()
    assert seen == []


def test_post_accumulate_grad_hook_runs_for_a_leaf_root_and_not_for_grad():
    w = leaf([1.0, 2.0])
    calls = []
    w.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.numpy().copy()))
    w.backward(clgrad.tensor([1.0, -1.0], dtype=f64))
    np.testing.assert_allclose(calls[0], [1.0, -1.0])
    autograd.grad((w * 3).sum(), w)
    assert len(calls) == 1


def test_post_accumulate_grad_hook_rejects_non_leaves():
    w = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="doesn't require"):
        leaf([1.0], requires_grad=False).register_post_accumulate_grad_hook(lambda t: None)


# -- helper h2: pow's masked gradients, hook type checks, concurrent accumulation --------------
@pytest.mark.parametrize("kind", ["tensor**tensor", "tensor**0", "tensor**0.0", "tensor**3",
                                  "0**tensor", "0.0**tensor", "2**tensor", "-2.0**tensor"])
def test_pow_gradient_at_zero_is_masked_as_pytorch(kind):
    """d(x**0)/dx at x = 0 and d(0**t)/dt for t >= 0 are 0 (PyTorch's pow_backward_self and
    pow_backward_exponent masks), not 0 * inf = NaN or -inf."""
    torch = pytest.importorskip("torch")
    base = np.array([0., 0., 0., 2., -1.5, 0.5], np.float32)
    ex = np.array([0., 2., -1., 0., 3., -0.5], np.float32)
    fns = {"tensor**tensor": lambda a, b: a ** b, "tensor**0": lambda a, b: a ** 0,
           "tensor**0.0": lambda a, b: a ** 0.0, "tensor**3": lambda a, b: a ** 3,
           "0**tensor": lambda a, b: 0 ** b, "0.0**tensor": lambda a, b: 0.0 ** b,
           "2**tensor": lambda a, b: 2 ** b, "-2.0**tensor": lambda a, b: (-2.0) ** b}

    def grads(m):
        a, b = m.tensor(base, requires_grad=True), m.tensor(ex, requires_grad=True)
        fns[kind](a, b).sum().backward()
        return [None if t.grad is None else t.grad.numpy() for t in (a, b)]
    for got, want in zip(grads(clgrad), grads(torch)):
        assert (got is None) == (want is None)
        if want is not None:
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)
    if kind == "tensor**0":
        assert grads(clgrad)[0][0] == 0.0
    if kind == "0**tensor":
        np.testing.assert_array_equal(grads(clgrad)[1][:2], [0.0, 0.0])


def test_hook_changing_dtype_or_size_raises_as_pytorch():
    """A hook's return replaces the gradient only if dtype, device and shape stay the same:
    `g.double()` on a float32 leaf used to turn .grad into float64 silently."""
    def to_double(g):
        return g.double()

    for leaf in (True, False):
        x = clgrad.ones(3, requires_grad=True)
        y = x if leaf else x * 2
        y.register_hook(to_double)
        with pytest.raises(RuntimeError, match=r"hook 'to_double' has changed the type of value "
                                               r"\(was torch.FloatTensor got torch.DoubleTensor"):
            (y * 1).sum().backward()
        assert x.grad is None
        x = clgrad.ones(3, requires_grad=True)
        z = x if leaf else x * 2
        z.register_hook(lambda g: g[:2])
        with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
            (z * 1).sum().backward()
    x = clgrad.ones(3, requires_grad=True)
    x.register_hook(lambda g: 3)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        x.sum().backward()
    x = clgrad.ones(3, requires_grad=True)
    x.register_hook(lambda g: g * 2)  # same dtype, device and shape: replaces the gradient
    x.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])


@pytest.mark.parametrize("retained", [False, True])
def test_concurrent_backward_into_one_leaf_is_exact(retained):
    """4 threads x 300 backward passes into one shared leaf: .grad is exactly 4 * 300 * 2.5
    (each accumulation reads .grad then writes it; unlocked, sums were lost: 933 of 1200)."""
    w = clgrad.zeros(5, requires_grad=True)
    mid = w * 1.0
    if retained:
        mid.retain_grad()
    threads, n, errors = 4, 300, []
    bar = threading.Barrier(threads)

    def work():
        try:
            bar.wait()
            for _ in range(n):
                (mid * 2.5).sum().backward(retain_graph=True)
        except Exception as e:  # noqa: BLE001 — reported below
            errors.append(e)
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    np.testing.assert_array_equal(w.grad.numpy(), np.full(5, threads * n * 2.5, np.float32))
    if retained:
        np.testing.assert_array_equal(mid.grad.numpy(), np.full(5, threads * n * 2.5))


def test_delivery_count_is_per_storage_not_per_reused_id():
    """The engine lets a leaf keep a delivered gradient without a copy when that storage was
    delivered once; a storage freed during the walk may leave its id to a new one, whose count
    starts again (counted by id alone, fresh parameter gradients were copied)."""
    from clgrad.autograd.graph import _deliver, _delivered

    class S:  # a storage stand-in: weak-referenceable, nothing else
        __slots__ = ("__weakref__",)
    d = {}
    s1 = S()
    _deliver(d, s1)
    _deliver(d, s1)
    assert _delivered(d, s1) == 2
    old = id(s1)
    del s1
    gc.collect()
    keep = []
    for _ in range(10000):  # CPython hands the freed slot out again soon
        s2 = S()
        if id(s2) == old:
            break
        keep.append(s2)
    else:
        pytest.skip("the freed object's id was not reused")
    assert _delivered(d, s2) == 0
    _deliver(d, s2)
    assert _delivered(d, s2) == 1


def test_fresh_parameter_gradients_are_kept_without_copies():
    """A backward through conv + batch norm layers hands each parameter its fresh gradient:
    no copy launch (copy.cl) in the backward, and the gradients are NumPy's."""
    from clgrad.runtime import device as dv
    nn = clgrad.nn
    net = nn.Sequential(nn.Conv2d(3, 8, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                        nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), nn.BatchNorm2d(8),
                        nn.ReLU6(), nn.Conv2d(8, 4, 1, bias=False), nn.BatchNorm2d(4))
    x = clgrad.tensor(RNG.standard_normal((2, 3, 6, 6)), dtype=clgrad.float32)
    net(x).square().sum().backward()  # builds the kernels
    for p in net.parameters():
        p.grad = None
    dev = clgrad.default_device()
    copies = [0]
    names = {id(k): name for (file, name, *_), k in list(dev._kernels.items())
             if file == "copy.cl"}
    orig, orig_split = dv.Device.launch, dv.Device.launch_split

    def launch(self, kernel, *a):
        copies[0] += id(kernel) in names
        return orig(self, kernel, *a)

    def launch_split(self, kernel, *a):
        copies[0] += id(kernel) in names
        return orig_split(self, kernel, *a)
    y = net(x).square().sum()
    try:
        dv.Device.launch, dv.Device.launch_split = launch, launch_split
        y.backward()
    finally:
        dv.Device.launch, dv.Device.launch_split = orig, orig_split
    assert copies[0] == 0
    bn = net[7]
    z = net[:7](x).detach().numpy().astype(np.float64)
    zh = (z - z.mean((0, 2, 3), keepdims=True)) / np.sqrt(z.var((0, 2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(bn.bias.grad.numpy(), (2 * zh).sum((0, 2, 3)), rtol=1e-3,
                               atol=1e-3)
    np.testing.assert_allclose(bn.weight.grad.numpy(), (2 * zh * zh).sum((0, 2, 3)),
                               rtol=1e-3, atol=1e-3)


def _graph_walk(loss):
    """(depth, name(), [(next name(), input_nr)]) of every node below loss, depth first."""
    out = []

    def walk(fn, depth):
        out.append((depth, fn.name(), [(None if n is None else n.name(), i)
                                       for n, i in fn.next_functions]))
        for n, _ in fn.next_functions:
            if n is not None and not hasattr(n, "variable"):
                walk(n, depth + 1)
    walk(loss.grad_fn, 0)
    return out


def _graph_program(t):
    x = t.ones(2, 3, requires_grad=True)
    w = t.ones(3, requires_grad=True)
    loss = ((x * w + t.ones(3)).sum(1) ** 2).mean()
    a, b = t.ones(4, requires_grad=True).split(2)
    return x, w, loss, (a + b).grad_fn


def test_grad_fn_next_functions_name_metadata():
    """PyTorch's graph face: next_functions as (node, input_nr) pairs (AccumulateGrad with
    .variable for leaves, (None, 0) for inputs without gradient), name(), metadata."""
    x, w, loss, split_sum = _graph_program(clgrad)
    acc = "torch::autograd::AccumulateGrad"
    assert _graph_walk(loss) == [
        (0, "MeanBackward0", [("PowBackward0", 0)]), (1, "PowBackward0", [("SumBackward1", 0)]),
        (2, "SumBackward1", [("AddBackward0", 0)]),
        (3, "AddBackward0", [("MulBackward0", 0), (None, 0)]),
        (4, "MulBackward0", [(acc, 0), (acc, 0)])]
    mul = loss.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0]
    mul = mul.next_functions[0][0]
    assert [n.variable for n, _ in mul.next_functions] == [x, w] and mul.name == "mul"
    loss.grad_fn.metadata["tag"] = 7
    assert loss.grad_fn.metadata == {"tag": 7} and mul.metadata == {}
    assert [(n.name(), i) for n, i in split_sum.next_functions] == [("SplitBackward0", 0),
                                                                    ("SplitBackward0", 1)]


def test_grad_fn_repr_is_pytorchs():
    """print(z.grad_fn), as the autograd tutorial does: '<AddBackward0 object at 0x...>'; a
    custom Function's node is named after its module, as PyTorch's
    '<torch.autograd.function.MyFnBackward object at 0x...>'."""
    class Twice(clgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = clgrad.ones(3, requires_grad=True)
    z = x * 2 + 1
    assert repr(z.grad_fn) == f"<AddBackward0 object at {hex(id(z.grad_fn))}>"
    assert repr(z.sum().grad_fn).startswith("<SumBackward0 object at 0x")
    y = Twice.apply(x)
    assert repr(y.grad_fn) == (f"<clgrad.autograd.function.TwiceBackward object at "
                               f"{hex(id(y.grad_fn))}>")
    acc = z.grad_fn.next_functions[0][0].next_functions[0][0]
    assert repr(acc) == f"<AccumulateGrad object at {hex(id(acc))}>"


LOSS_NODES = ["binary_cross_entropy_with_logits", "smooth_l1_loss", "huber_loss", "mse_loss",
              "soft_margin_loss", "binary_cross_entropy"]


def _loss_node_names(lib):
    x = lib.tensor([0.3, -1.2, 2.0], requires_grad=True)
    t = lib.tensor([0.0, 1.0, 1.0])
    F = lib.nn.functional
    return [(n, red, getattr(F, n)(x.sigmoid() if n == "binary_cross_entropy" else x, t,
                                   reduction=red).grad_fn.name())
            for n in LOSS_NODES for red in ("mean", "sum", "none")]


def test_single_op_losses_name_their_grad_fn_as_pytorch():
    """PyTorch computes these losses as one op: their grad_fn is 'MseLossBackward0' ...
    whatever the reduction (the autograd tutorial prints BCE-with-logits' grad_fn)."""
    camel = {"binary_cross_entropy_with_logits": "BinaryCrossEntropyWithLogits",
             "smooth_l1_loss": "SmoothL1Loss", "huber_loss": "HuberLoss", "mse_loss": "MseLoss",
             "soft_margin_loss": "SoftMarginLoss", "binary_cross_entropy": "BinaryCrossEntropy"}
    for n, red, got in _loss_node_names(clgrad):
        assert got == camel[n] + "Backward0", (n, red)
    # the gradient is unchanged: BCE with logits' is sigmoid(x) - t, over 3 for 'mean'
    x = clgrad.tensor([0.3, -1.2, 2.0], requires_grad=True)
    clgrad.nn.functional.binary_cross_entropy_with_logits(
        x, clgrad.tensor([0.0, 1.0, 1.0])).backward()
    np.testing.assert_allclose(x.grad.numpy(), (1 / (1 + np.exp(-np.array([0.3, -1.2, 2.0])))
                                                - [0, 1, 1]) / 3, rtol=1e-6)


def test_single_op_loss_names_match_pytorch():
    torch = pytest.importorskip("torch")
    assert _loss_node_names(clgrad) == _loss_node_names(torch)


def test_grad_fn_graph_matches_pytorch():
    torch = pytest.importorskip("torch")
    assert _graph_walk(_graph_program(clgrad)[2]) == _graph_walk(_graph_program(torch)[2])


def test_next_functions_give_one_accumulate_grad_per_leaf():
    """Every edge to a leaf is the same AccumulateGrad object, as PyTorch's (graph walks, e.g.
    torchviz-style drawings, dedupe nodes by id)."""
    x = clgrad.ones(2, requires_grad=True)
    y = x * 2 + x * 3
    a, b = (n for n, _ in y.grad_fn.next_functions)
    acc = a.next_functions[0][0]
    assert acc is b.next_functions[0][0] and acc.variable is x
    assert acc.name() == "torch::autograd::AccumulateGrad"


def test_data_has_own_version_counter():
    x = clgrad.tensor([1., 2.], requires_grad=True)
    y = x * x
    x.data.mul_(2)
    y.sum().backward()
    assert x.grad.tolist() == [4., 8.]
    assert x._version == 0
    x = clgrad.tensor([1., 2.], requires_grad=True)
    y = x * x
    x.data[1:].mul_(2)  # a view of .data shares .data's counter
    y.sum().backward()
    assert x.grad.tolist() == [2., 8.]


def test_detach_shares_version_counter():
    x = clgrad.tensor([1., 2.], requires_grad=True)
    y = x * x
    x.detach().mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_detect_anomaly_nan():
    x = clgrad.tensor([3., 1.], requires_grad=True)
    with clgrad.autograd.detect_anomaly():
        assert clgrad.is_anomaly_enabled()
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values "
                                               "in its 0th output."):
            clgrad.sqrt(x - 2).sum().backward()
    assert not clgrad.is_anomaly_enabled()
    with clgrad.autograd.set_detect_anomaly(True):
        assert clgrad.is_anomaly_enabled()
    assert not clgrad.is_anomaly_enabled()
    clgrad.sqrt(x - 2).sum().backward()  # mode off: no check
    assert np.isnan(x.grad.numpy()[1])
