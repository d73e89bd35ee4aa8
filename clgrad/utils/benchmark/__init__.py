"""``torch.utils.benchmark``: Timer and Measurement (PyTorch's names and statistics).

``Timer(stmt, setup, globals=...)`` times a Python statement; clgrad's kernels run
asynchronously on an OpenCL queue (the "cpu" device too), so each clock read first waits
for the default device's queue to drain, as PyTorch's Timer synchronizes CUDA. A
Measurement keeps the raw times of its blocks and gives per-run statistics (mean, median,
IQR). PyTorch's other benchmark names (Compare, Fuzzer, the C++ timers) raise AttributeError
naming them as not implemented.
"""
from __future__ import annotations

import math
import timeit as _timeit

import numpy as np

from clgrad.errors import missing_attribute as _missing_attribute
from clgrad.runtime.discovery import synchronize as _synchronize

__all__ = ["Timer", "Measurement", "TaskSpec"]


def _synchronized_timer() -> float:
    _synchronize()
    return _timeit.default_timer()


class TaskSpec:
    """What was timed: the statement, setup and labels (PyTorch's TaskSpec fields)."""

    def __init__(self, stmt, setup, global_setup="", label=None, sub_label=None,
                 description=None, env=None, num_threads=1):
        self.stmt, self.setup, self.global_setup = stmt, setup, global_setup
        self.label, self.sub_label, self.description = label, sub_label, description
        self.env, self.num_threads = env, num_threads

    @property
    def title(self) -> str:
        """The label and sub-label (or the statement), as PyTorch prints above the times."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        return self.stmt if "\n" not in self.stmt else "stmt: (multiline)"


class Measurement:
    """The times of one benchmark: ``raw_times`` (seconds per block of ``number_per_run``
    runs) and per-run statistics ``times``, ``mean``, ``median``, ``iqr`` (PyTorch's
    torch.utils.benchmark.Measurement)."""

    def __init__(self, number_per_run: int, raw_times, task_spec: TaskSpec, metadata=None):
        self.number_per_run = int(number_per_run)
        self.raw_times = [float(t) for t in raw_times]
        self.task_spec = task_spec
        self.metadata = metadata

    def __getattr__(self, name):  # the task spec's fields (stmt, label ...), as PyTorch's
        if name.startswith("__") or name == "task_spec":
            raise AttributeError(name)
        return getattr(self.task_spec, name)

    @property
    def times(self) -> list:
        """Seconds per run, one per block."""
        return [t / self.number_per_run for t in self.raw_times]

    def _quantile(self, q) -> float:
        return float(np.quantile(np.array(self.times, dtype=np.float64), q))

    @property
    def mean(self) -> float:
        """The mean time per run, in seconds."""
        return float(np.mean(self.times))

    @property
    def median(self) -> float:
        """The median time per run, in seconds."""
        return self._quantile(0.5)

    @property
    def iqr(self) -> float:
        """The interquartile range of the times per run (linear quantiles), in seconds."""
        return self._quantile(0.75) - self._quantile(0.25)

    @property
    def significant_figures(self) -> int:
        """PyTorch's rough estimate, between 1 and 4: log10 of the median over a 90%
        confidence interval (1.645 standard errors, at least 25 ns) of the times between
        the quartiles."""
        ts = sorted(self.times)
        mid = ts[len(ts) // 4:math.ceil(3 * len(ts) / 4)]
        ci = max(1.645 * float(np.std(mid)) / math.sqrt(len(mid)), 25e-9)
        return min(max(int(math.floor(math.log10(self.median / ci))), 1), 4)

    def meets_confidence(self, threshold: float = 0.1) -> bool:
        """Whether the IQR is under ``threshold`` times the median."""
        return self.iqr / self.median < threshold

    @property
    def has_warnings(self) -> bool:
        """True when the IQR is 10% of the median or more (PyTorch's warning)."""
        return not self.meets_confidence(0.1)

    @property
    def title(self) -> str:
        """The task spec's title."""
        return self.task_spec.title

    def __repr__(self):
        n = len(self.times)
        unit, scale = _unit(self.median)
        lines = [f"<clgrad.utils.benchmark.Measurement object at {hex(id(self))}>",
                 self.title,
                 f"  {'Median: ' if n > 1 else ''}{self.median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                         f"({self._quantile(0.25) / scale:.2f} to "
                         f"{self._quantile(0.75) / scale:.2f})")
        threads = self.task_spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        if self.has_warnings:
            rel = self.iqr / self.median * 100
            why = ("This suggests significant environmental influence."
                   if not self.meets_confidence(0.25) else
                   "This could indicate system fluctuation.")
            lines.append(f"  WARNING: Interquartile range is {rel:.1f}% of the median "
                         f"measurement.\n           {why}")
        return "\n".join(lines)


def _unit(t):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return unit, scale
    return "ns", 1e-9


class Timer:
    """Times ``stmt`` (Python source) after running ``setup`` once, in the namespace
    ``globals`` (PyTorch's torch.utils.benchmark.Timer). ``timer``: the clock (default: the
    wall clock read after draining the default device's queue). ``num_threads`` and
    ``language`` are recorded (clgrad's kernels use the OpenCL device's own threads; only
    Python statements: language="c++" raises).

    Raises: ValueError for a statement that is not a str, NotImplementedError for C++."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=None, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language="python"):
        if not isinstance(stmt, str):
            raise ValueError(f"Timer: expected stmt as a str of Python code, got "
                             f"{type(stmt).__name__}")
        if str(getattr(language, "name", language)).lower() not in ("python", "py"):
            raise NotImplementedError("Timer: language='c++' is not supported in clgrad "
                                      "(only Python statements)")
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description,
                                   env, num_threads)
        self._globals = dict(globals or {})
        self._timer = _timeit.Timer(stmt=stmt, setup=setup,
                                    timer=timer or _synchronized_timer,
                                    globals=self._globals)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of ``number`` runs, after a warm-up block of max(number // 100, 2)
        (PyTorch's timeit)."""
        self._timeit(max(number // 100, 2))
        return Measurement(number, [self._timeit(number)], self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1):
        """Not supported (as PyTorch's): raises NotImplementedError."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        """Not supported (as PyTorch's): raises NotImplementedError."""
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _block_size(self, min_run_time: float) -> int:
        overhead = float(np.median([self._timeit(0) for _ in range(5)]))
        number = 1
        while True:
            taken = self._timeit(number)
            if (overhead / taken <= 1e-4 and taken >= min_run_time / 1000) or \
                    taken > min_run_time:
                return number
            number *= 10

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a fixed number of runs (so the timer's overhead is under 0.01% of a
        block, or a block takes min_run_time / 1000) until ``min_run_time`` seconds have
        passed (at least one block); ``callback(number, time)`` after each block."""
        number = self._block_size(min_run_time)
        times, total = [], 0.0
        while total < min_run_time or not times:
            t = self._timeit(number)
            total += t
            if callback:
                callback(number, t)
            times.append(t)
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> Measurement:
        """Blocks as blocked_autorange until the IQR is under ``threshold`` times the median
        (after at least ``min_run_time`` seconds) or ``max_run_time`` seconds passed."""
        number = self._block_size(min_run_time=0.05)
        times, total = [], 0.0
        while True:
            t = self._timeit(number)
            total += t
            if callback:
                callback(number, t)
            times.append(t)
            m = Measurement(number, times, self._task_spec)
            if total >= min_run_time and len(times) > 3 and m.iqr / m.median < threshold:
                return m
            if total >= max_run_time:
                return m


def __getattr__(name):
    """A torch.utils.benchmark name clgrad lacks: AttributeError naming it."""
    raise _missing_attribute(__name__, name)
