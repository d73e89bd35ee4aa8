"""The device layer: listing, choice by CLGRAD_DEVICE, build errors, the program cache."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import clgrad
import clgrad.runtime as device_mod
from clgrad.runtime import Device, DeviceError, get_device
from clgrad.ops._util import defines_for


def _default_row():
    d = clgrad.default_device()
    return next(r for r in clgrad.devices() if r["index"] == f"{d.platform_index}:{d.device_index}")


def test_devices_lists_every_device_with_its_probe_verdict():
    rows = clgrad.devices()
    assert rows, "no OpenCL device listed"
    for r in rows:
        assert set(r) >= {"index", "platform", "name", "type", "driver", "compute_units",
                          "global_mem_bytes", "fp64", "fp16", "usable", "reason"}
        assert r["compute_units"] >= 1 and r["global_mem_bytes"] > 0
        assert isinstance(r["usable"], bool) and r["reason"] and "\n" not in r["reason"]
    assert len({(r["platform"], r["name"], r["driver"]) for r in rows}) == len(rows)  # no dups
    d = clgrad.default_device()
    row = _default_row()
    assert row["usable"]
    if not any(r["type"] == "gpu" and r["usable"] for r in rows):
        assert d.kind == "cpu" and d.type == "cpu"
        if "CLGRAD_DEVICE" not in os.environ:
            assert d.index == 0
    clgrad.synchronize()


def _run_cli(*args, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "clgrad", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def test_python_m_clgrad_devices():
    row = _default_row()
    r = _run_cli("devices", env_extra={"CLGRAD_DEVICE": row["index"]})
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if f" {row['index']} " in ln)
    assert line.startswith("*") and row["name"] in line and row["type"] in line
    # a CPU device whose compiler fails at its native width is usable at 8, and says so
    state = "usable" if row["reason"] == "ok" else f"usable ({row['reason']})"
    assert "fp64=" in line and "CUs=" in line and line.endswith(state)
    bad = _run_cli("devices", env_extra={"CLGRAD_DEVICE": "no-such-device-xyz"})
    assert bad.returncode != 0
    assert "CLGRAD_DEVICE='no-such-device-xyz'" in bad.stderr and row["name"] in bad.stderr


@pytest.fixture
def fresh_default(monkeypatch):
    """Let default_device() choose again (and restore the session's choice afterwards)."""
    monkeypatch.setattr(device_mod.discovery, "_DEFAULT", [None])
    return monkeypatch


def test_clgrad_device_selection(fresh_default):
    row = _default_row()
    want = get_device(row["index"])
    word = row["name"].split()[-1].upper()  # a case-insensitive substring of the name
    specs = [row["index"], f"  {row['index']} "]
    if want.kind == "cpu" and want.index == 0:
        specs += ["cpu", "cpu:0"]
    if not any(r["name"].upper().count(word) and r["index"] != row["index"]
               for r in clgrad.devices()):
        specs.append(word)
    for spec in specs:
        fresh_default.setenv("CLGRAD_DEVICE", spec)
        device_mod.discovery._DEFAULT[0] = None
        assert clgrad.default_device() is want, spec
    assert get_device(row["index"]) is get_device(want)          # one Device per OpenCL device


@pytest.mark.parametrize("word", ["intel", "pocl", "portable"])
def test_platform_words_pick_that_runtime(word):
    rows = [r for r in clgrad.devices() if r["usable"]]
    want = {"intel": "intel(r) opencl", "pocl": "portable computing language",
            "portable": "portable computing language"}[word]
    match = [r for r in rows if r["platform"].lower() == want]
    if not match:
        pytest.skip(f"no usable {want!r} platform on this machine")
    dev = get_device(word)
    assert dev.platform.lower() == want and f"{dev.platform_index}:{dev.device_index}" == \
        match[0]["index"]


@pytest.mark.parametrize("spec", ["no-such-device-xyz", "9:9", "0:"])
def test_bad_device_spec_is_a_clear_error(fresh_default, spec):
    fresh_default.setenv("CLGRAD_DEVICE", spec)
    with pytest.raises(DeviceError) as info:
        clgrad.default_device()
    msg = str(info.value)
    assert f"CLGRAD_DEVICE={spec!r}" in msg and f"got {spec!r}" in msg
    assert "'cpu', 'gpu', 'cuda[:N]', 'P:D' or a platform or name substring" in msg
    assert all(r["name"] in msg for r in clgrad.devices())     # it lists what exists
    assert isinstance(info.value, RuntimeError)


def _with_cache(tmp_path, code, verdicts=None):
    """Run ``code`` in a fresh interpreter whose clgrad cache folder is ``tmp_path``, with
    ``verdicts`` ({device index: (usable, reason)}) written into its probe cache first."""
    env = dict(os.environ, CLGRAD_CACHE_DIR=str(tmp_path))
    env.pop("CLGRAD_DEVICE", None)
    if verdicts:
        keys = subprocess.run([sys.executable, "-c", (
            "import json, clgrad.runtime.discovery as r\n"
            "print(json.dumps({c.spec: c.key() for c in r._discover()}))")],
            capture_output=True, text=True, env=env, timeout=120, check=True)
        key_of = json.loads(keys.stdout)
        cache = json.loads((tmp_path / "probe.json").read_text())
        for spec, (usable, reason) in verdicts.items():
            cache[key_of[spec]] = {"usable": usable, "reason": reason}
        (tmp_path / "probe.json").write_text(json.dumps(cache))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600)


def test_probe_verdicts_are_cached_per_device_and_driver(tmp_path):
    r = _with_cache(tmp_path, "import clgrad; print(clgrad.default_device().name)")
    assert r.returncode == 0, r.stderr
    cache = json.loads((tmp_path / "probe.json").read_text())
    rows = clgrad.devices()
    programs = {k: v for k, v in cache.items() if " | programs " in k}  # the program check
    cache = {k: v for k, v in cache.items() if k not in programs}
    assert len(cache) == len(rows)
    assert len(programs) == 1  # only the device chosen was checked, with its verdict
    assert [v["usable"] for v in programs.values()] == [True]
    for key, verdict in cache.items():
        assert "probe v" in key and verdict["usable"] in (True, False)
        assert any(row["name"] in key and row["driver"] in key for row in rows)


def test_a_device_that_fails_its_probe_is_listed_and_never_chosen(tmp_path):
    """What a Zen 5 machine's PoCL 3.0 does (its clang rejects the CPU name): simulated by a
    failed verdict in the probe cache for the device that would be the default."""
    row = _default_row()
    reason = "DeviceError: error: unknown target CPU 'generic'"
    code = ("import clgrad, sys\n"
            "from clgrad import runtime\n"
            "rows = {r['index']: r for r in clgrad.devices()}\n"
            f"bad = rows[{row['index']!r}]\n"
            "print('usable', bad['usable'], bad['reason'])\n"
            "try:\n"
            "    d = clgrad.default_device(); print('default', d.platform_index, d.device_index)\n"
            "except runtime.DeviceError as e:\n"
            "    print('nodefault', e)\n"
            "try:\n"
            f"    runtime.get_device({row['index']!r})\n"
            "except runtime.DeviceError as e:\n"
            "    print('explicit', e)\n")
    r = _with_cache(tmp_path, code, {row["index"]: (False, reason)})
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"usable False {reason}" in out
    assert f"default {row['index'].replace(':', ' ')}" not in out
    others = [x for x in clgrad.devices() if x["usable"] and x["index"] != row["index"]]
    if others:
        assert "default " in out
    else:
        assert "nodefault no usable OpenCL device" in out and "unknown target CPU" in out
        assert "pip install" in out and "CLGRAD_DEVICE" in out
    assert "explicit device:" in out and "is not usable: " + reason in out
    cli = subprocess.run([sys.executable, "-m", "clgrad", "devices"], capture_output=True,
                         text=True, timeout=120,
                         env=dict(os.environ, CLGRAD_CACHE_DIR=str(tmp_path)))
    line = next(ln for ln in cli.stdout.splitlines() if f" {row['index']} " in ln)
    assert line.endswith(f"UNUSABLE: {reason}") and not line.startswith("*")


def test_the_icd_folder_lists_registered_and_pip_runtimes(tmp_path):
    """The vendors folder clgrad writes keeps every ICD a folder already registered (so a system
    GPU never disappears) and adds the pip-installed ones."""
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "fake-gpu.icd").write_text("/opt/fake/libfakegpu.so\n")
    code = ("import json, os, clgrad.runtime.discovery as r\n"
            "r._setup_icd_vendors()\n"
            "added = [v.split(' found at ')[1].split(',')[0] for v in r._VENDOR_STATE.values()\n"
            "         if ' found at ' in v]\n"
            "print(os.environ.get('OCL_ICD_VENDORS', ''))\n"
            "print(json.dumps(r._pip_icd_libraries() + added))\n")
    env = dict(os.environ, CLGRAD_CACHE_DIR=str(tmp_path / "cache"),
               OCL_ICD_VENDORS=str(vendors))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    folder, libs = r.stdout.splitlines()
    libs = json.loads(libs)  # pip runtimes and GPU vendors' libraries no ICD file names
    if not libs:       # nothing to add: the user's folder stays as it was
        assert folder == str(vendors)
        return
    entries = sorted(p.read_text().strip() for p in Path(folder).glob("*.icd"))
    assert "/opt/fake/libfakegpu.so" in entries
    for lib in libs:
        assert lib in entries and Path(lib).is_absolute()


def test_a_gpu_vendor_library_no_icd_file_names_is_added(tmp_path):
    """An NVIDIA container mounts libnvidia-opencl.so.1 without /etc/OpenCL/vendors/nvidia.icd:
    clgrad's vendors folder lists it (found through LD_LIBRARY_PATH here), keeps the registered
    ICDs, and says so per vendor; one that an ICD file names is left to that file."""
    libs = tmp_path / "driver"
    libs.mkdir()
    (libs / "libnvidia-opencl.so.1").write_bytes(b"\x7fELF not a real driver")
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "fake-gpu.icd").write_text("/opt/fake/libfakegpu.so\n")
    code = ("import json, os, clgrad.runtime.discovery as r\n"
            "r._setup_icd_vendors()\n"
            "print(json.dumps([os.environ.get('OCL_ICD_VENDORS', ''), r._VENDOR_STATE]))\n")
    env = dict(os.environ, CLGRAD_CACHE_DIR=str(tmp_path / "cache"), OCL_ICD_VENDORS=str(vendors),
               LD_LIBRARY_PATH=str(libs))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    folder, state = json.loads(r.stdout)
    assert folder != str(vendors)
    entries = sorted(p.read_text().strip() for p in Path(folder).glob("*.icd"))
    assert "/opt/fake/libfakegpu.so" in entries and str(libs / "libnvidia-opencl.so.1") in entries
    assert state["NVIDIA"] == (f"libnvidia-opencl.so.1: found at {libs}/libnvidia-opencl.so.1, "
                               f"which no ICD file registers; clgrad's vendors folder adds it")
    # registered by an ICD file (by name, as NVIDIA's own nvidia.icd): not added twice
    (vendors / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    folder, state = json.loads(r.stdout)
    assert state["NVIDIA"] == "libnvidia-opencl.so.1: registered by an ICD file"
    if folder != str(vendors):  # pip runtimes were added: the registered name stays as it was
        entries = [p.read_text().strip() for p in Path(folder).glob("*.icd")]
        assert "libnvidia-opencl.so.1" in entries
        assert str(libs / "libnvidia-opencl.so.1") not in entries


def test_division_and_sqrt_are_correctly_rounded_where_advertised():
    """On a device with CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT every build asks for it, so float32
    a / b and sqrt match NumPy's (correctly rounded) values bit for bit."""
    import pyopencl as cl
    dev = clgrad.default_device()
    flag = cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT
    advertised = bool(dev.cl_device.single_fp_config & flag)
    assert ("-cl-fp32-correctly-rounded-divide-sqrt" in dev.build_options) == advertised
    if advertised:
        rng = np.random.default_rng(3)
        a = rng.standard_normal(4099).astype(np.float32) * 1e3
        b = rng.standard_normal(4099).astype(np.float32)
        got = (clgrad.tensor(a) / clgrad.tensor(b)).numpy()
        np.testing.assert_array_equal(got, a / b)
        got = clgrad.tensor(np.abs(a)).sqrt().numpy()
        np.testing.assert_array_equal(got, np.sqrt(np.abs(a)))


def test_failing_build_reports_file_defines_device_and_log(tmp_path, monkeypatch):
    for h in device_mod.kernel_dir().glob("*.h"):  # (common.h includes half_builtins.h
        shutil.copy(h, tmp_path / h.name)            # where the float16 pragma is defined)
    (tmp_path / "broken.cl").write_text(
        '#include "common.h"\n'
        "__kernel void broken(__global T *out) {\n"
        "    out[0] = undeclared_thing_42 + FOO;\n"
        "}\n")
    monkeypatch.setattr(device_mod.device, "kernel_dir", lambda: tmp_path)
    dev = clgrad.default_device()
    with pytest.raises(DeviceError) as info:
        dev.program("broken.cl", {"T": "float", "FOO": 3})
    msg = str(info.value)
    assert "kernels/broken.cl" in msg
    assert "'T': 'float'" in msg and "'FOO': 3" in msg
    assert dev.name in msg
    assert "undeclared_thing_42" in msg                          # the compiler's log
    assert ("broken.cl", (("FOO", 3), ("T", "float"))) not in dev._programs


def test_programs_and_kernels_are_cached():
    dev = clgrad.default_device()
    d = defines_for(clgrad.float32)
    p1 = dev.program("elementwise.cl", dict(d))
    p2 = dev.program("elementwise.cl", dict(reversed(list(d.items()))))
    assert p1 is p2
    assert dev.kernel("elementwise.cl", "add", d) is dev.kernel("elementwise.cl", "add", dict(d))


def test_few_programs_for_many_shapes_and_layouts():
    """Shapes, strides and offsets are runtime arguments: no program per shape. A Device of
    its own (own context, empty cache) counts exactly what this workload builds."""
    d0 = clgrad.default_device()
    dev = Device(d0.cl_device, d0.platform_index, d0.device_index)

    def workload(n, step, offset):
        base = clgrad.arange(float(4 * n * n + 9), device=dev) / (4 * n * n + 9)
        x = base[offset::step][: n * n].reshape(n, n)
        y = (x.T * 2 + x).exp().sum(1).softmax(0)
        z = (x @ x.T).max(0).values + clgrad.cat([x[0], x[:, -1]])[:n]
        out = (y + z).numpy()
        assert out.shape == (n,) and np.isfinite(out).all()

    layouts = [(1, 0), (2, 7), (3, 1)]   # (step, offset)
    for n in [1, 3, 5, 17, 33, 70]:
        for step, offset in layouts:
            workload(n, step, offset)
    built = set(dev._programs)
    assert len(built) <= 16, sorted(built)  # dtype x file x variant, not one per shape
    for n in [2, 4, 6, 18, 34, 69]:         # new shapes in the same size classes and layouts
        for step, offset in layouts:
            workload(n, step, offset + 2)
    assert set(dev._programs) == built, set(dev._programs) - built


def test_ops_from_several_threads_get_their_own_results():
    """Kernel objects are shared: argument setting + enqueue hold the device's lock, so four
    threads switching as often as the interpreter allows never see each other's arguments."""
    import threading
    errors = []
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(1500):
            a = rng.standard_normal((3, 4)).astype(np.float32)
            b = rng.standard_normal((4, 2)).astype(np.float32)
            ta, tb = clgrad.tensor(a), clgrad.tensor(b)
            got_mm = (ta @ tb).numpy()
            got_add = (ta + float(seed)).numpy()
            if not (np.allclose(got_mm, a @ b, rtol=1e-5, atol=1e-5)
                    and np.array_equal(got_add, a + np.float32(seed))):
                errors.append(seed)

    try:
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        sys.setswitchinterval(old)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_first_tensors_made_by_several_threads_share_one_device(tmp_path):
    code = ("import sys, threading, clgrad\n"
            "sys.setswitchinterval(1e-6)\n"
            "go = threading.Barrier(6); out = []\n"
            "def work():\n"
            "    go.wait(); out.append(clgrad.ones(3))\n"
            "ts = [threading.Thread(target=work) for _ in range(6)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
            "s = out[0]\n"
            "for t in out[1:]: s = s + t\n"
            "print(len({id(t.device) for t in out}), s.sum().item())\n")
    env = dict(os.environ, CLGRAD_CACHE_DIR=os.environ.get("CLGRAD_CACHE_DIR", ""))
    env = {k: v for k, v in env.items() if v}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "18.0"]


def test_allocations_past_the_device_memory_raise_out_of_memory():
    d0 = clgrad.default_device()
    dev = Device(d0.cl_device, d0.platform_index, d0.device_index)
    dev.total_memory = 1 << 20                      # as if the device had 1 MiB
    keep = clgrad.zeros(100_000, device=dev)        # 400 000 bytes
    assert dev.allocated == 400_000
    with pytest.raises(device_mod.OutOfMemoryError) as info:
        clgrad.zeros(200_000, device=dev)           # 800 000 more: over 1 MiB
    msg = str(info.value)
    assert "out of memory" in msg and "800000 bytes" in msg and "400000 bytes" in msg
    assert str(1 << 20) in msg and isinstance(info.value, MemoryError)
    assert isinstance(info.value, RuntimeError)
    assert dev.allocated == 400_000                 # the failed allocation left no count
    np.testing.assert_array_equal(keep.numpy(), np.zeros(100_000, np.float32))
    del keep
    import gc
    gc.collect()
    assert dev.allocated == 0


def test_a_stale_pyopencl_cache_lock_is_removed(tmp_path):
    """A process killed while holding pyopencl's cache lock leaves the file behind; every later
    build would wait 60 s for it. A fresh process's first build removes a lock older than
    STALE_LOCK_S."""
    from clgrad._probe import STALE_LOCK_S, settle_cache_lock
    cache = tmp_path / "xdg"
    lock = _lock_in(cache)
    lock.write_text("")
    _age(lock, STALE_LOCK_S + 10)
    # CLGRAD_PROBE=0: the device's program check would build ~70 programs into the empty
    # cache first (tens of seconds); the lock is cleared before any probe either way
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), CLGRAD_CACHE_DIR=str(tmp_path / "c"),
               CLGRAD_PROBE="0")
    t0 = time.time()
    r = subprocess.run([sys.executable, "-c", "import clgrad; print((clgrad.ones(3) + 1).sum()"
                        ".item())"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "6.0" and not lock.exists()
    assert time.time() - t0 < 55            # no 60 s wait for the lock
    lock.write_text("")                     # a fresh lock (a build under way) is left alone
    settle_cache_lock(wait_s=0.0)           # this process's own cache folder: untouched
    r = subprocess.run([sys.executable, "-c", "from clgrad._probe import settle_cache_lock; "
                        "settle_cache_lock(wait_s=0.0)"], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0 and lock.exists()


def _lock_in(cache) -> Path:
    version = ".".join(str(i) for i in sys.version_info)
    lock = cache / "pyopencl" / f"pyopencl-compiler-cache-v2-py{version}" / "lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    return lock


def _age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_settle_cache_lock_removes_a_dead_lock_and_waits_out_a_live_one(tmp_path, monkeypatch):
    """pyopencl holds its cache lock for one read or write; settle_cache_lock (called before
    every build) removes a lock older than STALE_LOCK_S, waits while a young one is held, and
    removes one that goes stale while it waits."""
    import threading
    from clgrad._probe import STALE_LOCK_S, settle_cache_lock
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lock = _lock_in(tmp_path)
    assert settle_cache_lock() is False                 # no lock: returns at once
    lock.write_text("")
    _age(lock, STALE_LOCK_S + 5)                         # its holder died long ago
    assert settle_cache_lock() is True and not lock.exists()
    lock.write_text("")                                  # a live holder, done after 0.3 s
    threading.Timer(0.3, lock.unlink).start()
    t0 = time.monotonic()
    assert settle_cache_lock() is False
    assert 0.2 < time.monotonic() - t0 < 5 and not lock.exists()
    lock.write_text("")                                  # its holder dies while we wait
    _age(lock, STALE_LOCK_S - 0.5)
    t0 = time.monotonic()
    assert settle_cache_lock() is True and not lock.exists()
    assert 0.3 < time.monotonic() - t0 < 5
    lock.write_text("")                                  # discovery's check does not wait
    assert settle_cache_lock(wait_s=0.0) is False and lock.exists()


def test_settle_cache_lock_never_deletes_a_live_lock_made_meanwhile(tmp_path, monkeypatch):
    """Between settle_cache_lock's look at a dead lock and its removal, another process may
    remove that lock and a live holder make a new one: the new one (another inode, a fresh
    time) is put back, not deleted; a dead lock that another process renamed first is left
    to it; and under PYOPENCL_NO_CACHE nothing is touched."""
    from clgrad import _probe
    from clgrad._probe import STALE_LOCK_S, settle_cache_lock
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lock = _lock_in(tmp_path)
    lock.write_text("")
    _age(lock, STALE_LOCK_S + 5)
    real_rename = os.rename

    def swapped(src, dst):  # the dead lock goes, a live holder's comes, then our rename
        os.unlink(src)
        with open(src, "x"):
            pass
        real_rename(src, dst)
    monkeypatch.setattr(_probe.os, "rename", swapped)
    assert settle_cache_lock() is False
    assert lock.exists() and time.time() - lock.stat().st_mtime < STALE_LOCK_S
    assert sorted(p.name for p in lock.parent.iterdir()) == ["lock"]  # nothing left behind

    def lost(src, dst):  # another process renamed it first
        raise FileNotFoundError(src)
    monkeypatch.setattr(_probe.os, "rename", lost)
    _age(lock, STALE_LOCK_S + 5)
    assert settle_cache_lock() is False and lock.exists()
    monkeypatch.setattr(_probe.os, "rename", real_rename)
    monkeypatch.setenv("PYOPENCL_NO_CACHE", "1")
    assert settle_cache_lock() is False and lock.exists()
    monkeypatch.setenv("PYOPENCL_NO_CACHE", "0")  # (pyopencl's cache stays on)
    assert settle_cache_lock() is True and not lock.exists()


def test_a_lock_left_by_a_process_killed_mid_run_does_not_stall_later_builds(tmp_path):
    """CI, stop 52: an MPI job's aborted rank left pyopencl's lock behind seconds before the
    next job started; discovery's check (locks older than STALE_LOCK_S) spared it, and every
    build of the next job waited 60 s. Each build now checks again: a process whose device is
    already up builds new kernels without the wait once the lock is STALE_LOCK_S old."""
    cache = tmp_path / "xdg"
    lock = _lock_in(cache)
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), CLGRAD_CACHE_DIR=str(tmp_path / "c"),
               CLGRAD_PROBE="0")
    code = ("import os, time, clgrad\n"
            "from clgrad._probe import STALE_LOCK_S\n"
            "x = clgrad.ones(3)\n"                      # discovery has run: no lock then
            f"open({str(lock)!r}, 'w').close()\n"
            "t = time.time() - STALE_LOCK_S - 1\n"
            f"os.utime({str(lock)!r}, (t, t))\n"         # left by a killed process
            "t0 = time.monotonic()\n"
            "print(clgrad.softmax(x * 2, 0).sum().item(), clgrad.exp(x).sum().item())\n"
            "print('build s', time.monotonic() - t0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    total, exps = (float(v) for v in r.stdout.split()[:2])
    assert total == pytest.approx(1.0) and exps == pytest.approx(3 * np.e, rel=1e-6)
    assert float(r.stdout.split()[-1]) < 50, r.stdout     # no 60 s wait on any build
    assert "cache lock" not in r.stderr, r.stderr
    assert not lock.exists()


def test_first_use_by_several_threads_computing_at_once_does_not_crash():
    """(helper h2) N threads, released together by a barrier, each make their first tensor on
    the default device and compute with kernels not built yet (matmul, sum, softmax, exp,
    a host read): every result right, and no crash. Run in a child process, so that a
    SIGSEGV (NVIDIA's OpenCL, when device first use was not under one lock) fails this test
    instead of killing pytest."""
    code = ("import sys, threading, numpy as np, clgrad\n"
            "sys.setswitchinterval(1e-6)\n"
            "N = 8; go = threading.Barrier(N); out = [None] * N; errs = []\n"
            "def work(i):\n"
            "    try:\n"
            "        go.wait()\n"
            "        a = clgrad.full((16, 24), float(i + 1))\n"
            "        b = clgrad.ones(24, 8)\n"
            "        c = (a @ b).sum() + clgrad.softmax(b, 1).sum() + clgrad.exp(a * 0).sum()\n"
            "        out[i] = c.item()\n"
            "    except BaseException as e:\n"
            "        errs.append(repr(e))\n"
            "ts = [threading.Thread(target=work, args=(i,)) for i in range(N)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
            "print(errs or out)\n")
    env = {k: v for k, v in os.environ.items() if v}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=env, check=False)
    assert r.returncode == 0, f"child exited {r.returncode}: {r.stderr[-2000:]}"
    want = [(i + 1) * 24 * 16 * 8 + 24 + 16 * 24 for i in range(8)]
    assert r.stdout.strip() == str([float(w) for w in want]), r.stdout + r.stderr[-2000:]


def test_a_tensor_larger_than_one_buffer_raises_out_of_memory():
    """(helper h2) A tensor past CL_DEVICE_MAX_MEM_ALLOC_SIZE raises OutOfMemoryError (was a
    plain RuntimeError), catchable as PyTorch's torch.cuda.OutOfMemoryError / RuntimeError /
    MemoryError; the message has the bytes asked, in use, and both device limits."""
    dev = clgrad.default_device()
    assert clgrad.OutOfMemoryError is device_mod.OutOfMemoryError
    assert clgrad.cuda.OutOfMemoryError is device_mod.OutOfMemoryError
    assert issubclass(clgrad.cuda.OutOfMemoryError, RuntimeError)
    n = dev.cl_device.max_mem_alloc_size // 4 + 1
    before = dev.allocated
    try:
        clgrad.zeros(n)
    except clgrad.cuda.OutOfMemoryError as e:
        msg = str(e)
    else:
        pytest.fail("no OutOfMemoryError")
    assert f"tried to allocate {n * 4} bytes" in msg
    assert f"{dev.allocated} bytes" in msg and "in use" in msg
    assert str(dev.cl_device.max_mem_alloc_size) in msg and "CL_DEVICE_MAX_MEM_ALLOC_SIZE" in msg
    assert str(dev.cl_device.global_mem_size) in msg
    assert dev.allocated == before


def test_a_failed_allocation_leaves_the_inputs_intact():
    """(helper h2) An op whose output does not fit raises OutOfMemoryError and changes nothing:
    in place (add_ of a tensor computes into a fresh tensor first) or not. ``t += number``
    needs no memory (one launch into t): it still runs on the full device."""
    d0 = clgrad.default_device()
    dev = Device(d0.cl_device, d0.platform_index, d0.device_index)
    dev.total_memory = 1 << 20                            # as if the device had 1 MiB
    a = clgrad.arange(150_000, dtype=clgrad.float32, device=dev)  # 600 000 bytes
    a.requires_grad_(False)
    in_use = dev.allocated
    for op in (lambda: a.add_(a), lambda: a * 2, lambda: a.unsqueeze(0).expand(2, -1) + 1):
        with pytest.raises(clgrad.OutOfMemoryError, match="more than is free"):
            op()
        assert dev.allocated == in_use
    np.testing.assert_array_equal(a.numpy(), np.arange(150_000, dtype=np.float32))
    assert a._version == 0
    a.add_(1)
    assert dev.allocated == in_use and a._version == 1
    np.testing.assert_array_equal(a.numpy(), np.arange(150_000, dtype=np.float32) + 1)


@pytest.mark.parametrize("arch", ("", "core-avx2"))
def test_cpu_target_arch_keys_the_build(arch):
    """CL_CONFIG_CPU_TARGET_ARCH (Intel's runtime compiles for that instruction set) is in a
    CPU device's build options, which pyopencl's binary cache keys on: without it, a run
    without the variable loaded the binaries a core-avx2 run had cached."""
    code = ("import clgrad\n"
            "d = clgrad.default_device()\n"
            "print(d.kind, ' '.join(d.build_options))")
    env = dict(os.environ, CL_CONFIG_CPU_TARGET_ARCH=arch)
    if not arch:  # an empty value makes Intel's runtime refuse the device
        env.pop("CL_CONFIG_CPU_TARGET_ARCH")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    kind, *options = r.stdout.split()
    want = "-DCPU_TARGET_ARCH_core_avx2"
    assert (want in options) == (kind == "cpu" and arch == "core-avx2"), r.stdout
    assert not any(o.startswith("-DCPU_TARGET_ARCH_") for o in options if o != want)


class _FakeCandidate:
    """A discovered device as default_device() sees it (no OpenCL object behind it)."""

    def __init__(self, pi, kind, label, usable=True):
        self.pi, self.di, self.kind, self.label, self.usable = pi, 0, kind, label, usable
        self.spec, self.name, self.platform_name, self.reason = f"{pi}:0", label, label, "ok"


@pytest.fixture
def fake_found(fresh_default):
    """A GPU listed before two CPU runtimes (as NVIDIA's ICD often is); _device_for gives the
    candidate back instead of opening a device."""
    found = [_FakeCandidate(0, "gpu", "nvidia cuda"), _FakeCandidate(1, "cpu", "portable "
             "computing language"), _FakeCandidate(2, "cpu", "intel(r) opencl")]
    fresh_default.delenv("CLGRAD_DEVICE", raising=False)
    fresh_default.setattr(device_mod.discovery, "_discover", lambda: found)
    fresh_default.setattr(device_mod.discovery, "_device_for", lambda c: c)
    fresh_default.setattr(device_mod.discovery, "_PINNED", [None])
    return found


def test_default_device_is_the_cpu_on_a_gpu_machine(fake_found):
    """PyTorch's default is "cpu": the preferred CPU runtime (Intel's) even when a GPU exists;
    the training job's fastest_device takes the GPU; CLGRAD_DEVICE and set_default_device
    still win."""
    gpu, pocl, intel = fake_found
    assert device_mod.discovery._preference_order(fake_found) == [gpu, intel, pocl]
    assert device_mod.discovery._preference_order(fake_found, "cpu") == [intel, pocl, gpu]
    assert clgrad.default_device() is intel
    assert device_mod.fastest_device() is gpu and clgrad.default_device() is intel
    intel.usable = False
    device_mod.discovery._DEFAULT[0] = None
    assert clgrad.default_device() is pocl and device_mod.fastest_device() is gpu
    pocl.usable = False  # no CPU device works: today's fallback, the GPU
    device_mod.discovery._DEFAULT[0] = None
    assert clgrad.default_device() is gpu


def test_clgrad_device_env_and_set_default_device_win(fake_found, monkeypatch):
    gpu, pocl, intel = fake_found
    monkeypatch.setenv("CLGRAD_DEVICE", "1:0")
    assert clgrad.default_device() is pocl and device_mod.fastest_device() is pocl
    monkeypatch.delenv("CLGRAD_DEVICE")
    device_mod.discovery._DEFAULT[0] = None
    assert clgrad.set_default_device("cuda") is gpu and clgrad.default_device() is gpu
    assert clgrad.set_default_device(None) is intel and clgrad.default_device() is intel


# -- issue 32: a GPU device used before os.fork() refuses every use in the child ------------
def _in_fork(fn, timeout=120.0):
    """Run ``fn()`` in a forked child; return what it wrote (a line per result) to a pipe.
    A child still running after ``timeout`` seconds is killed and the test fails (a hang in a
    forked child is the defect these tests look for)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            out = fn()
        except BaseException as e:  # noqa: BLE001  (reported to the parent)
            out, code = f"unexpected {type(e).__name__}: {e}", 1
        os.write(w, out.encode())
        os._exit(code)
    os.close(w)
    end = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            pytest.fail(f"the forked child hung (killed after {timeout:.0f} s)")
        time.sleep(0.05)
    with os.fdopen(r) as f:   # the child's few lines fit in the pipe's buffer
        text = f.read()
    return text, status


def _tries(x):
    """Each entry point in the child: (what, callable)."""
    dev = x._storage.device
    return [("new tensor", lambda: clgrad.ones(3)), ("op", lambda: x + 1),
            ("read", lambda: x.numpy()), ("sync", dev.synchronize),
            ("new kernel", lambda: dev.kernel("elementwise.cl", "add", {"T": "float",
                                                                        "NEVER_BUILT": 7})),
            ("new device", lambda: Device(dev.cl_device, dev.platform_index,
                                          dev.device_index))]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_refuses_a_used_gpu_device(monkeypatch):
    dev_mod = sys.modules["clgrad.runtime.device"]
    x = clgrad.tensor([1.0, 2.0, 3.0])
    assert (x * 2).tolist() == [2.0, 4.0, 6.0]  # the device is used before the fork
    # the test switch: the CPU device counts as a GPU for the fork check (the kinds are read
    # in the child, at fork)
    monkeypatch.setattr(dev_mod, "FORK_POISONED_KINDS", {"gpu", "cpu"})

    def child():
        lines = []
        for what, call in _tries(x):
            try:
                call()
                lines.append(f"{what}: no error")
            except dev_mod.ForkedDeviceError as e:
                lines.append(f"{what}: {e}")
        return "\n".join(lines)
    text, status = _in_fork(child)
    assert status == 0, text
    lines = text.splitlines()
    assert [ln.split(":")[0] for ln in lines] == [w for w, _ in _tries(x)]
    for ln in lines:
        assert "cannot use the OpenCL GPU device in a forked process; use the spawn start " \
               "method" in ln, ln
    monkeypatch.setattr(dev_mod, "FORK_POISONED_KINDS", {"gpu"})
    # the parent's device is untouched; a CPU device keeps working in a forked child, except
    # PoCL's (its worker threads are not in the child: refused, never a hang)
    assert (x + 1).tolist() == [2.0, 3.0, 4.0]
    c = clgrad.tensor([1.0, 2.0, 3.0], device="cpu")
    cdev = c._storage.device
    if cdev.kind != "cpu":
        return  # no OpenCL CPU device besides the GPU ("cpu" names the GPU then)

    def child_cpu():
        try:
            return repr((c * 3 + clgrad.ones(3, device="cpu")).tolist())
        except dev_mod.ForkedDeviceError as e:
            return f"refused: {e}"
    text, status = _in_fork(child_cpu)
    if cdev.platform.startswith("Portable Computing Language"):
        assert status == 0 and cdev.name in text, text
        assert text.startswith("refused: cannot use the OpenCL CPU device of PoCL in a forked "
                               "process; use the spawn start method"), text
    else:
        assert status == 0 and text == "[4.0, 7.0, 10.0]", text
    assert issubclass(dev_mod.ForkedDeviceError, RuntimeError)  # PyTorch raises RuntimeError


def test_fork_refuses_gpus_and_pocl_devices():
    """Which devices a forked child refuses: every GPU, and PoCL's devices of any kind (its
    CPU device's worker threads are not in the child: the first launch there hung on the
    H200 machine's PoCL 5.0); Intel's CPU runtime keeps working."""
    poisoned = sys.modules["clgrad.runtime.device"]._fork_poisoned
    assert poisoned("gpu", "NVIDIA CUDA") and poisoned("gpu", "Intel(R) OpenCL Graphics")
    assert poisoned("cpu", "Portable Computing Language")
    assert not poisoned("cpu", "Intel(R) OpenCL")
    forked = sys.modules["clgrad.runtime.device"]._Forked
    with pytest.raises(RuntimeError, match=r"^cannot use the OpenCL CPU device of PoCL in a "
                       r"forked process; use the spawn start method \(device 'cpu-x'"):
        forked("cpu-x", "cpu").queue
    with pytest.raises(RuntimeError, match=r"^cannot use the OpenCL GPU device in a forked "
                       r"process; use the spawn start method \(device 'H200'"):
        forked("H200", "gpu").finish()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_refuses_before_querying_the_driver(monkeypatch):
    """NVIDIA's driver answers every query of the parent's device in a forked child with
    INVALID_DEVICE (a pyopencl LogicError): a new Device for it, discovery and the device
    listing must raise ForkedDeviceError first (or turn the driver's refusal into one)."""
    import pyopencl as cl
    dev_mod = sys.modules["clgrad.runtime.device"]
    disc = sys.modules["clgrad.runtime.discovery"]
    x = clgrad.tensor([1.0, 2.0])
    assert (x * 2).tolist() == [2.0, 4.0]
    dev = x._storage.device
    monkeypatch.setattr(dev_mod, "FORK_POISONED_KINDS", {"gpu", "cpu"})  # the test switch
    poisoned = dev.cl_device.int_ptr

    def refuse_queries():
        """The driver's refusal, faked in the child: every query (get_info and the info
        properties) of the parent's device and of every platform raises pyopencl's
        LogicError; the handle (int_ptr) is no query."""
        def refusing(cls, call, name, device_only):
            def query(self, *args):
                if not device_only or self.int_ptr == poisoned:
                    raise cl.LogicError(f"clGet{cls.__name__}Info failed: INVALID_DEVICE")
                return call(self, *args)
            query.__name__ = name
            return query
        for cls, device_only in ((cl.Device, True), (cl.Platform, False)):
            for name, attr in list(vars(cls).items()):
                if name == "get_info":
                    setattr(cls, name, refusing(cls, attr, name, device_only))
                elif isinstance(attr, property) and name != "int_ptr":
                    setattr(cls, name, property(refusing(cls, attr.fget, name, device_only)))

    def child():
        refuse_queries()
        with pytest.raises(cl.LogicError):  # the fake works: a direct query is refused
            dev.cl_device.name
        tries = [("new device", lambda: Device(dev.cl_device, dev.platform_index,
                                                dev.device_index)),
                 ("listing", clgrad.runtime.devices)]
        found = disc._FOUND[0]
        lines = []
        for what, call in tries + [("discovery", disc._discover),
                                   ("get_device", lambda: get_device(
                                       f"{dev.platform_index}:{dev.device_index}")),
                                  ("another handle", lambda: Device(dev.cl_device, 0, 0))]:
            if what == "another handle":  # a device the parent did not use: the driver's
                vars(dev_mod).get("_FORKED_PTRS", {}).clear()  # refusal turns into the error
            if what == "discovery":  # a child whose parent never listed: discovery afresh
                disc._FOUND[0] = None
                disc._DEVICES.clear()
            try:
                call()
                lines.append(f"{what}: no error")
            except dev_mod.ForkedDeviceError as e:
                lines.append(f"{what}: ForkedDeviceError {e}")
            except Exception as e:  # noqa: BLE001  (reported to the parent)
                lines.append(f"{what}: {type(e).__name__} {e}")
        disc._FOUND[0] = found
        return "\n".join(lines)
    text, status = _in_fork(child)
    assert status == 0, text
    lines = text.splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["new device", "listing", "discovery",
                                                  "get_device", "another handle"], text
    for ln in lines:
        assert "ForkedDeviceError cannot use the OpenCL GPU device in a forked process; use " \
               "the spawn start method" in ln, text
    assert f"device {dev.name!r} was used before os.fork()" in lines[0], text
    assert "clGetDeviceInfo failed: INVALID_DEVICE" in lines[4], text
    assert (x + 1).tolist() == [2.0, 3.0]  # the parent is untouched


# -- the eager enqueue: pyopencl's, or ctypes' clEnqueueNDRangeKernel with a NULL event -------
def _train_steps(steps=3):
    """Losses and parameters after ``steps`` SGD steps (momentum) of a small conv net in
    float32: conv2d, batch_norm, relu, pooling, linear, cross_entropy, their backward."""
    import clgrad.nn as nn
    clgrad.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    opt = clgrad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    rng = np.random.default_rng(0)
    x = clgrad.tensor(rng.standard_normal((4, 3, 8, 8)).astype(np.float32))
    y = clgrad.tensor(rng.integers(0, 5, 4))
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = clgrad.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in m.parameters()]


def _native_or_skip():
    from clgrad.runtime import native
    if native.enqueue_fn() is None:
        pytest.skip("no OpenCL ICD loader found for ctypes")


def test_ctypes_enqueue_gives_pyopencls_bits_and_launch_counts(monkeypatch):
    """CLGRAD_ENQUEUE=ctypes (NULL-event clEnqueueNDRangeKernel): a few training steps give
    the bits and the launch count of pyopencl's enqueue, and a + b and a matmul NumPy's
    values; the device takes the setting at the next launch after it changes, both ways."""
    _native_or_skip()
    dev = clgrad.default_device()
    runs = {}
    for way in ("pyopencl", "ctypes", "pyopencl"):
        monkeypatch.setenv("CLGRAD_ENQUEUE", way)
        before = device_mod.launch_count()
        losses, params = _train_steps()
        runs.setdefault(way, []).append((losses, params, device_mod.launch_count() - before))
        assert (dev._native is not None) == (way == "ctypes")
        rng = np.random.default_rng(1)
        an, bn = rng.standard_normal((5, 7)), rng.standard_normal((7, 3))
        a, b = clgrad.tensor(an), clgrad.tensor(bn)
        np.testing.assert_allclose((a @ b).numpy(), an @ bn, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal((a + a).numpy(), an + an)
    (ref, *_), (got,) = runs["pyopencl"], runs["ctypes"]
    assert got[0] == ref[0] and got[2] == ref[2] > 0
    for p, q in zip(got[1], ref[1]):
        np.testing.assert_array_equal(p, q)
    assert all(np.isfinite(ref[0])) and ref[0][-1] < ref[0][0]


def test_a_failed_ctypes_enqueue_raises_pyopencls_error(monkeypatch):
    """An enqueue the runtime refuses (a work-group larger than the device allows) raises
    pyopencl's exception through either way, and counts no launch."""
    _native_or_skip()
    from clgrad.ops import _util
    dev = clgrad.default_device()
    out = clgrad.zeros(4)
    k = dev.kernel("elementwise.cl", "fill", defines_for(clgrad.float32))
    big = (dev.max_work_group_size * 2,)
    errors = []
    for way in ("pyopencl", "ctypes"):
        monkeypatch.setenv("CLGRAD_ENQUEUE", way)
        before = device_mod.launch_count()
        with pytest.raises(Exception) as e:
            dev.launch(k, big, big, np.int64(4), np.int32(1), _util.shape_arg((4,)),
                       out._storage.buffer, _util.view_arg(out), np.float32(3.0))
        assert device_mod.launch_count() == before
        errors.append((type(e.value), str(e.value)))
    assert errors[0] == errors[1] and "clEnqueueNDRangeKernel" in errors[0][1]
    np.testing.assert_array_equal(out.numpy(), np.zeros(4, np.float32))


def test_enqueue_setting_rejects_other_values(monkeypatch):
    monkeypatch.setenv("CLGRAD_ENQUEUE", "cuda")
    with pytest.raises(ValueError, match=r"CLGRAD_ENQUEUE: expected one of \('auto', "
                                         r"'pyopencl', 'ctypes'\), got 'cuda'"):
        clgrad.ones(3) + 1


def test_enqueue_auto_is_ctypes_on_gpus_only(monkeypatch):
    """CLGRAD_ENQUEUE=auto (the default): the NULL-event enqueue on GPU devices (measured
    faster on the H200), pyopencl's on CPU devices (faster on Intel's CPU runtime)."""
    _native_or_skip()
    dev = clgrad.default_device()
    monkeypatch.setenv("CLGRAD_ENQUEUE", "auto")
    (clgrad.ones(3) + 1).numpy()
    assert (dev._native is not None) == (dev.kind == "gpu")
    monkeypatch.setattr(dev, "kind", "gpu" if dev.kind == "cpu" else "cpu")
    monkeypatch.setenv("CLGRAD_ENQUEUE", "pyopencl")  # new settings epochs: read again
    monkeypatch.setenv("CLGRAD_ENQUEUE", "auto")
    np.testing.assert_array_equal((clgrad.ones(3) + 1).numpy(), np.full(3, 2, np.float32))
    assert (dev._native is not None) == (dev.kind == "gpu")


def test_a_recording_that_starts_between_hook_reads_breaks_no_launch(monkeypatch):
    """Another thread's plan.record_launches installs its hook on the device while this
    thread is between a Plan's call and the enqueue: the launch must still get every argument
    (a Plan used to read the hook itself, then Device.launch_split read it again and, finding
    the recorder, rebuilt the arguments without the plan's fixed ones: IndexError). Simulated
    deterministically: the device's hook is None at every read but launch_split's, which finds
    another thread's recorder; then the same with threads for real, contiguous() recording new
    layouts."""
    import threading
    from clgrad.ops import plan as plan_mod
    from clgrad.runtime import device as devmod
    a = clgrad.tensor(np.arange(64, dtype=np.float32))
    (a * a + a).numpy()  # plans made
    dev = a._storage.device
    foreign = plan_mod._Recorder()
    foreign.thread = -1  # another thread's recording
    reads = []

    class Flaky(type(dev)):
        @property
        def _capture(self):  # the recorder appears for launch_split's read only
            caller = sys._getframe(1).f_code.co_name
            reads.append(caller)
            return foreign if caller == "launch_split" else None

        @_capture.setter
        def _capture(self, v):
            pass

    monkeypatch.setattr(dev, "__class__", Flaky)
    try:
        out = (a * a).numpy()
    finally:
        monkeypatch.undo()
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.float32) ** 2)
    assert "launch_split" in reads  # launch_split found the recorder: all arguments given
    assert type(dev) is devmod.Device

    x = clgrad.tensor(np.arange(20000, dtype=np.float32))
    errors, stop = [], [False]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def recorder():
        try:
            for i in range(400):  # a new storage offset each call: contiguous() records
                got = x[i:i + 12].view(3, 4).t().contiguous().numpy()
                if not np.array_equal(got, np.arange(i, i + 12, dtype=np.float32)
                                      .reshape(3, 4).T):
                    errors.append(("copy", i))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
        stop[0] = True

    def worker():
        b = clgrad.ones(64)
        try:
            while not stop[0]:
                if not np.array_equal((b * b + b).numpy(), np.full(64, 2, np.float32)):
                    errors.append("add")
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    try:
        threads = [threading.Thread(target=recorder)] + [threading.Thread(target=worker)
                                                         for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
    finally:
        sys.setswitchinterval(old)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_devices_of_one_kind_check_only_that_kind(monkeypatch):
    """``torch.cuda.is_available()`` (devices('gpu')) never runs the CPU runtimes' program
    check: on a GPU machine PoCL's took minutes, and GradScaler('cuda') asks it too."""
    from clgrad.runtime import discovery
    checked = []
    real = discovery._check_programs
    monkeypatch.setattr(discovery, "_check_programs", lambda c: checked.append(c.kind) or real(c))
    gpus = clgrad.runtime.devices("gpu")
    assert all(r["type"] == "gpu" for r in gpus) and set(checked) <= {"gpu"}
    assert clgrad.cuda.device_count() == len(gpus)
    assert clgrad.cuda.is_available() == bool(gpus) and set(checked) <= {"gpu"}
    cpus = clgrad.runtime.devices("cpu")
    assert all(r["type"] == "cpu" for r in cpus)
    assert sorted(r["index"] for r in cpus + gpus) == sorted(
        r["index"] for r in clgrad.devices() if r["type"] in ("cpu", "gpu"))
    with pytest.raises(ValueError, match="expected kind None, 'cpu' or 'gpu', got 'tpu'"):
        clgrad.runtime.devices("tpu")
