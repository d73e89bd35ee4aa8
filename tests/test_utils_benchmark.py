"""torch.utils.benchmark's Timer and Measurement (clgrad/utils/benchmark): what a Timer runs
(counted), that its clock waits for the device queue, the statistics against NumPy and
PyTorch's Measurement on the same raw times, the errors."""
import time

import numpy as np
import pytest

import clgrad.utils.benchmark as benchmark
from clgrad.utils.benchmark import Measurement, TaskSpec, Timer


def test_timeit_runs_the_statement_with_its_globals(monkeypatch):
    calls = []
    syncs = []
    monkeypatch.setattr(benchmark, "_synchronize", lambda: syncs.append(1))
    t = Timer(stmt="f(x)", setup="calls.append('setup')",
              globals={"f": lambda v: calls.append(v), "x": 3, "calls": calls})
    m = t.timeit(number=7)
    # setup once per block, a warm-up block of max(7 // 100, 2) runs, then 7 runs
    assert calls == ["setup", 3, 3, "setup"] + [3] * 7
    assert len(syncs) == 4  # the clock read twice per block, after draining the queue
    assert m.number_per_run == 7 and len(m.raw_times) == 1 and m.stmt == "f(x)"
    assert m.times == [m.raw_times[0] / 7]


def test_blocked_autorange_measures_a_sleep():
    m = Timer(stmt="time.sleep(0.002)", globals={"time": time}).blocked_autorange(
        min_run_time=0.05)
    # blocks grow 10x until the clock's overhead is 1e-4 of one or one passes min_run_time
    assert m.number_per_run in (1, 10, 100) and len(m.times) >= 1
    assert sum(m.raw_times) >= 0.05 and all(0.002 <= t < 0.05 for t in m.times)
    assert m.mean == pytest.approx(np.mean(m.times))
    seen = []
    Timer(stmt="pass").blocked_autorange(callback=lambda n, t: seen.append((n, t)),
                                         min_run_time=0.01)
    assert seen and all(n >= 1000 and t > 0 for n, t in seen)  # tiny stmt: big blocks


RAW = [0.004, 0.0042, 0.005, 0.0041, 0.0040, 0.0043, 0.009]


def test_measurement_statistics():
    m = Measurement(100, RAW, TaskSpec("x + 1", "pass"))
    per = np.array(RAW) / 100
    assert m.times == pytest.approx(per.tolist())
    assert m.mean == pytest.approx(per.mean())
    assert m.median == pytest.approx(np.median(per))
    assert m.iqr == pytest.approx(np.percentile(per, 75) - np.percentile(per, 25))
    assert m.has_warnings and not m.meets_confidence(0.1) and m.meets_confidence(0.2)
    assert m.significant_figures == 1
    text = repr(m).splitlines()
    assert text[1:] == ["x + 1", "  Median: 42.00 us", "  IQR:    6.00 us (40.50 to 46.50)",
                        "  7 measurements, 100 runs per measurement, 1 thread",
                        "  WARNING: Interquartile range is 14.3% of the median measurement.",
                        "           This could indicate system fluctuation."]


def test_measurement_matches_pytorch():
    tb = pytest.importorskip("torch.utils.benchmark")
    for number, raw in ((100, RAW), (10, [0.001]), (3, [0.3, 0.31, 0.29, 0.3, 0.305])):
        tm = tb.Measurement(number, raw, tb.utils.common.TaskSpec("x + 1", "pass"))
        cm = Measurement(number, raw, TaskSpec("x + 1", "pass"))
        for k in ("mean", "median", "iqr", "significant_figures", "has_warnings"):
            assert getattr(cm, k) == pytest.approx(getattr(tm, k), rel=1e-12), k
        assert repr(cm).splitlines()[1:] == repr(tm).splitlines()[1:]


def test_errors():
    with pytest.raises(ValueError, match="str of Python code"):
        Timer(stmt=lambda: None)
    with pytest.raises(NotImplementedError, match="c\\+\\+"):
        Timer(stmt="pass", language="c++")
    for name in ("repeat", "autorange"):
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            getattr(Timer(), name)()
    with pytest.raises(AttributeError, match="torch.utils.benchmark.Compare is not "
                                             "implemented in clgrad"):
        benchmark.Compare
