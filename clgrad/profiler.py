"""PyTorch's ``torch.profiler``: ``profile``, ``record_function``, ``schedule``,
``ProfilerActivity``, ``ProfilerAction``, ``tensorboard_trace_handler``.

What is recorded: one event per call of a public op (``clgrad.<op>``,
``clgrad.nn.functional.<op>``, ``Tensor.<op>`` methods, their in-place variants and Python's
operators: every name of the op table, clgrad/ops/registry.py), one per ``record_function``
block, one per profiler step (``ProfilerStep#N`` under a schedule), and one per autograd Node
the backward engine runs (``autograd::engine::evaluate_function: MulBackward0``, as
PyTorch's). An op's event is named ``aten::<name as called>`` (``x + y`` and ``x.add(y)``:
``aten::add``; ``x += y``: ``aten::add_``; ``x & y``: ``aten::__and__``), PyTorch's ATen
name for the top-level op in the cases compared in tests/test_profiler.py; where PyTorch's
ATen op has another name than the Python function it is mapped (``_ATEN``:
``F.cross_entropy`` -> ``aten::cross_entropy_loss``). An op that calls other public ops
(through ``F.*`` or a Tensor method) gets them as nested events, as PyTorch's does; the ATen
ops PyTorch dispatches below the top level (``aten::empty``, ``aten::addmm`` under
``aten::linear``) are not clgrad's and do not appear.

How (deliberately different from PyTorch: README): while a ``profile`` is entered, the faces'
attributes are replaced by recording wrappers and restored when it exits, so code outside a
profile runs exactly the functions it ran before (no check at all on the op path). Calls
through a reference taken before the profile started (``from clgrad import relu`` at import
time, then ``relu(x)``) are not seen; ``torch.relu(x)``, ``F.relu(x)``, ``x.relu()`` and
``nn.ReLU`` (which calls ``F.relu``) are. Only one profile records at a time (a second one
entered inside raises RuntimeError, as PyTorch's "profiler already enabled").

Times are host wall-clock microseconds (``time.perf_counter_ns``), as PyTorch's CPU times:
``cpu_time_total`` from the op's entry to its return, ``self_cpu_time_total`` that minus
its nested events' totals. ``ProfilerActivity.CUDA`` means the OpenCL device: clgrad's
queues are not created with OpenCL's profiling flag and many launches are enqueued natively
without an event, so there are no per-kernel times; instead each op synchronizes the queues
of its tensors' devices at its entry and after it returns, and its device time
(``device_time_total``, the table's "CUDA" columns) is the span from the entry until its
kernels finished: an upper bound of the op's kernel time that includes the host's launch
work. That synchronizing changes the program's timing (as ``CUDA_LAUNCH_BLOCKING=1``
would), and a nested op's wait for its kernels counts as that op's time in its parent's
accounting (the parent's self time excludes it). Without CUDA in ``activities`` nothing is
synchronized and the CPU times are the host's launch times only (the kernels run
asynchronously, as with PyTorch's CUDA).

Not supported: ``profile_memory=True``, ``with_flops=True``, ``with_modules=True``,
``export_stacks`` and ``group_by_stack_n`` raise NotImplementedError; ``with_stack=True``
is accepted and records no stacks (the table and trace have no source column).
"""
from __future__ import annotations

import contextlib
import enum
import functools
import gzip
import json
import os
import sys
import threading
import time
import warnings
from typing import NamedTuple

from clgrad import runtime
from clgrad.autograd import graph as _graph
from clgrad.nn import functional as _F
from clgrad.ops import registry as _registry
from clgrad.tensor import Tensor

__all__ = ["profile", "record_function", "schedule", "ProfilerActivity", "ProfilerAction",
           "tensorboard_trace_handler", "supported_activities", "EventList",
           "FunctionEvent", "FunctionEventAvg"]


class ProfilerActivity(enum.Enum):
    """PyTorch's activity groups: ``CPU`` (host times of ops) and ``CUDA`` (the OpenCL
    device's times, measured by synchronizing: see the module's docstring)."""
    CPU = 0
    CUDA = 2


def supported_activities() -> set:
    """The activities ``profile`` takes: CPU and CUDA (the OpenCL device)."""
    return {ProfilerActivity.CPU, ProfilerActivity.CUDA}


class ProfilerAction(enum.Enum):
    """What the profiler does in a step (PyTorch's names and order)."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """A step -> ProfilerAction function, PyTorch's ``torch.profiler.schedule`` (same formula,
    torch/profiler/profiler.py): skip ``skip_first`` steps, then cycles of ``wait`` NONE,
    ``warmup`` WARMUP and ``active`` recorded steps (the last one RECORD_AND_SAVE: the trace
    is handed to ``on_trace_ready``), ``repeat`` cycles (0: no end). ``skip_first_wait``
    non-zero skips the first cycle's wait.

    Raises:  AssertionError (as PyTorch) for wait < 0, warmup < 0, active <= 0, repeat < 0 or
             skip_first < 0; the returned function AssertionError for a negative step. Warns
             when ``warmup`` is 0, as PyTorch does.
    """
    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return (ProfilerAction.RECORD if mod_step < num_steps - 1
                else ProfilerAction.RECORD_AND_SAVE)

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup="
            f"{warmup} (need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
            f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results",
                      stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False, use_python_export: bool = False):
    """An ``on_trace_ready`` handler writing each trace as Chrome trace JSON to
    ``dir_name/<worker_name>.<time_ns>.pt.trace.json`` (``.gz`` with ``use_gzip``), the file
    names PyTorch's handler writes (worker_name: ``<hostname>_<pid>`` by default). The JSON
    is ``export_chrome_trace``'s: the TensorBoard profiler plugin's views that need Kineto's
    device and memory records have nothing to show. ``use_python_export`` is accepted (there
    is one exporter).

    Raises:  RuntimeError when ``dir_name`` cannot be created (as PyTorch).
    """
    def handler_fn(prof) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            import socket
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        if use_gzip:
            file_name += ".gz"
        prof.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn


# -- events ------------------------------------------------------------------------------------

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


# -- recording ---------------------------------------------------------------------------------

_RECORDING = None  # the _Session recording now (read by every wrapper), or None
_PATCHED = None    # the profile whose wrappers are in the faces now, or None
_LOCK = threading.Lock()


def _shape_of(v):
    if isinstance(v, Tensor):
        return list(v._shape)
    if isinstance(v, (list, tuple)) and v and all(isinstance(t, Tensor) for t in v):
        return [list(t._shape) for t in v]
    return []


def _tensor_devices(values, into: set, depth: int = 3):
    """``into`` plus the devices of the tensors in ``values`` (lists and tuples searched
    ``depth`` levels deep: an op's tuple result, the engine's (edge, gradient) pairs)."""
    for v in values:
        if isinstance(v, Tensor):
            into.add(v._storage.device)
        elif depth > 1 and isinstance(v, (list, tuple)):
            _tensor_devices(v, into, depth - 1)
    return into


class _Session:
    """The events of one trace (start_trace .. stop_trace) and each thread's open events."""

    def __init__(self, record_shapes, sync):
        self.record_shapes, self.sync = record_shapes, sync
        self.events, self.stacks = [], {}
        self.start_ns = time.perf_counter_ns()
        self._ids = iter(range(sys.maxsize))

    def push(self, name, args, kwargs, kind="cpu_op"):
        tid = threading.get_ident()
        stack = self.stacks.get(tid)
        if stack is None:
            stack = self.stacks.setdefault(tid, [])
        shapes = []
        if self.record_shapes and kind == "cpu_op":
            shapes = [_shape_of(a) for a in args] + [_shape_of(v) for v in kwargs.values()]
        devices = None
        if self.sync and kind == "cpu_op":
            devices = _tensor_devices(kwargs.values(), _tensor_devices(args, set()))
            for d in devices or (runtime.default_device(),):
                d.synchronize()
        ev = FunctionEvent(next(self._ids), name, tid, time.perf_counter_ns(), shapes,
                           stack[-1] if stack else None, kind)
        ev._devices = devices
        stack.append(ev)
        return ev

    def pop(self, ev, result=None):
        end = time.perf_counter_ns()
        sync_end = end
        if ev._devices is not None:
            devices = _tensor_devices((result,), ev._devices)
            for d in devices or (runtime.default_device(),):
                d.synchronize()
            sync_end = time.perf_counter_ns()
        stack = self.stacks.get(ev.thread)
        if stack and stack[-1] is ev:
            stack.pop()
        elif stack and ev in stack:  # a block left out of order (an exception in between)
            stack.remove(ev)
        ev.end_ns, ev.sync_end_ns = end, sync_end
        parent = ev.cpu_parent
        if parent is not None:
            parent._child_ns += sync_end - ev.start_ns
            parent._child_dev_ns += sync_end - ev.start_ns
            parent.cpu_children.append(ev)
        self.events.append(ev)


def _op_wrapper(fn, name):
    """``fn`` recording an event named ``name`` while a profile records; otherwise one global
    read more than ``fn`` (only while a profile is entered: outside, the faces hold ``fn``).
    A function with an ``inplace`` parameter records ``name_`` when it is true
    (``F.relu(x, inplace=True)``: ``aten::relu_``, as PyTorch's)."""
    at = _inplace_position(fn)
    inplace_name = name + "_"

    @functools.wraps(fn)
    def recorded(*args, **kwargs):
        s = _RECORDING
        if s is None:
            return fn(*args, **kwargs)
        n = name
        if at is not None and (args[at] if len(args) > at else kwargs.get("inplace")):
            n = inplace_name
        ev = s.push(n, args, kwargs)
        result = None
        try:
            result = fn(*args, **kwargs)
            return result
        finally:
            s.pop(ev, result)
    return recorded


_INPLACE_AT = {}  # id(function) -> (function, position of its inplace parameter or None)


def _inplace_position(fn):
    got = _INPLACE_AT.get(id(fn))
    if got is None or got[0] is not fn:
        import inspect
        try:
            params = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            params = []
        got = _INPLACE_AT[id(fn)] = (fn, params.index("inplace") if "inplace" in params
                                     else None)
    return got[1]


def _apply_wrapper(apply):
    """The engine's per-Node step recording ``autograd::engine::evaluate_function: <grad_fn
    name>`` (PyTorch's event name) around each Node's backward."""
    @functools.wraps(apply)
    def recorded(node, g, *rest):
        s = _RECORDING
        if s is None:
            return apply(node, g, *rest)
        ev = s.push("autograd::engine::evaluate_function: "
                    + _graph.grad_fn_name(node, len(g._shape) if isinstance(g, Tensor) else 0),
                    (), {}, "cpu_op")
        result = None
        try:
            result = apply(node, g, *rest)
            return result
        finally:
            s.pop(ev, result)
    return recorded


# PyTorch's ATen op of a public name where the two differ (checked with PyTorch 2.14's
# profiler in tests/test_profiler.py); every other name is aten::<name>
_ATEN = {"cross_entropy": "cross_entropy_loss", "nll_loss": "nll_loss_nd"}
# the operators PyTorch records under their dunder name (x & y: aten::__and__)
_DUNDER_ATEN = ("and", "or", "xor", "lshift", "rshift")


def _aten(name: str) -> str:
    return "aten::" + _ATEN.get(name, name)


def _tensor_names() -> dict:
    """{Tensor attribute: event name}: the table's methods, in-place variants, operators."""
    names = {n: _aten(n) for n in _registry.methods()}
    names.update((n, _aten(n)) for n, _, _ in _registry.inplace_variants())
    for row in _registry.OPS:
        o = row.operator
        if not o:
            continue
        bit = o in _DUNDER_ATEN
        names[f"__{o}__"] = f"aten::__{o}__" if bit else _aten(row.name)
        if row.reflected:  # 2 - x: aten::rsub, as PyTorch's; 2 & x: aten::bitwise_and
            names[f"__r{o}__"] = _aten("rsub" if o == "sub" else row.name)
        if row.augmented:
            names[f"__i{o}__"] = f"aten::__i{o}__" if bit else _aten(row.name + "_")
    return names


def _targets() -> list:
    """[(owner, attribute, event name)] of every face attribute a profile wraps: clgrad's and
    nn.functional's ops (the table's names), Tensor's methods and operators, and each table
    function in the module defining it (``clgrad.ops.norm.batch_norm``, which nn.BatchNorm2d
    calls; internal calls through the module then show as nested events)."""
    clgrad = sys.modules["clgrad"]
    out = []
    for module, face in ((clgrad, _registry.TORCH), (_F, _registry.FUNCTIONAL)):
        ns = vars(module)
        out += [(module, n, _aten(n)) for n in _registry.names(face) if callable(ns.get(n))]
    for n, event in _tensor_names().items():
        fn = Tensor.__dict__.get(n)
        if callable(fn) and not isinstance(fn, (type, staticmethod, classmethod, property)):
            out.append((Tensor, n, event))
    seen = set()
    for row in _registry.OPS:
        fn = row.fn
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        key = (getattr(fn, "__module__", None), getattr(fn, "__name__", None))
        if module is not None and key not in seen and vars(module).get(key[1]) is fn:
            seen.add(key)
            out.append((module, key[1], _aten(row.name)))
    return out


def _module_classes():
    """Every nn.Module subclass defined so far (their class attributes may hold an
    nn.functional function: ``ReLU6._fn = F.relu6``)."""
    from clgrad.nn.module import Module
    todo, out = [Module], []
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return out


def _patch():
    saved, wrapped = [], {}
    done = set()
    for owner, n, event in _targets():
        if (id(owner), n) in done:
            continue
        done.add((id(owner), n))
        fn = vars(owner)[n]
        saved.append((owner, n, fn))
        w = _op_wrapper(fn, event)
        wrapped.setdefault(id(fn), (fn, w))
        setattr(owner, n, w)
    for cls in _module_classes():  # class attributes holding a wrapped function
        for n, v in list(vars(cls).items()):
            got = wrapped.get(id(v)) if callable(v) and not isinstance(v, type) else None
            if got is not None and got[0] is v:
                saved.append((cls, n, v))
                setattr(cls, n, got[1])
    apply = getattr(_graph, "_apply", None)
    if apply is not None:
        saved.append((_graph, "_apply", apply))
        _graph._apply = _apply_wrapper(apply)
    return saved


def _unpatch(saved):
    for owner, n, fn in reversed(saved):
        setattr(owner, n, fn)


class record_function(contextlib.ContextDecorator):
    """A named block in the profile (``with record_function("model_inference"):`` or
    ``@record_function("step")`` on a function): an event of kind "user_annotation" whose
    total time is the block's and whose self time excludes the ops inside. Outside a
    recording profile it records nothing. ``args``: accepted, as PyTorch's (a string kept
    with the event's name nowhere else)."""

    def __init__(self, name: str, args: str | None = None):
        if not isinstance(name, str):
            raise TypeError(f"record_function(name): expected a str, got "
                            f"{type(name).__name__}")
        self.name, self.args = name, args
        self._open = None

    def _recreate_cm(self):  # a decorated function's calls (any thread) each get their own
        return record_function(self.name, self.args)

    def __enter__(self):
        s = _RECORDING
        self._open = (s, s.push(self.name, (), {}, "user_annotation")) if s is not None \
            else None
        return self

    def __exit__(self, *exc):
        if self._open is not None:
            s, ev = self._open
            self._open = None
            s.pop(ev)
        return False


class profile:
    """PyTorch's profiler context manager (``torch.profiler.profile``).

    Args:
        activities: iterable of ProfilerActivity; default ``[CPU]`` (PyTorch's default adds
            CUDA when a GPU exists: here CUDA synchronizes each op, so it is asked for only
            explicitly). CUDA: the OpenCL device's times (module docstring).
        schedule: a step -> ProfilerAction callable (``schedule(...)``); without one every
            step records (``step()`` then only counts) and the trace is handed to
            ``on_trace_ready`` when the profile exits.
        on_trace_ready: called with this profile at each RECORD_AND_SAVE step's end (and at
            exit when recording).
        record_shapes: record each op's argument shapes (``key_averages(
            group_by_input_shape=True)``, the table's Input Shapes, the trace's "Input Dims").
            The shapes are those of the arguments as passed in Python (PyTorch's list the
            ATen op's full argument list, defaults included).
        with_stack: accepted; no stacks are recorded (README "Deliberately different").
        acc_events: keep the events of every cycle (PyTorch's), not just the last one.

    Raises:  NotImplementedError for profile_memory=True, with_flops=True, with_modules=True,
             an execution_trace_observer or experimental_config; ValueError for an activity
             other than CPU and CUDA; RuntimeError when another profile is recording.

    After the block (or ``stop()``): ``events()`` (EventList of FunctionEvent),
    ``key_averages(group_by_input_shape=False)`` (EventList of FunctionEventAvg with
    ``table``), ``export_chrome_trace(path)``; ``step_num`` and ``current_action``.
    """

    def __init__(self, activities=None, *, schedule=None, on_trace_ready=None,
                 record_shapes: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None,
                 execution_trace_observer=None, acc_events: bool = False, use_cuda=None,
                 custom_trace_id_callback=None):
        for flag, value in (("profile_memory", profile_memory), ("with_flops", with_flops),
                            ("with_modules", with_modules)):
            if value:
                raise NotImplementedError(
                    f"profile({flag}=True): clgrad's profiler records op times and shapes "
                    f"only (README \"Deliberately different from PyTorch\"); pass "
                    f"{flag}=False")
        for name, value in (("experimental_config", experimental_config),
                            ("execution_trace_observer", execution_trace_observer)):
            if value is not None:
                raise NotImplementedError(f"profile({name}=...): not supported by clgrad's "
                                          f"profiler; pass None")
        acts = [ProfilerActivity.CPU] if activities is None else list(activities)
        if use_cuda:
            acts.append(ProfilerActivity.CUDA)
        for a in acts:
            if a not in (ProfilerActivity.CPU, ProfilerActivity.CUDA):
                raise ValueError(f"profile(activities=...): expected ProfilerActivity.CPU or "
                                 f"ProfilerActivity.CUDA (the OpenCL device), got {a!r}")
        self.activities = set(acts)
        self.record_shapes, self.with_stack, self.acc_events = (
            bool(record_shapes), bool(with_stack), bool(acc_events))
        self.profile_memory = self.with_flops = self.with_modules = False
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.on_trace_ready = on_trace_ready
        self.custom_trace_id_callback = custom_trace_id_callback
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        self.use_device = "cuda" if ProfilerActivity.CUDA in self.activities else None
        self._session = None    # prepared (warmup or recording)
        self._finished = None   # the last stopped trace's events
        self._accumulated = []
        self._saved = None

    # -- PyTorch's action machine (torch/profiler/profiler.py, profile.action_map) ------------
    def _transit_action(self, prev, cur):
        A = ProfilerAction
        prepare, start, stop, ready = (self.prepare_trace, self.start_trace, self.stop_trace,
                                       self._trace_ready)
        table = {
            (A.NONE, A.NONE): [], (A.NONE, A.WARMUP): [prepare],
            (A.NONE, A.RECORD): [prepare, start], (A.NONE, A.RECORD_AND_SAVE): [prepare, start],
            (A.WARMUP, A.NONE): [_warn("WARMUP followed by NONE"), start, stop],
            (A.WARMUP, A.WARMUP): [], (A.WARMUP, A.RECORD): [start],
            (A.WARMUP, A.RECORD_AND_SAVE): [start],
            (A.RECORD, A.NONE): [_warn("RECORD followed by NONE"), stop],
            (A.RECORD, A.WARMUP): [_warn("RECORD followed by WARMUP"), stop],
            (A.RECORD, A.RECORD): [], (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [stop, ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [stop, ready, prepare],
            (A.RECORD_AND_SAVE, A.RECORD): [stop, ready, prepare, start],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [stop, ready, prepare, start],
            (A.WARMUP, None): [start, stop], (A.RECORD, None): [stop, ready],
            (A.RECORD_AND_SAVE, None): [stop, ready], (A.NONE, None): [],
        }
        for action in table[(prev, cur)]:
            action()

    def prepare_trace(self):
        """Begin a cycle (PyTorch's warmup start): a fresh trace, not recording yet."""
        self._session = _Session(self.record_shapes, self.use_device is not None)

    def start_trace(self):
        """Record from now on into the prepared trace."""
        global _RECORDING
        if self._session is None:
            self.prepare_trace()
        with _LOCK:
            if _RECORDING is not None and _RECORDING is not self._session:
                raise RuntimeError("profile: another profiler is already recording (clgrad "
                                   "records one profile at a time)")
            _RECORDING = self._session

    def stop_trace(self):
        """Stop recording; the trace's events become ``events()``'s."""
        global _RECORDING
        with _LOCK:
            if _RECORDING is self._session:
                _RECORDING = None
        if self._session is not None:
            events = self._session.events
            events.sort(key=lambda e: e.start_ns)
            if self.acc_events:
                self._accumulated += events
                events = list(self._accumulated)
            self._finished = (events, self._session.start_ns)
        self._session = None

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def start(self):
        """Enter the profile: wrap the faces, act on step 0's action."""
        global _PATCHED
        with _LOCK:
            if _PATCHED is not None:
                raise RuntimeError("profile: another profiler is already enabled (clgrad "
                                   "records one profile at a time)")
            _PATCHED = self
        self._saved = _patch()
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        """Leave the profile: end the step and the trace, restore the faces."""
        global _PATCHED
        try:
            if self.record_steps and self.step_rec_fn is not None:
                self.step_rec_fn.__exit__(None, None, None)
                self.step_rec_fn = None
            self._transit_action(self.current_action, None)
        finally:
            if self._saved is not None:
                _unpatch(self._saved)
                self._saved = None
            with _LOCK:
                if _PATCHED is self:
                    _PATCHED = None

    def step(self):
        """Signal the start of the next step: close ``ProfilerStep#N``, act on the schedule's
        transition (PyTorch's table), open ``ProfilerStep#N+1``."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _events(self) -> EventList:
        if self._finished is None:
            raise RuntimeError("profile: no trace yet (the profile has not recorded a "
                               "cycle: leave the block or reach a RECORD_AND_SAVE step)")
        events, start = self._finished
        return EventList(events, self.use_device, start)

    def events(self) -> EventList:
        """The last trace's FunctionEvents, by start time.

        Raises:  RuntimeError before any trace was stopped.
        """
        return self._events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """``events().key_averages(...)``: one FunctionEventAvg per name (and input shapes).
        ``group_by_overload_name``: accepted (clgrad's events have no overload names)."""
        return self._events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str) -> None:
        """``events().export_chrome_trace(path)``: the last trace as Chrome trace JSON."""
        self._events().export_chrome_trace(path)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total"):
        """Raises NotImplementedError: clgrad's profiler records no stacks."""
        raise NotImplementedError("profile.export_stacks: clgrad's profiler records no stacks "
                                  "(with_stack is accepted and ignored)")


def _warn(what: str):
    def warn():
        warnings.warn(f"Incorrect schedule: {what}", stacklevel=3)
    return warn


# -- torch.autograd.profiler: the legacy face ---------------------------------------------------

class _AutogradProfile(profile):
    """``torch.autograd.profiler.profile`` (PyTorch's legacy profiler): ``profile(enabled=True,
    *, use_cuda=False, use_device=None, record_shapes=False, ...)`` over the same recording
    (``use_cuda=True`` or ``use_device`` "cuda": the CUDA activity). ``enabled=False``
    records nothing. ``function_events``, ``table(...)`` and ``self_cpu_time_total`` as the
    legacy profiler's; the rest as ``clgrad.profiler.profile``'s (same errors)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False,
                 use_device: str | None = None, record_shapes: bool = False,
                 with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False):
        acts = [ProfilerActivity.CPU]
        if use_cuda or use_device in ("cuda", "gpu"):
            acts.append(ProfilerActivity.CUDA)
        elif use_device is not None:
            raise ValueError(f"profile(use_device={use_device!r}): expected None or 'cuda' (the "
                             f"OpenCL device)")
        super().__init__(acts, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops,
                         with_modules=with_modules, experimental_config=experimental_config,
                         acc_events=acc_events)
        self.enabled = bool(enabled)

    def __enter__(self):
        if self.enabled:
            self.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.stop()
        return False

    @property
    def function_events(self) -> EventList:
        """The recorded FunctionEvents (``events()``)."""
        return self.events()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of the events' self CPU times (us)."""
        return self.events().self_cpu_time_total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False) -> str:
        """``function_events.table(...)`` (the events, not their averages: as PyTorch's)."""
        return self.events().table(sort_by, row_limit, max_src_column_width,
                                   max_name_column_width, max_shapes_column_width, header,
                                   top_level_events_only)


def _autograd_face():
    """Register ``clgrad.autograd.profiler`` (``import torch.autograd.profiler``): a module
    holding the legacy ``profile``, ``record_function`` and the event types. Made here, not in
    clgrad/autograd/ (which lies below the op table this module wraps), as clgrad's own
    ``torch.random`` is in clgrad/__init__.py."""
    import types

    from clgrad import autograd
    face = types.ModuleType("clgrad.autograd.profiler", "torch.autograd.profiler: the legacy "
                            "profiler over clgrad.profiler's recording (see clgrad.profiler).")
    face.profile, face.record_function = _AutogradProfile, record_function
    face.EventList, face.FunctionEvent, face.FunctionEventAvg = (EventList, FunctionEvent,
                                                                 FunctionEventAvg)
    face.__all__ = ["profile", "record_function", "EventList", "FunctionEvent",
                    "FunctionEventAvg"]
    sys.modules[face.__name__] = face
    autograd.profiler = face


_autograd_face()
