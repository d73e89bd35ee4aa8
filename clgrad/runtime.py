"""OpenCL device layer: runtimes, device choice, context, queue, memory, programs, launches.

Nothing here knows about tensors or ops. Programs are built once per (context, file, defines)
and cached in memory; pyopencl caches the binaries on disk across processes.

Runtimes. Besides every OpenCL driver registered on the system (``/etc/OpenCL/vendors``, or the
folder ``OCL_ICD_VENDORS`` names), clgrad makes the CPU runtimes installed from pip visible:
PoCL (``pocl-binary-distribution``, through pyopencl's bundled ICD loader) and Intel's OpenCL
CPU runtime (``intel-opencl-rt`` + ``intel-cmplr-lib-rt``), which also runs on AMD CPUs. Before
the first platform query it writes a vendors folder of its own (in clgrad's cache folder,
``CLGRAD_CACHE_DIR`` or ``$XDG_CACHE_HOME/clgrad`` or ``~/.cache/clgrad``, else the temporary
folder) listing those ICDs, and points ``OCL_ICD_VENDORS`` at it. Nothing is registered system
wide.

Probe before trusting. Every device is probed once: a separate process builds and runs one
tiny kernel on it (``clgrad/_probe.py``), so a runtime that cannot compile for this CPU (the
PoCL 3.0 of pyopencl's wheel on AMD Zen 5: ``unknown target CPU 'generic'``), that crashes or
that hangs is found without harm. The verdict is cached per platform, device and driver version
(``probe.json`` in the cache folder), so later processes pay nothing. A device that failed is
never chosen; ``python -m clgrad devices`` lists it as unusable with the reason.

Device choice (``CLGRAD_DEVICE``): ``cpu``, ``gpu``, ``cuda`` (= ``gpu``), ``cpu:N``/``gpu:N``/
``cuda:N`` (the N-th usable device of that kind), ``P:D`` (platform and device indices as listed
by ``clgrad.devices()``), or a case-insensitive substring of the platform name and version
(``intel``, ``pocl``, ``nvidia``) or of the device name; platform matches win over device-name
matches. Default: the first usable GPU, else the usable CPU device of the preferred CPU runtime
(``CPU_RUNTIME_PREFERENCE``: Intel's, then PoCL, then any), else any usable device.
Indices (``cpu:N``, ``cuda:N``) count usable devices of a kind in that order, the device
``CLGRAD_DEVICE`` names first, so that ``cpu``/``cuda`` mean the device the user chose.

Thread safety: device discovery and choice, program builds, allocations and kernel launches
(argument setting + enqueue, which must not interleave on a shared kernel object) each hold a
lock, so ops may be called from several threads. Results of ops issued from different threads
are ordered only by the device's single in-order queue; a tensor written in one thread and read
in another needs the usual synchronisation between those threads.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.tools

from clgrad.errors import DeviceError

__all__ = ["Device", "devices", "default_device", "set_default_device", "get_device",
           "synchronize", "kernel_dir", "launch_count", "cache_dir", "CPU_RUNTIME_PREFERENCE",
           "OutOfMemoryError"]

_PKG = Path(__file__).resolve().parent

# pyopencl's binary cache reads os.environ["PYOPENCL_CACHE_FAILURE_FATAL"] when the cache
# itself fails (e.g. two processes writing one entry), and the KeyError of an unset variable
# then aborts a build that would have succeeded from source. Unset means "warn and build".
os.environ.setdefault("PYOPENCL_CACHE_FAILURE_FATAL", "")

STALE_LOCK_S = 120  # pyopencl holds its cache lock for one cache read or write: milliseconds


def _clear_stale_cache_lock():
    """Remove pyopencl's binary-cache lock file when it is older than STALE_LOCK_S seconds.

    A process killed while holding it (SIGKILL, the OOM killer, a timeout) leaves the file
    behind, and every later build in every process then waits 60 s for it before building
    without the cache. Called once per process by device discovery, before the probes."""
    try:
        import platformdirs
        cache = os.environ.get("XDG_CACHE_HOME") if sys.platform == "darwin" else None
        root = Path(cache, "pyopencl") if cache else Path(
            platformdirs.user_cache_dir("pyopencl", "pyopencl"))
        version = ".".join(str(i) for i in sys.version_info)
        lock = root / f"pyopencl-compiler-cache-v2-py{version}" / "lock"
        import time
        if lock.exists() and time.time() - lock.stat().st_mtime > STALE_LOCK_S:
            lock.unlink()
    except (OSError, ImportError):
        pass

# Which CPU runtime the default device comes from when several work: the first match wins
# (a substring of the platform name). bench/results/cpu_runtimes.md has the measurements:
# Intel's runtime runs the main job and the S4 training step faster than PoCL 3.0.
CPU_RUNTIME_PREFERENCE = ("intel", "portable computing language")

_PROBE_VERSION = 1      # bump when the probe kernel changes, to re-probe every device
_PROBE_TIMEOUT_S = 120  # a cold probe builds one program per device: seconds, never minutes


class OutOfMemoryError(DeviceError, MemoryError):
    """An allocation would exceed the device's memory, or a single buffer the device's
    CL_DEVICE_MAX_MEM_ALLOC_SIZE (PyTorch: torch.cuda.OutOfMemoryError). A RuntimeError (as
    PyTorch's) and a MemoryError; also ``clgrad.OutOfMemoryError`` and
    ``clgrad.cuda.OutOfMemoryError``."""


def kernel_dir() -> Path:
    """The folder holding the ``*.cl`` sources: inside the installed package, or the checkout's."""
    for cand in (_PKG / "kernels", _PKG.parent / "kernels"):
        if (cand / "common.h").is_file():
            return cand
    raise DeviceError(f"kernels: expected common.h in {_PKG / 'kernels'} or "
                      f"{_PKG.parent / 'kernels'}, found neither")


def cache_dir() -> Path:
    """clgrad's cache folder (created): ``CLGRAD_CACHE_DIR``, ``$XDG_CACHE_HOME/clgrad``,
    ``~/.cache/clgrad``, or ``<tmp>/clgrad-<uid>`` when none of those is writable."""
    env = os.environ.get("CLGRAD_CACHE_DIR")
    cands = [Path(env)] if env else []
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        cands.append(Path(xdg) / "clgrad")
    try:
        cands.append(Path.home() / ".cache" / "clgrad")
    except RuntimeError:  # no home directory
        pass
    cands.append(Path(tempfile.gettempdir()) / f"clgrad-{os.getuid()}")
    for c in cands:
        try:
            c.mkdir(parents=True, exist_ok=True)
            if os.access(c, os.W_OK):
                return c
        except OSError:
            continue
    raise DeviceError(f"cache: none of {[str(c) for c in cands]} is a writable folder; set "
                      f"CLGRAD_CACHE_DIR")


_LAUNCHES = [0]
_BY_VALUE = (bytes, np.generic, np.ndarray)
_ARG_KIND: dict = {}  # argument type -> 0 buffer, 1 by value, 2 anything else (set_arg)
_enqueue = cl._cl.enqueue_nd_range_kernel  # positional: (queue, kernel, global, local,
#                                            global_offset, wait_for, g_times_l, allow_empty)


def launch_count() -> int:
    """Number of kernels launched so far in this process (for tests of launch counts)."""
    return _LAUNCHES[0]


def _kind_of(d: cl.Device) -> str:
    """'gpu', 'cpu' or 'other' from the device type bits."""
    t = d.type
    return "gpu" if t & cl.device_type.GPU else "cpu" if t & cl.device_type.CPU else "other"


def _fp_support(d: cl.Device) -> tuple:
    """(float64, float16) support: the extensions, or a double config (OpenCL 3.0 optional)."""
    ext = d.extensions
    return "cl_khr_fp64" in ext or d.double_fp_config != 0, "cl_khr_fp16" in ext


class Device:
    """One OpenCL device with its context, in-order queue, memory pool and program cache.

    Attributes: ``name``, ``kind`` ('cpu' | 'gpu' | 'other'), ``type`` (PyTorch's word:
    'cpu' | 'cuda' | 'other'; every OpenCL GPU is 'cuda', as PyTorch's ROCm build calls AMD
    GPUs), ``index`` (ordinal among usable devices of that type, or None), ``platform``,
    ``platform_index``, ``device_index``, ``fp64`` and ``fp16`` (extension support),
    ``max_work_group_size``, ``local_mem_size`` and ``total_memory`` (bytes),
    ``allocated`` (bytes held by live buffers), ``build_options`` (added to every build).
    """

    def __init__(self, cl_device: cl.Device, platform_index: int, device_index: int,
                 index: int | None = None):
        self.cl_device = cl_device
        self.platform_index = platform_index
        self.device_index = device_index
        self.name = cl_device.name.strip()
        self.platform = cl_device.platform.name.strip()
        self.kind = _kind_of(cl_device)
        self.type = {"gpu": "cuda"}.get(self.kind, self.kind)
        self.index = index
        self.fp64, self.fp16 = _fp_support(cl_device)
        self.max_work_group_size = cl_device.max_work_group_size
        self.local_mem_size = cl_device.local_mem_size
        self.total_memory = int(cl_device.global_mem_size)
        self.max_alloc = int(cl_device.max_mem_alloc_size)  # the largest single buffer
        self.allocated = 0
        from clgrad._probe import fp32_options
        self.build_options = fp32_options(cl, cl_device)
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
        self._kernels: dict = {}

    def __repr__(self):
        return f"Device({self.platform_index}:{self.device_index} {self.name!r}, {self.kind})"

    # -- memory -------------------------------------------------------------------------------
    def alloc(self, nbytes: int):
        """A buffer of at least ``nbytes`` bytes (at least 16) from the memory pool.

        Counts the bytes in ``allocated`` (``free(nbytes)`` gives them back).
        Raises:  OutOfMemoryError if live buffers plus this one would exceed ``total_memory``,
                 or if the runtime itself refuses (the message has what was asked, what is in
                 use and what the device has).
        """
        nbytes = max(int(nbytes), 16)
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
        with self._lock:
            self.allocated -= max(int(nbytes), 16)

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
            with self._lock:
                k = self._kernels.get(key)
                if k is None:
                    k = getattr(self.program(file, defines), name)
                    self._kernels[key] = k
        return k

    def kernel_local_mem(self, file: str, name: str, defines: dict | None = None) -> int:
        """Bytes of local memory kernel ``name`` uses by itself (its ``__local`` variables and
        what the implementation reserves: CL_KERNEL_LOCAL_MEM_SIZE of a fresh kernel object,
        so no local arguments are counted), cached. Planners add their local arguments to it
        before comparing with ``local_mem_size``."""
        key = ("local_mem", file, name, tuple(sorted((defines or {}).items())))
        got = self._kernels.get(key)
        if got is None:
            with self._lock:
                k = cl.Kernel(self.program(file, defines), name)
                got = int(k.get_work_group_info(cl.kernel_work_group_info.LOCAL_MEM_SIZE,
                                                self.cl_device))
                self._kernels[key] = got
        return got

    def _build(self, file: str, defines: dict) -> cl.Program:
        kdir = kernel_dir()
        path = kdir / file
        src = path.read_text()
        opts = [f"-I{kdir}"] + [f"-D{k}={v}" for k, v in sorted(defines.items())]
        opts += self.build_options
        if self.fp64:
            opts.append("-DCLGRAD_HAS_FP64=1")
        try:
            with warnings.catch_warnings():  # a successful build's log is only remarks
                warnings.simplefilter("ignore", cl.CompilerWarning)
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
        argument on PoCL, these ~1 µs for all of them. Setting the arguments and enqueueing
        hold the device's lock: kernel objects are shared, so two threads must not interleave.
        """
        if local_size is not None:
            global_size = [-(-g // l) * l for g, l in zip(global_size, local_size)]
        mem, val, other = [], [], ()
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
                other += ((i, a),)
        with self._lock:
            for i, a in other:
                kernel.set_arg(i, a)
            if mem:
                kernel._set_arg_multi(tuple(mem))
            if val:
                kernel._set_arg_buf_multi(tuple(val))
            _enqueue(self.queue, kernel, global_size, local_size, None, None, False, False)
            _LAUNCHES[0] += 1

    def copy(self, dst, src, **kwargs):
        """``cl.enqueue_copy(queue, dst, src, **kwargs)`` (host <-> device), blocking: enqueued
        under the lock like every launch, then waited for outside it."""
        with self._lock:
            ev = cl.enqueue_copy(self.queue, dst, src, is_blocking=False, **kwargs)
        ev.wait()

    def fill(self, buffer, pattern: np.ndarray, offset: int, size: int):
        """``cl.enqueue_fill_buffer`` (bytes ``offset .. offset + size``), under the lock."""
        with self._lock:
            cl.enqueue_fill_buffer(self.queue, buffer, pattern, offset, size)

    def synchronize(self):
        """Block until every command queued on this device has finished."""
        self.queue.finish()


# -- discovery ---------------------------------------------------------------------------------
_LOCK = threading.RLock()      # discovery, device objects, the default
_DEVICES: dict = {}            # (platform index, device index) -> Device
_DEFAULT: list = [None]
_FOUND: list = [None]          # the discovery result: list of _Candidate
_RUNTIME_NOTES: list = []      # problems with pip-installed runtimes found while setting up
_PINNED: list = [None]         # the candidate CLGRAD_DEVICE names, first of its kind


class _Candidate:
    """One OpenCL device as discovered: indices, pyopencl objects and the probe's verdict."""

    def __init__(self, pi, di, platform, device):
        self.pi, self.di, self.platform, self.device = pi, di, platform, device
        self.platform_name = platform.name.strip()
        self.label = f"{self.platform_name} {platform.version.strip()}".lower()
        self.name = device.name.strip()
        self.kind = _kind_of(device)
        self.driver = device.driver_version.strip()
        self.usable, self.reason = None, "not probed"
        self.index = None  # ordinal among usable devices of its kind, in preference order

    @property
    def spec(self) -> str:
        """'P:D', the device's platform and device indices (as CLGRAD_DEVICE takes them)."""
        return f"{self.pi}:{self.di}"

    def key(self) -> str:
        """The probe cache key: platform, device, driver, pyopencl and probe versions."""
        return " | ".join((self.platform_name, self.platform.version.strip(), self.name,
                           self.device.version.strip(), self.driver, f"pyopencl "
                           f"{cl.VERSION_TEXT}", f"probe v{_PROBE_VERSION}"))


def _pip_icd_libraries() -> list:
    """Absolute paths of OpenCL ICD libraries installed from pip that the loader would not find
    by itself (Intel's CPU runtime). Notes problems (a missing companion package)."""
    libs = []
    for lib_dir in _candidate_lib_dirs():
        so = lib_dir / "libintelocl.so"
        if so.is_file():
            if not (lib_dir / "libimf.so").is_file():
                _RUNTIME_NOTES.append(
                    f"Intel OpenCL CPU runtime at {so} lacks libimf.so: pip install "
                    f"intel-cmplr-lib-rt")
                continue
            libs.append(str(so))
            break
    return libs


def _candidate_lib_dirs() -> list:
    dirs = []
    try:
        from importlib import metadata
        dist = metadata.distribution("intel-opencl-rt")
        for f in dist.files or ():
            if f.name == "libintelocl.so":
                dirs.append(Path(dist.locate_file(f)).resolve().parent)
    except Exception:  # noqa: BLE001 — not installed, or metadata unreadable
        pass
    import site
    for prefix in (sys.prefix, sys.base_prefix, getattr(site, "USER_BASE", None)):
        if prefix:
            dirs.append(Path(prefix) / "lib")
    return list(dict.fromkeys(dirs))


def _bundled_loader_dir() -> Path | None:
    """The folder whose ``*.icd`` files pyopencl's bundled loader reads by itself (its wheel's
    ``.libs``, holding PoCL's ICD), or None for a pyopencl built against a system loader."""
    d = Path(cl.__file__).resolve().parent / ".libs"
    return d if (d / "pocl.icd").is_file() else None


def _icd_entries_of(folder: Path) -> list:
    out = []
    try:
        files = sorted(folder.glob("*.icd")) if folder.is_dir() else [folder]
    except OSError:
        return out
    for f in files:
        try:
            line = f.read_text().strip()
        except OSError:
            continue
        if line:
            out.append(line)
    return out


def _setup_icd_vendors():
    """Point the ICD loader at a vendors folder listing every ICD it should load: the ones
    registered already (OCL_ICD_VENDORS or /etc/OpenCL/vendors) and the pip-installed ones.
    Runs once, before the first platform query; does nothing when there is nothing to add."""
    extra = _pip_icd_libraries()
    if not extra:
        return
    given = os.environ.get("OCL_ICD_VENDORS") or os.environ.get("OPENCL_VENDOR_PATH")
    system = [Path(given)] if given else [Path("/etc/OpenCL/vendors")]
    entries = [e for folder in system for e in _icd_entries_of(folder)]
    bundled = _bundled_loader_dir()
    if bundled is None:  # a loader that does not read pyopencl's folder: list PoCL ourselves
        entries += [str(p) for p in Path(cl.__file__).resolve().parent.glob(".libs/libpocl*")]
    entries += [e for e in extra if e not in entries]
    text = "".join(f"{e}\n" for e in entries)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = cache_dir() / f"icd-{digest}"
    if not folder.is_dir():
        tmp = Path(tempfile.mkdtemp(prefix=".icd-", dir=cache_dir()))
        for i, e in enumerate(entries):
            (tmp / f"{i:02d}-{Path(e).stem}.icd").write_text(e + "\n")
        try:
            os.rename(tmp, folder)
        except OSError:  # another process made it first
            for f in tmp.iterdir():
                f.unlink()
            tmp.rmdir()
    os.environ["OCL_ICD_VENDORS"] = str(folder)


def _discover() -> list:
    """Every OpenCL device (duplicates of one platform+device dropped), probed, cached."""
    if _FOUND[0] is not None:
        return _FOUND[0]
    with _LOCK:
        if _FOUND[0] is not None:
            return _FOUND[0]
        _setup_icd_vendors()
        _clear_stale_cache_lock()
        try:
            platforms = cl.get_platforms()
        except cl.Error:
            platforms = []
        found, seen = [], set()
        for pi, p in enumerate(platforms):
            try:
                devs = p.get_devices()
            except cl.Error:
                continue
            for di, d in enumerate(devs):
                c = _Candidate(pi, di, p, d)
                if c.key() in seen:  # the same ICD listed twice
                    continue
                seen.add(c.key())
                found.append(c)
        _probe(found)
        # A device that CLGRAD_DEVICE names comes first of its kind, so that "cpu" / "cuda"
        # (PyTorch's device("cpu"), map_location="cpu") mean the device the user chose.
        env = os.environ.get("CLGRAD_DEVICE", "").strip()
        hits = _match(env, found) if env else []
        _PINNED[0] = hits[0] if hits and hits[0].usable else None
        for kind in ("cpu", "gpu", "other"):
            for i, c in enumerate(c for c in _preference_order(found) if c.kind == kind):
                c.index = i
        _FOUND[0] = found
        return found


def _probe(found):
    """Set usable/reason on each candidate: from probe.json, else by running clgrad/_probe.py
    in a child process (bounded by a timeout) and caching its definite verdicts."""
    if os.environ.get("CLGRAD_PROBE", "1") == "0":  # documented escape hatch: trust all
        for c in found:
            c.usable, c.reason = True, "not probed (CLGRAD_PROBE=0)"
        return
    path = cache_dir() / "probe.json"
    try:
        cache = json.loads(path.read_text())
        if not isinstance(cache, dict):
            cache = {}
    except (OSError, ValueError):
        cache = {}
    todo = []
    for c in found:
        hit = cache.get(c.key())
        if isinstance(hit, dict) and isinstance(hit.get("usable"), bool):
            c.usable, c.reason = hit["usable"], str(hit.get("reason", ""))
        else:
            todo.append(c)
    if not todo:
        return
    results = _run_probe([c.spec for c in todo])
    for c in todo:
        r = results.get(c.spec)
        if r is None:
            c.usable, c.reason = False, results.get("*", "the probe process gave no answer")
            continue
        c.usable, c.reason = bool(r["usable"]), str(r["reason"])
        cache[c.key()] = {"usable": c.usable, "reason": c.reason}
    try:
        tmp = path.with_name(f".probe.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass  # no cache: the next process probes again


def _run_probe(specs) -> dict:
    """{'P:D': {'usable', 'reason'}} from a child process; '*' holds a failure's reason."""
    cmd = [sys.executable, str(_PKG / "_probe.py"), *specs]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S,
                           env=dict(os.environ), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"*": f"the probe did not finish within {_PROBE_TIMEOUT_S} s"}
    except OSError as e:  # no usable interpreter: probe in this process instead
        import clgrad._probe as probe_mod
        plats = cl.get_platforms()
        out = {}
        for s in specs:
            pi, di = (int(x) for x in s.split(":"))
            u, why = probe_mod.probe_one(cl, np, plats[pi].get_devices()[di])
            out[s] = {"usable": u, "reason": why}
        return out if out else {"*": f"could not start the probe: {e}"}
    out = {}
    for line in r.stdout.splitlines():
        try:
            row = json.loads(line)
            out[row["index"]] = row
        except (ValueError, KeyError, TypeError):
            continue
    if r.returncode != 0:
        tail = " ".join(r.stderr.split())[-300:]
        out["*"] = f"the probe process failed (exit {r.returncode}) on this device: {tail}"
    return out


def _preference_order(found) -> list:
    """GPUs first, then CPUs by CPU_RUNTIME_PREFERENCE, then the rest; the device CLGRAD_DEVICE
    names first of its kind; stable otherwise."""
    def rank(c):
        kind = {"gpu": 0, "cpu": 1}.get(c.kind, 2)
        pref = next((i for i, w in enumerate(CPU_RUNTIME_PREFERENCE) if w in c.label),
                    len(CPU_RUNTIME_PREFERENCE))
        return kind, c is not _PINNED[0], pref if c.kind == "cpu" else 0, c.pi, c.di
    return sorted(found, key=rank)


def _fix_hint() -> str:
    return ("install a CPU runtime (pip install intel-opencl-rt intel-cmplr-lib-rt, or "
            "pocl-binary-distribution) or a GPU driver; CLGRAD_DEVICE=P:D selects a device "
            "(python -m clgrad devices lists them)")


def devices() -> list[dict]:
    """Every OpenCL device found, with the probe's verdict.

    Returns a list of dicts with keys ``index`` ('P:D'), ``platform``, ``name``, ``type``
    ('cpu' | 'gpu' | 'other'), ``driver``, ``compute_units``, ``global_mem_bytes``, ``fp64``,
    ``fp16``, ``usable`` (bool) and ``reason`` (one line: 'ok' or why not).
    """
    rows = []
    for c in _discover():
        d = c.device
        fp64, fp16 = _fp_support(d)
        rows.append(dict(index=c.spec, platform=c.platform_name, name=c.name, type=c.kind,
                         driver=c.driver, compute_units=d.max_compute_units,
                         global_mem_bytes=d.global_mem_size, fp64=fp64, fp16=fp16,
                         usable=bool(c.usable), reason=c.reason))
    return rows


def runtime_notes() -> list[str]:
    """Problems seen while setting up the pip-installed runtimes (one line each)."""
    _discover()
    return list(_RUNTIME_NOTES)


def _match(spec: str, found) -> list:
    """Candidates that ``spec`` names, best first (see the module docstring)."""
    s = spec.strip().lower()
    order = _preference_order(found)
    kind_word, _, nth = s.partition(":")
    kinds = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu"}
    if kind_word in kinds and (not nth or nth.isdigit()):
        same = [c for c in order if c.kind == kinds[kind_word]]
        usable = [c for c in same if c.usable]
        if nth:
            return [c for c in usable if c.index == int(nth)]
        return usable or same
    if ":" in s and all(part.isdigit() for part in s.split(":", 1)):
        pi, di = (int(x) for x in s.split(":", 1))
        return [c for c in found if (c.pi, c.di) == (pi, di)]
    by_platform = [c for c in order if s in c.label]
    by_name = [c for c in order if s in c.name.lower() and c not in by_platform]
    hits = by_platform or by_name
    return [c for c in hits if c.usable] or hits


def get_device(spec=None) -> Device:
    """The device for ``spec``; None: the default.

    ``spec``: a Device; a string as in the module docstring ('cpu', 'gpu', 'cuda', 'cuda:1',
    'P:D', 'intel', 'pocl', a device-name substring); or any object whose ``str()`` is one of
    those (``clgrad.device('cuda:0')``).
    Raises:  DeviceError if nothing matches (the message lists the devices found), or if the
             device named failed its probe (the message has the reason).
    """
    if spec is None:
        return default_device()
    if isinstance(spec, Device):
        return spec
    found = _discover()
    if not found:
        raise DeviceError(f"no OpenCL device found: {_fix_hint()}")
    s = str(spec).strip()
    hits = _match(s, found)
    listing = ", ".join(f"{c.spec} {c.name} [{c.platform_name}]"
                        f"{'' if c.usable else ' (unusable)'}" for c in found)
    if not hits:
        kind_word, _, nth = s.lower().partition(":")
        if kind_word in ("gpu", "cuda"):
            gpus = sum(1 for c in found if c.kind == "gpu" and c.usable)
            if not gpus:
                raise DeviceError(f"device: {s!r} means an OpenCL GPU, but no OpenCL GPU was "
                                  f"found (torch.cuda.is_available() is False); use 'cpu'; "
                                  f"available: [{listing}]")
            raise DeviceError(f"device: {s!r} means OpenCL GPU {nth}, but only {gpus} usable "
                              f"OpenCL GPU(s) were found; available: [{listing}]")
        if kind_word == "cpu":
            which = f" number {nth}" if nth else ""
            raise DeviceError(f"device: no usable CPU device{which} found; available: "
                              f"[{listing}]")
        raise DeviceError(f"device: expected 'cpu', 'gpu', 'cuda[:N]', 'P:D' or a platform or "
                          f"name substring matching one of [{listing}], got {spec!r}")
    pick = hits[0]
    if not pick.usable:
        raise DeviceError(f"device: {pick.spec} {pick.name!r} [{pick.platform_name}] is not "
                          f"usable: {pick.reason}; {_fix_hint()}")
    return _device_for(pick)


def _device_for(c) -> Device:
    key = (c.pi, c.di)
    dev = _DEVICES.get(key)
    if dev is None:
        with _LOCK:
            dev = _DEVICES.get(key)
            if dev is None:
                dev = Device(c.device, c.pi, c.di, index=c.index)
                _DEVICES[key] = dev
    return dev


def default_device() -> Device:
    """The device tensors are created on: ``CLGRAD_DEVICE`` if set, else the first usable GPU,
    else the preferred usable CPU device (see the module docstring).

    Raises:  DeviceError naming the variable for a bad ``CLGRAD_DEVICE``, or, when no device
             works, listing each device with the reason and how to fix it.
    """
    dev = _DEFAULT[0]
    if dev is not None:
        return dev
    with _LOCK:
        if _DEFAULT[0] is not None:
            return _DEFAULT[0]
        spec = os.environ.get("CLGRAD_DEVICE")
        if spec:
            try:
                _DEFAULT[0] = get_device(spec)
            except DeviceError as e:  # say where the bad spec came from
                raise DeviceError(f"CLGRAD_DEVICE={spec!r}: {e}") from None
            return _DEFAULT[0]
        found = _discover()
        usable = [c for c in _preference_order(found) if c.usable]
        if not usable:
            if not found:
                notes = "".join(f"; {n}" for n in _RUNTIME_NOTES)
                raise DeviceError(f"no OpenCL device found{notes}: {_fix_hint()}")
            why = "; ".join(f"{c.spec} {c.name!r} [{c.platform_name}]: {c.reason}"
                            for c in found)
            raise DeviceError(f"no usable OpenCL device: {why}; {_fix_hint()}")
        _DEFAULT[0] = _device_for(usable[0])
        return _DEFAULT[0]


def set_default_device(spec) -> Device:
    """Make ``spec`` (a Device or a spec as for ``get_device``) the default device."""
    dev = get_device(spec)
    with _LOCK:
        _DEFAULT[0] = dev
    return dev


def synchronize(device: Device | None = None):
    """Wait until the queue of ``device`` (default: the default device) has drained."""
    (device or default_device()).synchronize()


def pack(values, length: int = 8) -> np.ndarray:
    """Pack integers into an int64 array of ``length`` (a by-value struct argument)."""
    a = np.zeros(length, dtype=np.int64)
    a[:len(values)] = values
    return a
