"""Buffers in host memory that other processes map too (``Tensor.share_memory_``).

On a CPU OpenCL device a buffer made with CL_MEM_USE_HOST_PTR over page-aligned host memory is
that memory (Intel's CPU runtime and PoCL use the pointer itself: no device copy to keep in
sync). ``SharedHost`` is such memory: an anonymous file (``os.memfd_create``) mapped
MAP_SHARED, so every process that maps the file's descriptor (passed to a spawned child, or
inherited by a forked one) reads and writes the same bytes. The descriptor stays open as long
as the SharedHost lives, so more processes can be given it; the memory is freed by the kernel
once the last descriptor and mapping are gone (nothing to unlink, nothing left in /dev/shm).

GPU devices cannot share: a GPU buffer lives in the GPU's memory and OpenCL has no
inter-process handle for it (CUDA's IPC handles have no OpenCL counterpart), so
``check_shareable`` raises for them.
"""
from __future__ import annotations

import mmap
import os
import uuid

import numpy as np
import pyopencl as cl

__all__ = ["SharedHost", "check_shareable"]

_PAGE = mmap.PAGESIZE


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

    def __del__(self):
        fd = getattr(self, "fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
