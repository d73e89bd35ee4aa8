"""The recorded events and their tables: FunctionEvent, FunctionEventAvg and EventList
(PyTorch's columns, sort keys and Chrome trace export)."""
from __future__ import annotations

import gzip
import json
import os
from typing import NamedTuple


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


class _Interval(NamedTuple):
    """An event's start and end, microseconds (PyTorch's profiler_util.Interval)."""
    start: float
    end: float

    def elapsed_us(self) -> float:
        """end - start."""
        return self.end - self.start


class FunctionEvent:
    """One recorded call: ``name`` (= ``key``; a step's is "ProfilerStep*", its
    ``trace_name`` "ProfilerStep#N"), ``thread``, ``time_range`` (``.start``, ``.end``: host
    microseconds, ``elapsed_us()``), ``cpu_time_total`` and ``self_cpu_time_total``
    (us), ``device_time_total``/``self_device_time_total`` (us; 0 without CUDA activity),
    ``input_shapes`` (a list per argument: a tensor's shape, a list of shapes for a list of
    tensors, [] for anything else; empty unless ``record_shapes``), ``cpu_parent`` and
    ``cpu_children`` (the nesting), ``count`` 1, ``kind`` ("cpu_op", "user_annotation")."""

    __slots__ = ("id", "name", "trace_name", "thread", "start_ns", "end_ns", "sync_end_ns",
                 "input_shapes", "cpu_parent", "cpu_children", "kind", "_child_ns",
                 "_child_dev_ns", "_devices")

    def __init__(self, id, name, thread, start_ns, input_shapes, parent, kind):
        self.id, self.thread, self.start_ns = id, thread, start_ns
        # PyTorch's wildcard: the steps' events are named "ProfilerStep*" (one table row),
        # their trace names keep the number
        self.trace_name = name
        self.name = "ProfilerStep*" if name.startswith("ProfilerStep#") else name
        self.end_ns = self.sync_end_ns = start_ns
        self.input_shapes, self.cpu_parent, self.kind = input_shapes, parent, kind
        self.cpu_children = []
        self._child_ns = self._child_dev_ns = 0
        self._devices = None

    key = property(lambda self: self.name)
    count = 1
    is_async = False
    stack = ()
    node_id = -1
    overload_name = ""
    use_device = None

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) / 1e3

    @property
    def self_cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns - self._child_ns) / 1e3

    @property
    def device_time_total(self) -> float:
        return (self.sync_end_ns - self.start_ns) / 1e3 if self._devices is not None else 0.0

    @property
    def self_device_time_total(self) -> float:
        if self._devices is None:
            return 0.0
        return (self.sync_end_ns - self.start_ns - self._child_dev_ns) / 1e3

    cpu_time = cpu_time_total
    device_time = device_time_total

    @property
    def time_range(self) -> _Interval:
        """PyTorch's ``time_range``: start and end in microseconds (perf_counter's clock)."""
        return _Interval(self.start_ns / 1e3, self.end_ns / 1e3)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time_total="
                f"{self.cpu_time_total:.3f}us self_cpu_time_total="
                f"{self.self_cpu_time_total:.3f}us input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    """The events of one key summed (``key_averages``): ``key``, ``count``,
    ``cpu_time_total``, ``self_cpu_time_total``, ``device_time_total``,
    ``self_device_time_total`` (us, sums over the calls), ``cpu_time``/``device_time`` (the
    averages per call), ``input_shapes`` (the first call's; the grouping key's part when
    grouped by shape)."""

    is_async = False
    stack = ()
    node_id = -1
    overload_name = ""

    def __init__(self, key, input_shapes, use_device):
        self.key, self.input_shapes, self.use_device = key, input_shapes, use_device
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cpu_parent = None

    def add(self, evt):
        """Add one FunctionEvent's times and count."""
        if self.count == 0:
            self.cpu_parent = evt.cpu_parent
        self.count += 1
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        self.device_time_total += evt.device_time_total
        self.self_device_time_total += evt.self_device_time_total
        return self

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return self.device_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}"
                f"us cpu_time={self.cpu_time:.3f}us count={self.count} input_shapes="
                f"{self.input_shapes}>")


# the sort keys of EventList.table (PyTorch's; "cuda"/"xpu" read as "device")
_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "device_time",
              "device_time_total", "self_device_time_total", "count")


class EventList(list):
    """A list of FunctionEvent (``profile.events()``) or FunctionEventAvg (``key_averages()``)
    with PyTorch's ``table``, ``key_averages``, ``export_chrome_trace``, ``total_average`` and
    ``self_cpu_time_total``."""

    def __init__(self, events=(), use_device=None, trace_start_ns=0):
        super().__init__(events)
        self._use_device, self._trace_start_ns = use_device, trace_start_ns

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of the events' self CPU times (us)."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0):
        """An EventList of FunctionEventAvg, one per name (and per input shapes with
        ``group_by_input_shape``), in the order the keys first occur.

        Raises:  NotImplementedError for ``group_by_stack_n`` != 0 (no stacks are recorded).
        """
        if group_by_stack_n:
            raise NotImplementedError(
                f"key_averages(group_by_stack_n={group_by_stack_n}): clgrad's profiler records "
                f"no stacks (with_stack is ignored); use group_by_stack_n=0")
        groups = {}
        for e in self:
            k = (e.key, str(e.input_shapes)) if group_by_input_shape else e.key
            avg = groups.get(k)
            if avg is None:
                avg = groups[k] = FunctionEventAvg(
                    e.key, e.input_shapes if group_by_input_shape else None, self._use_device)
            avg.add(e)
        return EventList(groups.values(), self._use_device, self._trace_start_ns)

    def total_average(self) -> FunctionEventAvg:
        """All events summed into one FunctionEventAvg keyed "Total"."""
        total = FunctionEventAvg("Total", None, self._use_device)
        for e in self:
            total.add(e)
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """PyTorch's table (torch/autograd/profiler_util.py ``_build_table``): Name, Self CPU
        %, Self CPU, CPU total %, CPU total, CPU time avg, [Self CUDA, Self CUDA %, CUDA total,
        CUDA time avg when device times were measured], # of Calls, [Input Shapes when any
        event has them]; rows sorted by ``sort_by`` descending, at most ``row_limit``; the
        percentages are of the sum of the self CPU times; then "Self CPU time total: ...".

        Raises:  ValueError for a ``sort_by`` that is not one of cpu_time, cpu_time_total,
                 self_cpu_time_total, cuda_time, cuda_time_total, self_cuda_time_total (or
                 device_/xpu_ spellings), count: the memory keys need profile_memory, which
                 clgrad does not support.
        """
        if not self:
            return ""
        events = list(self)
        if sort_by is not None:
            attr = sort_by.replace("cuda", "device").replace("xpu", "device")
            if attr not in _SORT_KEYS:
                raise ValueError(f"table(sort_by={sort_by!r}): expected one of cpu_time, "
                                 f"cpu_time_total, self_cpu_time_total, cuda_time, "
                                 f"cuda_time_total, self_cuda_time_total, count (clgrad's "
                                 f"profiler records no memory)")
            events.sort(key=lambda e: getattr(e, attr), reverse=True)
        has_device = any(e.self_device_time_total > 0 for e in events)
        has_shapes = any(e.input_shapes for e in events)
        name_w = max(len(e.key) for e in events) + 4
        if max_name_column_width is not None:
            name_w = min(name_w, max_name_column_width)
        shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
        if max_shapes_column_width is not None:
            shapes_w = min(shapes_w, max_shapes_column_width)
        dev = (self._use_device or "cuda").upper()
        headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if has_device:
            headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
        headers.append("# of Calls")
        widths = [name_w] + [12] * (len(headers) - 1)
        if has_shapes:
            headers.append("Input Shapes")
            widths.append(shapes_w)
        row_format = "".join("{: >" + str(w) + "}  " for w in widths)
        sep = "".join("-" * w + "  " for w in widths)
        line_length = sum(w + 2 for w in widths) - 2

        def fmt(us):
            if time_unit == "s":
                return f"{us / 1e6:.3f}s"
            if time_unit == "ms":
                return f"{us / 1e3:.3f}ms"
            if time_unit == "us":
                return f"{us:.3f}us"
            return _format_time(us)

        self_total = sum(e.self_cpu_time_total for e in events)
        self_dev_total = sum(e.self_device_time_total for e in events)
        out = []
        if header is not None:
            out += ["=" * line_length, header]
        if top_level_events_only:
            out += ["=" * line_length, "This report only display top-level ops statistics"]
        out += [sep, row_format.format(*headers), sep]
        shown = 0
        for e in events:
            if shown == row_limit:
                break
            if top_level_events_only and e.cpu_parent is not None:
                continue
            shown += 1
            name = e.key
            if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
                name = name[:max_name_column_width - 3] + "..."
            row = [name, _format_time_share(e.self_cpu_time_total, self_total),
                   fmt(e.self_cpu_time_total),
                   _format_time_share(e.cpu_time_total, self_total), fmt(e.cpu_time_total),
                   fmt(e.cpu_time)]
            if has_device:
                row += [fmt(e.self_device_time_total),
                        _format_time_share(e.self_device_time_total, self_dev_total),
                        fmt(e.device_time_total), fmt(e.device_time)]
            row.append(e.count)
            if has_shapes:
                row.append(str(e.input_shapes)[:shapes_w])
            out.append(row_format.format(*row))
        out += [sep, f"Self CPU time total: {fmt(self_total)}"]
        if has_device:
            out.append(f"Self {dev} time total: {fmt(self_dev_total)}")
        return "".join(line + "\n" for line in out)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path: str) -> None:
        """Write the events (FunctionEvents) as Chrome trace JSON (``chrome://tracing``,
        Perfetto): ``{"traceEvents": [...]}``, one complete event ("ph": "X") per call with
        ``ts``/``dur`` in microseconds since the profile started, ``pid`` the process,
        ``tid`` the thread, ``cat`` "cpu_op" or "user_annotation", ``args`` the input shapes
        ("Input Dims") and, with CUDA activity, "device dur" (us). A path ending in ``.gz``
        is written gzip-compressed.

        Raises:  TypeError when the list holds averages (key_averages()), which have no times.
        """
        pid = os.getpid()
        trace = []
        for e in self:
            if not isinstance(e, FunctionEvent):
                raise TypeError("export_chrome_trace: the list holds FunctionEventAvg "
                                "(key_averages()), not FunctionEvents (profile.events())")
            args = {}
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            if e._devices is not None:
                args["device dur"] = e.device_time_total
            trace.append({"ph": "X", "cat": e.kind, "name": e.trace_name, "pid": pid,
                          "tid": e.thread, "ts": (e.start_ns - self._trace_start_ns) / 1e3,
                          "dur": e.cpu_time_total, "args": args})
        data = json.dumps({"schemaVersion": 1, "traceEvents": trace,
                           "displayTimeUnit": "ms"}).encode()
        if str(path).endswith(".gz"):
            data = gzip.compress(data)
        with open(path, "wb") as f:
            f.write(data)
