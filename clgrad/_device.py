"""PyTorch's ``torch.device`` type on OpenCL (``clgrad.cuda`` and ``clgrad.accelerator``, in
clgrad/cuda.py and clgrad/accelerator.py, answer PyTorch's device queries with it).

What the names mean here (there is no CUDA; every device is an OpenCL device):

    "cuda", "cuda:N"   the OpenCL GPUs, in the order ``clgrad.devices()`` lists them: "cuda:0"
                       is the first GPU of any vendor (NVIDIA, AMD, Intel), as PyTorch's ROCm
                       build also calls AMD GPUs "cuda"; "cuda" alone is the current GPU
                       (``clgrad.cuda.current_device()``, 0 unless ``set_device`` changed it)
    "cpu", "cpu:N"     the OpenCL CPU devices (Intel's OpenCL CPU runtime, PoCL); "cpu" is the
                       first usable one (Intel's where both work)
    "gpu", "P:D", "intel", "pocl", a name substring
                       clgrad's own device specs (see ``clgrad.runtime.get_device``)

So ``torch.device("cuda" if torch.cuda.is_available() else "cpu")`` picks the first OpenCL GPU
where one exists and the CPU device otherwise. As in PyTorch, tensors are created on "cpu" (the
OpenCL CPU device, ``clgrad.default_device()``) unless ``clgrad.set_default_device(...)`` or
``CLGRAD_DEVICE`` says otherwise, also on a machine with a GPU. Deliberate difference: "cpu"
tensors live on an OpenCL device too, so ``.numpy()`` is a copy for them as well. Where no GPU
exists, using "cuda" for a tensor raises DeviceError (a RuntimeError) saying that no OpenCL GPU
was found.

``Tensor.device`` is a ``clgrad.device`` as in PyTorch (``str(x.device)`` is 'cpu' or 'cuda:0',
equal and hash-equal to ``device("cpu")``); the OpenCL device behind it is ``x.device.opencl``
(a ``clgrad.runtime.Device``, also ``x.untyped_storage().device``).

No OpenCL CPU device (e.g. a machine whose only OpenCL driver is NVIDIA's): the default device
is then the GPU, and "cpu" names it, with one warning saying so. ``.cpu()``, ``.to("cpu")``,
``device="cpu"`` and ``map_location="cpu"`` keep working; the tensor reports where it really is
(``x.cpu().device`` is 'cuda:0' there), so the device never lies about where compute happens.
``.numpy()``, ``.tolist()``, ``.item()`` and printing read any device directly.
"""
from __future__ import annotations

import builtins
import re

from clgrad import runtime
from clgrad.errors import CPU_RUNTIME_HINT

__all__ = ["device", "resolve", "of_runtime", "get_default_device"]

_TYPES = ("cpu", "cuda")
_OTHER_TORCH_TYPES = ("mps", "xpu", "hip", "xla", "mkldnn", "ipu", "hpu", "mtia",
                      "privateuseone", "vulkan", "opengl", "opencl", "ideep", "fpga", "ve",
                      "lazy", "maia")
_SPEC = re.compile(r"([a-z_]+)(?::(\d+))?")
_RUNTIME_DEVICES = (runtime.Device, runtime.MetaDevice)  # what Tensor._storage.device holds
# the index "cuda" without an index means (clgrad.cuda.current_device/set_device read and set it)
_CURRENT_GPU = [0]


class _DeviceType(type):
    def __instancecheck__(cls, obj):  # a runtime Device (device.opencl) passes as one too
        return type.__instancecheck__(cls, obj) or isinstance(obj, _RUNTIME_DEVICES)


class device(metaclass=_DeviceType):  # noqa: N801  (PyTorch's name)
    """A device by type and index, as ``torch.device``.

    Forms:   device("cuda"), device("cuda:1"), device("cuda", 0), device(type="cuda", index=0),
             device("cpu"), device(0) (= "cuda:0"), device(another_device), device(x.device),
             and clgrad's own specs "gpu" (= "cuda"), "P:D" or a device-name substring, which
             are looked up among the OpenCL devices at once; device("meta"): tensors without
             data (clgrad/runtime/meta.py)
    Attrs:   ``type`` 'cpu' | 'cuda' | 'meta' ('other' for an OpenCL accelerator named by a
             clgrad spec),
             ``index`` int or None (None: the current device of that type)
    Compare: equal to a device, a runtime Device or a string of the same type and index
             (``device("cuda") != device("cuda:0")``, as in PyTorch); hashable
    Context: ``with device(...):`` makes it the default device inside the block
    Raises:  ValueError for a malformed string, a negative index, or a PyTorch type with no
             OpenCL meaning here ("mps", "xpu", ...); TypeError for other arguments;
             DeviceError for a clgrad spec that matches no device
    """

    __slots__ = ("_type", "_index", "_outer", "_rt")

    def __init__(self, type=None, index=None):  # noqa: A002  (PyTorch's keyword)
        self._rt = None  # the runtime Device, when known (a tensor's device, device(x.device))
        if isinstance(type, _RUNTIME_DEVICES):
            self._rt = type
            type, index = _of_runtime(type)
        elif isinstance(type, device):
            if index is not None:
                raise TypeError("device: expected no index with a device argument")
            self._rt = type._rt
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool) and index is None:
            type, index = "cuda", type
        elif isinstance(type, str):
            type, parsed = _parse(type)
            if parsed is not None:
                if index is not None:
                    raise ValueError(f"device: expected no index with {type}:{parsed}, "
                                     f"got index={index!r}")
                index = parsed
        else:
            raise TypeError(f"device: expected a str, int or device, got "
                            f"{builtins.type(type).__name__}")
        if index is not None:
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(f"device: expected an int index, got {index!r}")
            if index < 0:
                raise ValueError(f"device: expected a non-negative index, got {index}")
        self._type, self._index = type, index

    @property
    def type(self) -> str:
        """'cpu' or 'cuda' (or 'other')."""
        return self._type

    @property
    def index(self):
        """The ordinal among devices of this type, or None for the current one."""
        return self._index

    @property
    def opencl(self) -> runtime.Device:
        """The OpenCL device this names (``clgrad.runtime.Device``: name, queue, memory ...).

        Raises:  DeviceError if it names no OpenCL device
        """
        return resolve(self)

    def __repr__(self):
        if self._index is None:
            return f"device(type={self._type!r})"
        return f"device(type={self._type!r}, index={self._index})"

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __eq__(self, other):
        if isinstance(other, (str,) + _RUNTIME_DEVICES):
            try:
                other = device(other)
            except (ValueError, TypeError, runtime.DeviceError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        return (self._type, self._index) == (other._type, other._index)

    def __hash__(self):
        return hash((self._type, self._index))

    def __reduce__(self):
        return device, (self._type, self._index)

    def __enter__(self):
        """``with clgrad.device("cpu"):`` makes it the default device inside the block."""
        self._outer = runtime.discovery._DEFAULT[0]
        runtime.set_default_device(resolve(self))
        return self

    def __exit__(self, *exc):
        runtime.discovery._DEFAULT[0] = self._outer
        return False


def resolve(spec) -> runtime.Device:
    """The runtime Device for a device, a runtime Device, a string, an int or None (default).

    Raises:  DeviceError if it names no OpenCL device (for "cuda" on a machine without an
             OpenCL GPU, it says so and that ``torch.cuda.is_available()`` is False)
    """
    if spec is None:
        return runtime.default_device()
    if isinstance(spec, _RUNTIME_DEVICES):
        return spec
    if isinstance(spec, device) and spec._rt is not None:
        return spec._rt
    if isinstance(spec, str) and not _SPEC.fullmatch(spec.strip().lower()):
        return runtime.get_device(spec)  # "P:D" and other clgrad specs
    d = device(spec)
    if d.type == "meta":
        return runtime.META
    if d.type == "cuda":
        return runtime.get_device(f"cuda:{_CURRENT_GPU[0] if d.index is None else d.index}")
    if d.type == "cpu":
        try:
            return runtime.get_device("cpu" if d.index is None else f"cpu:{d.index}")
        except runtime.DeviceError:
            if d.index not in (None, 0) or _has_cpu_device():
                raise
            return _no_cpu_device()
    raise runtime.DeviceError(f"device: expected a 'cpu' or 'cuda' device, got {d}")


def of_runtime(dev: runtime.Device) -> device:
    """The ``clgrad.device`` of a runtime Device (what ``Tensor.device`` returns; cached)."""
    d = dev.__dict__.get("_torch_device")
    if d is None:
        d = device(dev)
        dev._torch_device = d
    return d


def get_default_device() -> device:
    """The device new tensors go to, as ``torch.get_default_device()``: ``device('cpu')``
    unless ``set_default_device`` or ``CLGRAD_DEVICE`` chose another."""
    return of_runtime(runtime.default_device())


# ---------------------------------------------------------------------------- private helpers

_WARNED_NO_CPU = [False]


def _has_cpu_device() -> bool:
    return any(c.kind == "cpu" and c.usable for c in runtime.discovery._discover())


def _no_cpu_device() -> runtime.Device:
    """The default device, standing in for "cpu" where no usable OpenCL CPU device exists
    (warns once: the tensors stay where they are and report that device)."""
    dev = runtime.default_device()
    if not _WARNED_NO_CPU[0]:
        _WARNED_NO_CPU[0] = True
        import os
        import sys
        import warnings
        pkg, level, f = os.path.dirname(os.path.dirname(runtime.__file__)), 2, sys._getframe(1)
        while f is not None and f.f_code.co_filename.startswith(pkg):  # blame the user's line
            f, level = f.f_back, level + 1
        warnings.warn(f"no usable OpenCL CPU device: 'cpu' names the default device "
                      f"{dev.name!r} here, so .cpu(), .to('cpu') and device='cpu' keep tensors "
                      f"on it (their .device says {str(of_runtime(dev))!r}); for a real CPU "
                      f"device: {CPU_RUNTIME_HINT}", stacklevel=level)
    return dev

def _of_runtime(dev):
    """(type, index) of a runtime Device; the first CPU device is plain "cpu" as in PyTorch."""
    t, i = dev.type, dev.index
    return t, (None if t == "cpu" and i == 0 else i)


def _parse(spec: str):
    """(type, index or None) of a device string; clgrad specs are looked up."""
    s = spec.strip().lower()
    m = _SPEC.fullmatch(s)
    if m and m[1] in _TYPES:
        return m[1], None if m[2] is None else int(m[2])
    if s == "meta":  # tensors without data (clgrad/runtime/meta.py)
        return "meta", None
    if m and m[1] == "gpu" and m[2] is None:
        return "cuda", None
    if m and m[1] in _OTHER_TORCH_TYPES:
        raise ValueError(f"device: expected 'cpu' or 'cuda' (OpenCL GPUs), got {spec!r}: "
                         f"clgrad runs on OpenCL devices only, and {m[1]!r} has no meaning here")
    if not s or (m and m[2] is not None) or re.match(r"(cpu|cuda|gpu):", s):
        raise ValueError(f"device: expected a device string such as 'cpu', 'cuda' or 'cuda:1', "
                         f"got {spec!r}")
    return _of_runtime(runtime.get_device(spec))  # "P:D" or a name substring


# ------------------------------- Tensor's device methods (bound in clgrad/_tensor_methods.py)

def _cuda(self, device=None, non_blocking=False):
    """A copy on GPU ``device`` (default: the current one); self when already there.

    Raises:  DeviceError when no OpenCL GPU exists (``torch.cuda.is_available()`` is False)
    """
    if device is None or (isinstance(device, int) and not isinstance(device, bool)):
        device = globals()["device"]("cuda", device)
    return self.to(device)


def _pin_memory(self, device=None):
    """``Tensor.pin_memory()``: a copy marked pinned (``is_pinned()`` True), or self when
    already pinned, as PyTorch's. Nothing is page-locked: a "cpu" tensor lives in an OpenCL
    CPU device's buffer and ``.to("cuda", non_blocking=True)`` copies it through the host
    either way (the copy is enqueued in order on the GPU's queue, so no synchronization is
    needed before using it there). ``device`` (deprecated in PyTorch) is accepted and ignored.

    Where no usable OpenCL CPU device exists, "cpu" names the default device (a GPU): its
    tensors are the "cpu" tensors of such a machine (``torch.from_numpy``'s, nanoGPT's batches
    before ``.pin_memory().to(device, non_blocking=True)``), so they are pinned as above
    (PyTorch would raise for a tensor made on the GPU; here the two cannot be told apart).

    Raises:  RuntimeError for a tensor on a GPU ("cannot pin ...: only dense CPU tensors can be
             pinned", PyTorch's), and when no OpenCL GPU exists (PyTorch without CUDA: "Cannot
             access accelerator device when none is available.")
    """
    if self._storage.device.type != "cpu" and (
            _has_cpu_device() or self._storage.device is not runtime.default_device()):
        raise RuntimeError(f"pin_memory: cannot pin a tensor on {self.device}: only dense CPU "
                           f"tensors can be pinned")
    if not runtime.devices("gpu"):
        raise RuntimeError("pin_memory: Cannot access accelerator device when none is "
                           "available (no OpenCL GPU).")
    if self._storage.pinned:
        return self
    out = self.clone()
    out._storage.pinned = True
    return out


def _is_pinned(self, device=None) -> bool:
    """True for a tensor made by ``pin_memory()`` (and its views), as PyTorch's."""
    return self._storage.pinned


def _cpu(self):
    """A copy on the (first) OpenCL CPU device; self when already there. Recorded by
    autograd as ``to``. Where no OpenCL CPU device exists, self (see the module docstring)."""
    return self.to("cpu")


def _get_device(self) -> int:
    """The GPU index of self's device, -1 on a CPU device (as PyTorch)."""
    d = device(self.device)
    return -1 if d.type == "cpu" else (d.index or 0)

