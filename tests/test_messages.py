"""The messages a newcomer reads first (issue 36): each names what was expected, what was given
and the fix, and is compared with PyTorch's where PyTorch has one."""
import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F


def _torch_error(fn):
    """PyTorch's exception for the same call (torch is only the oracle; skipped without it)."""
    torch = pytest.importorskip("torch")
    try:
        fn(torch)
    except Exception as e:  # noqa: BLE001  (any exception type: that is what is compared)
        return e
    raise AssertionError("PyTorch raised nothing")


def test_cross_entropy_float_class_labels_say_long():
    x = clgrad.tensor(np.zeros((4, 3), np.float32))
    t = clgrad.tensor(np.array([0.0, 1.0, 2.0, 1.0], np.float32))
    with pytest.raises(RuntimeError, match=r"cross_entropy: expected class indices of dtype "
                       r"int64 \(Long\).*float32 of shape \(4,\): use target\.long\(\)"):
        F.cross_entropy(x, t)
    # unbatched input (C,) with a 0-dim float label: the same message
    with pytest.raises(RuntimeError, match=r"target\.long\(\)"):
        F.cross_entropy(x[0], t[1])
    # the fix works: loss of zero logits over 3 classes is log(3)
    assert F.cross_entropy(x, t.long()).item() == pytest.approx(np.log(3.0), rel=1e-6)
    # probability targets of another shape keep their own message
    with pytest.raises(ValueError, match=r"probability targets of the input's shape"):
        F.cross_entropy(x, clgrad.tensor(np.zeros((4, 2), np.float32)))
    e = _torch_error(lambda torch: torch.nn.functional.cross_entropy(
        torch.zeros(4, 3), torch.tensor([0.0, 1.0, 2.0, 1.0])))
    assert isinstance(e, RuntimeError)   # the same type as PyTorch's


@pytest.mark.parametrize("fn", [F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss,
                                lambda a, b: clgrad.nn.MSELoss()(a, b)])
def test_regression_loss_warns_when_target_broadcasts(fn):
    a_np = np.array([[1.0], [2.0], [4.0]], np.float32)
    b_np = np.array([1.0, 2.0, 3.0], np.float32)
    with pytest.warns(UserWarning, match=r"using a target size \(3,\) that is different to "
                      r"the input size \(3, 1\)\. This will likely lead to incorrect results "
                      r"due to broadcasting"):
        fn(clgrad.tensor(a_np), clgrad.tensor(b_np))
    with warnings.catch_warnings():
        warnings.simplefilter("error")     # same shapes: no warning
        fn(clgrad.tensor(b_np), clgrad.tensor(b_np))


def test_mse_loss_broadcast_value_and_torch_warning():
    a_np = np.array([[1.0], [2.0], [4.0]], np.float64)
    b_np = np.array([1.0, 2.0, 3.0], np.float64)
    with pytest.warns(UserWarning):
        got = F.mse_loss(clgrad.tensor(a_np), clgrad.tensor(b_np)).item()
    assert got == pytest.approx(((a_np - b_np) ** 2).mean())   # (3, 3) broadcast, as PyTorch
    torch = pytest.importorskip("torch")
    with pytest.warns(UserWarning, match="Using a target size"):
        want = torch.nn.functional.mse_loss(torch.tensor(a_np), torch.tensor(b_np)).item()
    assert got == pytest.approx(want)


@pytest.mark.parametrize("module,name,torch_name", [
    (clgrad, "stft", "torch.stft"),
    (F, "no_such_op", "torch.nn.functional.no_such_op"),
])
def test_missing_op_is_named_as_not_implemented(module, name, torch_name):
    with pytest.raises(AttributeError, match=rf"module '{module.__name__}' has no attribute "
                       rf"'{name}': {torch_name} is not implemented in clgrad.*"
                       rf"{module.__name__}\.__all__.*Deliberately different from PyTorch"):
        getattr(module, name)
    assert not hasattr(module, name)
    assert hasattr(clgrad, "nn") and hasattr(F, "relu")       # real names are unaffected
    with pytest.raises(AttributeError, match=r"^module 'clgrad' has no attribute '__wrapped__'$"):
        clgrad.__wrapped__                                     # dunders: Python's message


@pytest.mark.parametrize("call,dim,size", [
    (lambda x: x[clgrad.tensor([0, 9])], 0, 3),
    (lambda x: x[:, clgrad.tensor([0, 9])], 1, 4),
    (lambda x: x[0, clgrad.tensor([9])], 1, 4),
    (lambda x: x[None, :, clgrad.tensor([9])], 1, 4),
    (lambda x: x.index_select(1, clgrad.tensor([9])), 1, 4),
    (lambda x: x.gather(1, clgrad.tensor([[9]])), 1, 4),
])
def test_index_out_of_range_names_the_dimension(call, dim, size):
    x = clgrad.tensor(np.arange(12.0).reshape(3, 4))
    with pytest.raises(IndexError, match=rf"index 9 is out of bounds for dimension {dim} with "
                       rf"size {size}"):
        call(x)


def test_linear_dtype_mismatch_names_linear_and_the_fix():
    lin = clgrad.nn.Linear(3, 2)
    x = clgrad.tensor(np.ones((4, 3), np.float64))
    with pytest.raises(RuntimeError, match=r"linear: expected input and weight of one dtype, "
                       r"got input clgrad\.float64 and weight clgrad\.float32: convert the "
                       r"input with input\.to\(clgrad\.float32\)"):
        lin(x)
    with pytest.raises(RuntimeError, match=r"^linear: "):
        F.linear(x, lin.weight)
    out = lin(x.float())                                     # the fix works
    want = (np.ones((4, 3)) @ lin.weight.detach().numpy().astype(np.float64).T +
            lin.bias.detach().numpy())
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-6)
    e = _torch_error(lambda torch: torch.nn.Linear(3, 2)(torch.ones(4, 3, dtype=torch.float64)))
    assert isinstance(e, RuntimeError)


def test_no_device_names_the_cpu_extra(monkeypatch, capsys):
    """A lean install (pip install clgrad, no `cpu` extra) on a machine without OpenCL."""
    from clgrad import runtime
    from clgrad.cli import main
    monkeypatch.setattr(runtime, "devices", lambda: [])
    monkeypatch.setattr(runtime, "runtime_notes", lambda: [])
    assert main(["devices"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("no OpenCL device found: pip install 'clgrad[cpu]' (Intel's OpenCL "
                          "CPU runtime and PoCL from PyPI"), out
