"""Device: one OpenCL device with its context, queue, memory pool, program cache and launch.

Nothing here knows about tensors or ops, nor how devices are found (clgrad/runtime/discovery.py).
"""
from __future__ import annotations

import ctypes
import hashlib
import operator
import os
import sys
import threading
import time
import warnings
import weakref
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.tools

from clgrad import _log, settings
from clgrad.errors import DeviceError
from clgrad.runtime import native
from clgrad.settings import _EPOCH
from clgrad.settings import cache_dir  # noqa: F401  (runtime.cache_dir)

__all__ = ["Device", "OutOfMemoryError", "ForkedDeviceError", "kernel_dir", "cache_dir",
           "launch_count", "pack", "arg_kind"]

_PKG = Path(__file__).resolve().parent.parent  # the clgrad package folder

# pyopencl's binary cache reads os.environ["PYOPENCL_CACHE_FAILURE_FATAL"] when the cache
# itself fails (e.g. two processes writing one entry), and the KeyError of an unset variable
# then aborts a build that would have succeeded from source. Unset means "warn and build".
os.environ.setdefault("PYOPENCL_CACHE_FAILURE_FATAL", "")


class OutOfMemoryError(DeviceError, MemoryError):
    """An allocation would exceed the device's memory, or a single buffer the device's
    CL_DEVICE_MAX_MEM_ALLOC_SIZE (PyTorch: torch.cuda.OutOfMemoryError). A RuntimeError (as
    PyTorch's) and a MemoryError; also ``clgrad.OutOfMemoryError`` and
    ``clgrad.cuda.OutOfMemoryError``."""


FORKED_MESSAGE = ("cannot use the OpenCL GPU device in a forked process; use the spawn start "
                  "method")
FORK_POISONED_KINDS = {"gpu"}  # the kinds of Device a forked child refuses (tests add "cpu")
# ... and the devices of these platforms, whatever their kind: PoCL's CPU device runs kernels
# on worker threads made at its first use, which a forked child does not have (its first
# launch there waits forever; seen with PoCL 5.0 on a Xeon).
FORK_POISONED_PLATFORMS = ("Portable Computing Language",)


def _fork_poisoned(kind: str, platform: str) -> bool:
    """Whether a forked child must refuse a device of ``kind`` on ``platform`` that its parent
    had used (a GPU's driver state and PoCL's threads do not survive fork)."""
    return kind in FORK_POISONED_KINDS or platform.startswith(FORK_POISONED_PLATFORMS)
_LIVE: "weakref.WeakSet" = None  # every Device made in this process (set below the class)
_FORKED_FROM = [None]  # in a forked child: the poisoned device names of the parent
_FORKED_PTRS: dict = {}  # in a forked child: int_ptr of each poisoned cl.Device -> its name


class ForkedDeviceError(DeviceError):
    """An OpenCL GPU device (or a PoCL device) that the parent process had used was used in a
    forked child (PyTorch: "Cannot re-initialize CUDA in forked subprocess"). NVIDIA's OpenCL
    and PoCL hang there forever; the spawn start method gives the child a fresh driver. Intel's
    CPU runtime keeps working in a forked child."""


class _Forked:
    """Put in a forked child in place of a used GPU device's context and queue, and as its
    ``_capture`` hook (which alloc, launch, launch_split, copy and fill already consult, so the
    parent's hot path gains nothing): every use raises ForkedDeviceError."""

    def __init__(self, name, kind="gpu"):
        self._name, self._kind = name, kind

    def _raise(self, *args, **kwargs):
        what = FORKED_MESSAGE if self._kind in FORK_POISONED_KINDS else FORKED_MESSAGE.replace(
            "GPU device", f"{self._kind.upper()} device of PoCL")
        raise ForkedDeviceError(f"{what} (device {self._name!r} was used before "
                                f"os.fork(); multiprocessing's 'fork' start method and "
                                f"DataLoader workers fork too)")

    _alloc = _launch = _copy = _fill = _raise

    def __getattr__(self, name):
        self._raise()


def _poison_after_fork():
    """os.register_at_fork's after_in_child: the GPU devices of the parent refuse every use.
    Their cl.Device handles are remembered (``int_ptr``, no driver call), so that a new Device
    or discovery refuses them before any OpenCL query: NVIDIA's driver answers every query in
    the child with INVALID_DEVICE."""
    names = []
    for dev in list(_LIVE):
        if _fork_poisoned(dev.kind, dev.platform):
            forked = _Forked(dev.name, dev.kind)
            dev._capture, dev.queue, dev.context = forked, forked, forked
            names.append(dev.name)
            _FORKED_PTRS[dev.cl_device.int_ptr] = (dev.name, dev.kind)
    if names:
        _FORKED_FROM[0] = names


def refuse_forked(cl_device):
    """Raise ForkedDeviceError if ``cl_device`` (a cl.Device) is one that the parent of this
    forked child had used (of a kind in FORK_POISONED_KINDS). Asks the driver nothing: call it
    before any query of the device."""
    name = _FORKED_PTRS.get(cl_device.int_ptr) if _FORKED_PTRS else None
    if name is not None:
        _Forked(*name)._raise()


def raise_if_forked(err: Exception, what: str):
    """In a forked child of a process that had used a GPU device (see FORK_POISONED_KINDS),
    raise ForkedDeviceError from ``err``, an OpenCL error of ``what`` (the driver refusing the
    parent's state, e.g. NVIDIA's INVALID_DEVICE); elsewhere return (the caller handles it)."""
    if _FORKED_FROM[0]:
        raise ForkedDeviceError(f"{FORKED_MESSAGE} (OpenCL refused {what} in a child forked "
                                f"after devices {_FORKED_FROM[0]} were used: {err})") from err


def kernel_dir() -> Path:
    """The folder holding the ``*.cl`` sources: inside the installed package, or the checkout's."""
    for cand in (_PKG / "kernels", _PKG.parent / "kernels"):
        if (cand / "common.h").is_file():
            return cand
    raise DeviceError(f"kernels: expected common.h in {_PKG / 'kernels'} or "
                      f"{_PKG.parent / 'kernels'}, found neither")




_LOCK = threading.RLock()  # every device and discovery (clgrad.runtime.discovery uses it)
_LAUNCHES = [0]
_BY_VALUE = (bytes, np.generic, np.ndarray)
PLANS_MAX = 4096  # entries of Device.plans before it is cleared (shapes that never repeat)
_ARG_KIND: dict = {}  # argument type -> 0 buffer, 1 by value, 2 anything else (set_arg)
_SPLITS: dict = {}    # tuple of argument types -> how launch sorts them (_split_of)
_enqueue = cl._cl.enqueue_nd_range_kernel  # positional: (queue, kernel, global, local,
#                                            global_offset, wait_for, g_times_l, allow_empty)
_ENQUEUES = ("auto", "pyopencl", "ctypes")  # CLGRAD_ENQUEUE's values (Device._native_enqueue)
_NO_EVENTS = ctypes.c_uint(0)
_VOID_P = ctypes.c_void_p
SIZES_MAX = 4096  # launches' ctypes arguments a Device keeps before dropping them all


def arg_kind(a) -> int:
    """How ``launch`` passes a kernel argument: 0 a buffer (``_set_arg_multi``), 1 by value
    (``_set_arg_buf_multi``: bytes, NumPy scalars and arrays), 2 anything else
    (``Kernel.set_arg``). Cached per type."""
    kind = _ARG_KIND.get(type(a))
    return _type_kind(type(a)) if kind is None else kind


def _type_kind(t: type) -> int:
    """arg_kind of arguments of type ``t``, computed and cached."""
    kind = _ARG_KIND[t] = (1 if issubclass(t, _BY_VALUE) else
                           0 if issubclass(t, cl.MemoryObjectHolder) else 2)
    return kind


def _split_of(types: tuple) -> tuple:
    """How ``launch`` sorts arguments of these types (cached per tuple of types): a list
    ``[index, None, index, None, ...]`` of the buffers' indices (launch fills in the buffers
    from the getter that follows it, None when there are none), likewise of the by-value
    arguments, and the indices of the rest (``Kernel.set_arg`` one by one)."""
    kinds = [_ARG_KIND[t] if t in _ARG_KIND else _type_kind(t) for t in types]
    mem_at = tuple(i for i, k in enumerate(kinds) if k == 0)
    val_at = tuple(i for i, k in enumerate(kinds) if k == 1)
    other = tuple(i for i, k in enumerate(kinds) if k == 2)
    split = (_template(mem_at), _getter(mem_at), _template(val_at), _getter(val_at), other)
    if len(_SPLITS) >= 4096:
        _SPLITS.clear()
    _SPLITS[types] = split
    return split


def _template(at: tuple) -> list:
    """``[at[0], None, at[1], None, ...]``: the argument pairs of ``_set_arg_multi`` with the
    places of the arguments left empty."""
    t = [None] * (2 * len(at))
    t[0::2] = at
    return t


def _getter(at: tuple):
    """``args -> tuple(args[i] for i in at)``, as an operator.itemgetter (a tuple also for
    one index)."""
    if len(at) == 1:
        i = at[0]
        return lambda args: (args[i],)
    return operator.itemgetter(*at) if at else None


def launch_count() -> int:
    """Number of kernels launched so far in this process (for tests of launch counts)."""
    return _LAUNCHES[0]


def _kind_of(d: cl.Device) -> str:
    """'gpu', 'cpu' or 'other' from the device type bits."""
    t = d.type
    return "gpu" if t & cl.device_type.GPU else "cpu" if t & cl.device_type.CPU else "other"


def _fp_support(d: cl.Device) -> tuple:
    """(float64, float16) support: the extensions, or a double config (OpenCL 3.0 optional;
    _probe.has_fp64, which the device check uses too)."""
    from clgrad._probe import has_fp64
    return has_fp64(d), "cl_khr_fp16" in d.extensions


class Device:
    """One OpenCL device with its context, in-order queue, memory pool and program cache.

    Attributes: ``name``, ``kind`` ('cpu' | 'gpu' | 'other'), ``type`` (PyTorch's word:
    'cpu' | 'cuda' | 'other'; every OpenCL GPU is 'cuda', as PyTorch's ROCm build calls AMD
    GPUs), ``index`` (ordinal among usable devices of that type, or None), ``platform``,
    ``platform_index``, ``device_index``, ``fp64`` (extension support) and ``fp16``
    (cl_khr_fp16 listed, or ``fp16`` True: with CLGRAD_FP16=probe, a GPU compiler the probe
    found running half arithmetic right without listing it, as NVIDIA's; its builds then
    enable the extension's pragma, kernels/common.h's CLGRAD_FP16_PRAGMA),
    ``max_work_group_size``, ``local_mem_size`` and ``total_memory`` (bytes),
    ``allocated`` (bytes held by live buffers), ``build_options`` (added to every build).
    """

    _capture = None  # the clgrad.capture.CUDAGraph recording now: takes launches, allocations,
    #                  copies and fills of its thread (the one hook; see clgrad/capture/record.py)

    def __init__(self, cl_device: cl.Device, platform_index: int, device_index: int,
                 index: int | None = None, fp16: bool | None = None):
        refuse_forked(cl_device)  # first: in a forked child the driver may refuse any query
        self.cl_device = cl_device
        self.platform_index = platform_index
        self.device_index = device_index
        try:
            self.name = cl_device.name.strip()
            self.platform = cl_device.platform.name.strip()
            self.kind = _kind_of(cl_device)
        except cl.Error as e:
            raise_if_forked(e, "a query of the device")
            raise
        if _FORKED_FROM[0] and _fork_poisoned(self.kind, self.platform):  # the parent's driver
            _Forked(self.name, self.kind)._raise()
        self.type = {"gpu": "cuda"}.get(self.kind, self.kind)
        self.index = index
        self.fp64, listed = _fp_support(cl_device)
        self.fp16 = listed or bool(fp16)
        self.max_work_group_size = cl_device.max_work_group_size
        self.local_mem_size = cl_device.local_mem_size
        self.total_memory = int(cl_device.global_mem_size)
        self.max_alloc = int(cl_device.max_mem_alloc_size)  # the largest single buffer
        self.allocated = 0
        from clgrad._probe import build_options  # also what the program check builds with
        self.build_options = build_options(cl, cl_device)
        if self.fp16 and not listed:
            self.build_options.append("-DCLGRAD_FP16_PRAGMA=1")
        # The float vector width the program check (runtime/discovery.py) passed at, when it
        # capped it below the native one (PoCL 3.0 on AMD Zen 4: 8, not 16); None: native.
        self.max_vector_width = None
        # One lock for discovery, context, queue, program builds, allocations, launches and
        # copies of every device (_LOCK): two threads making their first tensors at once on
        # NVIDIA's OpenCL crashed (SIGSEGV) while one built a program and the other enqueued.
        self._lock = _LOCK
        with self._lock:
            self.context = cl.Context([cl_device])
            self.queue = cl.CommandQueue(self.context)
            self.pool = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(self.queue))
            # The driver's own first use (NVIDIA initialises a context lazily, at its first
            # command) happens here, under the lock, not in whichever threads come first.
            warm = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, 16)
            cl.enqueue_copy(self.queue, warm, np.zeros(4, np.float32), is_blocking=True)
            self.queue.finish()
        self._programs: dict = {}
        self._first_run_builds = None   # _log.BuildProgress on a first run's builds
        self._kernels: dict = {}
        # Launch plans of the ops modules (clgrad/ops/_util.py's launch_1d, matmul.gemm,
        # conv's planners), each keyed by its own tuples (first item: the kernel file or the
        # module's tag); they live as long as the device. Stored through keep_plan.
        self.plans: dict = {}
        # The eager enqueue (CLGRAD_ENQUEUE, read again after a settings change): None for
        # pyopencl's, else (ctypes clEnqueueNDRangeKernel, queue handle, {(kernel, global,
        # local): its arguments}) for the NULL-event one (_native_enqueue, _native_args).
        self._native, self._native_epoch = None, -1
        _LIVE.add(self)

    def __repr__(self):
        return f"Device({self.platform_index}:{self.device_index} {self.name!r}, {self.kind})"

    def keep_plan(self, key, plan):
        """Store ``plan`` in ``plans`` under ``key`` and return it; the dict is emptied first
        when it holds PLANS_MAX entries (programs whose shapes never repeat)."""
        if len(self.plans) >= PLANS_MAX:
            self.plans.clear()
        self.plans[key] = plan
        return plan

    # -- traits ---------------------------------------------------------------------------------
    @property
    def vector_width(self) -> int:
        """Native float vector width (CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT): 16 on AVX-512 CPUs,
        8 on AVX2, 1 on most GPUs. The kernels' planners pick vector widths from it.
        ``CLGRAD_CPU_VECTOR_WIDTH`` (8 or 16) replaces it on CPU devices: the AVX2-width kernels
        measured and tested on an AVX-512 machine (with Intel's runtime,
        ``CL_CONFIG_CPU_TARGET_ARCH=core-avx2`` also compiles them for AVX2). Never more than
        ``max_vector_width``, where the program check capped it (a CPU runtime whose compiler
        fails at the native width).

        Raises:  ValueError for a CLGRAD_CPU_VECTOR_WIDTH other than 8 or 16; DeviceError for
                 one above ``max_vector_width``."""
        cap = self.max_vector_width
        if self.kind == "cpu":
            forced = settings.getenv("CLGRAD_CPU_VECTOR_WIDTH")
            if forced:
                if forced not in ("8", "16"):
                    raise ValueError(f"CLGRAD_CPU_VECTOR_WIDTH: expected 8 or 16, got "
                                     f"{forced!r}")
                if cap and int(forced) > cap:
                    raise DeviceError(f"CLGRAD_CPU_VECTOR_WIDTH={forced}: {self.name!r} "
                                      f"[{self.platform}] builds kernels at float vector width "
                                      f"{cap} at most (python -m clgrad devices says why)")
                return int(forced)
        native = self.cl_device.native_vector_width_float
        return min(native, cap) if cap else native

    @property
    def compute_units(self) -> int:
        """Compute units (CL_DEVICE_MAX_COMPUTE_UNITS): cores of a CPU, SMs of an NVIDIA GPU."""
        return self.cl_device.max_compute_units

    # -- memory -------------------------------------------------------------------------------
    def alloc(self, nbytes: int):
        """A buffer of at least ``nbytes`` bytes (at least 16) from the memory pool.

        Counts the bytes in ``allocated`` (``free(nbytes)`` gives them back).
        Raises:  OutOfMemoryError if live buffers plus this one would exceed ``total_memory``,
                 or if the runtime itself refuses (the message has what was asked, what is in
                 use and what the device has).
        """
        cap = self._capture  # (read once, as in launch)
        if cap is not None:
            buf = cap._alloc(self, nbytes)
            if buf is not None:
                return buf
        if type(nbytes) is not int:
            nbytes = int(nbytes)
        if nbytes < 16:
            nbytes = 16
        with self._lock:
            if self.allocated + nbytes > self.total_memory:
                self.pool.free_held()
                raise self.out_of_memory(nbytes)
            try:
                buf = self.pool.allocate(nbytes)
            except (cl.MemoryError, cl.RuntimeError, MemoryError):
                self.pool.free_held()  # cached blocks first, then once more
                try:
                    buf = self.pool.allocate(nbytes)
                except (cl.MemoryError, cl.RuntimeError, MemoryError):
                    raise self.out_of_memory(nbytes) from None
            self.allocated += nbytes
            return buf

    def free(self, nbytes: int):
        """Give back the count of a buffer from ``alloc`` (the pool recycles the buffer)."""
        if type(nbytes) is not int:
            nbytes = int(nbytes)
        with self._lock:
            self.allocated -= nbytes if nbytes > 16 else 16

    def out_of_memory(self, nbytes: int, what: str = "") -> OutOfMemoryError:
        """The OutOfMemoryError for an allocation of ``nbytes`` (``what``: what it was for):
        what was asked, what is in use, and both limits of the device, its global memory and
        the largest single buffer it allows (CL_DEVICE_MAX_MEM_ALLOC_SIZE)."""
        gib = 2 ** 30
        single = nbytes > self.max_alloc
        why = ("more than the largest buffer it allows" if single else
               "more than is free")
        return OutOfMemoryError(
            f"out of memory on {self.name!r}: tried to allocate {nbytes} bytes "
            f"({nbytes / gib:.2f} GiB){' for ' + what if what else ''}, {why}; "
            f"{self.allocated} bytes ({self.allocated / gib:.2f} GiB) in use of "
            f"{self.total_memory} bytes ({self.total_memory / gib:.2f} GiB) of global memory; "
            f"the largest buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE) is {self.max_alloc} "
            f"bytes ({self.max_alloc / gib:.2f} GiB); "
            + ("split the tensor into smaller ones" if single else
               "free tensors you no longer need or use smaller batches"))

    # -- programs -----------------------------------------------------------------------------
    def program(self, file: str, defines: dict | None = None) -> cl.Program:
        """The program built from ``kernels/<file>`` with ``-D`` defines, cached."""
        key = (file, tuple(sorted((defines or {}).items())))
        prg = self._programs.get(key)
        if prg is None:
            with self._lock:
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
            self._refuse_if_forked()
            with self._lock:
                k = self._kernels.get(key)
                if k is None:
                    k = self._make_kernel(file, name, defines)
                    self._kernels[key] = k
        return k

    def _make_kernel(self, file: str, name: str, defines: dict | None) -> cl.Kernel:
        """``cl.Kernel`` for ``name`` of ``program(file, defines)``.

        Raises:  DeviceError naming the program, kernel and device when the built program
                 lacks the kernel (a runtime that dropped it while compiling or loading its
                 cached binary; pyopencl would say INVALID_KERNEL_NAME)."""
        prg = self.program(file, defines)
        try:
            return cl.Kernel(prg, name)
        except cl.Error as e:
            try:
                have = sorted(n for n in prg.get_info(cl.program_info.KERNEL_NAMES).split(";")
                              if n)
            except cl.Error:
                have = []
            raise DeviceError(
                f"kernel {name!r} is missing from kernels/{file} built with defines "
                f"{defines or {}} on {self.name!r} [{self.platform}]: the program holds "
                f"{len(have)} kernel(s) ({', '.join(have[:8]) or 'none'}"
                f"{', ...' if len(have) > 8 else ''}); the OpenCL runtime dropped it while "
                f"compiling or loading its cached binary ({type(e).__name__}: {e}); "
                f"`python -m clgrad devices` checks every runtime, and CLGRAD_DEVICE picks "
                f"another") from None

    def kernel_local_mem(self, file: str, name: str, defines: dict | None = None) -> int:
        """Bytes of local memory kernel ``name`` uses by itself (its ``__local`` variables and
        what the implementation reserves: CL_KERNEL_LOCAL_MEM_SIZE of a fresh kernel object,
        so no local arguments are counted), cached. Planners add their local arguments to it
        before comparing with ``local_mem_size``."""
        key = ("local_mem", file, name, tuple(sorted((defines or {}).items())))
        got = self._kernels.get(key)
        if got is None:
            self._refuse_if_forked()
            with self._lock:
                k = cl.Kernel(self.program(file, defines), name)
                got = int(k.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE,
                                                self.cl_device))
                self._kernels[key] = got
        return got

    def _refuse_if_forked(self):
        """Raise ForkedDeviceError in a forked child on a GPU device the parent used (the
        paths that reach the driver without alloc/launch/copy/fill: builds, new kernels)."""
        if type(self.context) is _Forked:
            self.context._raise()

    def _build(self, file: str, defines: dict) -> cl.Program:
        self._refuse_if_forked()
        if "ushort" in defines.values() and "BF16" not in defines:
            # bfloat16's storage type (clgrad/dtypes.py): a kernel that does not say it reads
            # bfloat16 would compute on its bits as integers
            raise TypeError(f"bfloat16: kernels/{file} has no bfloat16 build; the op computes "
                            f"bfloat16 in float32 where clgrad supports it (README: dtypes); "
                            f"convert first with .float()")
        kdir = kernel_dir()
        path = kdir / file
        src = path.read_text()
        opts = [f"-I{kdir}"] + [f"-D{k}={v}" for k, v in sorted(defines.items())]
        opts += self.build_options
        if not self._programs and _first_build_notice(self, kdir):  # first build, first run
            self._first_run_builds = _log.BuildProgress()
        from clgrad._probe import settle_cache_lock
        settle_cache_lock()  # a dead process's cache lock would cost every build 60 s
        start = time.perf_counter()
        try:
            with warnings.catch_warnings():  # a successful build's log is only remarks
                warnings.simplefilter("ignore", cl.CompilerWarning)
                prg = cl.Program(self.context, src).build(options=opts)
        except cl.RuntimeError as e:  # carries the build log
            raise DeviceError(f"build of kernels/{file} failed on {self.name!r} with defines "
                              f"{defines}:\n{e}") from None
        _log.logger.debug("built kernels/%s %s on %s in %.2f s", file, defines or "",
                          self.name, time.perf_counter() - start)
        if self._first_run_builds is not None:
            self._first_run_builds.built()
        return prg

    def launch(self, kernel: cl.Kernel, global_size, local_size, *args):
        """Enqueue ``kernel`` with ``args``; each global size is rounded up to its local size.

        ``args``: buffers, bytes, NumPy scalars or contiguous NumPy arrays (by-value structs, see
        ``pack``), or anything ``Kernel.set_arg`` takes. Buffers are set in one
        ``_set_arg_multi`` call and by-value arguments in one ``_set_arg_buf_multi`` call (the
        calls pyopencl's own generated invokers make): ``set_args`` costs ~20 µs per by-value
        argument on PoCL, these ~1 µs for all of them. Setting the arguments and enqueueing
        hold the device's lock: kernel objects are shared, so two threads must not interleave.
        Raises:  RuntimeError naming the kernel when a buffer of another device's context
                 reaches it (OpenCL's INVALID_MEM_OBJECT / INVALID_CONTEXT: an op without its
                 device check); pyopencl's error for any other failure
        """
        cap = self._capture  # (read once: another thread's recording may end meanwhile)
        if cap is not None and cap._launch(self, kernel, global_size, local_size, args):
            return
        if local_size is not None:
            global_size = [-(-g // l) * l for g, l in zip(global_size, local_size)]
        types = tuple(map(type, args))
        split = _SPLITS.get(types)
        if split is None:
            split = _split_of(types)
        mem, mem_of, val, val_of, other = split
        if mem_of is not None:
            mem = mem[:]
            mem[1::2] = mem_of(args)
        if val_of is not None:
            val = val[:]
            val[1::2] = val_of(args)
        with self._lock:
            try:  # no cost on success: the except only names a foreign buffer's kernel
                for i in other:
                    kernel.set_arg(i, args[i])
                if mem_of is not None:
                    kernel._set_arg_multi(tuple(mem))
                if val_of is not None:
                    kernel._set_arg_buf_multi(tuple(val))
                if self._native_epoch != _EPOCH[0]:
                    self._native_enqueue()
                native = self._native
                if native is None:
                    _enqueue(self.queue, kernel, global_size, local_size, None, None, False,
                             False)
                else:  # as launch_split's (the sizes as tuples: keys of the arguments)
                    gs = tuple(global_size)
                    ls = local_size if local_size is None else tuple(local_size)
                    cargs = native[2].get((kernel, gs, ls))
                    if cargs is None:
                        cargs = self._native_args(kernel, gs, ls)
                    if native[0](*cargs):
                        _enqueue(self.queue, kernel, gs, ls, None, None, False, False)
            except cl.Error as e:
                self._raise_foreign(kernel, e)
                raise
            _LAUNCHES[0] += 1

    def launch_split(self, kernel: cl.Kernel, global_size, local_size, mem: tuple,
                     val: tuple, other: tuple = (), held=None):
        """``launch`` with the arguments already sorted by kind, for callers that build them
        (clgrad/ops/_util.py's launch_1d): ``mem`` is the flat tuple ``(index, buffer, ...)``
        of the buffer arguments, ``val`` ``(index, by-value argument, ...)`` of the by-value
        ones (bytes, NumPy scalars or arrays), ``other`` likewise of any others (set with
        ``Kernel.set_arg``: local memory), together every argument index once, except those
        of ``held``: a Plan (clgrad/ops/plan.py) whose kernel object holds its fixed
        arguments (``held.val``, ``held.other``), not set here. ``global_size`` (a tuple)
        must already be a multiple of ``local_size`` (a tuple, or None). A capture
        (clgrad/capture/record.py) or a recording (plan.record_launches) gets the launch as
        ``launch`` would give it, every argument included. The hook is read once here: the
        caller never decides which arguments to pass by reading it itself (another thread's
        recording may start in between)."""
        if self._capture is not None:
            parts = (mem, val, other) if held is None else (mem, val, other, held.val,
                                                             held.other)
            args = [None] * (sum(map(len, parts)) // 2)
            for pairs in parts:
                for j in range(0, len(pairs), 2):
                    args[pairs[j]] = pairs[j + 1]
            self.launch(kernel, global_size, local_size, *args)
            return
        with self._lock:
            try:  # as in launch
                if other:
                    for j in range(0, len(other), 2):
                        kernel.set_arg(other[j], other[j + 1])
                if mem:
                    kernel._set_arg_multi(mem)
                if val:
                    kernel._set_arg_buf_multi(val)
                if self._native_epoch != _EPOCH[0]:
                    self._native_enqueue()
                native = self._native
                if native is None:
                    _enqueue(self.queue, kernel, global_size, local_size, None, None, False,
                             False)
                else:  # a NULL event; a failure enqueues again through pyopencl, whose
                    #    exception the caller gets (a failed enqueue enqueued nothing)
                    cargs = native[2].get((kernel, global_size, local_size))
                    if cargs is None:
                        cargs = self._native_args(kernel, global_size, local_size)
                    if native[0](*cargs):
                        _enqueue(self.queue, kernel, global_size, local_size, None, None,
                                 False, False)
            except cl.Error as e:
                self._raise_foreign(kernel, e)
                raise
            _LAUNCHES[0] += 1

    def _native_enqueue(self):
        """Read CLGRAD_ENQUEUE (once per settings epoch; under the lock): "auto" (the
        default) is "ctypes" on GPUs and "pyopencl" on CPUs (bench/gpu/launch_parts.py: on the
        H200 the NULL-event enqueue took 8.9 us against pyopencl's 10.2, a + b 18.8 against
        19.7; on Intel's CPU runtime 1.65 against 1.35). "pyopencl" enqueues eager launches
        with pyopencl's ``enqueue_nd_range_kernel``, which
        makes a pyopencl Event per launch (an OpenCL event, released when the Python object
        dies); "ctypes" calls ``clEnqueueNDRangeKernel`` of the ICD loader pyopencl loaded,
        with a NULL event (no event is created: the API spec's clEnqueueNDRangeKernel), as a
        captured graph's ctypes replay (clgrad/runtime/native.py), and falls back to
        pyopencl's where no loader is found. A failed ctypes enqueue is made again through
        pyopencl, for its exception (a failed enqueue enqueued nothing).

        Nothing needs a launch's event: ``copy`` waits on its own, ``synchronize`` finishes
        the in-order queue, a buffer the pool recycles is used by later commands of the same
        queue, and one it releases while a launch still uses it lives on in the runtime until
        that launch has run (OpenCL API spec, clReleaseMemObject: a memory object is deleted
        only once its reference count is zero and the queued commands that use it have
        finished; pyopencl's dropped Events never held the buffers either).

        Raises:  ValueError for another CLGRAD_ENQUEUE value."""
        way = settings.getenv("CLGRAD_ENQUEUE")
        if way not in _ENQUEUES:
            raise ValueError(f"CLGRAD_ENQUEUE: expected one of {_ENQUEUES}, got {way!r}")
        if way == "auto":
            way = "ctypes" if self.kind == "gpu" else "pyopencl"
        fn = native.enqueue_fn() if way == "ctypes" else None
        if fn is None:
            self._native = None
        elif self._native is None or self._native[0] is not fn:
            self._native = (fn, _VOID_P(self.queue.int_ptr), {})
        self._native_epoch = _EPOCH[0]

    def _native_args(self, kernel: cl.Kernel, global_size: tuple, local_size) -> tuple:
        """The arguments of the NULL-event ``clEnqueueNDRangeKernel`` (the queue, ``kernel``,
        the ctypes size arrays), kept per (kernel, global_size, local_size) (the key holds the
        kernel object: its handle is not reused while kept; all dropped at SIZES_MAX)."""
        kept = self._native[2]
        if len(kept) >= SIZES_MAX:
            kept.clear()
        got = kept[(kernel, global_size, local_size)] = (
            self._native[1], _VOID_P(kernel.int_ptr), ctypes.c_uint(len(global_size)), None,
            (ctypes.c_size_t * len(global_size))(*global_size),
            None if local_size is None else (ctypes.c_size_t * len(local_size))(*local_size),
            _NO_EVENTS, None, None)
        return got

    def _raise_foreign(self, kernel: cl.Kernel, err: cl.Error):
        """For a launch that failed with OpenCL's INVALID_MEM_OBJECT / INVALID_CONTEXT (a
        buffer of another context, i.e. a tensor of another device, reached the kernel: an op
        that missed its device check), raise a RuntimeError naming the kernel; return for other
        errors (the caller re-raises them). Only the failure path pays for it."""
        if getattr(err, "code", None) not in (cl.status_code.INVALID_MEM_OBJECT,
                                              cl.status_code.INVALID_CONTEXT):
            return
        try:
            name = kernel.function_name
        except cl.Error:
            name = "?"
        raise RuntimeError(f"kernel {name!r} on {self.name!r}: expected all tensors on the "
                           f"same device, but a tensor of another device reached it (OpenCL: "
                           f"{err.routine} failed with {cl.status_code.to_string(err.code)}, "
                           f"a buffer of another context); move tensors with .to() first "
                           f"(the op that let it through lacks its device check: please "
                           f"report it)") from err

    def copy(self, dst, src, **kwargs):
        """``cl.enqueue_copy(queue, dst, src, **kwargs)`` (host <-> device), blocking: enqueued
        under the lock like every launch, then waited for outside it."""
        cap = self._capture  # (read once, as in launch)
        if cap is not None and cap._copy(self, dst, src, kwargs):
            return
        with self._lock:
            ev = cl.enqueue_copy(self.queue, dst, src, is_blocking=False, **kwargs)
        ev.wait()

    def fill(self, buffer, pattern: np.ndarray, offset: int, size: int):
        """``cl.enqueue_fill_buffer`` (bytes ``offset .. offset + size``), under the lock."""
        cap = self._capture  # (read once, as in launch)
        if cap is not None and cap._fill(self, buffer, pattern, offset, size):
            return
        with self._lock:
            cl.enqueue_fill_buffer(self.queue, buffer, pattern, offset, size)

    def synchronize(self):
        """Block until every command queued on this device has finished."""
        self.queue.finish()


_LIVE = weakref.WeakSet()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_poison_after_fork)


def pack(values, length: int = 8) -> np.ndarray:
    """Pack integers into an int64 array of ``length`` (a by-value struct argument)."""
    a = np.zeros(length, dtype=np.int64)
    a[:len(values)] = values
    return a

def _pyopencl_cache_dir() -> Path:
    """The folder where pyopencl caches compiled programs (its own rule, for this Python)."""
    from clgrad._probe import pyopencl_cache_dir
    return Path(pyopencl_cache_dir())


_SOURCES_DIGEST: dict = {}  # kernel folder -> kernel_sources_digest(folder)


def kernel_sources_digest(kdir: Path | None = None) -> str:
    """A SHA-256 of every ``*.cl``/``*.h`` file (name and bytes) in ``kdir`` (default:
    kernel_dir()), hex, once per process and folder: what a build marker or a cached verdict
    about the kernels holds for."""
    kdir = kdir or kernel_dir()
    got = _SOURCES_DIGEST.get(kdir)
    if got is None:
        h = hashlib.sha256()
        for f in sorted(kdir.iterdir()):
            if f.suffix in (".cl", ".h"):
                h.update(f.name.encode() + b"\0" + f.read_bytes())
        got = _SOURCES_DIGEST[kdir] = h.hexdigest()
    return got


def _first_build_notice(dev: Device, kdir: Path) -> bool:
    """One line on stderr (clgrad._log.notice) before the first build on a device that has
    never built this version of the kernels, with this Python and driver: the builds then take
    seconds to minutes, and pyopencl caches the binaries for later processes. A marker file in
    ``cache_dir()/built`` (named by a hash of the device, driver, pyopencl, Python, build
    options and the kernel sources) records that the notice was given. True when it was given
    now (a first run: its builds then show their progress)."""
    try:
        h = hashlib.sha256()
        for part in (dev.platform, dev.cl_device.platform.version, dev.name,
                     dev.cl_device.driver_version, cl.VERSION_TEXT, sys.version,
                     " ".join(dev.build_options)):
            h.update(str(part).encode() + b"\0")
        h.update(kernel_sources_digest(kdir).encode())
        marker = cache_dir() / "built" / h.hexdigest()[:24]
        if marker.exists():
            return False
        marker.parent.mkdir(exist_ok=True)
        marker.write_text(f"{dev.name} [{dev.platform}] {dev.cl_device.driver_version}\n")
    except (OSError, DeviceError):
        return False
    where = ("not cached: PYOPENCL_NO_CACHE is set" if os.environ.get("PYOPENCL_NO_CACHE")
             else f"first run only; cached in {_pyopencl_cache_dir()}")
    _log.notice(f"building OpenCL kernels for {dev.name} [{dev.platform}] ({where})")
    return True
