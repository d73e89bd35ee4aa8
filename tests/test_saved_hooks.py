"""torch.autograd.graph.saved_tensors_hooks / save_on_cpu / disable_saved_tensors_hooks
(clgrad/autograd/saved_hooks.py): when pack and unpack run and on what, what a custom
Function's ctx.saved_tensors gives, when the packed objects are released, nesting and
threads, the errors. Oracles: hand-known values and call logs, PyTorch's logs when
importable."""
import gc
import threading
import weakref

import numpy as np
import pytest

import clgrad
from clgrad.autograd.graph import (disable_saved_tensors_hooks, save_on_cpu,
                                   saved_tensors_hooks)


def _logging_hooks(log):
    def pack(x):
        log.append(("pack", x.detach().numpy().tolist()))
        return x

    def unpack(x):
        log.append(("unpack", x.detach().numpy().tolist()))
        return x
    return pack, unpack


def _mul_log(lib, a_grad=True, b_grad=True, backward=True):
    log = []
    a = lib.ones(2, requires_grad=a_grad)
    b = lib.ones(2, requires_grad=b_grad) * 2 if b_grad else lib.full((2,), 2.0)
    with lib.autograd.graph.saved_tensors_hooks(*_logging_hooks(log)):
        y = a * b
    if backward and y.requires_grad:
        y.sum().backward()
    return log


def test_mul_packs_what_backward_reads_and_unpacks_it_in_backward():
    # the tutorial's example: a * b saves both operands; pack at the op, unpack in backward
    assert _mul_log(clgrad) == [("pack", [2.0, 2.0]), ("pack", [1.0, 1.0]),
                                ("unpack", [2.0, 2.0]), ("unpack", [1.0, 1.0])]
    # only a needs a gradient: only b (what a's gradient reads) is saved
    assert _mul_log(clgrad, b_grad=False) == [("pack", [2.0, 2.0]), ("unpack", [2.0, 2.0])]
    # nothing needs a gradient, or grad mode is off: nothing is saved
    assert _mul_log(clgrad, a_grad=False, b_grad=False) == []
    log = []
    with clgrad.no_grad(), saved_tensors_hooks(*_logging_hooks(log)):
        clgrad.ones(2, requires_grad=True) * 3
    assert log == []


def test_mul_log_matches_pytorch():
    torch = pytest.importorskip("torch")
    for kw in ({}, {"b_grad": False}):
        assert sorted(_mul_log(clgrad, **kw)) == sorted(_mul_log(torch, **kw))


def test_output_saved_ops_pack_the_output():
    log = []
    x = clgrad.tensor([0.0, 1.0], requires_grad=True)
    with saved_tensors_hooks(*_logging_hooks(log)):
        y = x.exp()       # saves its output
        z = x.sin()       # saves its input
    (y.sum() + z.sum()).backward()
    assert [k for k, _ in log] == ["pack", "pack", "unpack", "unpack"]
    np.testing.assert_allclose(log[0][1], np.exp([0.0, 1.0]), rtol=1e-6)
    assert log[1][1] == [0.0, 1.0]
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0, 1]) + np.cos([0, 1]), rtol=1e-6)


def test_hooks_stay_with_the_nodes_and_nest():
    outer, inner = [], []
    x = clgrad.ones(3, requires_grad=True)
    with saved_tensors_hooks(*_logging_hooks(outer)):
        y = x * x
        with saved_tensors_hooks(*_logging_hooks(inner)):
            z = y * x     # only the innermost pair applies
        w = z.exp()
    (w.sum()).backward()  # after both contexts closed: each node unpacks with its own hooks
    assert [k for k, _ in outer] == ["pack"] * 3 + ["unpack"] * 3
    assert [k for k, _ in inner] == ["pack", "pack", "unpack", "unpack"]
    np.testing.assert_allclose(x.grad.numpy(), [3 * np.e] * 3, rtol=1e-6)


def test_hooks_are_per_thread():
    log, other = [], []

    def work():
        t = clgrad.ones(2, requires_grad=True)
        (t * t).sum().backward()
        other.append(t.grad.numpy().tolist())
    with saved_tensors_hooks(*_logging_hooks(log)):
        th = threading.Thread(target=work)
        th.start()
        th.join()
    assert log == [] and other == [[2.0, 2.0]]


def test_unpack_runs_per_backward_and_packed_objects_are_released():
    released, calls = [], {"unpack": 0}

    class Box:
        def __init__(self, t):
            self.t = t.detach()

    def pack(t):
        box = Box(t)
        weakref.finalize(box, released.append, 1)
        return box

    def unpack(box):
        calls["unpack"] += 1
        return box.t
    x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(pack, unpack):
        y = (x * x).sum()
    y.backward(retain_graph=True)
    assert calls["unpack"] == 2 and released == []
    y.backward()          # the graph is freed: so are the packed objects
    gc.collect()
    assert calls["unpack"] == 4 and released == [1, 1]
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_function_saved_tensors_are_what_unpack_returns(tmp_path):
    """A custom Function reads ctx.saved_tensors: with hooks, the unpacked tensors, on each
    access (the tutorial's save-to-disk hooks), and its double backward still works."""
    class Cube(clgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x ** 3
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * 3 * y / x

    names = []

    def pack(t):
        name = str(tmp_path / f"t{len(names)}.pt")
        clgrad.save(t, name)
        names.append(name)
        return name
    x = clgrad.tensor([1.0, 2.0], dtype=clgrad.float64, requires_grad=True)
    with saved_tensors_hooks(pack, lambda name: clgrad.load(name)):
        y = Cube.apply(x)
    assert len(names) == 2
    g, = clgrad.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    gg, = clgrad.autograd.grad(g.sum(), x)   # through the unpacked output, re-attached
    np.testing.assert_allclose(gg.numpy(), [6.0, 12.0])

    class Scaled(clgrad.autograd.Function):  # unpack changes the value: the Function sees it
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * x
    x = clgrad.tensor([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t.detach(), lambda t: t * 10):
        Scaled.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [20.0, 40.0])


def test_save_on_cpu_gives_the_same_gradients():
    clgrad.manual_seed(0)
    lin = clgrad.nn.Linear(4, 3)
    x = clgrad.randn(5, 4, requires_grad=True)
    (lin(x).tanh() ** 2).sum().backward()
    want = [t.grad.numpy().copy() for t in (x, lin.weight, lin.bias)]
    for t in (x, lin.weight, lin.bias):
        t.grad = None
    with save_on_cpu(pin_memory=True):
        y = (lin(x).tanh() ** 2).sum()
    y.backward()
    for t, w in zip((x, lin.weight, lin.bias), want):
        np.testing.assert_array_equal(t.grad.numpy(), w)


def test_errors():
    x = clgrad.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: "not a tensor"):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result "
                                        "of type str"):
        y.backward()
    with saved_tensors_hooks(lambda t: t, lambda t: clgrad.ones(3)):
        y = (x * x).sum()
    with pytest.raises(RuntimeError, match=r"shape \(3,\).*saved tensor has shape \(2,\)"):
        y.backward()
    with disable_saved_tensors_hooks("hooks are off here"):
        with pytest.raises(RuntimeError, match="hooks are off here"):
            with save_on_cpu():
                pass
        with disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
        with pytest.raises(RuntimeError, match="hooks are off here"):
            saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # enabled again
        pass


def test_disable_inside_open_hooks_raises():
    # PyTorch: entering disable_saved_tensors_hooks while a hooks context is open raises
    # the message (the open hooks would otherwise keep packing inside it)
    log = []
    with saved_tensors_hooks(*_logging_hooks(log)):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with disable_saved_tensors_hooks("no hooks here"):
                pass
        with pytest.raises(RuntimeError, match="again"):  # nothing was left disabled
            with disable_saved_tensors_hooks("again"):
                pass
        x = clgrad.ones(2, requires_grad=True)
        (x * x).sum().backward()  # the open hooks still pack
    assert [k for k, _ in log] == ["pack", "pack", "unpack", "unpack"]
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # not left disabled
        pass
    with disable_saved_tensors_hooks("fine without open hooks"):
        pass
