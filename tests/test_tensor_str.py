"""Printing tensors: str/repr against real PyTorch for a table of tensors, print options,
f-string formatting (clgrad/_tensor_str.py)."""
import numpy as np
import pytest

import clgrad

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _on_the_cpu_device():
    """PyTorch's tensors below are CPU tensors: so are clgrad's (on a GPU machine the default
    device is the GPU, and such tensors print device='cuda:0', as PyTorch's CUDA tensors)."""
    with clgrad.device("cpu"):
        yield

CASES = {
    "ints": lambda m: m.tensor([1, -20, 300]),
    "floats": lambda m: m.tensor([0.1, 0.25, -1.5]),
    "integral floats": lambda m: m.tensor([1.0, 2.0, -3.0]),
    "big": lambda m: m.tensor([1e9, 2.5, 3.0]),
    "tiny": lambda m: m.tensor([1e-5, 0.5]),
    "wide ratio": lambda m: m.tensor([1.0, 2000.0]),
    "sci 2-d": lambda m: m.tensor([[1e10, -3e-3], [5.0, 1.0]]),
    "bools": lambda m: m.tensor([True, False]),
    "empty": lambda m: m.tensor([]),
    "empty 2-d": lambda m: m.zeros(0, 3),
    "empty long": lambda m: m.zeros(0, dtype=m.int64),
    "0-dim": lambda m: m.tensor(3.25),
    "0-dim int": lambda m: m.tensor(7),
    "1-d long (summarised)": lambda m: m.arange(2000),
    "wide ints wrap": lambda m: m.arange(100) * 12345,
    "2-d": lambda m: m.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 7),
    "3-d": lambda m: m.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 5),
    "2-d summarised": lambda m: m.tensor(np.arange(5000, dtype=np.float32).reshape(50, 100) / 3),
    "3-d summarised": lambda m: m.tensor(np.arange(4000, dtype=np.float32).reshape(10, 20, 20)),
    "line wrap": lambda m: m.tensor(np.linspace(-1000, 1000, 40, dtype=np.float32)),
    "requires_grad": lambda m: m.tensor([1.5, 2.0], requires_grad=True),
    "MulBackward0": lambda m: m.tensor([1.5, 2.0], requires_grad=True) * 2,
    "AddBackward0": lambda m: m.tensor([1.5, 2.0], requires_grad=True) + 1,
    "SumBackward0": lambda m: m.tensor([1.5, 2.0], requires_grad=True).sum(),
    "MeanBackward1": lambda m: m.ones(2, 2, requires_grad=True).mean(1),
    "MaxBackward1": lambda m: m.ones(2, 2, requires_grad=True).max(),
    "NegBackward0": lambda m: -m.tensor([1.0, 2.0], requires_grad=True),
    "ReluBackward0": lambda m: m.tensor([1.0, -2.0], requires_grad=True).relu(),
    "ViewBackward0": lambda m: m.tensor([[1.0, 2.0]], requires_grad=True).view(2),
    "ToCopyBackward0": lambda m: m.tensor([1.0, 2.0], requires_grad=True).double(),
    "MmBackward0": lambda m: m.ones(2, 2, requires_grad=True) @ m.ones(2, 2),
    "ExpBackward0": lambda m: m.ones(2, requires_grad=True).exp(),
    "nan inf": lambda m: m.tensor([float("nan"), float("inf"), -float("inf"), 1.5]),
    "nan integral": lambda m: m.tensor([float("nan"), 1.0, 2.0]),
    "all nan": lambda m: m.tensor([float("nan")]),
    "float64": lambda m: m.tensor([1.5, 2.25], dtype=m.float64),
    "int32": lambda m: m.tensor([1, 2], dtype=m.int32),
    "uint8": lambda m: m.tensor([1, 255], dtype=m.uint8),
    "float16": lambda m: m.tensor([1.5, 2.3], dtype=m.float16),
    "negative zero": lambda m: m.tensor([-0.0, 0.0]),
    "zeros": lambda m: m.zeros(2, 3),
}


def _ours(t):
    return repr(t).replace("clgrad.", "torch.")  # dtype=clgrad.float64 is torch.float64


@pytest.mark.parametrize("name", list(CASES))
def test_repr_matches_torch(name):
    want = repr(CASES[name](torch))
    try:
        got = CASES[name](clgrad)
    except TypeError as e:  # float16 where the device lacks cl_khr_fp16 (NVIDIA's OpenCL)
        if "cl_khr_fp16" not in str(e):
            raise
        pytest.skip(str(e))
    assert _ours(got) == want
    assert str(got).replace("clgrad.", "torch.") == str(CASES[name](torch))


@pytest.mark.parametrize("opts", [dict(precision=2), dict(threshold=5), dict(sci_mode=True),
                                  dict(sci_mode=False), dict(profile="short"),
                                  dict(profile="full"), dict(edgeitems=1, threshold=3),
                                  dict(linewidth=30), dict(edgeitems=0, threshold=3)])
def test_set_printoptions_matches_torch(opts):
    try:
        torch.set_printoptions(**opts)
        clgrad.set_printoptions(**opts)
        assert clgrad.get_printoptions() == torch._tensor_str.get_printoptions()
        for name in ("floats", "1-d long (summarised)", "2-d", "2-d summarised", "line wrap",
                     "MulBackward0", "tiny"):
            assert _ours(CASES[name](clgrad)) == repr(CASES[name](torch)), name
    finally:
        torch.set_printoptions(profile="default")
        clgrad.set_printoptions(profile="default")


def test_printoptions_context_restores():
    x = clgrad.tensor([1.12345])
    with clgrad.printoptions(precision=2):
        assert repr(x) == "tensor([1.12])"
    assert repr(x) == "tensor([1.1235])"
    with pytest.raises(ValueError, match="profile"):
        clgrad.set_printoptions(profile="nope")


def test_gpu_tensors_show_their_device():
    """On a GPU (or under CLGRAD_TEST_AS_GPU, see tests/conftest.py), as PyTorch's CUDA tensors."""
    if not clgrad.cuda.is_available():
        pytest.skip("needs a GPU device (or CLGRAD_TEST_AS_GPU)")
    x = clgrad.tensor([1.0, 2.0], device="cuda")
    assert repr(x) == "tensor([1., 2.], device='cuda:0')"
    # PyTorch: device first, then dtype
    assert repr(x.to(clgrad.int32)) == "tensor([1, 2], device='cuda:0', dtype=clgrad.int32)"


def test_other_device_is_shown():
    try:
        dev = clgrad.runtime.get_device("pocl")
    except clgrad.DeviceError:
        pytest.skip("needs a second OpenCL device (PoCL)")
    if dev is clgrad.runtime.get_device("cpu"):
        pytest.skip("needs a second OpenCL device (PoCL)")
    x = clgrad.tensor([1.0, 2.0], device=dev, requires_grad=True)
    assert repr(x) == f"tensor([1., 2.], device='{x.device}', requires_grad=True)"
    assert str(x.device) in ("cpu:1", "cuda:0")


def test_custom_function_grad_fn_name():
    class MyDouble(clgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class TMyDouble(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    got = MyDouble.apply(clgrad.ones(2, requires_grad=True))
    want = TMyDouble.apply(torch.ones(2, requires_grad=True))
    assert repr(want) == "tensor([2., 2.], grad_fn=<TMyDoubleBackward>)"
    assert repr(got) == "tensor([2., 2.], grad_fn=<MyDoubleBackward>)"


def test_format_like_torch():
    loss = clgrad.tensor(0.123456)
    tl = torch.tensor(0.123456)
    for spec in (".4f", ".2e", "", ">10.3f", "g"):
        assert format(loss, spec) == format(tl, spec), spec
    assert f"{loss:.4f}" == "0.1235"
    n = clgrad.tensor(3)
    assert f"{n:03d}" == f"{torch.tensor(3):03d}" == "003"
    v = clgrad.tensor([1.0, 2.0])
    assert f"{v}" == str(v) == "tensor([1., 2.])"
    with pytest.raises(TypeError):
        f"{v:.2f}"  # noqa: B018  (PyTorch raises too)
    with pytest.raises(TypeError):
        f"{torch.tensor([1.0, 2.0]):.2f}"  # noqa: B018


def test_summarised_print_copies_only_the_edges(monkeypatch):
    x = clgrad.arange(200000.0).reshape(400, 500)
    seen = []
    host_bits = clgrad.Tensor._host_bits  # the device-to-host copy under numpy() and printing
    monkeypatch.setattr(clgrad.Tensor, "_host_bits", lambda self: seen.append(self.numel()) or
                        host_bits(self))
    got = repr(x)
    assert seen == [36]  # 6 x 6 edge values cut on the device
    assert got == repr(torch.arange(200000.0).reshape(400, 500))
