"""torch.cuda's capability checks (clgrad/cuda.py): is_bf16_supported, get_device_capability,
the cuda.device context manager and nvtx, as the scripts GPU users copy call them (nanoGPT
picks bfloat16 by is_bf16_supported). Without an OpenCL GPU here, the GPU answers run in a
subprocess where PoCL poses as one (CLGRAD_TEST_AS_GPU, tests/conftest.py); on an NVIDIA GPU
the capability is compared with PyTorch's where PyTorch has CUDA."""
import pytest
from subproc import run_as_gpu

import clgrad
from clgrad.runtime import DeviceError


def _as_gpu(code):
    return run_as_gpu("import clgrad as torch\n" + code).stdout


def _has_gpu():
    return clgrad.cuda.is_available()


def test_without_a_gpu_as_pytorch_without_cuda():
    if _has_gpu():
        pytest.skip("this machine has an OpenCL GPU")
    assert clgrad.cuda.is_bf16_supported() is False
    with pytest.raises(DeviceError, match="no OpenCL GPU"):
        clgrad.cuda.get_device_capability()
    with pytest.raises(DeviceError, match="no OpenCL GPU"):
        with clgrad.cuda.device(0):
            pass
    with clgrad.cuda.device(None):          # PyTorch's: None or a negative index: no change
        assert clgrad.cuda.current_device() == 0
    with clgrad.cuda.device(-1):
        assert clgrad.cuda.current_device() == 0


def test_posed_gpu_answers():
    out = _as_gpu(
        "assert torch.cuda.is_available() and torch.cuda.is_bf16_supported() is True\n"
        "assert torch.cuda.is_bf16_supported(including_emulation=False) is False\n"
        "try:\n"
        "    torch.cuda.get_device_capability()\n"
        "except RuntimeError as e:\n"
        "    print('RAISED', e)\n"
        "with torch.cuda.device(0) as d:\n"
        "    assert torch.cuda.current_device() == 0\n"
        "try:\n"
        "    torch.cuda.device('cpu').__enter__()\n"
        "except ValueError as e:\n"
        "    print('CPU', e)\n"
        "x = torch.ones(3, dtype=torch.bfloat16, device='cuda')\n"
        "with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        "    y = torch.nn.functional.linear(torch.ones(2, 3, device='cuda'), "
        "torch.ones(4, 3, device='cuda'))\n"
        "print('DTYPE', y.dtype, y.float().tolist())\n")
    assert "RAISED get_device_capability: the GPU" in out and "NVIDIA's numbering" in out
    assert "CPU set_device: expected a cuda device" in out
    assert "DTYPE clgrad.bfloat16 [[3.0, 3.0, 3.0, 3.0], [3.0, 3.0, 3.0, 3.0]]" in out


def test_device_context_restores_the_current_gpu():
    prev = clgrad.cuda.current_device()
    dev = clgrad.cuda.device(None)
    with dev:
        pass
    assert clgrad.cuda.current_device() == prev


def test_nvtx_depths_as_nvtx():
    nv = clgrad.cuda.nvtx
    assert nv.range_pop() == -1                      # nothing pushed
    assert nv.range_push("a") == 0 and nv.range_push("b") == 1
    assert nv.range_pop() == 1 and nv.range_pop() == 0 and nv.range_pop() == -1
    nv.mark("m")
    with nv.range("r"):
        assert nv.range_push("inner") == 1
        assert nv.range_pop() == 1
    assert nv.range_pop() == -1


def test_nvidia_capability_as_pytorch():
    if not _has_gpu() or "NVIDIA" not in clgrad.cuda.get_device_name():
        pytest.skip("needs an NVIDIA GPU")
    major, minor = clgrad.cuda.get_device_capability()
    assert major >= 3 and 0 <= minor <= 9
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    assert (major, minor) == torch.cuda.get_device_capability(0)
