"""The profiler's schedule: activities, the step actions and PyTorch's ``schedule`` rule,
and ``tensorboard_trace_handler`` (see clgrad/profiler/__init__.py)."""
from __future__ import annotations

import enum
import os
import time
import warnings


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
