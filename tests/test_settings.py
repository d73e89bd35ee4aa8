"""clgrad.settings: every CLGRAD_* variable read in one place, the JSON cache layer, and
clgrad.backends.flags (set backend settings for a block, restored on exit)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad
from clgrad import backends, settings
from subproc import checkout_env

ROOT = Path(__file__).resolve().parents[1]


def test_every_clgrad_variable_the_code_reads_is_a_setting_and_documented():
    used = set()
    for path in (ROOT / "clgrad").rglob("*.py"):
        used |= set(re.findall(r"CLGRAD_[A-Z0-9_]+", path.read_text()))
    used -= {"CLGRAD_HAS_FP64", "CLGRAD_FP16_PRAGMA"}  # kernel defines (-D), not variables
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
    native = dev.cl_device.native_vector_width_float
    # the program check caps a CPU device at 8 where its compiler fails at 16 (PoCL 5.0 on a
    # Xeon with AVX-512, the H100 machine's CPU device)
    assert dev.vector_width == min(native, dev.max_vector_width or native) >= 1
    assert dev.compute_units == dev.cl_device.max_compute_units >= 1
    assert isinstance(dev.fp64, bool) and isinstance(dev.fp16, bool)
    assert dev.local_mem_size == dev.cl_device.local_mem_size


def test_clgrad_conv_algo_sets_the_default_at_import():
    r = subprocess.run([sys.executable, "-c", "import clgrad; print(clgrad.backends."
                        "conv_algorithm)"], capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "CLGRAD_CONV_ALGO": "direct"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "direct"


_NARROW = r"""
import numpy as np, clgrad
import clgrad.nn.functional as F
dev = clgrad.default_device()
assert dev.vector_width == 8, dev.vector_width
assert "vector width 8" in clgrad.settings.device_key(dev)
rng = np.random.default_rng(0)
worst = 0.0
# dense 3x3 (blocked / implicit), 1x1 (pointwise), depthwise 3x3 and 5x5 stride 2, grouped
for n, c, o, h, k, s, g in [(2, 16, 40, 12, 3, 1, 1), (2, 24, 24, 9, 1, 1, 1),
                            (2, 32, 32, 10, 3, 1, 32), (2, 24, 24, 11, 5, 2, 24),
                            (2, 16, 32, 8, 3, 1, 4), (8, 64, 64, 16, 3, 1, 1)]:
    x = rng.standard_normal((n, c, h, h))
    w = rng.standard_normal((o, c // g, k, k))
    oh = (h + 2 * (k // 2) - k) // s + 1
    gy = rng.standard_normal((n, o, oh, oh))
    for dt, algo in ((clgrad.float32, "auto"), (clgrad.float64, "auto"),
                     (clgrad.float32, "blocked"), (clgrad.float64, "blocked")):
        clgrad.backends.conv_algorithm = algo
        xt = clgrad.tensor(x, dtype=dt, requires_grad=True)
        wt = clgrad.tensor(w, dtype=dt, requires_grad=True)
        y = F.conv2d(xt, wt, stride=s, padding=k // 2, groups=g)
        y.backward(clgrad.tensor(gy, dtype=dt))
        # the float64 oracle: the same op at the device's own width is not independent, so
        # NumPy: im2col by slicing
        xp = np.pad(x, ((0, 0), (0, 0), (k // 2,) * 2, (k // 2,) * 2))
        cols = np.stack([xp[:, :, i:i + s * oh:s, j:j + s * oh:s] for i in range(k)
                         for j in range(k)], 2)  # n, c, k*k, oh, ow
        cols = cols.reshape(n, g, c // g, k * k, oh, oh)
        wr = w.reshape(g, o // g, c // g, k * k)
        ref = np.einsum("ngckyx,gock->ngoyx", cols, wr).reshape(n, o, oh, oh)
        gw = np.einsum("ngckyx,ngoyx->gock", cols, gy.reshape(n, g, o // g, oh, oh))
        tol = 1e-4 if dt is clgrad.float32 else 1e-10
        scale = np.abs(ref).max()
        worst = max(worst, np.abs(y.detach().numpy() - ref).max() / scale)
        np.testing.assert_allclose(y.detach().numpy(), ref, rtol=tol, atol=tol * scale)
        np.testing.assert_allclose(wt.grad.numpy(), gw.reshape(w.shape), rtol=tol,
                                   atol=tol * np.abs(gw).max())
        assert algo == "auto" or clgrad.backends.last_conv_algorithms["forward"] == algo
print("ok", worst)
"""


@pytest.mark.skipif(clgrad.default_device().kind != "cpu", reason="a CPU device's setting")
def test_cpu_vector_width_8_runs_the_avx2_kernels_right():
    """CLGRAD_CPU_VECTOR_WIDTH=8 (the AVX2-width CPU kernels, on any CPU): conv2d forward and
    weight gradient of dense, pointwise, depthwise (3x3, 5x5 stride 2) and grouped layers,
    under 'auto' and forced 'blocked', match NumPy's float64 im2col, float32 and float64; a
    bad value raises naming it."""
    env = checkout_env(CLGRAD_CPU_VECTOR_WIDTH="8", CLGRAD_CONV_TUNE="on")
    r = subprocess.run([sys.executable, "-c", _NARROW], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr
    env["CLGRAD_CPU_VECTOR_WIDTH"] = "12"
    r = subprocess.run([sys.executable, "-c", "import clgrad; clgrad.default_device()"
                        ".vector_width"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "CLGRAD_CPU_VECTOR_WIDTH: expected 8 or 16, got '12'" in r.stderr


def test_every_setter_bumps_the_epoch_and_getenv_follows(monkeypatch):
    """settings.epoch() counts changes (the launch plans' keys hold it): environment writes of
    clgrad's variables, assignments to clgrad.backends' settings and flags blocks bump it;
    other writes do not; getenv's parsed value follows every change."""
    e = settings.epoch()
    monkeypatch.setenv("CLGRAD_CONV_TUNE", "off")
    assert settings.epoch() == e + 1 and settings.getenv("CLGRAD_CONV_TUNE") == "off"
    monkeypatch.delenv("CLGRAD_CONV_TUNE")
    assert settings.epoch() == e + 2 and settings.getenv("CLGRAD_CONV_TUNE") == "auto"
    os.environ["CL_CONFIG_CPU_TARGET_ARCH_NOT_WATCHED"] = "1"
    del os.environ["CL_CONFIG_CPU_TARGET_ARCH_NOT_WATCHED"]
    assert settings.epoch() == e + 2
    monkeypatch.setattr(backends, "conv_algorithm", "direct")
    assert settings.epoch() == e + 3
    with backends.flags(conv_implicit_variant="cpu"):
        assert settings.epoch() == e + 4
    assert settings.epoch() == e + 5 and backends.conv_implicit_variant == "auto"
    backends.last_conv_algorithm = "direct"  # a report, not a setting
    assert settings.epoch() == e + 5
    assert isinstance(os.environ, type(os.environ)) and os.environ.copy() == dict(os.environ)


def test_bytes_environment_writes_bump_the_epoch_too():
    """os.environb shares os.environ's data: a write there of a clgrad variable changes what
    os.environ (and getenv) reads, so it must bump the epoch too, or getenv keeps answering
    the value parsed before (and launch plans keyed by the epoch stay)."""
    if not hasattr(os, "environb"):
        pytest.skip("no os.environb on this platform")
    name = "CLGRAD_CONV_TUNE"
    saved = os.environ.get(name)
    try:
        os.environ[name] = "on"
        assert settings.getenv(name) == "on"  # parsed and kept
        e = settings.epoch()
        os.environb[name.encode()] = b"off"
        assert os.environ[name] == "off"
        assert settings.epoch() == e + 1 and settings.getenv(name) == "off"
        del os.environb[name.encode()]
        assert settings.epoch() == e + 2 and settings.getenv(name) == "auto"
        os.environb[b"CLGRAD_NOT_A_SETTING"] = b"1"  # other names: no change
        del os.environb[b"CLGRAD_NOT_A_SETTING"]
        assert settings.epoch() == e + 2
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


def test_reloading_backends_bumps_the_epoch(monkeypatch):
    """importlib.reload(clgrad.backends) sets its settings again (conv_algorithm from
    CLGRAD_CONV_ALGO) without an assignment through the module: it must count as a change,
    or conv2d's fast path keeps running the algorithm of the plans made before (the report
    says 'direct' where 'auto' is set). Values against NumPy (a 3 x 3 all-ones sum)."""
    import importlib
    monkeypatch.delenv("CLGRAD_CONV_ALGO", raising=False)
    x, w = clgrad.ones(1, 8, 6, 5), clgrad.ones(8, 8, 3, 3)
    try:
        backends.conv_algorithm = "direct"
        for _ in range(2):  # the second call: conv2d's fast path, recorded under 'direct'
            clgrad.nn.functional.conv2d(x, w)
        assert backends.last_conv_algorithm == "direct"
        e = settings.epoch()
        importlib.reload(backends)
        assert backends.conv_algorithm == "auto" and settings.epoch() > e
        y = clgrad.nn.functional.conv2d(x, w)
        assert backends.last_conv_algorithm != "direct"
        np.testing.assert_array_equal(y.numpy(), np.full((1, 8, 4, 3), 72.0))
    finally:
        importlib.reload(backends)


def test_changes_from_many_threads_each_count():
    import threading
    e0 = settings.epoch()

    def bump():
        for _ in range(2000):
            settings.changed()
    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert settings.epoch() == e0 + 8000


def test_getenv_keeps_no_value_read_before_a_change(monkeypatch):
    """A getenv that read the environment before another thread changed it (and called
    changed()) may return the old value, but the next getenv reads the new one: the stale
    value went into the finished epoch's cache."""
    monkeypatch.setenv("CLGRAD_MMA", "auto")
    assert settings.getenv("CLGRAD_MMA") == "auto"
    settings.changed()
    real = settings.os.environ

    class Racing:
        def get(self, name, default=None):
            old = real.get(name, default)
            real["CLGRAD_MMA"] = "off"  # the other thread's write (changed() through environ)
            return old
    monkeypatch.setattr(settings, "os", type("os", (), {"environ": Racing()}))
    assert settings.getenv("CLGRAD_MMA") == "auto"  # read before the change
    monkeypatch.setattr(settings, "os", __import__("os"))
    assert settings.getenv("CLGRAD_MMA") == "off"
