"""Shared test settings: hypothesis without deadlines (first calls compile kernels)."""
import gc
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("clgrad", deadline=None, max_examples=int(os.environ.get(
    "CLGRAD_HYPOTHESIS_EXAMPLES", "40")), suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("clgrad")

# CLGRAD_TEST_AS_GPU=<platform substring> (or "*": every device) makes the runtime treat those
# OpenCL devices as GPUs, so that the paths of a machine whose default device is a GPU ("cpu"
# tensors on another device than new ones, map_location="cpu", no CPU device at all) run here.
# Set before the first device query; tests start it in a subprocess (tests/test_device_cross.py).
# A real GPU of another platform (NVIDIA's on the GPU machine) becomes an "other" device, last
# in every choice: "cuda" is the posed device there as on CI, and "cpu" names it where the
# posed platform was the only CPU device (the GPU machine's PoCL from pyopencl's wheel).
if os.environ.get("CLGRAD_TEST_AS_GPU"):
    from clgrad.runtime import device as _rt_device
    from clgrad.runtime import discovery as _rt_discovery

    def _as_gpu(d, _kind=_rt_device._kind_of, _which=os.environ["CLGRAD_TEST_AS_GPU"].lower()):
        label = f"{d.platform.name} {d.platform.version}".lower()  # as CLGRAD_DEVICE matches
        if _which == "*" or _which in label:
            return "gpu"
        kind = _kind(d)
        return "other" if kind == "gpu" else kind

    _rt_device._kind_of = _rt_discovery._kind_of = _as_gpu


# CLGRAD_TEST_FAILURES=<file>: each failure's report is appended to that file as the test ends
# (pytest, and xdist's controller, print them only at the end: a run stopped by its time limit,
# as bench/gpu/run_suite.sh's on the GPU machine, would name its failures without a reason).
# The path is resolved at start: tests that chdir (the programs fixture) would move it.
_FAILURES = os.path.abspath(os.environ["CLGRAD_TEST_FAILURES"]) \
    if os.environ.get("CLGRAD_TEST_FAILURES") else None


def pytest_runtest_logreport(report):
    if _FAILURES and report.failed and not os.environ.get("PYTEST_XDIST_WORKER"):
        with open(_FAILURES, "a", encoding="utf-8") as f:
            f.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext}\n\n")


@pytest.fixture
def no_gc():
    """The cyclic collector off for the test (after one collection): refcounting alone must
    free graphs, and exact memory counts must not move by an earlier test's garbage."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.fixture
def programs(monkeypatch, tmp_path):
    """For the tests/programs runners: programs import local_data from their folder and write
    checkpoints into the cwd."""
    from pathlib import Path
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "programs"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def pickled_programs(programs):
    """Programs registered in sys.modules, so that torch.save(model) pickles their classes
    by name (as a script's __main__ classes are)."""
    import sys

    from test_programs import load_program
    added = []

    def load(name, framework="clgrad"):
        prog = load_program(name, framework)
        sys.modules[prog.__name__] = prog
        added.append(prog.__name__)
        return prog
    yield load
    for name in added:
        sys.modules.pop(name, None)


@pytest.fixture
def cpu_default():
    """The OpenCL CPU device as the default device for the test (autocast("cpu") applies to its
    tensors); on a machine whose default is a GPU (CLGRAD_DEVICE=gpu) the test still runs on
    the CPU device."""
    import clgrad
    from clgrad.runtime import discovery
    prev = discovery._DEFAULT[0]
    clgrad.set_default_device("cpu")
    try:
        yield clgrad.empty(0)._storage.device
    finally:
        discovery._DEFAULT[0] = prev


@pytest.fixture
def fp16():
    """The default device (a GPU under CLGRAD_DEVICE=gpu), skipped without float16 (PoCL's CPU
    device lacks cl_khr_fp16)."""
    import clgrad
    dev = clgrad.empty(0)._storage.device
    if not dev.fp16:
        pytest.skip(f"the device {dev.name!r} lacks cl_khr_fp16 (float16)")
    return dev


@pytest.fixture
def cpu_fp16(cpu_default):
    """cpu_default, skipped where the CPU device lacks cl_khr_fp16 (PoCL): float16 tests."""
    if not cpu_default.fp16:
        pytest.skip(f"the CPU device {cpu_default.name!r} lacks cl_khr_fp16 (float16)")
    return cpu_default
