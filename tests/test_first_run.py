"""A newcomer's first run: the one-line notices (probing, first kernel build), the ``clgrad``
logger and CLGRAD_DEBUG, ``python -m clgrad --version``, option checks before any device work,
the training job without its optional packages, and the license metadata."""
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad
from clgrad import _log
from clgrad.runtime.device import _pyopencl_cache_dir

ROOT = Path(__file__).resolve().parent.parent
SNIPPET = ("import clgrad\n"
           "x = clgrad.arange(6.0)\n"
           "print((x * 2).sum().item())\n")


def _run(args, cache, **env_extra):
    env = dict(os.environ, CLGRAD_CACHE_DIR=str(cache), **env_extra)
    if "CLGRAD_DEBUG" not in env_extra:
        env.pop("CLGRAD_DEBUG", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=ROOT)


def test_first_run_says_it_probes_and_builds_once(tmp_path):
    first = _run(["-c", SNIPPET], tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "30.0"
    lines = first.stderr.splitlines()
    probing = [ln for ln in lines if ln.startswith("clgrad: probing ")]
    building = [ln for ln in lines if ln.startswith("clgrad: building OpenCL kernels for ")]
    assert len(probing) == 1 and len(building) == 1, first.stderr
    n = len(clgrad.devices())
    assert probing[0].startswith(f"clgrad: probing {n} OpenCL device(s): ")
    assert str(tmp_path / "probe.json") in probing[0]
    d = clgrad.default_device()
    assert building[0] == (f"clgrad: building OpenCL kernels for {d.name} [{d.platform}] "
                           f"(first run only; cached in {_pyopencl_cache_dir()})")
    again = _run(["-c", SNIPPET], tmp_path)
    assert again.returncode == 0 and again.stdout.strip() == "30.0"
    assert again.stderr == "", again.stderr          # cached: nothing more to say


def test_clgrad_debug_logs_devices_probes_choice_builds_and_conv_choices(tmp_path):
    code = ("import clgrad\n"
            "x = clgrad.randn(2, 3, 6, 6)\n"
            "conv = clgrad.nn.Conv2d(3, 8, 3, padding=1)\n"
            "conv(x).sum().backward()\n"
            "conv(x).sum().backward()\n")
    r = _run(["-c", code], tmp_path, CLGRAD_DEBUG="1")
    assert r.returncode == 0, r.stderr
    err = r.stderr
    d = clgrad.default_device()
    for row in clgrad.devices():
        assert f"found {row['index']} {row['name']} [" in err, err
        # the tiny probe's verdict; a device that passed it and failed the program check
        # (listed with "cannot build clgrad's kernels: ...") was usable to the tiny probe
        checked = row["reason"].startswith("cannot build clgrad's kernels")
        verdict = "usable" if row["usable"] or checked else re.escape(row["reason"])
        assert re.search(rf"probe {row['index']} .*: {verdict} \(probed in [0-9.]+ s\)",
                         err), err
    # the program check of the device chosen (the others are checked when listed or named)
    assert re.search(rf"program check {d.platform_index}:{d.device_index} .*: ok", err), err
    assert f"default device: Device({d.platform_index}:{d.device_index} {d.name!r}" in err
    assert "INFO" in err and "building OpenCL kernels for" in err
    assert re.search(r"DEBUG .*built kernels/conv_\w+\.cl \{.*\} on .* in [0-9.]+ s", err), err
    for pass_name in ("forward", "grad_weight"):
        hits = re.findall(rf"conv2d {pass_name} auto: (\w+) for N=2 G=1 C/G=3 O/G=8 6x6 -> "
                          rf"6x6 k=3x3 stride=1,1 pad=1,1 dilation=1,1", err)
        assert len(hits) == 1, err                   # logged once per pass and shape
        assert hits[0] in clgrad.backends.CONV_ALGORITHMS
    # warm, without the switch: silent
    quiet = _run(["-c", code], tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


@pytest.mark.parametrize("value, on", [("1", True), ("yes", True), ("2", True), ("", False),
                                       ("0", False), ("false", False), ("OFF", False)])
def test_clgrad_debug_values(value, on):
    assert _log.debug_requested({"CLGRAD_DEBUG": value}) is on
    assert _log.debug_requested({}) is False


def test_notices_go_to_the_logger_when_logging_is_configured(caplog, capsys):
    with caplog.at_level(logging.INFO, logger="clgrad"):
        _log.notice("hello from a test")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("clgrad", "INFO", "hello from a test")]
    assert logging.getLogger("clgrad") is _log.logger


def test_notices_go_to_stderr_without_logging(monkeypatch, capsys):
    monkeypatch.setattr(_log.logger, "hasHandlers", lambda: False)
    _log.notice("hello")
    assert capsys.readouterr().err == "clgrad: hello\n"


def test_version_flag():
    import numpy
    import platform
    import pyopencl
    r = subprocess.run([sys.executable, "-m", "clgrad", "--version"], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"clgrad {clgrad.__version__} (Python {platform.python_version()}, "
                        f"pyopencl {pyopencl.VERSION_TEXT}, numpy {numpy.__version__})\n")
    toml = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', toml, re.M)[1] == clgrad.__version__


def test_no_command_is_a_usage_error():
    r = subprocess.run([sys.executable, "-m", "clgrad"], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert r.returncode == 2
    assert "expected a command: devices, info, train or dedupe-libs" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--resume", "/nonexistent/last.safetensors"],
     "train: --resume /nonexistent/last.safetensors: FileNotFoundError"),
    (["--dataset", "mnist", "--data", "/nonexistent"], "train: --data /nonexistent: "),
    (["--out", "/proc/cannot-make-this"], "train: --out /proc/cannot-make-this: "),
])
def test_train_checks_paths_before_touching_any_device(tmp_path, args, message):
    r = _run(["-m", "clgrad", "train", "--quiet", *args], tmp_path / "cache")
    assert r.returncode == 1
    assert r.stderr.startswith(message), r.stderr
    assert not (tmp_path / "cache" / "probe.json").exists()   # no device was probed


def test_train_without_tqdm_and_matplotlib(tmp_path, monkeypatch, capsys):
    from clgrad import train
    from clgrad.utils.data.datasets import digits_split

    monkeypatch.setitem(sys.modules, "tqdm", None)          # `import tqdm` raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setattr(train, "_NOTED", set())
    out = tmp_path / "run"
    assert train.main(["--epochs", "2", "--out", str(out)], dataset="digits") == 0
    got = capsys.readouterr()
    assert got.err.count("note: no progress bars (tqdm is not installed: pip install "
                         "'clgrad[train]'") == 1, got.err
    assert got.err.count(f"note: {out / 'curves.png'} not written (matplotlib is not "
                         f"installed") == 1, got.err
    tr, _ = digits_split()
    n_train = len(tr) - sum(round(c * 0.1) for c in np.bincount(tr.arrays[1]))
    for epoch in (1, 2):
        line = next(ln for ln in got.out.splitlines() if ln.startswith(f"epoch {epoch}/2: "))
        assert re.fullmatch(rf"epoch {epoch}/2: {n_train} img, loss=[0-9.]+, acc=[0-9.]+, "
                            r"val_acc=[0-9.]+, img_s=[0-9]+", line), line
    assert "test accuracy:" in got.out
    assert (out / "last.safetensors").is_file() and not (out / "curves.png").exists()


def test_license_and_metadata():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c) 2026 clgrad developers" in text
    toml = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^license = "MIT"$', toml, re.M)
    files = re.search(r"^license-files = \[(.*)\]$", toml, re.M)[1]
    for name in re.findall(r'"([^"]+)"', files):
        assert (ROOT / name).is_file(), name
    assert "clgrad/utils/data/_digits/LICENSE" in files
    tested = re.findall(r'"Programming Language :: Python :: (3\.\d+)"', toml)
    assert tested == ["3.10", "3.11", "3.12", "3.13"]
    makefile = (ROOT / "Makefile").read_text()
    assert "MATRIX ?= " + " ".join(f"python{v}" for v in tested) in makefile
    deps = toml.split("dependencies = [", 1)[1].split("]", 1)[0]
    for optional in ("scikit-learn", "matplotlib", "tqdm", "onnx"):
        assert optional not in deps, optional


class _Terminal:
    """A stderr stand-in that says it is a terminal."""

    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return True


def test_first_run_build_progress_on_a_terminal(monkeypatch):
    monkeypatch.setattr(_log.logger, "hasHandlers", lambda: False)
    monkeypatch.setattr(_log, "expected_builds", 3)
    term = _Terminal()
    progress = _log.BuildProgress(stream=term, every=0.0)
    for _ in range(4):
        progress.built()
    lines = term.text.split("\n")
    assert lines[-1] == "" and len(lines) == 5
    assert re.fullmatch(r"\r\x1b\[Kclgrad: built 1 of ~3 OpenCL programs, \d+ s", lines[0])
    assert re.fullmatch(r"\r\x1b\[Kclgrad: built 3 of ~3 OpenCL programs, \d+ s", lines[2])
    assert re.fullmatch(r"\r\x1b\[Kclgrad: built 4 OpenCL programs, \d+ s", lines[3])  # past ~3
    # throttled: at most one line per `every` seconds
    term2 = _Terminal()
    slow = _log.BuildProgress(stream=term2, every=60.0)
    for _ in range(10):
        slow.built()
    assert term2.text == "" and slow.count == 10
    # not a terminal (a pipe, a log file) or logging configured: nothing
    piped = _Terminal()
    piped.isatty = lambda: False
    quiet = _log.BuildProgress(stream=piped, every=0.0)
    quiet.built()
    monkeypatch.setattr(_log.logger, "hasHandlers", lambda: True)
    logged = _log.BuildProgress(stream=term2, every=0.0)
    logged.built()
    assert piped.text == "" and term2.text == ""
