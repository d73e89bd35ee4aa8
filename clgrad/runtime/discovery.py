"""Discovery and probing: which OpenCL devices exist, which work, which one is the default.

See the package docstring (clgrad/runtime/__init__.py) for runtimes, probing and device choice.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.tools

from clgrad import _log
from clgrad.errors import CPU_RUNTIME_HINT, DeviceError
from clgrad import settings
from clgrad.runtime.device import (_LOCK, Device, ForkedDeviceError, _fp_support,  # noqa: F401
                                   _kind_of, _pyopencl_cache_dir, cache_dir, raise_if_forked,
                                   refuse_forked)
from clgrad.runtime.meta import MetaDevice

__all__ = ["devices", "default_device", "fastest_device", "set_default_device", "get_device",
           "synchronize", "runtime_notes", "CPU_RUNTIME_PREFERENCE"]

_PKG = Path(__file__).resolve().parent.parent  # the clgrad package folder (holds _probe.py)

_log.configure()    # CLGRAD_DEBUG=1: the "clgrad" logger's DEBUG lines on stderr


# Which CPU runtime the default device comes from when several work: the first match wins
# (a substring of the platform name). bench/results/cpu_runtimes.md has the measurements:
# Intel's runtime runs the main job and the S4 training step faster than PoCL 3.0.
CPU_RUNTIME_PREFERENCE = ("intel", "portable computing language")

_PROBE_VERSION = 4      # bump when the probe kernel changes, to re-probe every device
#                         (3: float16 by probe_fp16; 4: its half built-ins check)
_PROBE_TIMEOUT_S = 120  # a cold probe builds one program per device: seconds, never minutes
# The program check (_probe.py --kernels) builds ~70 programs: 10-30 s cold on Intel's runtime,
# 1-3 min on PoCL (2 loaded cores); once per device, driver and version of the kernels.
_PROGRAMS_TIMEOUT_S = 900


# -- discovery ---------------------------------------------------------------------------------
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
        # float16 (the probe's probe_fp16): cl_khr_fp16 listed, or a GPU compiler that runs
        # half arithmetic right without listing it (NVIDIA's OpenCL); None: not probed
        self.fp16 = None
        self.index = None  # ordinal among usable devices of its kind, in preference order
        self.checked = False      # the program check (_check_programs) has passed
        self.vector_width = None  # the float vector width its kernels build at, when capped

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


# GPU vendors' OpenCL libraries (ICDs), by the name their drivers install; an NVIDIA container
# mounts libnvidia-opencl.so.1 but often no /etc/OpenCL/vendors/nvidia.icd naming it.
VENDOR_LIBRARIES = (("NVIDIA", "libnvidia-opencl.so.1"), ("AMD ROCm", "libamdocl64.so"),
                    ("Intel GPU", "libigdrcl.so"))
_VENDOR_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64",
                "/usr/local/nvidia/lib", "/usr/lib/wsl/lib", "/opt/rocm/lib",
                "/opt/rocm/opencl/lib", "/usr/lib/aarch64-linux-gnu")
_VENDOR_STATE: dict = {}  # vendor -> 'registered: ...' | 'added: <path>' | 'not found'


def _ldconfig_libraries() -> dict:
    """{library name: path} from the dynamic linker's cache (``ldconfig -p``), {} without it."""
    for exe in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            out = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=10,
                                 stdin=subprocess.DEVNULL).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        libs = {}
        for line in out.splitlines():
            name, arrow, path = line.strip().partition(" => ")
            if arrow:
                libs.setdefault(name.split(" (")[0], path.strip())
        return libs
    return {}


def _find_vendor_library(name: str, ldconfig: dict) -> str | None:
    """The path of vendor library ``name`` in the dynamic loader's order: LD_LIBRARY_PATH,
    the linker cache, then the folders drivers and containers use (_VENDOR_DIRS); None when
    absent."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d]
    for d in dirs:
        if (Path(d) / name).is_file():
            return str(Path(d) / name)
    if name in ldconfig and Path(ldconfig[name]).is_file():
        return ldconfig[name]
    for d in _VENDOR_DIRS:
        if (Path(d) / name).is_file():
            return str(Path(d) / name)
    return None


def _unregistered_vendor_libraries(entries: list) -> list:
    """Paths of the GPU vendors' OpenCL libraries (VENDOR_LIBRARIES) present on this machine
    that no ICD entry in ``entries`` names; records each vendor's state for ``devices``."""
    named = {Path(e).name for e in entries}
    ldconfig, out = None, []
    for vendor, lib in VENDOR_LIBRARIES:
        if lib in named:
            _VENDOR_STATE[vendor] = f"{lib}: registered by an ICD file"
            continue
        if ldconfig is None:
            ldconfig = _ldconfig_libraries()
        path = _find_vendor_library(lib, ldconfig)
        if path:
            out.append(path)
            _VENDOR_STATE[vendor] = (f"{lib}: found at {path}, which no ICD file registers; "
                                     f"clgrad's vendors folder adds it")
        else:
            _VENDOR_STATE[vendor] = f"{lib}: not found"
    return out


def vendor_libraries() -> dict:
    """{vendor: one line} for each GPU vendor's OpenCL library (VENDOR_LIBRARIES): registered
    by an ICD file, found without one (then clgrad's vendors folder lists it), or not found."""
    _discover()
    return dict(_VENDOR_STATE)


def _setup_icd_vendors():
    """Point the ICD loader at a vendors folder listing every ICD it should load: the ones
    registered already (OCL_ICD_VENDORS or /etc/OpenCL/vendors), the pip-installed ones and the
    GPU vendors' libraries found on the machine that no ICD file names (an NVIDIA container's
    libnvidia-opencl.so.1). Runs once, before the first platform query; does nothing when there
    is nothing to add."""
    given = os.environ.get("OCL_ICD_VENDORS") or os.environ.get("OPENCL_VENDOR_PATH")
    system = [Path(given)] if given else [Path("/etc/OpenCL/vendors")]
    entries = [e for folder in system for e in _icd_entries_of(folder)]
    extra = _pip_icd_libraries() + _unregistered_vendor_libraries(entries)
    if not extra:
        return
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
        # In a child forked after the parent used a GPU, every OpenCL error here is the
        # driver refusing the parent's state: ForkedDeviceError, not "no device found".
        try:
            platforms = cl.get_platforms()
        except cl.Error as e:
            raise_if_forked(e, "the platform list")
            platforms = []
        found, seen = [], set()
        for pi, p in enumerate(platforms):
            try:
                devs = p.get_devices()
            except cl.Error as e:
                raise_if_forked(e, "a platform's device list")
                continue
            for di, d in enumerate(devs):
                refuse_forked(d)
                try:
                    c = _Candidate(pi, di, p, d)
                except cl.Error as e:
                    raise_if_forked(e, "a query of a device")
                    raise
                if c.key() in seen:  # the same ICD listed twice
                    continue
                seen.add(c.key())
                found.append(c)
                _log.logger.debug("found %s %s [%s %s], driver %s", c.spec, c.name,
                                  c.platform_name, p.version.strip(), c.driver)
        _probe(found)
        # A device that CLGRAD_DEVICE names comes first of its kind, so that "cpu" / "cuda"
        # (PyTorch's device("cpu"), map_location="cpu") mean the device the user chose.
        env = settings.getenv("CLGRAD_DEVICE").strip()
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
    if settings.getenv("CLGRAD_PROBE") == "0":  # documented escape hatch: trust all
        for c in found:
            c.usable, c.reason = True, "not probed (CLGRAD_PROBE=0)"
        return
    path = settings.cache_dir() / "probe.json"
    cache = settings.read_json(path)
    todo = []
    for c in found:
        hit = cache.get(c.key())
        if isinstance(hit, dict) and isinstance(hit.get("usable"), bool):
            c.usable, c.reason = hit["usable"], str(hit.get("reason", ""))
            c.fp16 = hit.get("fp16") if isinstance(hit.get("fp16"), bool) else None
        else:
            todo.append(c)
    for c in found:
        if c not in todo:
            _log.logger.debug("probe %s %s [%s]: %s (cached in %s)", c.spec, c.name,
                              c.platform_name, "usable" if c.usable else c.reason, path)
    if not todo:
        return
    _log.notice(f"probing {len(todo)} OpenCL device(s): "
                f"{', '.join(f'{c.name} [{c.platform_name}]' for c in todo)} (first run only: "
                f"one tiny kernel each, seconds; verdicts cached in {path})")
    start = time.perf_counter()
    results = _run_probe([c.spec for c in todo])
    for c in todo:
        r = results.get(c.spec)
        if r is None:
            c.usable, c.reason = False, results.get("*", "the probe process gave no answer")
        else:
            c.usable, c.reason = bool(r["usable"]), str(r["reason"])
            c.fp16 = r.get("fp16") if isinstance(r.get("fp16"), bool) else None
            cache[c.key()] = {"usable": c.usable, "reason": c.reason}
            if c.fp16 is not None:
                cache[c.key()].update(fp16=c.fp16, fp16_how=str(r.get("fp16_how", "")))
        _log.logger.debug("probe %s %s [%s]: %s (probed in %.1f s)", c.spec, c.name,
                          c.platform_name, "usable" if c.usable else c.reason,
                          time.perf_counter() - start)
    settings.write_json(path, cache, sort_keys=True)  # unwritable: probed next time


def _run_probe(specs) -> dict:
    """{'P:D': {'usable', 'reason'}} from a child process; '*' holds a failure's reason."""
    from clgrad.runtime.device import kernel_dir
    cmd = [sys.executable, str(_PKG / "_probe.py"), "--fp16-kernels", str(kernel_dir()), *specs]
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


def _preference_order(found, first: str = "gpu") -> list:
    """GPUs first (``first="cpu"``: CPUs first), CPUs by CPU_RUNTIME_PREFERENCE, then the rest;
    the device CLGRAD_DEVICE names first of its kind; stable otherwise."""
    kinds = {"gpu": 0, "cpu": 1} if first == "gpu" else {"cpu": 0, "gpu": 1}

    def rank(c):
        kind = kinds.get(c.kind, 2)
        pref = next((i for i, w in enumerate(CPU_RUNTIME_PREFERENCE) if w in c.label),
                    len(CPU_RUNTIME_PREFERENCE))
        return kind, c is not _PINNED[0], pref if c.kind == "cpu" else 0, c.pi, c.di
    return sorted(found, key=rank)


def _instead(c) -> str:
    """What to do instead of using candidate ``c``, which is unusable: the devices that passed
    their probe (CLGRAD_DEVICE values naming them), else how to get one (_fix_hint)."""
    others = [o for o in _preference_order(_FOUND[0] or []) if o is not c and o.usable]
    if not others:
        return _fix_hint()
    names = ", ".join(f"{o.spec} {o.name!r} [{o.platform_name}]" for o in others)
    return (f"usable instead: {names} (CLGRAD_DEVICE={others[0].spec}, or 'cpu'/'cuda'; "
            f"python -m clgrad devices lists them)")


def _fix_hint() -> str:
    return (f"install a CPU runtime ({CPU_RUNTIME_HINT}) or a GPU driver; CLGRAD_DEVICE=P:D "
            f"selects a device (python -m clgrad devices lists them)")


def devices(kind: str | None = None) -> list[dict]:
    """Every OpenCL device found (``kind`` 'cpu' or 'gpu': only those), with the probe's
    verdict.

    Returns a list of dicts with keys ``index`` ('P:D'), ``platform``, ``name``, ``type``
    ('cpu' | 'gpu' | 'other'), ``driver``, ``compute_units``, ``global_mem_bytes``, ``fp64``,
    ``fp16``, ``usable`` (bool) and ``reason`` (one line: 'ok' or why not). Each device that
    passes the tiny probe is also checked with the programs clgrad ships (``_check_programs``:
    the first time, seconds to minutes per device; cached), devices of another kind are not
    checked: ``torch.cuda.is_available()`` (``devices('gpu')``) on a GPU machine never waits
    for the CPU runtimes' check (PoCL's took minutes on a 16-core Xeon).
    Raises ForkedDeviceError in a forked child for a GPU device the parent had used (before
    querying it), or when the driver refuses a query there; ValueError for another ``kind``.
    """
    if kind not in (None, "cpu", "gpu"):
        raise ValueError(f"devices: expected kind None, 'cpu' or 'gpu', got {kind!r}")
    rows = []
    found = [c for c in _discover() if kind is None or c.kind == kind]
    for c in found:
        refuse_forked(c.device)  # a GPU the parent of a forked child used: before any query
    for c in found:
        _check_programs(c)
    for c in found:
        d = c.device
        try:
            fp64, fp16 = _fp_support(d)
            fp16 = fp16 or _probed_fp16(c)
            units, mem = d.max_compute_units, d.global_mem_size
        except cl.Error as e:
            raise_if_forked(e, "a query of a device")
            raise
        rows.append(dict(index=c.spec, platform=c.platform_name, name=c.name, type=c.kind,
                         driver=c.driver, compute_units=units, global_mem_bytes=mem,
                         fp64=fp64, fp16=fp16, usable=bool(c.usable), reason=c.reason))
    return rows


def _probed_fp16(c) -> bool:
    """The probe's float16 verdict for ``c`` where CLGRAD_FP16=probe (the default) asks for
    it, else False (CLGRAD_FP16=listed: float16 only where cl_khr_fp16 is listed)."""
    mode = settings.getenv("CLGRAD_FP16")
    if mode not in ("listed", "probe"):
        raise ValueError(f"CLGRAD_FP16: expected 'listed' or 'probe', got {mode!r}")
    return mode == "probe" and bool(c.fp16)


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
             device named failed its probe (the message has the reason); ForkedDeviceError
             (a DeviceError) in a forked child for a GPU device the parent had used, or when
             the driver refuses discovery there.
    """
    if spec is None:
        return default_device()
    if isinstance(spec, (Device, MetaDevice)):
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
                          f"usable: {pick.reason}; {_instead(pick)}")
    return _device_for(pick)


def _device_for(c) -> Device:
    """The Device of candidate ``c``, made once, after ``c`` passed the program check.

    Raises:  DeviceError with the check's reason when the runtime cannot build clgrad's
             programs on it (see _check_programs)."""
    key = (c.pi, c.di)
    dev = _DEVICES.get(key)
    if dev is None:
        with _LOCK:
            dev = _DEVICES.get(key)
            if dev is None:
                refuse_forked(c.device)  # before the program check queries it
                if not _check_programs(c):
                    raise DeviceError(f"device: {c.spec} {c.name!r} [{c.platform_name}] is not "
                                      f"usable: {c.reason}; {_instead(c)}")
                dev = Device(c.device, c.pi, c.di, index=c.index, fp16=_probed_fp16(c))
                dev.max_vector_width = c.vector_width
                _DEVICES[key] = dev
    return dev


def _kernels_digest() -> str:
    """A hash of the kernel sources (the program check's verdict holds for these only)."""
    if not _KERNELS_DIGEST:
        from clgrad.runtime.device import kernel_sources_digest
        h = hashlib.sha256(kernel_sources_digest().encode())
        h.update((_PKG / "_probe.py").read_bytes())  # the check's table and method
        _KERNELS_DIGEST.append(h.hexdigest()[:16])
    return _KERNELS_DIGEST[0]


_KERNELS_DIGEST: list = []


def _check_programs(c) -> bool:
    """Whether candidate ``c`` can build what clgrad ships: ``clgrad/_probe.py --kernels``
    in a child process builds a representative set of the programs (every kernel file, each
    dtype family, float64 too) through pyopencl's binary cache, re-creates each from its
    binary and checks that every kernel is in it (PoCL 3.0 on AMD Zen 4 returned programs
    without their kernels, or aborted in LLVM, where the tiny probe passed). Where a CPU
    device fails at its native float vector width (16 on AVX-512), the check runs again at
    8; passing there caps the device's ``vector_width`` at 8 and says so in the reason.
    The verdict is cached in probe.json per device, driver and version of the kernels; a
    failure marks ``c`` unusable with the reason. ``CLGRAD_PROBE=0`` skips it."""
    if c.checked or not c.usable:
        return bool(c.usable)
    if settings.getenv("CLGRAD_PROBE") == "0":
        c.checked = True
        return True
    path = settings.cache_dir() / "probe.json"
    key = f"{c.key()} | programs {_kernels_digest()}"
    hit = _cached_verdict(path, key)
    if hit is None:
        with _check_lock(path, c):  # another process may have checked while this one waited
            hit = _cached_verdict(path, key) or _checked(c, path, key)
    c.checked = bool(hit["usable"])
    c.usable, c.vector_width = c.checked, hit.get("vector_width")
    if not c.usable:
        c.reason = f"cannot build clgrad's kernels: {hit['reason']}"
    elif hit.get("vector_width"):
        c.reason = hit["reason"]
    return c.usable


def _cached_verdict(path, key):
    """The verdict probe.json holds for ``key``, or None."""
    hit = settings.read_json(path).get(key)
    return hit if isinstance(hit, dict) and isinstance(hit.get("usable"), bool) else None


@contextlib.contextmanager
def _check_lock(path, c):
    """Hold probe.json's lock file (``flock``, exclusive) while one process checks: the
    other processes that start at once (pytest-xdist workers, the ranks of a distributed
    launch) wait for its verdict instead of each building the programs too (15 workers each
    checking PoCL on a 16-core host spent over 330 s without one verdict). No lock where
    fcntl is missing (Windows) or the file cannot be opened: each process then checks."""
    try:
        import fcntl
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path.with_name(path.name + ".lock"), "a")
    except (ImportError, OSError):
        yield
        return
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            _log.notice(f"waiting for another process's check that {c.name} "
                        f"[{c.platform_name}] builds clgrad's kernels")
            fcntl.flock(f, fcntl.LOCK_EX)  # (the holder's check has its own time limit)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _checked(c, path, key) -> dict:
    """Run the program check on ``c`` (and at float vector width 8 where a wide CPU fails)
    and cache a definite verdict under ``key``."""
    _log.notice(f"checking that {c.name} [{c.platform_name}] builds clgrad's kernels "
                f"(first run only: about 70 OpenCL programs, seconds to minutes; verdict "
                f"cached in {path})")
    start = time.perf_counter()
    hit = _run_program_check(c, None)
    native = c.device.native_vector_width_float
    if not hit["usable"] and c.kind == "cpu" and native > 8:
        again = _run_program_check(c, 8)
        if again["usable"]:
            hit = dict(again, reason=f"ok at float vector width 8 (at {native}: "
                                     f"{hit['reason']})", vector_width=8)
        else:
            hit = dict(hit, reason=f"{hit['reason']}; at float vector width 8 too: "
                                   f"{again['reason']}")
    _log.logger.debug("program check %s %s [%s]: %s (%.1f s)", c.spec, c.name,
                      c.platform_name, hit["reason"], time.perf_counter() - start)
    if hit.pop("definite", True):
        cache = settings.read_json(path)  # another process may have written meanwhile
        cache[key] = hit
        settings.write_json(path, cache, sort_keys=True)
    return hit


def _check_processes() -> int:
    """How many processes the program check runs at once: one per core, at most 8 (PoCL
    builds one program at a time a process, whatever the threads: _probe.py says what that
    cost)."""
    return max(1, min(8, os.cpu_count() or 1))


def _run_program_check(c, width) -> dict:
    """{'usable', 'reason', 'programs', 'definite'} from ``_probe.py --kernels`` run on ``c``
    in child processes (``_check_processes()`` of them, each building its share ``--part
    i/k`` of the programs in one thread; ``width``: the CPU float vector width to build at;
    None: native). The reason is that of the first failing program in table order over the
    shares. A child that dies (a compiler abort) or times out gives a reason naming the
    program it was building; a time-out (_PROGRAMS_TIMEOUT_S for the whole check) is not
    definite (not cached)."""
    from clgrad.runtime.device import kernel_dir
    k = _check_processes()
    cmd = [sys.executable, str(_PKG / "_probe.py"), "--kernels", str(kernel_dir())]
    if width:
        cmd += ["--width", str(width)]
    if k > 1:
        cmd += ["--threads", "1"]
    try:
        procs = [subprocess.Popen(cmd + (["--part", f"{i}/{k}"] if k > 1 else []) + [c.spec],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=dict(os.environ), stdin=subprocess.DEVNULL)
                 for i in range(k)]
    except OSError as e:
        return {"usable": False, "definite": False, "reason": f"could not start the program "
                f"check: {e}"}
    deadline = time.monotonic() + _PROGRAMS_TIMEOUT_S
    outs, late = [], None
    for p in procs:
        try:
            outs.append(p.communicate(timeout=max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            late = p
            break
    if late is not None:
        for p in procs:
            if p.poll() is None:
                p.kill()
        flight = " or ".join(dict.fromkeys(filter(None, (_last_building(p.communicate()[0])
                                                         for p in procs[len(outs):]))))
        return {"usable": False, "definite": False, "reason": f"the program check did not "
                f"finish within {_PROGRAMS_TIMEOUT_S} s{flight and ' (building ' + flight + ')'}"}
    verdicts = [_check_verdict(p.returncode, *out) for p, out in zip(procs, outs)]
    failed = [(v["programs"] * k + i, v) for i, v in enumerate(verdicts) if not v["usable"]]
    if failed:
        return min(failed, key=lambda f: f[0])[1]
    return {"usable": True, "reason": "ok", "programs": sum(v["programs"] for v in verdicts)}


def _check_verdict(returncode, stdout, stderr) -> dict:
    """One check process's {'usable', 'reason', 'programs'}: its verdict line, or why it
    ended without one (the compiler's last error line and the program it was building;
    'programs' then counts the ones it finished)."""
    for line in stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "usable" in row:
            return {"usable": bool(row["usable"]), "reason": str(row["reason"]),
                    "programs": int(row.get("programs", 0))}
    errors = [ln.strip() for ln in stderr.splitlines()
              if "ERROR" in ln or "error" in ln or "Abort" in ln]
    tail = (errors[-1] if errors else " ".join(stderr.split())[-200:]) or "no output"
    last = _last_building(stdout)
    done = sum(1 for line in stdout.splitlines() if '"built"' in line)
    return {"usable": False, "programs": done, "reason": f"the runtime's compiler ended the "
            f"process (exit {returncode}: {tail[:300]}) while building "
            f"{last or 'the first program'}"}


def _last_building(stdout) -> str:
    """The programs the child was building when it stopped ('kernels/<file> (<defines>)', or
    several joined with ' or '; the child builds a few at a time), or ''."""
    if isinstance(stdout, bytes):
        stdout = stdout.decode(errors="replace")
    flight = {}
    for line in (stdout or "").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and "building" in row:
            flight[row["building"]] = True
        elif isinstance(row, dict) and "built" in row:
            flight.pop(row["built"], None)
    return " or ".join(flight)


def default_device() -> Device:
    """The device tensors are created on when no device is given, as PyTorch's "cpu":
    ``CLGRAD_DEVICE`` if set (or what ``set_default_device`` chose), else the usable CPU device
    of the preferred CPU runtime (see the module docstring), also on a machine with a GPU
    ("cuda", ``clgrad.cuda``, ``clgrad.accelerator`` name the GPU). Where no OpenCL CPU device
    works, the first usable GPU ("cpu" then names it too, with one warning: clgrad/_device.py).

    Raises:  DeviceError naming the variable for a bad ``CLGRAD_DEVICE``, or, when no device
             works, listing each device with the reason and how to fix it.
    """
    dev = _DEFAULT[0]
    if dev is not None:
        return dev
    with _LOCK:
        if _DEFAULT[0] is None:
            _DEFAULT[0] = _choose("cpu")
        return _DEFAULT[0]


def fastest_device() -> Device:
    """The device a training job runs on when told none (``python -m clgrad train``):
    ``CLGRAD_DEVICE`` if set, else the first usable GPU, else the preferred CPU device. Leaves
    the default device as it is. Raises DeviceError as ``default_device``."""
    return _choose("gpu")


def _choose(first: str) -> Device:
    """``CLGRAD_DEVICE``'s device, else the first usable device in ``_preference_order(found,
    first)``."""
    spec = settings.getenv("CLGRAD_DEVICE")
    if spec:
        try:
            dev = get_device(spec)
        except ForkedDeviceError:  # not the spec's fault: callers catch this type
            raise
        except DeviceError as e:  # say where the bad spec came from
            raise DeviceError(f"CLGRAD_DEVICE={spec!r}: {e}") from None
        _log.logger.debug("%s device: %r (CLGRAD_DEVICE=%r)",
                          "default" if first == "cpu" else "fastest", dev, spec)
        return dev
    found = _discover()
    usable = [c for c in _preference_order(found, first) if c.usable]
    if not usable:
        if not found:
            notes = "".join(f"; {n}" for n in _RUNTIME_NOTES)
            raise DeviceError(f"no OpenCL device found{notes}: {_fix_hint()}")
        why = "; ".join(f"{c.spec} {c.name!r} [{c.platform_name}]: {c.reason}" for c in found)
        raise DeviceError(f"no usable OpenCL device: {why}; {_fix_hint()}")
    for c in usable:
        try:
            dev = _device_for(c)
            break
        except ForkedDeviceError:  # a forked child may use no device (DataLoader workers catch
            raise                  # this type and load in the main process instead)
        except DeviceError:  # failed the program check: c.usable is False now, its reason set
            if c is usable[-1]:
                why = "; ".join(f"{c.spec} {c.name!r} [{c.platform_name}]: {c.reason}"
                                for c in found)
                raise DeviceError(f"no usable OpenCL device: {why}; {_fix_hint()}") from None
    _log.logger.debug("%s device: %r (the first usable of %s: %s first, then CPU runtimes in "
                      "the order %s)", "default" if first == "cpu" else "fastest", dev,
                      [f"{c.spec} {c.name}" for c in usable], first.upper() + "s",
                      CPU_RUNTIME_PREFERENCE)
    return dev


def set_default_device(spec) -> Device:
    """Make ``spec`` (a Device, a ``clgrad.device`` or a spec as for ``get_device``: "cuda",
    "cpu", ...) the default device, as ``torch.set_default_device``; None: back to the
    default's default (``CLGRAD_DEVICE``, else the CPU device). Returns the runtime Device.
    Raises DeviceError as ``get_device``."""
    if spec is None:
        with _LOCK:
            _DEFAULT[0] = None
        return default_device()
    dev = get_device(spec)
    with _LOCK:
        _DEFAULT[0] = dev
    _log.logger.debug("default device: %r (set_default_device(%r))", dev, spec)
    return dev


def synchronize(device: Device | None = None):
    """Wait until the queue of ``device`` (default: the default device) has drained."""
    (device or default_device()).synchronize()

