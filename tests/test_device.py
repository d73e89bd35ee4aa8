"""The device layer: listing, choice by CLGRAD_DEVICE, build errors, the program cache."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import clgrad
import clgrad.runtime as device_mod
from clgrad.runtime import Device, DeviceError, get_device
from clgrad.ops._util import defines_for


def _pocl_rows():
    return [r for r in clgrad.devices() if r["type"] == "cpu" and
            "portable computing language" in r["platform"].lower()]


def test_devices_lists_the_pocl_cpu_device():
    rows = clgrad.devices()
    assert rows, "no OpenCL device listed"
    for r in rows:
        assert set(r) >= {"index", "platform", "name", "type", "compute_units",
                          "global_mem_bytes", "fp64", "fp16"}
        assert r["compute_units"] >= 1 and r["global_mem_bytes"] > 0
    pocl = _pocl_rows()
    assert pocl, f"no PoCL CPU device among {rows}"
    d = clgrad.default_device()
    if not any(r["type"] == "gpu" for r in rows):
        assert d.kind == "cpu"
    assert f"{d.platform_index}:{d.device_index}" in {r["index"] for r in rows}
    clgrad.synchronize()


def _run_cli(*args, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "clgrad", *args], capture_output=True,
                          text=True, env=env, timeout=120)


def test_python_m_clgrad_devices():
    r = _run_cli("devices", env_extra={"CLGRAD_DEVICE": "cpu"})
    assert r.returncode == 0, r.stderr
    row = _pocl_rows()[0]
    line = next(ln for ln in r.stdout.splitlines() if row["name"] in ln)
    assert line.startswith("*") and row["index"] in line and "cpu" in line
    assert "fp64=" in line and "CUs=" in line
    bad = _run_cli("devices", env_extra={"CLGRAD_DEVICE": "no-such-device-xyz"})
    assert bad.returncode != 0
    assert "CLGRAD_DEVICE='no-such-device-xyz'" in bad.stderr and row["name"] in bad.stderr


@pytest.fixture
def fresh_default(monkeypatch):
    """Let default_device() choose again (and restore the session's choice afterwards)."""
    monkeypatch.setattr(device_mod, "_DEFAULT", [None])
    return monkeypatch


def test_clgrad_device_selection(fresh_default):
    row = _pocl_rows()[0]
    want = get_device(row["index"])
    word = row["name"].split()[0].upper()  # a case-insensitive substring of the name
    for spec in ("cpu", row["index"], word, f"  {row['index']} "):
        fresh_default.setenv("CLGRAD_DEVICE", spec)
        device_mod._DEFAULT[0] = None
        assert clgrad.default_device() is want, spec
    assert get_device(row["index"]) is get_device("cpu")       # one Device per OpenCL device


@pytest.mark.parametrize("spec", ["no-such-device-xyz", "9:9", "0:"])
def test_bad_device_spec_is_a_clear_error(fresh_default, spec):
    fresh_default.setenv("CLGRAD_DEVICE", spec)
    with pytest.raises(DeviceError) as info:
        clgrad.default_device()
    msg = str(info.value)
    assert f"CLGRAD_DEVICE={spec!r}" in msg and f"got {spec!r}" in msg
    assert "'cpu', 'gpu', 'P:D' or a name substring" in msg
    assert _pocl_rows()[0]["name"] in msg                      # it lists what exists
    assert isinstance(info.value, RuntimeError)


def test_failing_build_reports_file_defines_device_and_log(tmp_path, monkeypatch):
    shutil.copy(device_mod.kernel_dir() / "common.h", tmp_path / "common.h")
    (tmp_path / "broken.cl").write_text(
        '#include "common.h"\n'
        "__kernel void broken(__global T *out) {\n"
        "    out[0] = undeclared_thing_42 + FOO;\n"
        "}\n")
    monkeypatch.setattr(device_mod, "kernel_dir", lambda: tmp_path)
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
