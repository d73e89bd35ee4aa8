"""``torch.cuda``'s names on OpenCL: "cuda" means the OpenCL GPUs (see clgrad/_device.py).

``is_available()`` is True when at least one OpenCL GPU (any vendor) is found; the GPUs are
numbered in the order ``clgrad.devices()`` lists them. Accepted for compatibility and doing
nothing, as documented per function: ``manual_seed``/``manual_seed_all``/``seed`` (clgrad draws
every random number on the host from the one generator ``clgrad.manual_seed`` seeds, so the
numbers are the same on every device). Streams and events (``Stream``, ``Event``,
``current_stream``, ``stream`` ...): clgrad/_streams.py; every stream of a device is its one
in-order queue. Not here: ``memory_reserved``, ``max_memory_reserved``, ``memory_stats``,
``memory_summary`` (nothing keeps a count of the bytes clgrad's memory pools hold, and a
graph capture's private pools are apart from the devices' ones: no figure here would be the
one PyTorch gives), ``mem_get_info`` (OpenCL has no free-memory query) and the NVML ones
(``utilization``, ``temperature`` ...): using one raises AttributeError saying why.
"""
from __future__ import annotations

from clgrad import runtime
from clgrad._device import _CURRENT_GPU, device as _dev
from clgrad._streams import (Event, Stream, StreamContext, _gpu_of, current_stream,
                             default_stream, set_stream, stream)
from clgrad.tensor import max_memory_allocated as _peak, memory_allocated as _total, \
    reset_peak_memory_allocated as _reset_peak

__all__ = ["is_available", "device_count", "current_device", "set_device", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "synchronize", "get_device_name",
           "get_device_properties", "empty_cache", "memory_allocated", "is_initialized",
           "max_memory_allocated", "reset_peak_memory_stats", "reset_max_memory_allocated", "init",
           "Event", "Stream", "StreamContext", "stream", "current_stream", "default_stream",
           "set_stream"]


def is_available() -> bool:
    """True when an OpenCL GPU is found (these are what "cuda" names here)."""
    return device_count() > 0


def device_count() -> int:
    """Number of OpenCL GPUs."""
    return len(runtime.devices("gpu"))


def is_initialized() -> bool:
    """True once a GPU's context exists (a tensor or device was made on one)."""
    return any(getattr(d, "kind", None) == "gpu" for d in runtime._DEVICES.values())


def current_device() -> int:
    """The index "cuda" without an index means (0 unless ``set_device`` changed it)."""
    return _CURRENT_GPU[0]


def set_device(device) -> None:
    """Make GPU ``device`` (an int, "cuda:N" or a device) what "cuda" means.

    Raises:  ValueError for a CPU device; DeviceError if there is no such GPU
    """
    d = _dev(device)
    if d.type != "cuda":
        raise ValueError(f"set_device: expected a cuda device (an OpenCL GPU), got {d}")
    index = _CURRENT_GPU[0] if d.index is None else d.index
    runtime.get_device(f"cuda:{index}")  # raises if there is no such GPU
    _CURRENT_GPU[0] = index


def synchronize(device=None) -> None:
    """Wait until every command queued on GPU ``device`` (default: the current one) finished."""
    _gpu_of(device, "synchronize").synchronize()


def get_device_name(device=None) -> str:
    """The OpenCL name of GPU ``device`` (default: the current one)."""
    return _gpu_of(device, "get_device_name").name


class _Properties:
    def __init__(self, dev):
        cl_dev = dev.cl_device
        self.name = dev.name
        self.total_memory = cl_dev.global_mem_size
        self.multi_processor_count = cl_dev.max_compute_units

    def __repr__(self):
        return (f"_OpenCLDeviceProperties(name={self.name!r}, total_memory="
                f"{self.total_memory // 2**20}MB, multi_processor_count="
                f"{self.multi_processor_count})")


def get_device_properties(device=None):
    """``name``, ``total_memory`` (bytes) and ``multi_processor_count`` (compute units)."""
    return _Properties(_gpu_of(device, "get_device_properties"))


def manual_seed(seed: int) -> None:
    """Accepted, does nothing: ``clgrad.manual_seed`` seeds the one host generator (module doc).

    Raises:  TypeError if seed is not an int
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"manual_seed: expected an int, got {type(seed).__name__}")


manual_seed_all = manual_seed


def seed() -> None:
    """Accepted, does nothing (see the module doc)."""


seed_all = seed


def empty_cache() -> None:
    """Give the blocks the memory pools hold for reuse (of every device) back to OpenCL."""
    for dev in list(runtime._DEVICES.values()):
        dev.pool.free_held()


def memory_allocated(device=None) -> int:
    """Bytes held by live tensor storages, of all devices together (clgrad keeps one count).

    Differs from PyTorch, which counts the given (default: current) GPU only; ``device`` is
    accepted and checked (DeviceError if it names no device) but does not filter.
    """
    if device is not None:
        _gpu_of(device, "memory_allocated")
    return _total()


def max_memory_allocated(device=None) -> int:
    """The most bytes live tensor storages held at once (``memory_allocated``'s count, all
    devices together: the same difference from PyTorch) since the process started or the
    last ``reset_peak_memory_stats``: a high-water mark updated at every storage allocation.
    ``device`` is accepted and checked but does not filter.
    """
    if device is not None:
        _gpu_of(device, "max_memory_allocated")
    return _peak()


def reset_peak_memory_stats(device=None) -> None:
    """Restart ``max_memory_allocated`` from the bytes held now (for all devices: one count;
    ``device`` is accepted and checked)."""
    if device is not None:
        _gpu_of(device, "reset_peak_memory_stats")
    _reset_peak()


def init() -> None:
    """``torch.cuda.init()``: find and check the OpenCL GPUs now (clgrad does it at first use
    anyway). Raises:  DeviceError when there is no usable OpenCL GPU (PyTorch raises when CUDA
    is unavailable)."""
    _gpu_of(None, "init")


def reset_max_memory_allocated(device=None) -> None:
    """``reset_peak_memory_stats`` (PyTorch's deprecated name for it, which warns; here too).
    """
    import warnings
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


_POOL_BYTES = ("clgrad keeps no count of the bytes its memory pools hold (and a graph "
               "capture's private pools are apart from the devices' ones), so no figure here "
               "would be PyTorch's; memory_allocated() and max_memory_allocated() give the live "
               "tensors' bytes")
_NVML = "it needs NVIDIA's NVML or CUDA IPC, which OpenCL does not expose"
_WHY_NOT = {  # torch.cuda names without a meaning here: why (module __getattr__ below)
    "memory_reserved": _POOL_BYTES, "max_memory_reserved": _POOL_BYTES,
    "memory_cached": _POOL_BYTES, "max_memory_cached": _POOL_BYTES,
    "memory_stats": _POOL_BYTES, "memory_summary": _POOL_BYTES,
    "memory_snapshot": _POOL_BYTES, "reset_max_memory_cached": _POOL_BYTES,
    "mem_get_info": "OpenCL has no query of a device's free memory (NVIDIA's driver offers "
                    "none); get_device_properties(d).total_memory gives its size",
    "ipc_collect": _NVML, "list_gpu_processes": _NVML, "utilization": _NVML,
    "temperature": _NVML, "power_draw": _NVML, "clock_rate": _NVML,
    "memory_usage": _NVML,
    "get_arch_list": "clgrad builds its OpenCL kernels at run time for each device's driver: "
                     "there is no list of architectures it was compiled for",
    "get_gencode_flags": "clgrad builds its OpenCL kernels at run time for each device's "
                         "driver: there are no gencode flags",
}


def __getattr__(name):
    """AttributeError (so ``hasattr`` is False, as for any missing name) that says why, for
    torch.cuda's names that cannot mean the same on OpenCL (``_WHY_NOT``)."""
    why = _WHY_NOT.get(name)
    if why is None:
        raise AttributeError(f"module 'clgrad.cuda' has no attribute {name!r}")
    raise AttributeError(f"torch.cuda.{name} is not available in clgrad: {why}")


# -- h4 (issue 22): legacy CUDA tensor types (torch.cuda.FloatTensor ...) ----------------------
from clgrad._legacy import cuda_types as _cuda_types  # noqa: E402

globals().update(_cuda_types)
__all__ += list(_cuda_types)


def get_rng_state(device="cuda"):
    """The global generator's state (clgrad has one generator for every device)."""
    from clgrad._rng import get_rng_state as _get
    return _get()


def set_rng_state(new_state, device="cuda") -> None:
    """Restore the global generator (clgrad has one generator for every device)."""
    from clgrad._rng import set_rng_state as _set
    _set(new_state)

from clgrad.amp import _cuda_amp_module  # noqa: E402

amp = _cuda_amp_module()
# -- helper h2 (issue 20): torch.cuda.OutOfMemoryError ---------------------------------------
from clgrad.runtime import OutOfMemoryError  # noqa: E402

__all__ += ["OutOfMemoryError"]

# -- helper h10 (issue 24): CUDA graphs (captured kernel sequences, clgrad/capture/) --------
from clgrad.capture import (CUDAGraph, graph, graph_pool_handle,  # noqa: E402
                            is_current_stream_capturing)
from clgrad._compile import make_graphed_callables  # noqa: E402

__all__ += ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
            "make_graphed_callables"]

# -- a GPU user's first hour: the capability checks scripts make before choosing a dtype ----
__all__ += ["is_bf16_supported", "get_device_capability", "device", "nvtx"]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True where an OpenCL GPU exists: clgrad computes bfloat16 on every device (16-bit
    storage, float32 arithmetic where the device has no native type), so autocast to
    bfloat16 works on every GPU. False without a GPU (PyTorch's answer without CUDA).

    Differs from PyTorch: ``including_emulation=False`` asks for native bfloat16 arithmetic,
    which clgrad never uses, so it gives False; PyTorch gives True on NVIDIA compute
    capability 8.0 and later.
    """
    if not is_available():
        return False
    return bool(including_emulation)


def get_device_capability(device=None) -> tuple:
    """(major, minor): the CUDA compute capability of NVIDIA GPU ``device`` (default: the
    current one), from NVIDIA's OpenCL extension cl_nv_device_attribute_query; e.g. (9, 0) on
    an H100 or H200.

    Raises:  RuntimeError for a GPU that is not NVIDIA's (a compute capability is NVIDIA's
             numbering; PyTorch on ROCm reports its own), or whose driver lacks the extension;
             ValueError for a CPU device; DeviceError if there is no such GPU.
    """
    dev = _gpu_of(device, "get_device_capability")
    cl_dev = dev.cl_device
    if "cl_nv_device_attribute_query" not in cl_dev.extensions:
        raise RuntimeError(f"get_device_capability: the GPU {dev.name!r} ({dev.platform}) "
                           "reports no CUDA compute capability (it is NVIDIA's numbering, "
                           "read through cl_nv_device_attribute_query)")
    return (int(cl_dev.compute_capability_major_nv), int(cl_dev.compute_capability_minor_nv))


class device:
    """Context manager making GPU ``device`` (an int, "cuda:N" or a device) what "cuda" means
    inside the block, as PyTorch's ``torch.cuda.device``; the previous one is restored on
    exit. ``device(None)`` or a negative int changes nothing (PyTorch's).

    Raises:  ValueError for a CPU device; DeviceError if there is no such GPU (on entry)
    """

    def __init__(self, device):
        self.idx = device
        self.prev = None

    def __enter__(self):
        self.prev = _CURRENT_GPU[0]
        if self.idx is None or (isinstance(self.idx, int) and self.idx < 0):
            return self
        set_device(self.idx)
        return self

    def __exit__(self, *exc):
        _CURRENT_GPU[0] = self.prev
        return False


class _Nvtx:
    """``torch.cuda.nvtx``: range_push/range_pop/mark/range accepted, recording nothing
    (NVTX annotates NVIDIA's profilers, which do not see OpenCL kernels; clgrad's own
    ``clgrad.profiler.record_function`` names ranges in its traces)."""

    def __init__(self):
        self._depth = 0

    def range_push(self, msg: str) -> int:
        """Accepted; returns the depth of the pushed range (0-based), as NVTX does."""
        self._depth += 1
        return self._depth - 1

    def range_pop(self) -> int:
        """Accepted; returns the depth of the popped range, or -1 when none was pushed."""
        if self._depth == 0:
            return -1
        self._depth -= 1
        return self._depth

    def mark(self, msg: str) -> None:
        """Accepted, does nothing."""

    def range(self, msg: str, *args, **kwargs):
        """Context manager and decorator: range_push on entry, range_pop on exit."""
        import contextlib
        nv = self

        @contextlib.contextmanager
        def _range():
            nv.range_push(msg)
            try:
                yield
            finally:
                nv.range_pop()
        return _range()


nvtx = _Nvtx()
