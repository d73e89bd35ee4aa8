"""Tensor -> NumPy conversions of a tensor that requires grad, as PyTorch: ``numpy()``,
``np.asarray``/``np.array``/``__array__`` raise PyTorch's RuntimeError while grad mode is on,
``numpy(force=True)``, ``detach().numpy()``, ``tolist()``, ``item()`` and ``float()`` give the
values, and clgrad's own host reads (unique, printing, samplers, save ...) keep working on such
tensors. Each case is checked against a fixed expectation and, where PyTorch is importable,
against PyTorch itself (the same exception type and message, or the same values)."""
import io

import numpy as np
import pytest

import clgrad

pytestmark = [  # PyTorch's own warnings, where it is compared
    pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad:UserWarning")]

MESSAGE = ("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
           "instead.")
VALUES = [1.5, -2.0, 3.25]


def _leaf(m, dtype=None):
    return m.tensor(VALUES, requires_grad=True, dtype=dtype)


# name -> (call of the module m: clgrad or torch, the expected outcome: an exception type, or
# the values as a nested list)
RAISING = {
    "numpy of a leaf": lambda m: _leaf(m).numpy(),
    "numpy of a non-leaf": lambda m: (_leaf(m) * 2).numpy(),
    "numpy of a view": lambda m: _leaf(m)[1:].numpy(),
    "numpy of a 0-dim tensor": lambda m: m.tensor(2.5, requires_grad=True).numpy(),
    "numpy(force=False)": lambda m: _leaf(m).numpy(force=False),
    "np.asarray": lambda m: np.asarray(_leaf(m)),
    "np.asarray with a dtype": lambda m: np.asarray(_leaf(m), dtype=np.float64),
    "np.array": lambda m: np.array(_leaf(m)),
    "np.array of a 0-dim tensor": lambda m: np.array(m.tensor(2.5, requires_grad=True)),
    "__array__": lambda m: _leaf(m).__array__(),
    "__array__ with a dtype": lambda m: _leaf(m).__array__(np.float64),
    "a NumPy function": lambda m: np.add(_leaf(m), 1.0),
    "numpy of bfloat16 (the grad check comes first)":
        lambda m: _leaf(m, m.bfloat16).numpy(),
}
WORKING = {
    "numpy(force=True)": (lambda m: _leaf(m).numpy(force=True), VALUES),
    "numpy(force=True) of a non-leaf": (lambda m: (_leaf(m) * 2).numpy(force=True),
                                        [2 * v for v in VALUES]),
    "detach().numpy()": (lambda m: _leaf(m).detach().numpy(), VALUES),
    "np.asarray of detach()": (lambda m: np.asarray(_leaf(m).detach()), VALUES),
    "tolist()": (lambda m: _leaf(m).tolist(), VALUES),
    "item()": (lambda m: m.tensor(2.5, requires_grad=True).item(), 2.5),
    "float()": (lambda m: float(m.tensor(2.5, requires_grad=True)), 2.5),
    "int()": (lambda m: int(m.tensor(2.5, requires_grad=True)), 2),
    "numpy under no_grad": (lambda m: _under(m.no_grad(), lambda: _leaf(m).numpy()), VALUES),
    "np.asarray under no_grad": (lambda m: _under(m.no_grad(), lambda: np.asarray(_leaf(m))),
                                 VALUES),
    "numpy under inference_mode": (lambda m: _under(m.inference_mode(),
                                                    lambda: _leaf(m).numpy()), VALUES),
    "numpy under set_grad_enabled(False)": (
        lambda m: _under(m.set_grad_enabled(False), lambda: (_leaf(m) * 2).numpy()),
        [2 * v for v in VALUES]),
    "numpy of an integer tensor": (lambda m: m.tensor([1, 2]).numpy(), [1, 2]),
}
TYPE_ERRORS = {  # (PyTorch's messages differ from clgrad's here: the type is compared)
    "numpy(force=True) of bfloat16": lambda m: _leaf(m, m.bfloat16).numpy(force=True),
    "force given by position": lambda m: _leaf(m).numpy(True),
}


def _under(mode, fn):
    with mode:
        return fn()


def _outcome(fn, m):
    try:
        value = fn(m)
    except (RuntimeError, TypeError) as e:
        return type(e), str(e)
    return "ok", np.asarray(value).tolist()


@pytest.mark.parametrize("name", list(RAISING))
def test_conversions_raise_pytorchs_runtime_error(name):
    with pytest.raises(RuntimeError) as info:
        RAISING[name](clgrad)
    assert str(info.value) == MESSAGE


@pytest.mark.parametrize("name", list(WORKING))
def test_conversions_that_give_the_values(name):
    fn, want = WORKING[name]
    got = fn(clgrad)
    if isinstance(got, np.ndarray):
        assert got.dtype == (np.int64 if name.endswith("integer tensor") else np.float32)
    assert np.asarray(got).tolist() == want


@pytest.mark.parametrize("name", list(TYPE_ERRORS))
def test_conversions_that_raise_type_error(name):
    with pytest.raises(TypeError):
        TYPE_ERRORS[name](clgrad)


@pytest.mark.parametrize("name", list(RAISING) + list(WORKING) + list(TYPE_ERRORS))
def test_conversions_match_pytorch(name):
    torch = pytest.importorskip("torch")
    fn = RAISING.get(name) or TYPE_ERRORS.get(name) or WORKING[name][0]
    ours, theirs = _outcome(fn, clgrad), _outcome(fn, torch)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] is RuntimeError or ours[0] == "ok":
        assert ours[1] == theirs[1]
    if name == "numpy(force=True) of bfloat16":
        assert "Got unsupported ScalarType BFloat16" in ours[1], ours


def test_force_copies_and_leaves_the_graph_alone():
    # clgrad's numpy() is always a copy (an OpenCL buffer is not host memory; PyTorch's CPU
    # numpy(force=True) of a leaf shares its memory): writing into it changes nothing
    x = clgrad.tensor(VALUES, requires_grad=True)
    a = x.numpy(force=True)
    a[0] = 100.0
    assert x.tolist() == VALUES
    assert x.requires_grad and x.is_leaf and x.grad is None
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.array(VALUES, np.float32))


def test_parameters_convert_after_detach():
    lin = clgrad.nn.Linear(3, 2)
    with pytest.raises(RuntimeError, match="detach"):
        lin.weight.numpy()
    w = lin.weight.detach().numpy()
    assert w.shape == (2, 3) and w.dtype == np.float32
    sd = lin.state_dict()  # detached, as PyTorch's: .numpy() works on its values
    np.testing.assert_array_equal(sd["weight"].numpy(), w)
    np.testing.assert_array_equal(lin.weight.numpy(force=True), w)


# -- clgrad's own host reads take tensors that require grad ------------------------------------
def test_unique_and_unique_consecutive_of_a_tensor_that_requires_grad():
    v = np.array([3.0, 1.0, 3.0, 3.0, 2.0], np.float32)
    x = clgrad.tensor(v, requires_grad=True)
    values, counts = clgrad.unique(x, return_counts=True)
    want, want_counts = np.unique(v, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), want)
    np.testing.assert_array_equal(counts.numpy(), want_counts)
    np.testing.assert_array_equal(clgrad.unique_consecutive(x).numpy(), [3.0, 1.0, 3.0, 2.0])


def test_printing_saving_and_copying_a_tensor_that_requires_grad():
    x = clgrad.tensor(VALUES, requires_grad=True)
    assert repr(x * 2) == "tensor([ 3.0000, -4.0000,  6.5000], grad_fn=<MulBackward0>)"
    buf = io.BytesIO()
    clgrad.save({"x": x}, buf)
    buf.seek(0)
    back = clgrad.load(buf)["x"]
    assert back.requires_grad and back.tolist() == VALUES
    copy = clgrad.tensor(x)  # a copy outside the graph (PyTorch's, with its warning)
    assert not copy.requires_grad and copy.tolist() == VALUES


def test_weighted_sampler_takes_weights_that_require_grad():
    w = clgrad.tensor([0.0, 2.0, 0.0, 1e-30], requires_grad=True)
    sampler = clgrad.utils.data.WeightedRandomSampler(w, 40, replacement=True)
    drawn = list(sampler)
    assert len(drawn) == 40 and set(drawn) <= {1, 3} and drawn.count(1) >= 39


def test_a_float_index_that_requires_grad_gives_the_index_error():
    x = clgrad.arange(4.0)
    with pytest.raises(IndexError, match="tensors used as indices"):
        x[clgrad.tensor([0.0, 1.0], requires_grad=True)]


def test_quantile_of_a_tensor_that_requires_grad():
    v = np.array([4.0, -1.0, 2.5, 9.0, 0.5], np.float64)
    x = clgrad.tensor(v, requires_grad=True)
    q = clgrad.quantile(x, 0.3)
    assert q.item() == np.quantile(v, 0.3)  # 0.5 + 0.2 (2.5 - 0.5), as NumPy computes it
    q.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 0.2, 0.0, 0.8], rtol=1e-12)
