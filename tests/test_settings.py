"""clgrad.settings: every CLGRAD_* variable read in one place, the JSON cache layer, and
clgrad.backends.flags (set backend settings for a block, restored on exit)."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad
from clgrad import backends, settings

ROOT = Path(__file__).resolve().parents[1]


def test_every_clgrad_variable_the_code_reads_is_a_setting_and_documented():
    used = set()
    for path in (ROOT / "clgrad").rglob("*.py"):
        used |= set(re.findall(r"CLGRAD_[A-Z0-9_]+", path.read_text()))
    used -= {"CLGRAD_HAS_FP64"}  # a kernel define (-D), not an environment variable
    assert used <= set(settings.SETTINGS), sorted(used - set(settings.SETTINGS))
    readme = (ROOT / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in settings.SETTINGS)
    with pytest.raises(KeyError):
        settings.getenv("CLGRAD_NO_SUCH_THING")


def test_getenv_reads_at_call_time_with_defaults(monkeypatch):
    monkeypatch.delenv("CLGRAD_CONV_TUNE", raising=False)
    assert settings.getenv("CLGRAD_CONV_TUNE") == "auto"
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "off")
    assert settings.getenv("CLGRAD_CONV_TUNE") == "off"
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "")
    assert settings.getenv("CLGRAD_CONV_TUNE") == "auto"


def test_json_cache_round_trip_and_garbage(tmp_path, monkeypatch):
    monkeypatch.setenv("CLGRAD_CACHE_DIR", str(tmp_path))
    assert settings.cache_dir() == tmp_path
    assert settings.read_json("x.json") == {}
    assert settings.write_json("x.json", {"a": [1, 2]})
    assert settings.read_json("x.json") == {"a": [1, 2]}
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))
    (tmp_path / "y.json").write_text("[1, 2")
    assert settings.read_json(tmp_path / "y.json") == {}
    (tmp_path / "z.json").write_text("[1, 2]")
    assert settings.read_json("z.json") == {}


def test_device_key_names_platform_device_and_driver():
    dev = clgrad.default_device()
    key = settings.device_key(dev)
    parts = key.split(" | ")
    assert parts[1] == dev.name and parts[0] == dev.cl_device.platform.name.strip()
    assert parts[2] == dev.cl_device.driver_version.strip()


def test_flags_sets_and_restores_even_on_error():
    before = backends.conv_algorithm, backends.conv_workspace_limit
    with backends.flags(conv_algorithm="direct", conv_workspace_limit=1 << 20):
        assert backends.conv_algorithm == "direct"
        x = clgrad.tensor(np.arange(16.0, dtype=np.float32).reshape(1, 1, 4, 4))
        w = clgrad.ones(1, 1, 3, 3)
        y = clgrad.nn.functional.conv2d(x, w)
        assert backends.last_conv_algorithm == "direct"
        np.testing.assert_allclose(y.numpy()[0, 0], [[45, 54], [81, 90]])
    assert (backends.conv_algorithm, backends.conv_workspace_limit) == before
    with pytest.raises(RuntimeError):
        with backends.flags(conv_algorithm="im2col"):
            raise RuntimeError("boom")
    assert backends.conv_algorithm == before[0]
    with pytest.raises(AttributeError, match="no setting"):
        with backends.flags(conv_algo="direct"):
            pass


def test_device_traits_are_properties():
    dev = clgrad.default_device()
    assert dev.vector_width == dev.cl_device.native_vector_width_float >= 1
    assert dev.compute_units == dev.cl_device.max_compute_units >= 1
    assert isinstance(dev.fp64, bool) and isinstance(dev.fp16, bool)
    assert dev.local_mem_size == dev.cl_device.local_mem_size


def test_clgrad_conv_algo_sets_the_default_at_import():
    r = subprocess.run([sys.executable, "-c", "import clgrad; print(clgrad.backends."
                        "conv_algorithm)"], capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "CLGRAD_CONV_ALGO": "direct"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "direct"
