"""Tensors on two devices: PyTorch's device objects, copies across devices (copy_, to,
load_state_dict, tensor(t)), autograd through them, and machines whose default device is a GPU
or that have no CPU device at all.

This machine has two OpenCL CPU devices (Intel's runtime, "cpu", and PoCL, "cpu:1"): the
cross-device tests run for real on them; where PoCL does not work, on "cpu" and a second Device
of its own context on the same OpenCL device (``_two_devices``). The GPU-machine cases run in
a subprocess with CLGRAD_TEST_AS_GPU (tests/conftest.py), which makes the runtime treat PoCL
(or every device) as a GPU.
"""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad
from subproc import checkout_env, run_as_gpu

ROOT = Path(__file__).resolve().parent.parent


_SECOND = []  # the stand-in second device, made once


def _two_devices(pocl=False):
    """("cpu", a second device): PoCL where it works, else (unless ``pocl``: the subprocess
    tests that make PoCL a "GPU") a second Device of its own context on the same OpenCL device,
    index 1, whose buffers are foreign to the first one's kernels as a GPU's are."""
    a = clgrad.runtime.get_device("cpu")
    try:
        b = clgrad.runtime.get_device("pocl")
    except clgrad.DeviceError:
        b = a
    if b is a:
        if pocl:
            pytest.skip("needs a second OpenCL device (PoCL)")
        if not _SECOND:
            _SECOND.append(clgrad.runtime.Device(a.cl_device, a.platform_index, a.device_index,
                                                 index=1))
        b = _SECOND[0]
    return a, b


def test_tensor_device_is_pytorchs_device_type():
    torch = pytest.importorskip("torch")
    x = clgrad.zeros(3, device="cpu")
    assert isinstance(x.device, clgrad.device)
    assert str(x.device) == str(torch.zeros(3).device) == "cpu"
    assert repr(x.device) == repr(torch.zeros(3).device) == "device(type='cpu')"
    assert x.device == clgrad.device("cpu") and hash(x.device) == hash(clgrad.device("cpu"))
    assert {clgrad.device("cpu"): 1}[x.device] == 1
    assert x.device.type == "cpu" and x.device.index is None
    assert x.device.opencl is clgrad.runtime.get_device("cpu") is x.untyped_storage().device
    assert clgrad.zeros(2, device=x.device).device == x.device
    assert x.to(x.device) is x


def test_second_device_reports_its_index():
    a, b = _two_devices()
    y = clgrad.ones(2, device=b)
    want = "cpu:1" if b.kind == "cpu" else "cuda:0"  # PoCL; a "GPU" with CLGRAD_TEST_AS_GPU
    assert str(y.device) == want and y.device.index == int(want[-1]) and y.device.opencl is b
    assert y.device != clgrad.device("cpu") and y.device == clgrad.device(want)
    assert clgrad.zeros(2, device=y.device).device.opencl is b
    assert clgrad.arange(3.0).to(y.device).device.opencl is b


def test_to_other_device_records_autograd():
    a, b = _two_devices()
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    x = clgrad.tensor(xv, device=a, requires_grad=True)
    y = x.to(clgrad.device(b))  # "cpu:1" here, "cuda:0" under CLGRAD_TEST_AS_GPU=pocl
    assert y.device.opencl is b and y.requires_grad and not y.is_leaf
    assert "grad_fn=<ToCopyBackward0>" in repr(y)
    (y * y * y).sum().backward()
    assert x.grad.device == x.device
    np.testing.assert_allclose(x.grad.numpy(), 3 * xv.astype(np.float64) ** 2, rtol=1e-6)
    z = clgrad.tensor(xv, device=b, requires_grad=True)  # .cpu() back to the first device
    w = z.cpu()
    assert w.device == clgrad.device("cpu") and w.grad_fn is not None
    (w * 3).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), np.full((2, 3), 3, np.float32))
    assert z.grad.device.opencl is b


def test_to_device_and_dtype_together():
    a, b = _two_devices()
    x = clgrad.tensor([1.5, -2.25], device=a, requires_grad=True)
    y = x.to(b, clgrad.float64)
    assert y.dtype == clgrad.float64 and y.device.opencl is b
    (y * 2).sum().backward()
    assert x.grad.dtype == clgrad.float32 and x.grad.tolist() == [2.0, 2.0]
    n = clgrad.tensor([3, 4], device=a).to(b)  # integers: copied, no graph
    assert n.tolist() == [3, 4] and n.device.opencl is b and n.grad_fn is None


def test_copy_across_devices_with_gradient():
    a, b = _two_devices()
    dst = clgrad.zeros(2, 3, device=a)
    src = clgrad.arange(6.0, device=b).reshape(2, 3).t().contiguous().t()  # any layout
    dst.copy_(src)
    np.testing.assert_array_equal(dst.numpy(), np.arange(6.0).reshape(2, 3))
    s = clgrad.tensor([1.0, 2.0, 3.0], device=b, requires_grad=True)
    d = clgrad.zeros(2, 3, device=a)
    d.copy_(s)  # broadcast from the other device
    assert d.grad_fn is not None and d.device.opencl is a
    (d * clgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=a)).sum().backward()
    assert s.grad.tolist() == [5.0, 7.0, 9.0] and s.grad.device.opencl is b
    d2 = clgrad.zeros(3, dtype=clgrad.int64, device=a)
    d2.copy_(clgrad.tensor([1.7, -2.2, 3.0], device=b))  # cast and move, as torch
    assert d2.tolist() == [1, -2, 3]


def test_compute_ops_still_refuse_two_devices():
    a, b = _two_devices()
    x, y = clgrad.ones(2, device=a), clgrad.ones(2, device=b)
    for fn in (lambda: x + y, lambda: clgrad.cat([x, y]), lambda: clgrad.stack([x, y]),
               lambda: x @ y, lambda: clgrad.where(x > 0, x, y)):
        with pytest.raises(RuntimeError, match="same device"):
            fn()


def test_tensor_of_a_tensor_on_another_device():
    a, b = _two_devices()
    x = clgrad.tensor([[1.0, 2.0], [3.0, 4.0]], device=b).t()
    y = clgrad.tensor(x, device=a)
    assert y.device.opencl is a and y.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert clgrad.tensor(x).device.opencl is b  # no device: stays where it is (torch)
    z = clgrad.tensor(x, dtype=clgrad.int32, device="cpu")
    assert z.dtype == clgrad.int32 and z.tolist() == [[1, 3], [2, 4]]


def test_load_state_dict_from_another_device():
    a, b = _two_devices()
    clgrad.manual_seed(0)
    src = clgrad.nn.Sequential(clgrad.nn.Linear(3, 4), clgrad.nn.BatchNorm1d(4)).to(b)
    dst = clgrad.nn.Sequential(clgrad.nn.Linear(3, 4), clgrad.nn.BatchNorm1d(4)).to(a)
    src[1].running_mean.fill_(0.5)
    dst.load_state_dict(src.state_dict())
    for (k, p), (_, q) in zip(dst.state_dict().items(), src.state_dict().items()):
        assert p.device.opencl is a, k
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_optimizer_state_moves_with_load_state_dict():
    a, b = _two_devices()
    p = clgrad.nn.Parameter(clgrad.tensor([1.0, 2.0], device=b))
    opt = clgrad.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = clgrad.tensor([1.0, 1.0], device=b)
    opt.step()
    q = clgrad.nn.Parameter(clgrad.tensor([1.0, 2.0], device=a))
    opt2 = clgrad.optim.SGD([q], lr=0.1, momentum=0.9)
    opt2.load_state_dict(opt.state_dict())
    buf = opt2.state[q]["momentum_buffer"]
    assert buf.device.opencl is a and buf.tolist() == [1.0, 1.0]


def _run(code, as_gpu):
    return run_as_gpu(code, as_gpu)


def test_gpu_default_machine_runs_cpu_checkpoints():
    """Default device a "GPU" (PoCL here; CLGRAD_DEVICE=cuda or set_default_device('cuda')),
    "cpu" another device: the two torch_format tests that failed on the H200, plus moves and
    autograd between them."""
    _two_devices(pocl=True)
    env = checkout_env(CLGRAD_TEST_AS_GPU="pocl",
               CLGRAD_DEVICE="cuda")
    tests = ["tests/test_torch_format.py::test_shipped_state_dict_loads_into_a_clgrad_model",
             "tests/test_torch_format.py::test_map_location_forms",
             "tests/test_device_cross.py::test_to_other_device_records_autograd"]
    if importlib.util.find_spec("torch"):  # test_tensor_str compares with torch's printing
        tests.append("tests/test_tensor_str.py::test_gpu_tensors_show_their_device")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        *tests], capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert r.returncode == 0 and f"{len(tests)} passed" in r.stdout, r.stdout + r.stderr
    r = _run("import clgrad as torch\n"
             "torch.set_default_device('cuda')\n"
             "x = torch.ones(2, 3, requires_grad=True)\n"
             "assert str(x.device) == 'cuda:0' and x.is_cuda and torch.cuda.is_available()\n"
             "assert x.device == torch.device('cuda') or x.device == torch.device('cuda:0')\n"
             "assert x.device.type == 'cuda' and x.device.index == 0\n"
             "c = x.cpu()\n"
             "assert str(c.device) == 'cpu' and c.is_cpu and c.device.opencl.kind == 'cpu'\n"
             "(c * 2).sum().backward()\n"
             "assert x.grad.tolist() == [[2.0] * 3] * 2 and x.grad.is_cuda\n"
             "g = c.cuda()\n"
             "assert g.device == x.device and g.device.opencl is x.device.opencl\n"
             "m = torch.nn.Linear(3, 2)\n"
             "assert next(m.parameters()).is_cuda\n"
             "m.load_state_dict({k: v.cpu() for k, v in m.state_dict().items()})\n"
             "print('ok')\n", "pocl")
    assert r.stdout.strip().endswith("ok")


def test_gpu_machine_creates_on_cpu_as_pytorch():
    """A "GPU" (PoCL here) and a CPU device: new tensors, modules and DataLoader batches go to
    "cpu" as in PyTorch (dcgan/vae/mnist_forward_forward with device("cpu") failed on the
    H200), while "cuda", torch.cuda and torch.accelerator find the GPU and the training job's
    fastest_device takes it. No kernel runs on the "GPU"."""
    _two_devices(pocl=True)
    r = _run("import clgrad as torch\n"
             "from clgrad.utils.data import DataLoader, TensorDataset\n"
             "assert torch.default_device().kind == 'cpu'\n"
             "assert torch.get_default_device() == torch.device('cpu')\n"
             "device = torch.device('cpu')\n"
             "m = torch.nn.Linear(3, 2).to(device)\n"
             "x = torch.randn(4, 3)\n"
             "assert x.device == device and next(m.parameters()).device == device\n"
             "ds = TensorDataset(torch.arange(8.0).reshape(4, 2), torch.arange(4))\n"
             "xb, yb = next(iter(DataLoader(ds, batch_size=2)))\n"
             "assert xb.device == device and yb.device == device\n"
             "assert m(x).shape == (4, 2) and m(x).device == device\n"
             "import io\n"
             "buf = io.BytesIO(); torch.save(m.state_dict(), buf); buf.seek(0)\n"
             "assert all(v.device == device for v in torch.load(buf).values())\n"
             "assert torch.cuda.is_available() and torch.cuda.device_count() == 1\n"
             "assert torch.accelerator.current_accelerator() == torch.device('cuda')\n"
             "assert torch.device('cuda').opencl.kind == 'gpu'\n"
             "assert torch.runtime.fastest_device() is torch.device('cuda').opencl\n"
             "torch.set_default_device('cuda')\n"
             "assert torch.get_default_device() == torch.device('cuda:0')\n"
             "torch.set_default_device(None)\n"
             "assert torch.get_default_device() == torch.device('cpu')\n"
             "print('ok')\n", "pocl")
    assert r.stdout.strip().endswith("ok")


def test_machine_without_cpu_device():
    """Every OpenCL device a GPU: "cpu" names the default device (one warning), and .cpu(),
    .numpy(), .tolist(), .item(), print, map_location="cpu" and pin_memory keep working; the
    tensor reports where it really is."""
    r = _run("import warnings, io, clgrad as torch\n"
             "x = torch.arange(4.0, requires_grad=True)\n"
             "assert str(x.device) == 'cuda:0'\n"
             "with warnings.catch_warnings(record=True) as w:\n"
             "    warnings.simplefilter('always')\n"
             "    c = x.cpu()\n"
             "    z = torch.zeros(2, device='cpu')\n"
             "    y = x.to('cpu')\n"
             "assert len(w) == 1 and 'no usable OpenCL CPU device' in str(w[0].message), w\n"
             "assert w[0].filename == '<string>'  # the user's line, not clgrad's\n"
             "assert c.device == x.device and str(c.device) == 'cuda:0' and y is x\n"
             "assert z.device == x.device\n"
             "assert c.detach().numpy().tolist() == [0.0, 1.0, 2.0, 3.0] and c.tolist()[3] == 3.0\n"
             "assert x.sum().item() == 6.0 and float(x[1]) == 1.0\n"
             "assert str(x) == \"tensor([0., 1., 2., 3.], device='cuda:0', "
             "requires_grad=True)\", str(x)\n"
             "buf = io.BytesIO(); torch.save({'x': x.detach()}, buf); buf.seek(0)\n"
             "d = torch.load(buf, map_location='cpu')\n"
             "assert d['x'].tolist() == [0.0, 1.0, 2.0, 3.0] and d['x'].device == x.device\n"
             "(c * c).sum().backward()\n"
             "assert x.grad.tolist() == [0.0, 2.0, 4.0, 6.0]\n"
             "import pytest\n"
             "with pytest.raises(torch.DeviceError):\n"
             "    torch.zeros(1, device='cpu:1')\n"
             "with pytest.raises(ValueError, match='expected a cuda device .*got: cpu$'):\n"
             "    torch.cuda.Stream('cpu')\n"
             "import numpy as np  # nanoGPT's batch: from_numpy, pinned, moved non_blocking\n"
             "b = torch.from_numpy(np.arange(6, dtype=np.int64).reshape(2, 3))\n"
             "p = b.pin_memory()\n"
             "assert p.is_pinned() and not b.is_pinned() and p is not b\n"
             "g = p.to('cuda', non_blocking=True)\n"
             "assert g.device == b.device and g.tolist() == [[0, 1, 2], [3, 4, 5]]\n"
             "p.add_(1)\n"
             "assert b.tolist() == [[0, 1, 2], [3, 4, 5]]  # a copy, as PyTorch\n"
             "print('ok')\n", "*")
    assert r.stdout.strip().endswith("ok")


def test_zero_dim_cpu_tensor_joins_another_device():
    """As PyTorch: a 0-dim tensor on the CPU device may meet a tensor on another device."""
    a, b = _two_devices()
    x = clgrad.tensor([1.0, 2.0], device=b, requires_grad=True)
    s = clgrad.tensor(3.0, device=a, requires_grad=True)
    y = x * s
    assert y.device.opencl is b and y.tolist() == [3.0, 6.0]
    y.sum().backward()
    assert s.grad.item() == 3.0 and s.grad.device.opencl is a and x.grad.tolist() == [3.0] * 2
    with pytest.raises(RuntimeError, match=r"same device, but found at least two devices, "
                                           rf"cpu \(.*\) and {clgrad.device(b)} \("):
        clgrad.ones(2, device=a) + clgrad.ones(2, device=b)


def test_pin_memory():
    """Tensor.pin_memory as PyTorch's: a pinned copy of a CPU tensor (is_pinned), self when
    already pinned, refused for a GPU tensor and where no GPU exists (PyTorch without CUDA:
    "Cannot access accelerator device when none is available.")."""
    x = clgrad.arange(4.0)
    assert x.is_pinned() is False
    if not clgrad.cuda.is_available():
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            x.pin_memory()
    _two_devices(pocl=True)
    r = _run("import clgrad as torch\n"
             "x = torch.arange(6.0).view(2, 3)[:, 1:]\n"
             "p = x.pin_memory()\n"
             "assert p is not x and p.is_pinned() and not x.is_pinned()\n"
             "assert p.pin_memory() is p and p[0].is_pinned()\n"
             "assert p.device == x.device == torch.device('cpu') and p.tolist() == x.tolist()\n"
             "p.add_(10)\n"
             "assert x.tolist() == [[1.0, 2.0], [4.0, 5.0]], x.tolist()  # a copy, as PyTorch\n"
             "g = p.to('cuda', non_blocking=True)\n"
             "assert g.device == torch.device('cuda:0') and not g.is_pinned()\n"
             "assert g.tolist() == [[11.0, 12.0], [14.0, 15.0]]\n"
             "try:\n"
             "    g.pin_memory()\n"
             "except RuntimeError as e:\n"
             "    print('GPU', e)\n"
             "w = torch.ones(3, requires_grad=True)\n"
             "(w.pin_memory() * 2).sum().backward()\n"
             "assert w.grad.tolist() == [2.0, 2.0, 2.0]\n"
             "print('ok')\n", "pocl")
    assert "GPU pin_memory: cannot pin a tensor on cuda:0: only dense CPU tensors" in r.stdout
    assert r.stdout.strip().endswith("ok")
