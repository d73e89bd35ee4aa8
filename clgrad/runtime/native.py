"""Direct OpenCL calls through ctypes, for replaying captured graphs (clgrad/capture/replay.py) with
less host time per kernel than pyopencl's enqueue.

- ``enqueue_fn()``: ``clEnqueueNDRangeKernel`` of the ICD loader pyopencl loaded (found in
  ``/proc/self/maps``, else next to pyopencl, else the system's ``libOpenCL``), called with a
  NULL event: no pyopencl Event object per launch. ``kernel_args(queue, kernel, global, local)``
  prepares its arguments once (size_t arrays), so a launch is ``fn(*args)`` (0 on success).
- ``CommandBuffer``: ``cl_khr_command_buffer`` (clCreateCommandBufferKHR,
  clCommandNDRangeKernelKHR, clFinalizeCommandBufferKHR, clEnqueueCommandBufferKHR): a run of
  recorded kernel launches enqueued by one call. The kernels' arguments are the ones set when
  the launch is recorded. ``command_buffer_support(device)`` says whether a device offers it
  (the extension is listed and its entry points resolve), with the reason when not.

Everything here is optional: where the loader or the extension is missing, the callers keep
pyopencl's enqueue. Errors raise ``cl.RuntimeError``-like ``NativeError`` with the CL status.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from pathlib import Path

import pyopencl as cl

__all__ = ["loader", "enqueue_fn", "kernel_args", "command_buffer_support", "CommandBuffer",
           "NativeError"]

_c_size_p = ctypes.POINTER(ctypes.c_size_t)
_LIB = [None, False]  # the loader's CDLL, and whether it was looked for


class NativeError(RuntimeError):
    """An OpenCL call through ctypes returned an error status (``code``)."""

    def __init__(self, what: str, code: int):
        super().__init__(f"{what}: OpenCL error {code}")
        self.code = code


def _loader_path() -> str | None:
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and os.path.basename(parts[-1]).startswith("libOpenCL"):
                    return parts[-1]
    except OSError:
        pass
    libs = Path(cl.__file__).resolve().parent.parent / "pyopencl.libs"
    for d in (Path(cl.__file__).resolve().parent / ".libs", libs):
        found = sorted(d.glob("libOpenCL*")) if d.is_dir() else []
        if found:
            return str(found[0])
    return ctypes.util.find_library("OpenCL")


def loader():
    """The OpenCL ICD loader as a ``ctypes.CDLL`` (the one pyopencl uses where it can be
    found), or None."""
    if not _LIB[1]:
        _LIB[1] = True
        path = _loader_path()
        try:
            lib = ctypes.CDLL(path) if path else None
            if lib is not None:
                f = lib.clEnqueueNDRangeKernel
                f.restype = ctypes.c_int
                f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p,
                              _c_size_p, _c_size_p, ctypes.c_uint, ctypes.c_void_p,
                              ctypes.c_void_p]
                g = lib.clGetExtensionFunctionAddressForPlatform
                g.restype = ctypes.c_void_p
                g.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        except (OSError, AttributeError):
            lib = None
        _LIB[0] = lib
    return _LIB[0]


_PLAIN = [None]


def enqueue_fn():
    """``clEnqueueNDRangeKernel`` as a ctypes function without argument conversion (faster per
    call: the arguments come ready from ``kernel_args``), or None without a loader."""
    lib = loader()
    if lib is None:
        return None
    if _PLAIN[0] is None:
        addr = ctypes.cast(lib.clEnqueueNDRangeKernel, ctypes.c_void_p).value
        _PLAIN[0] = ctypes.CFUNCTYPE(ctypes.c_int)(addr)
    return _PLAIN[0]


def _sizes(v):
    return None if v is None else (ctypes.c_size_t * len(v))(*v)


def kernel_args(queue: cl.CommandQueue, kernel: cl.Kernel, global_size, local_size) -> tuple:
    """The argument tuple of ``enqueue_fn()`` for one launch with a NULL event (``global_size``
    already a multiple of ``local_size``). The caller keeps ``queue`` and ``kernel`` alive."""
    return (ctypes.c_void_p(queue.int_ptr), ctypes.c_void_p(kernel.int_ptr),
            ctypes.c_uint(len(global_size)), None, _sizes(global_size), _sizes(local_size),
            ctypes.c_uint(0), None, None)


# -- cl_khr_command_buffer --------------------------------------------------------------------
_EXT = "cl_khr_command_buffer"
_PROTOS = {
    "clCreateCommandBufferKHR": (ctypes.c_void_p, [ctypes.c_uint, ctypes.c_void_p,
                                                   ctypes.c_void_p,
                                                   ctypes.POINTER(ctypes.c_int)]),
    "clCommandNDRangeKernelKHR": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p,
                                                 ctypes.c_void_p, ctypes.c_void_p,
                                                 ctypes.c_uint, ctypes.c_void_p, _c_size_p,
                                                 _c_size_p, ctypes.c_uint, ctypes.c_void_p,
                                                 ctypes.c_void_p, ctypes.c_void_p]),
    "clFinalizeCommandBufferKHR": (ctypes.c_int, [ctypes.c_void_p]),
    "clEnqueueCommandBufferKHR": (ctypes.c_int, [ctypes.c_uint, ctypes.c_void_p,
                                                 ctypes.c_void_p, ctypes.c_uint,
                                                 ctypes.c_void_p, ctypes.c_void_p]),
    "clReleaseCommandBufferKHR": (ctypes.c_int, [ctypes.c_void_p]),
}
_FUNCS: dict = {}  # platform int_ptr -> {name: function} or a reason string


def _functions(cl_device: cl.Device):
    plat = cl_device.platform
    got = _FUNCS.get(plat.int_ptr)
    if got is None:
        got = _FUNCS[plat.int_ptr] = _resolve(plat)
    return got


def _resolve(plat):
    lib = loader()
    if lib is None:
        return "no OpenCL ICD loader found for ctypes"
    out = {}
    for name, (res, args) in _PROTOS.items():
        addr = lib.clGetExtensionFunctionAddressForPlatform(plat.int_ptr, name.encode())
        if not addr:
            return f"{name} does not resolve on platform {plat.name.strip()!r}"
        out[name] = ctypes.CFUNCTYPE(res, *args)(addr)
    return out


_CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR = 0x12A9
_CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR = 1 << 2
_CL_COMMAND_BUFFER_FLAGS_KHR = 0x1293
_CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR = 1 << 0


def _simultaneous_use(cl_device: cl.Device) -> bool:
    """Whether the device lists the simultaneous-use capability of command buffers."""
    lib = loader()
    caps = ctypes.c_uint64(0)
    try:
        st = lib.clGetDeviceInfo(ctypes.c_void_p(cl_device.int_ptr),
                                 ctypes.c_uint(_CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR),
                                 ctypes.c_size_t(8), ctypes.byref(caps), None)
    except AttributeError:
        return False
    return st == 0 and bool(caps.value & _CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR)


def command_buffer_support(cl_device: cl.Device) -> tuple:
    """(available: bool, reason: str): whether ``cl_device`` offers ``cl_khr_command_buffer``
    with its entry points resolvable through ctypes. ``CLGRAD_COMMAND_BUFFER=0`` turns it off."""
    from clgrad.settings import getenv
    if getenv("CLGRAD_COMMAND_BUFFER") == "0":
        return False, "turned off by CLGRAD_COMMAND_BUFFER=0"
    if _EXT not in cl_device.extensions.split():
        return False, f"{cl_device.name.strip()!r} does not list {_EXT}"
    f = _functions(cl_device)
    if isinstance(f, str):
        return False, f
    return True, f"{cl_device.name.strip()!r} offers {_EXT}"


class CommandBuffer:
    """A ``cl_khr_command_buffer`` command buffer on one in-order queue: ``add(kernel,
    global_size, local_size)`` records a launch (with the kernel's arguments as set now; each
    launch waits for the previous one), ``finalize()``, then ``enqueue()`` any number of times.
    Raises NativeError on an OpenCL error; RuntimeError where the device lacks the extension.
    """

    def __init__(self, queue: cl.CommandQueue):
        ok, why = command_buffer_support(queue.device)
        if not ok:
            raise RuntimeError(f"CommandBuffer: {why}")
        self._f = _functions(queue.device)
        self._queue = queue
        self._qptr = ctypes.c_void_p(queue.int_ptr)
        self._kernels = []  # alive as long as the buffer
        self._last = None   # the previous command's sync point
        err = ctypes.c_int(0)
        h = None
        self.simultaneous = _simultaneous_use(queue.device)
        if self.simultaneous:  # may be enqueued again while the last enqueue is pending
            props = (ctypes.c_uint64 * 3)(_CL_COMMAND_BUFFER_FLAGS_KHR,
                                          _CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0)
            h = self._f["clCreateCommandBufferKHR"](1, ctypes.byref(self._qptr), props,
                                                    ctypes.byref(err))
            if err.value or not h:  # a revision without the flag: the default buffer
                self.simultaneous, h = False, None
        if h is None:
            h = self._f["clCreateCommandBufferKHR"](1, ctypes.byref(self._qptr), None,
                                                    ctypes.byref(err))
        if err.value or not h:
            raise NativeError("clCreateCommandBufferKHR", err.value)
        self.retries = 0  # enqueues that had to wait for the previous one (see enqueue)
        self._h = ctypes.c_void_p(h)
        self._enq = functools.partial(self._f["clEnqueueCommandBufferKHR"], 1,
                                      ctypes.byref(self._qptr), self._h, 0, None, None)
        self.num_kernels = 0

    def add(self, kernel: cl.Kernel, global_size, local_size=None):
        """Record one launch of ``kernel`` (its current arguments) after the previous one."""
        sp = ctypes.c_uint(0)
        wait = None if self._last is None else ctypes.byref(self._last)
        st = self._f["clCommandNDRangeKernelKHR"](
            self._h, None, None, kernel.int_ptr, len(global_size), None, _sizes(global_size),
            _sizes(local_size), 0 if wait is None else 1, wait, ctypes.byref(sp), None)
        if st:
            raise NativeError("clCommandNDRangeKernelKHR", st)
        self._last = sp
        self._kernels.append(kernel)
        self.num_kernels += 1

    def finalize(self):
        """Close the recording; the buffer can be enqueued after this."""
        st = self._f["clFinalizeCommandBufferKHR"](self._h)
        if st:
            raise NativeError("clFinalizeCommandBufferKHR", st)

    def enqueue(self):
        """Enqueue the recorded launches on the queue (asynchronously). A runtime that refuses
        to enqueue a buffer still pending from the last enqueue (CL_INVALID_OPERATION without
        simultaneous use) gets a queue finish and a second try."""
        st = self._enq()
        if st == -59:  # CL_INVALID_OPERATION: still pending
            self.retries += 1
            self._queue.finish()
            st = self._enq()
        if st:
            raise NativeError("clEnqueueCommandBufferKHR", st)

    def release(self):
        """Free the command buffer (idempotent; also on garbage collection)."""
        h, self._h = getattr(self, "_h", None), None
        if h is not None and h.value:
            self._f["clReleaseCommandBufferKHR"](h)

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001  (interpreter shutdown: the library may be gone)
            pass
