"""OpenCL device layer: device choice, context, queue, memory pool, program cache, launches.

Nothing here knows about tensors or ops. Programs are built once per (context, file, defines)
and cached in memory; pyopencl caches the binaries on disk across processes.

Device choice (``CLGRAD_DEVICE``): ``cpu``, ``gpu``, ``P:D`` (platform and device indices as
listed by ``clgrad.devices()``), or a substring of the device name. Default: the first GPU if
any, else the first CPU device (the PoCL CPU device from ``pocl-binary-distribution``).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.tools

from clgrad.errors import DeviceError

__all__ = ["Device", "devices", "default_device", "set_default_device", "get_device",
           "synchronize", "kernel_dir", "launch_count"]

_PKG = Path(__file__).resolve().parent


def kernel_dir() -> Path:
    """The folder holding the ``*.cl`` sources: inside the installed package, or the checkout's."""
    for cand in (_PKG / "kernels", _PKG.parent / "kernels"):
        if (cand / "common.h").is_file():
            return cand
    raise DeviceError(f"kernels: expected common.h in {_PKG / 'kernels'} or "
                      f"{_PKG.parent / 'kernels'}, found neither")


_LAUNCHES = [0]
_BY_VALUE = (bytes, np.generic, np.ndarray)
_ARG_KIND: dict = {}  # argument type -> 0 buffer, 1 by value, 2 anything else (set_arg)
_enqueue = cl._cl.enqueue_nd_range_kernel  # positional: (queue, kernel, global, local,
#                                            global_offset, wait_for, g_times_l, allow_empty)


def launch_count() -> int:
    """Number of kernels launched so far in this process (for tests of launch counts)."""
    return _LAUNCHES[0]


class Device:
    """One OpenCL device with its context, in-order queue, memory pool and program cache.

    Attributes: ``name``, ``kind`` ('cpu' | 'gpu' | 'other'), ``platform_index``,
    ``device_index``, ``fp64`` and ``fp16`` (extension support), ``max_work_group_size``,
    ``local_mem_size`` (bytes).
    """

    def __init__(self, cl_device: cl.Device, platform_index: int, device_index: int):
        self.cl_device = cl_device
        self.platform_index = platform_index
        self.device_index = device_index
        self.name = cl_device.name.strip()
        t = cl_device.type
        self.kind = ("gpu" if t & cl.device_type.GPU else
                     "cpu" if t & cl.device_type.CPU else "other")
        ext = cl_device.extensions
        self.fp64 = "cl_khr_fp64" in ext or cl_device.double_fp_config != 0
        self.fp16 = "cl_khr_fp16" in ext
        self.max_work_group_size = cl_device.max_work_group_size
        self.local_mem_size = cl_device.local_mem_size
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(self.context)
        self.pool = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(self.queue))
        self._programs: dict = {}
        self._kernels: dict = {}

    def __repr__(self):
        return f"Device({self.platform_index}:{self.device_index} {self.name!r}, {self.kind})"

    # -- memory -------------------------------------------------------------------------------
    def alloc(self, nbytes: int):
        """A buffer of at least ``nbytes`` bytes (at least 1) from the memory pool."""
        return self.pool.allocate(max(int(nbytes), 16))

    # -- programs -----------------------------------------------------------------------------
    def program(self, file: str, defines: dict | None = None) -> cl.Program:
        """The program built from ``kernels/<file>`` with ``-D`` defines, cached."""
        key = (file, tuple(sorted((defines or {}).items())))
        prg = self._programs.get(key)
        if prg is None:
            prg = self._build(file, defines or {})
            self._programs[key] = prg
        return prg

    def kernel(self, file: str, name: str, defines: dict | None = None) -> cl.Kernel:
        """The kernel ``name`` of ``program(file, defines)``, cached per (file, defines, name)."""
        key = (file, name, *defines.items()) if defines else (file, name)  # no sort: hot path
        k = self._kernels.get(key)
        if k is None:
            k = getattr(self.program(file, defines), name)
            self._kernels[key] = k
        return k

    def _build(self, file: str, defines: dict) -> cl.Program:
        kdir = kernel_dir()
        path = kdir / file
        src = path.read_text()
        opts = [f"-I{kdir}"] + [f"-D{k}={v}" for k, v in sorted(defines.items())]
        if self.fp64:
            opts.append("-DCLGRAD_HAS_FP64=1")
        try:
            return cl.Program(self.context, src).build(options=opts)
        except cl.RuntimeError as e:  # carries the build log
            raise DeviceError(f"build of kernels/{file} failed on {self.name!r} with defines "
                              f"{defines}:\n{e}") from None

    def launch(self, kernel: cl.Kernel, global_size, local_size, *args):
        """Enqueue ``kernel`` with ``args``; each global size is rounded up to its local size.

        ``args``: buffers, bytes, NumPy scalars or contiguous NumPy arrays (by-value structs, see
        ``pack``), or anything ``Kernel.set_arg`` takes. Buffers are set in one
        ``_set_arg_multi`` call and by-value arguments in one ``_set_arg_buf_multi`` call (the
        calls pyopencl's own generated invokers make): ``set_args`` costs ~20 µs per by-value
        argument on PoCL, these ~1 µs for all of them.
        """
        if local_size is not None:
            global_size = [-(-g // l) * l for g, l in zip(global_size, local_size)]
        mem, val = [], []
        for i, a in enumerate(args):
            kind = _ARG_KIND.get(type(a))
            if kind is None:
                kind = _ARG_KIND.setdefault(type(a), 1 if isinstance(a, _BY_VALUE) else 0 if
                                            isinstance(a, cl.MemoryObjectHolder) else 2)
            if kind == 1:
                val += (i, a)
            elif kind == 0:
                mem += (i, a)
            else:
                kernel.set_arg(i, a)
        if mem:
            kernel._set_arg_multi(tuple(mem))
        if val:
            kernel._set_arg_buf_multi(tuple(val))
        _enqueue(self.queue, kernel, global_size, local_size, None, None, False, False)
        _LAUNCHES[0] += 1

    def synchronize(self):
        """Block until every command queued on this device has finished."""
        self.queue.finish()


_DEVICES: dict = {}
_DEFAULT: list = [None]


def _kind(d):  # s13a shim: Device.kind of a cl.Device
    return "gpu" if d.type & cl.device_type.GPU else "cpu" if d.type & cl.device_type.CPU \
        else "other"


def _all_cl_devices():
    out = []
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        platforms = []
    for pi, p in enumerate(platforms):
        try:
            devs = p.get_devices()
        except cl.Error:
            continue
        for di, d in enumerate(devs):
            out.append((pi, di, p, d))
    return out


def devices() -> list[dict]:
    """Every OpenCL platform/device: index, platform, name, type, compute units, memory, fp64/fp16.

    Returns a list of dicts with keys ``index`` ('P:D'), ``platform``, ``name``, ``type``,
    ``compute_units``, ``global_mem_bytes``, ``fp64``, ``fp16``.
    """
    rows = []
    for pi, di, p, d in _all_cl_devices():
        t = d.type
        rows.append(dict(index=f"{pi}:{di}", platform=p.name.strip(), name=d.name.strip(),
                         type="gpu" if t & cl.device_type.GPU else
                         "cpu" if t & cl.device_type.CPU else "other",
                         compute_units=d.max_compute_units, global_mem_bytes=d.global_mem_size,
                         fp64="cl_khr_fp64" in d.extensions or d.double_fp_config != 0,
                         fp16="cl_khr_fp16" in d.extensions))
    return rows


def get_device(spec: str | None = None) -> Device:
    """The device for ``spec`` ('cpu', 'gpu', 'P:D' or a name substring); None: the default.

    Raises:  DeviceError if no OpenCL device matches (the message lists the devices found).
    """
    if spec is None:
        return default_device()
    found = _all_cl_devices()
    if not found:
        raise DeviceError("no OpenCL device found: install pyopencl[pocl] for the CPU device")
    s = str(spec).strip()
    pick = None
    # s13a shim (the runtime rewrite replaces it): "cuda[:N]" = N-th GPU, "cpu:N" = N-th CPU.
    m = re.fullmatch(r"(cuda|cpu):?(\d*)", s.lower())
    if m and (m[1] == "cuda" or m[2]):
        of_type = [f for f in found if _kind(f[3]) == ("gpu" if m[1] == "cuda" else "cpu")]
        if int(m[2] or 0) >= len(of_type):
            what = "GPU" if m[1] == "cuda" else "CPU device"
            raise DeviceError(
                f"device: {s!r} means an OpenCL GPU, but no OpenCL GPU was found "
                f"(torch.cuda.is_available() is False); use 'cpu'" if not of_type else
                f"device: {s!r} means OpenCL {what} {int(m[2] or 0)}, but only "
                f"{len(of_type)} OpenCL {what}s were found")
        pick = of_type[int(m[2] or 0)]
    elif s.lower() in ("cpu", "gpu"):
        want = cl.device_type.CPU if s.lower() == "cpu" else cl.device_type.GPU
        pick = next((f for f in found if f[3].type & want), None)
    elif ":" in s and all(part.isdigit() for part in s.split(":", 1)):
        pi, di = (int(x) for x in s.split(":", 1))
        pick = next((f for f in found if f[0] == pi and f[1] == di), None)
    else:
        pick = next((f for f in found if s.lower() in f[3].name.lower()), None)
    if pick is None:
        listing = ", ".join(f"{f[0]}:{f[1]} {f[3].name.strip()}" for f in found)
        if s.lower() in ("cpu", "gpu"):
            raise DeviceError(f"device: no {s.lower().upper()} device found; available: "
                              f"[{listing}]")
        raise DeviceError(f"device: expected 'cpu', 'gpu', 'P:D' or a name substring matching "
                          f"one of [{listing}], got {spec!r}")
    key = (pick[0], pick[1])
    if key not in _DEVICES:
        dev = _DEVICES[key] = Device(pick[3], pick[0], pick[1])
        # s13a shim: PyTorch's device type ('cpu' | 'cuda' | 'other') and its ordinal.
        dev.type = {"gpu": "cuda", "cpu": "cpu"}.get(dev.kind, "other")
        same = [f for f in found if _kind(f[3]) == dev.kind]
        dev.index = [(f[0], f[1]) for f in same].index(key)
    return _DEVICES[key]


def default_device() -> Device:
    """The device tensors are created on: ``CLGRAD_DEVICE`` if set, else the first GPU, else CPU."""
    if _DEFAULT[0] is None:
        spec = os.environ.get("CLGRAD_DEVICE")
        if spec:
            try:
                _DEFAULT[0] = get_device(spec)
            except DeviceError as e:  # say where the bad spec came from
                raise DeviceError(f"CLGRAD_DEVICE={spec!r}: {e}") from None
        else:
            found = _all_cl_devices()
            if not found:
                raise DeviceError("no OpenCL device found: install pyopencl[pocl] for the CPU "
                                  "device")
            gpu = any(f[3].type & cl.device_type.GPU for f in found)
            _DEFAULT[0] = get_device("gpu" if gpu else "cpu" if any(
                f[3].type & cl.device_type.CPU for f in found) else "0:0")
    return _DEFAULT[0]


def set_default_device(spec: str | Device) -> Device:
    """Make ``spec`` (a Device or a spec string as for ``get_device``) the default device."""
    _DEFAULT[0] = spec if isinstance(spec, Device) else get_device(spec)
    return _DEFAULT[0]


def synchronize(device: Device | None = None):
    """Wait until the queue of ``device`` (default: the default device) has drained."""
    (device or default_device()).synchronize()


def pack(values, length: int = 8) -> np.ndarray:
    """Pack integers into an int64 array of ``length`` (a by-value struct argument)."""
    a = np.zeros(length, dtype=np.int64)
    a[:len(values)] = values
    return a
