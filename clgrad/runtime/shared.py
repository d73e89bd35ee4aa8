"""Buffers in host memory that other processes map too (``Tensor.share_memory_``).

On a CPU OpenCL device a buffer made with CL_MEM_USE_HOST_PTR over page-aligned host memory is
that memory (Intel's CPU runtime uses the pointer itself: no device copy to keep in sync). The
spec allows a runtime to cache such a buffer in memory of its own instead, so the first
sharing on a device checks it (a host write must be read by the device and a device write be
seen by the host) and raises if the runtime copies. ``SharedHost`` is such memory: an
anonymous file (``os.memfd_create``) mapped MAP_SHARED, so every process that maps the file's
descriptor (passed to a spawned child or through a Queue) reads and writes the same bytes.
The descriptor stays open as long as the SharedHost lives, so more processes can be given it;
the kernel frees the memory once the last descriptor and mapping are gone (nothing to unlink,
nothing left in /dev/shm).

GPU devices cannot share: a GPU buffer lives in the GPU's memory and OpenCL has no
inter-process handle for it (CUDA's IPC handles have no OpenCL counterpart), so
``check_shareable`` raises for them.
"""
from __future__ import annotations

import mmap
import os
import uuid
import weakref

import numpy as np
import pyopencl as cl

__all__ = ["SharedHost", "check_shareable"]

_PAGE = mmap.PAGESIZE
_ZERO_COPY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Device -> checked


def check_shareable(device, what: str):
    """Raise RuntimeError unless ``device`` is a CPU device (whose buffers can be host memory).
    ``what`` names the caller in the message."""
    if device.kind != "cpu":
        raise RuntimeError(
            f"{what}: expected a tensor on a CPU device, got one on {device.name!r} "
            f"({device.kind}): a GPU buffer cannot be shared between processes (OpenCL has no "
            f"inter-process memory handles); move the tensor to 'cpu' first")


class SharedHost:
    """``nbytes`` of shared host memory and the USE_HOST_PTR buffer over it on ``device``.

    ``SharedHost(device, nbytes)`` makes new (zeroed) memory; ``SharedHost(device, nbytes,
    fd=fd, key=key)`` maps the memory another process passed as ``fd`` (this object then owns
    the descriptor). ``key`` names the memory in every process (a storage's identity when a
    tensor travels to and fro). Attributes: ``buffer`` (the cl.Buffer), ``fd``, ``key``,
    ``nbytes``, ``host`` (a uint8 NumPy view of the mapping).
    Raises:  RuntimeError for a device that is not a CPU (see check_shareable); OSError when
             the memory cannot be made or mapped
    """

    def __init__(self, device, nbytes: int, fd: int | None = None, key: str | None = None):
        check_shareable(device, "share_memory_")
        self.nbytes = int(nbytes)
        size = max(-(-self.nbytes // _PAGE) * _PAGE, _PAGE)  # whole pages (and never 0)
        if fd is None:
            fd = os.memfd_create("clgrad-shared", os.MFD_CLOEXEC)
            try:
                os.ftruncate(fd, size)
            except OSError:
                os.close(fd)
                raise
        self.fd = fd
        self.key = key or uuid.uuid4().hex
        self.mapping = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.host = np.frombuffer(self.mapping, dtype=np.uint8)
        # pyopencl keeps ``host`` (and so the mapping) alive as long as the buffer
        with device._lock:  # the runtime's one lock over allocations (runtime/device.py)
            self.buffer = cl.Buffer(device.context,
                                    cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                                    hostbuf=self.host)
        if device not in _ZERO_COPY:
            _check_zero_copy(device)
            _ZERO_COPY[device] = True

    def __del__(self):
        fd = getattr(self, "fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


def _check_zero_copy(device):
    """Raise RuntimeError unless USE_HOST_PTR buffers of ``device`` are the host memory itself
    (a host write is what the device reads; a device write is what the host reads)."""
    host = np.zeros(_PAGE // 4, np.uint32)
    with device._lock:
        buf = cl.Buffer(device.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                        hostbuf=host)
    device.fill(buf, np.uint32(7), 0, 4)  # a device write ...
    device.synchronize()
    seen = int(host[0])  # ... seen by the host?
    host[1] = 9  # a host write ...
    back = np.zeros(2, np.uint32)
    device.copy(back, buf)  # ... read by the device?
    if seen != 7 or int(back[1]) != 9:
        raise RuntimeError(
            f"share_memory_: the OpenCL runtime of {device.name!r} ({device.platform}) keeps "
            f"CL_MEM_USE_HOST_PTR buffers in memory of its own, so its tensors cannot be shared "
            f"between processes")
