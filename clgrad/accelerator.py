"""``torch.accelerator``'s names: the accelerator is the OpenCL GPUs, typed "cuda" (see
clgrad/_device.py); without an OpenCL GPU there is none (``current_accelerator()`` is None)."""
from __future__ import annotations

from clgrad import cuda

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "set_device_index", "synchronize"]


def is_available() -> bool:
    """True when an OpenCL GPU is found."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``device(type='cuda')`` when an OpenCL GPU is found, else None (as PyTorch without one)."""
    from clgrad._device import device
    return device("cuda") if cuda.is_available() else None


def device_count() -> int:
    """Number of OpenCL GPUs."""
    return cuda.device_count()


def current_device_index() -> int:
    """The GPU index "cuda" means (``clgrad.cuda.current_device()``)."""
    return cuda.current_device()


def set_device_index(device) -> None:
    """As ``clgrad.cuda.set_device``."""
    cuda.set_device(device)


def synchronize(device=None) -> None:
    """As ``clgrad.cuda.synchronize``."""
    cuda.synchronize(device)
