"""clgrad's settings and caches in one place (tinygrad's helpers.getenv is the model).

Every ``CLGRAD_*`` environment variable is read here, through ``getenv``; README "Settings" has
the same table. Unknown names raise KeyError, so a typo in clgrad's code is found at once.
A value is parsed once and kept until a setting changes (never frozen at import: a test or a
program may set it later): ``epoch()`` is a change counter, bumped by ``changed()``, which
every setter calls (``os.environ[...] = ...`` / ``del`` / ``monkeypatch.setenv`` of a watched
name, the same through ``os.environb``, assignments to ``clgrad.backends``' settings,
``backends.flags``). Launch plans
(clgrad/ops/plan.py) put the epoch in their keys, so a changed setting gives a new plan and a
call on a cached plan reads nothing from the environment.

    variable            default   effect
    CLGRAD_DEVICE       (none)    the default device: cpu, gpu, cuda[:N], P:D or a name substring
    CLGRAD_CACHE_DIR    (none)    clgrad's cache folder (else $XDG_CACHE_HOME/clgrad,
                                  ~/.cache/clgrad, <tmp>/clgrad-<uid>)
    CLGRAD_PROBE        1         0: trust every device without probing it first
    CLGRAD_GEMM_TILES   (none)    a JSON file of tuned GEMM tiles, or 'off' for the defaults
    CLGRAD_CONV_ALGO    auto      the conv2d algorithm (clgrad.backends.conv_algorithm)
    CLGRAD_CONV_TUNE    auto      measure conv algorithms on GPUs: auto, on (any device), off
    CLGRAD_CONV_DEBUG   (none)    1: print every conv2d algorithm choice to stderr
    CLGRAD_CONV_GTILE   (none)    benchmarking: TS,WPT,TK of kernels/conv_gemm_gpu.cl
    CLGRAD_CONV_DWG     (none)    benchmarking: K=V,... defines of kernels/conv_dw_gpu.cl
    CLGRAD_CONV_IGEMM   (none)    benchmarking: pass:K=V,...;... tiles of conv_igemm_gpu.cl
    CLGRAD_DEBUG        (none)    1: the "clgrad" logger's DEBUG lines (devices, probes, builds,
                                  conv choices) on stderr; 0/false/no/off: none
    CLGRAD_REPLAY       auto      how captured graphs enqueue: auto, pyopencl, ctypes,
                                  command_buffer (clgrad/capture/)
    CLGRAD_COMMAND_BUFFER 1       0: never use cl_khr_command_buffer
    CLGRAD_ENQUEUE      auto      how eager launches enqueue: pyopencl (an Event per launch),
                                  ctypes (clEnqueueNDRangeKernel with a NULL event), auto
                                  (ctypes on GPUs, pyopencl on CPUs: measured faster there)
    CLGRAD_FP16         probe     float16 on devices that list cl_khr_fp16 and on GPUs whose
                                  compiler the device probe found running half arithmetic
                                  and the half built-ins (kernels/half_builtins.h) right
                                  without listing it (NVIDIA's OpenCL); listed: only where
                                  it is listed
    CLGRAD_MMA          auto      tensor cores on NVIDIA (kernels/matmul_mma_nv.cl and, for
                                  aligned float16 operands, matmul_mma_async_nv.cl: float16
                                  GEMMs, and float32 ones with TF32 allowed) where the device
                                  passes clgrad/ops/matmul.py's checks; off: the FMA kernels
    CLGRAD_CPU_VECTOR_WIDTH (none) benchmarking/testing: 8 or 16, the CPU kernels' vector width
                                  (8: the AVX2 variants on an AVX-512 CPU)

The caches (the device probe's verdicts, tuned GEMM tiles, measured conv choices) are JSON
files in ``cache_dir()``, read with ``read_json`` and written atomically with ``write_json``;
the tuned ones are keyed by ``device_key`` (platform, device and driver).
"""
from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path

__all__ = ["getenv", "SETTINGS", "cache_dir", "read_json", "write_json", "device_key",
           "epoch", "changed"]

SETTINGS = {  # name: default (see the table above)
    "CLGRAD_DEVICE": "", "CLGRAD_CACHE_DIR": "", "CLGRAD_PROBE": "1", "CLGRAD_GEMM_TILES": "",
    "CLGRAD_CONV_ALGO": "auto", "CLGRAD_CONV_TUNE": "auto", "CLGRAD_CONV_DEBUG": "",
    "CLGRAD_CONV_GTILE": "", "CLGRAD_CONV_DWG": "", "CLGRAD_CONV_IGEMM": "",
    "CLGRAD_DEBUG": "", "CLGRAD_REPLAY": "auto", "CLGRAD_COMMAND_BUFFER": "1",
    "CLGRAD_ENQUEUE": "auto", "CLGRAD_FP16": "probe", "CLGRAD_MMA": "auto",
    "CLGRAD_CPU_VECTOR_WIDTH": "",
}


# Variables outside SETTINGS that change what kernels are built (device_key, conv choices).
WATCHED = frozenset(SETTINGS) | {"CL_CONFIG_CPU_TARGET_ARCH"}
_EPOCH = [0]
# getenv's answers since the last changed(): a dict that changed() replaces (never clears), so
# that a reader that read the environment before a change can only store its stale value into
# the dict of the epoch it began in, which no later getenv reads
_VALUES: list = [{}]
_CHANGE_LOCK = threading.Lock()  # changes from several threads each count


def epoch() -> int:
    """The settings' change counter: a cached plan keyed by it is never used after a change."""
    return _EPOCH[0]


def changed():
    """Count a change of a setting (bump ``epoch()``) and forget the parsed values. Every
    setter calls it; environment writes of the WATCHED names call it through os.environ.
    Thread-safe: two changes count two, and a getenv racing with it keeps no stale value."""
    with _CHANGE_LOCK:
        _VALUES[0] = {}
        _EPOCH[0] += 1


def getenv(name: str) -> str:
    """The value of the clgrad environment variable ``name`` (its default when unset or empty),
    read once per ``epoch()``.

    Raises KeyError for a name not in SETTINGS."""
    values = _VALUES[0]
    got = values.get(name)
    if got is None:
        got = values[name] = os.environ.get(name) or SETTINGS[name]
    return got


_WATCHED_BYTES = frozenset(os.fsencode(n) for n in WATCHED)  # os.environb's keys


class _WatchedEnviron(type(os.environ)):
    """os.environ's own class with writes of the WATCHED names counted as setting changes
    (``changed()``): os.environ keeps its data, methods and identity. os.environb (the same
    data, bytes keys) gets it too: a write there changes what os.environ reads."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if key in WATCHED or key in _WATCHED_BYTES:
            changed()

    def __delitem__(self, key):
        super().__delitem__(key)
        if key in WATCHED or key in _WATCHED_BYTES:
            changed()


for _env in (os.environ, getattr(os, "environb", None)):
    if _env is not None and not isinstance(_env, _WatchedEnviron):
        _env.__class__ = _WatchedEnviron
del _env


def cache_dir() -> Path:
    """clgrad's cache folder (created): ``CLGRAD_CACHE_DIR``, ``$XDG_CACHE_HOME/clgrad``,
    ``~/.cache/clgrad``, or ``<tmp>/clgrad-<uid>`` when none of those is writable.

    Raises:  DeviceError when none of them is a writable folder."""
    env = getenv("CLGRAD_CACHE_DIR")
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
    from clgrad.errors import DeviceError
    raise DeviceError(f"cache: none of {[str(c) for c in cands]} is a writable folder; set "
                      f"CLGRAD_CACHE_DIR")


def read_json(path) -> dict:
    """The dict stored in the JSON file ``path`` (a name in ``cache_dir()``, or a Path); {} when
    the file is missing, unreadable or not a JSON object."""
    path = path if isinstance(path, Path) else cache_dir() / path
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path, data: dict, sort_keys: bool = False) -> bool:
    """Write ``data`` to the JSON file ``path`` (as read_json) atomically: a temporary file in
    the same folder, then a rename, so a concurrent reader sees the old or the new file, never
    half of one. Returns False (and writes nothing) when the folder is not writable."""
    path = path if isinstance(path, Path) else cache_dir() / path
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=1, sort_keys=sort_keys))
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def device_key(dev) -> str:
    """'platform | device | driver version': the key of a device's tuned entries (with
    ' | vector width N' where CLGRAD_CPU_VECTOR_WIDTH or CL_CONFIG_CPU_TARGET_ARCH change the
    kernels a CPU builds)."""
    d = dev.cl_device
    key = f"{d.platform.name.strip()} | {dev.name} | {d.driver_version.strip()}"
    arch = os.environ.get("CL_CONFIG_CPU_TARGET_ARCH", "")
    if dev.kind == "cpu" and (getenv("CLGRAD_CPU_VECTOR_WIDTH") or arch):
        key += f" | vector width {dev.vector_width}" + (f" {arch}" if arch else "")
    return key
