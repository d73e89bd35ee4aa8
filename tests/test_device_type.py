"""clgrad.device (PyTorch's device type), clgrad.cuda, clgrad.accelerator, backends flags."""
import pickle

import numpy as np
import pytest

import clgrad
from clgrad.errors import DeviceError

HAS_GPU = any(r["type"] == "gpu" for r in clgrad.devices())


@pytest.mark.parametrize("args, kwargs, type_, index, text", [
    (("cpu",), {}, "cpu", None, "cpu"),
    (("cuda",), {}, "cuda", None, "cuda"),
    (("cuda:1",), {}, "cuda", 1, "cuda:1"),
    (("cuda", 0), {}, "cuda", 0, "cuda:0"),
    ((), {"type": "cuda", "index": 2}, "cuda", 2, "cuda:2"),
    (("cpu:0",), {}, "cpu", 0, "cpu:0"),
    ((3,), {}, "cuda", 3, "cuda:3"),
    (("gpu",), {}, "cuda", None, "cuda"),
    ((" CUDA:1 ",), {}, "cuda", 1, "cuda:1"),
])
def test_device_forms(args, kwargs, type_, index, text):
    d = clgrad.device(*args, **kwargs)
    assert (d.type, d.index, str(d)) == (type_, index, text)
    want_repr = (f"device(type='{type_}')" if index is None else
                 f"device(type='{type_}', index={index})")
    assert repr(d) == want_repr
    assert clgrad.device(d) == d and hash(clgrad.device(d)) == hash(d)
    assert pickle.loads(pickle.dumps(d)) == d


def test_device_equality():
    assert clgrad.device("cuda:0") == clgrad.device("cuda", 0) == "cuda:0"
    assert clgrad.device("cuda") != clgrad.device("cuda:0")  # as PyTorch: index None != 0
    assert clgrad.device("cpu") != clgrad.device("cuda")
    assert clgrad.device("cpu") == "cpu" and clgrad.device("cpu") != "nonsense-xyz"
    assert clgrad.device("cpu") != 3
    assert len({clgrad.device("cuda", 1), clgrad.device("cuda:1"), clgrad.device("cpu")}) == 2


@pytest.mark.parametrize("bad, exc, phrase", [
    ("mps", ValueError, "'mps' has no meaning here"),
    ("cuda:-1", ValueError, "device string"),
    ("cuda:x", ValueError, "device string"),
    ("", ValueError, "device string"),
    (2.5, TypeError, "expected a str, int or device"),
])
def test_device_errors(bad, exc, phrase):
    with pytest.raises(exc, match=phrase):
        clgrad.device(bad)
    with pytest.raises(ValueError, match="non-negative"):
        clgrad.device("cuda", -1)
    with pytest.raises(ValueError, match="no index"):
        clgrad.device("cuda:1", 1)


def test_cpu_device_of_tensors_and_moves():
    x = clgrad.arange(6.0, device=clgrad.device("cpu")).reshape(2, 3)
    assert x.device == clgrad.device("cpu") and clgrad.device("cpu") == x.device
    assert x.device.type == "cpu" and x.device.index is None  # PyTorch: device(type="cpu")
    assert clgrad.device(x.device) == clgrad.device("cpu")  # the first CPU is plain "cpu"
    assert isinstance(x.device, clgrad.device) and not isinstance("cpu", clgrad.device)
    assert not x.is_cuda and x.is_cpu and x.get_device() == -1
    assert x.cpu() is x and x.to(clgrad.device("cpu")) is x and x.to("cpu:0") is x
    y = clgrad.zeros(2, 3, device=clgrad.device("cpu"), dtype=clgrad.float64)
    np.testing.assert_array_equal((x.to(clgrad.device("cpu"), clgrad.float64) + y).numpy(),
                                  np.arange(6.0).reshape(2, 3))
    m = clgrad.nn.Linear(3, 2)
    assert m.to(clgrad.device("cpu")) is m and m.cpu() is m
    assert m.weight.device == clgrad.device("cpu")


@pytest.mark.skipif(HAS_GPU, reason="checks the messages of a machine without an OpenCL GPU")
def test_cuda_without_gpu_is_a_clear_error():
    assert not clgrad.cuda.is_available() and clgrad.cuda.device_count() == 0
    assert not clgrad.accelerator.is_available()
    assert clgrad.accelerator.current_accelerator() is None
    x = clgrad.ones(2)
    for use in (lambda: x.cuda(), lambda: x.to("cuda"), lambda: x.to(clgrad.device("cuda")),
                lambda: clgrad.zeros(2, device="cuda:0"), lambda: clgrad.nn.Linear(2, 2).cuda(),
                lambda: clgrad.cuda.synchronize()):
        with pytest.raises(DeviceError, match="no OpenCL GPU was found.*is_available"):
            use()
    with pytest.raises(DeviceError, match="no OpenCL GPU"):
        clgrad.cuda.set_device(0)
    # The idiom of PyTorch programs does the natural thing.
    dev = clgrad.device("cuda" if clgrad.cuda.is_available() else "cpu")
    assert clgrad.ones(2, device=dev).device == clgrad.device("cpu")


@pytest.mark.skipif(not HAS_GPU, reason="needs an OpenCL GPU")
def test_cuda_with_gpu():
    n = clgrad.cuda.device_count()
    assert clgrad.cuda.is_available() and n >= 1
    assert clgrad.accelerator.current_accelerator() == clgrad.device("cuda")
    x = clgrad.arange(4.0).cuda()
    assert x.is_cuda and x.device == clgrad.device("cuda:0") and x.get_device() == 0
    np.testing.assert_array_equal(x.cpu().numpy(), np.arange(4.0))
    assert isinstance(clgrad.cuda.get_device_name(0), str)
    clgrad.cuda.synchronize()


def test_cuda_functions_that_are_accepted(no_gc):
    clgrad.manual_seed(5)
    a = clgrad.rand(4).numpy()
    clgrad.manual_seed(5)
    clgrad.cuda.manual_seed(123)  # documented no-op: one host generator for every device
    clgrad.cuda.manual_seed_all(7)
    np.testing.assert_array_equal(clgrad.rand(4).numpy(), a)
    with pytest.raises(TypeError, match="expected an int"):
        clgrad.cuda.manual_seed(1.5)
    assert clgrad.cuda.current_device() == 0
    # (no_gc: a collection inside would free earlier tests' cyclic garbage and move the
    # count by their bytes, as it once did by 16 in CI)
    held = clgrad.cuda.memory_allocated()
    x = clgrad.zeros(1000)
    assert clgrad.cuda.memory_allocated() == held + 4000
    del x
    clgrad.cuda.empty_cache()
    assert clgrad.cuda.memory_allocated() == held


def test_cuda_names_without_a_meaning_here_say_why():
    """torch.cuda's pool, free-memory and NVML queries raise AttributeError (hasattr False, as
    for a missing name) saying why; other missing names keep Python's message. The deprecated
    reset_max_memory_allocated resets the peak, with PyTorch's FutureWarning."""
    for name, why in [("memory_reserved", "memory pools"), ("max_memory_reserved", "pools"),
                      ("memory_stats", "pools"), ("memory_summary", "max_memory_allocated"),
                      ("mem_get_info", "free memory"), ("utilization", "NVML")]:
        assert not hasattr(clgrad.cuda, name)
        with pytest.raises(AttributeError, match=f"torch.cuda.{name} is not available in "
                                                 f"clgrad: .*{why}"):
            getattr(clgrad.cuda, name)
    with pytest.raises(AttributeError, match="module 'clgrad.cuda' has no attribute 'nope'"):
        clgrad.cuda.nope  # noqa: B018
    x = clgrad.zeros(1000)
    peak = clgrad.cuda.max_memory_allocated()
    del x
    assert clgrad.cuda.max_memory_allocated() == peak
    with pytest.warns(FutureWarning, match="reset_peak_memory_stats"):
        clgrad.cuda.reset_max_memory_allocated()
    assert clgrad.cuda.max_memory_allocated() == clgrad.cuda.memory_allocated() < peak


def test_version_names_no_cuda_toolkit():
    """torch.version: clgrad's version; cuda and hip None (no toolkit: kernels are built at run
    time for the OpenCL driver), as in a CPU-only PyTorch."""
    import clgrad.version as v
    assert clgrad.version is v and v.__version__ == clgrad.__version__
    assert v.cuda is None and v.hip is None and v.debug is False
    with pytest.raises(AttributeError, match="no list of architectures"):
        clgrad.cuda.get_arch_list()
    if clgrad.cuda.is_available():
        assert clgrad.cuda.init() is None
    else:
        with pytest.raises(clgrad.DeviceError):
            clgrad.cuda.init()


def test_backends_flags():
    b = clgrad.backends
    assert b.conv_algorithm in b.CONV_ALGORITHMS  # the existing settings are kept
    b.cudnn.benchmark = True
    b.cudnn.deterministic = True
    assert b.cudnn.benchmark and b.cudnn.deterministic and b.cudnn.enabled
    assert not b.cudnn.is_available() and not b.mps.is_available() and not b.mps.is_built()
    b.cuda.matmul.allow_tf32 = True
    assert clgrad.get_float32_matmul_precision() == "high"  # one state, as PyTorch's
    b.cuda.matmul.allow_tf32 = False  # (TF32 left on would change later float32 matmuls)
    b.cudnn.benchmark = b.cudnn.deterministic = False


def test_device_as_context_manager():
    outer = clgrad.default_device()
    with clgrad.device("cpu") as d:
        assert d == clgrad.device("cpu") and clgrad.zeros(1).device == clgrad.device("cpu")
    assert clgrad.default_device() is outer



def test_to_with_copy_true_is_always_a_new_tensor():
    x = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    v = x.t()  # a strided view
    forms = [lambda t: t.to(clgrad.float32, copy=True), lambda t: t.to("cpu", copy=True),
             lambda t: t.to(t, copy=True), lambda t: t.to(clgrad.float32, False, True),
             lambda t: t.to("cpu", clgrad.float32, copy=True),
             lambda t: t.to(device="cpu", dtype=clgrad.float32, non_blocking=False, copy=True)]
    for i, form in enumerate(forms):
        y = form(v)
        assert y is not v and y._storage is not x._storage, f"form {i}"
        assert y.tolist() == [[1.0, 3.0], [2.0, 4.0]] and y.dtype is clgrad.float32
        y.sum().backward()  # the copy keeps the graph: the gradient reaches x
        np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 2)))
        x.grad = None
    y = x.to(clgrad.float32, copy=True)
    y.mul_(2.0)  # the copy does not alias x
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x.to(clgrad.float32) is x and x.to(clgrad.float32, False, False) is x
    with pytest.raises(TypeError, match="at most two bool"):
        x.to(clgrad.float32, False, True, True)
    torch = pytest.importorskip("torch")
    t = torch.ones(2)
    assert t.to(torch.float32, copy=True) is not t and t.to(torch.float32) is t
