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
import sys
import warnings

from clgrad.profiler import _recording as _rec
from clgrad.profiler._events import EventList, FunctionEvent, FunctionEventAvg
from clgrad.profiler._schedule import (ProfilerAction, ProfilerActivity, _default_schedule_fn,
                                       schedule, supported_activities,
                                       tensorboard_trace_handler)

__all__ = ["profile", "record_function", "schedule", "ProfilerActivity", "ProfilerAction",
           "tensorboard_trace_handler", "supported_activities", "EventList",
           "FunctionEvent", "FunctionEventAvg"]


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
        s = _rec._RECORDING
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
        self._session = _rec._Session(self.record_shapes, self.use_device is not None)

    def start_trace(self):
        """Record from now on into the prepared trace."""
        if self._session is None:
            self.prepare_trace()
        with _rec._LOCK:
            if _rec._RECORDING is not None and _rec._RECORDING is not self._session:
                raise RuntimeError("profile: another profiler is already recording (clgrad "
                                   "records one profile at a time)")
            _rec._RECORDING = self._session

    def stop_trace(self):
        """Stop recording; the trace's events become ``events()``'s."""
        with _rec._LOCK:
            if _rec._RECORDING is self._session:
                _rec._RECORDING = None
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
        with _rec._LOCK:
            if _rec._PATCHED is not None:
                raise RuntimeError("profile: another profiler is already enabled (clgrad "
                                   "records one profile at a time)")
            _rec._PATCHED = self
        self._saved = _rec._patch()
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self):
        """Leave the profile: end the step and the trace, restore the faces."""
        try:
            if self.record_steps and self.step_rec_fn is not None:
                self.step_rec_fn.__exit__(None, None, None)
                self.step_rec_fn = None
            self._transit_action(self.current_action, None)
        finally:
            if self._saved is not None:
                _rec._unpatch(self._saved)
                self._saved = None
            with _rec._LOCK:
                if _rec._PATCHED is self:
                    _rec._PATCHED = None

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
