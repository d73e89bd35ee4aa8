"""``torch.cuda``'s streams and events on OpenCL: ``Stream``, ``Event``, ``current_stream``,
``default_stream``, ``set_stream``, ``stream`` and ``StreamContext`` (clgrad.cuda binds them).

One queue per device (deliberately different from PyTorch, README): each clgrad device has one
in-order OpenCL command queue, and every Stream of a device is that queue. Work issued "on" a
side stream runs in issue order, after everything issued before it on any stream of the
device: the results are PyTorch's for a program that synchronises its streams correctly (and
also for one that forgot to), but nothing overlaps. So waiting on one device
(``Stream.wait_event``, ``wait_stream``, ``Event.wait``) has nothing to do; across two
devices (two OpenCL contexts: a queue cannot wait for another context's event) the host
waits for the event instead, which orders all later work on every device after it.

Streams are still told apart, as PyTorch's: ``Stream()`` makes a new one (``stream_id``
counts up, the default stream's is 0), ``current_stream()`` is per thread and device, and
``with stream(s):`` makes ``s`` current in its block, so programs that compare or pass
streams run unchanged. Priorities: the range is (0, 0), so every priority maps to 0 (as
PyTorch maps one outside its range to the nearest valid one).
"""
from __future__ import annotations

import itertools
import threading
import time
import weakref

from clgrad._device import _CURRENT_GPU, device as _torch_device, of_runtime, resolve
from clgrad.capture import CaptureError, is_current_stream_capturing
from clgrad.runtime.markers import Marker

__all__ = ["Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream",
           "set_stream"]

QUERY_PATIENCE_S = 1e-3  # how long Stream.query waits for its marker (see it)
_IDS = itertools.count(1)  # stream_id of the next new Stream (the default streams have 0)
_DEFAULT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Device -> its default
_LOCAL = threading.local()  # .current: {Device: the thread's current Stream there}


def _gpu_of(dev, what: str):
    """The runtime Device of GPU ``dev`` (None or a negative int: the current GPU).

    Raises:  ValueError for a device that is not a GPU; DeviceError if there is no such GPU"""
    if dev is None or (isinstance(dev, int) and not isinstance(dev, bool) and dev < 0):
        return resolve("cuda")
    if isinstance(dev, int) and not isinstance(dev, bool):
        dev = _torch_device("cuda", dev)
    rt = resolve(dev)  # ("cpu" names a GPU where no OpenCL CPU device exists: refused too)
    asked = _torch_device(dev)
    if rt.type != "cuda" or asked.type == "cpu":
        raise ValueError(f"{what}: expected a cuda device (an OpenCL GPU), but got: "
                         f"{asked if asked.type == 'cpu' else of_runtime(rt)}")
    return rt


class Stream:
    """``torch.cuda.Stream(device=None, priority=0)``: a stream of GPU ``device`` (default: the
    current one); here the device's one in-order queue (module doc).

    Attributes: ``device``, ``device_index``, ``stream_id`` (0 for the default stream),
    ``priority`` (always 0).
    Raises:  DeviceError without an OpenCL GPU; ValueError for a CPU device; TypeError for a
             priority that is not an int"""

    def __init__(self, device=None, priority: int = 0):
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"Stream(priority): expected an int, got "
                            f"{type(priority).__name__}")
        self._set(_gpu_of(device, "Stream"), next(_IDS))

    def _set(self, dev, stream_id: int):
        self._dev, self.stream_id, self.priority = dev, stream_id, 0
        self._contexts = []  # those of ``with stream:`` blocks open now (innermost last)

    @staticmethod
    def priority_range() -> tuple:
        """(0, 0): one priority, 0 (module doc)."""
        return (0, 0)

    @property
    def device(self):
        """The stream's ``clgrad.device`` (type 'cuda')."""
        return of_runtime(self._dev)

    @property
    def device_index(self) -> int:
        return self._dev.index

    def query(self) -> bool:
        """True once all work issued to the stream has finished (here: all work issued to its
        device, one queue). Asks with a new marker, given up to QUERY_PATIENCE_S to complete
        (on an idle queue the runtime completes one in tens of microseconds), so an idle
        stream reads True; False: work was still running then.

        Raises:  RuntimeError if the OpenCL runtime reports that work failed"""
        marker = Marker(self._dev, False)
        until = time.perf_counter() + QUERY_PATIENCE_S
        while not marker.done():
            if time.perf_counter() > until:
                return False
            time.sleep(0)  # let other threads run
        return True

    def synchronize(self) -> None:
        """Wait until all work issued to the stream (here: to its device) has finished."""
        self._dev.synchronize()

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for ``event`` (``event.wait(self)``)."""
        event.wait(self)

    def wait_stream(self, stream: Stream) -> None:
        """Make later work on this stream wait for the work issued to ``stream`` so far: on
        the same device already so (one in-order queue); on another device the host waits.

        Raises:  TypeError if ``stream`` is not a Stream"""
        _as_stream("wait_stream", stream)
        if stream._dev is not self._dev:
            self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new ``Event()`` when None) on this stream and return it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __enter__(self):
        """``with s:`` as ``with clgrad.cuda.stream(s):``."""
        ctx = StreamContext(self)
        ctx.__enter__()
        self._contexts.append(ctx)
        return self

    def __exit__(self, *exc):
        self._contexts.pop().__exit__(*exc)

    def __repr__(self):
        return f"<clgrad.cuda.Stream device={self.device} stream_id={self.stream_id}>"


def _as_stream(op: str, stream) -> Stream:
    """``stream`` itself. Raises TypeError if it is not a Stream."""
    if not isinstance(stream, Stream):
        raise TypeError(f"{op}: expected a clgrad.cuda.Stream, got {type(stream).__name__}")
    return stream


def _stream_arg(op: str, stream):
    """``stream``, or ``current_stream()`` for None. Raises TypeError for another type."""
    return current_stream() if stream is None else _as_stream(op, stream)


class Event:
    """``torch.cuda.Event(enable_timing=False, blocking=False, interprocess=False,
    external=False)``: a marker on a GPU's queue (clgrad/runtime/markers.py), made when
    recorded (PyTorch's are created lazily too: constructing one needs no GPU).

    ``blocking`` (how CUDA's synchronize waits) and ``external`` (graph capture) are accepted
    and change nothing: ``synchronize`` blocks the thread in the OpenCL runtime's wait, and
    recording inside a graph capture raises.
    Timing (``enable_timing=True``; see ``elapsed_time``), deliberately different from
    PyTorch: clgrad's device queues are made without OpenCL's profiling flag, so ``record``
    of a timing event waits until the work issued before it has finished and reads the host
    clock then (as ``synchronize()`` followed by ``time.perf_counter()``). The usual idiom
    (``start.record(); work; end.record(); synchronize()``) measures what CUDA's events do;
    a program that records timing events between asynchronous steps loses the overlap of
    host and device work at each record. On a queue made with profiling (the GPU benches'
    bench/gpu/events.py) ``record`` does not wait and the device's clock is read instead.
    Raises:  NotImplementedError for ``interprocess=True`` (OpenCL events belong to one
             process's context)"""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False, external: bool = False):
        if interprocess:
            raise NotImplementedError("Event(interprocess=True): clgrad's events cannot be "
                                      "shared between processes (an OpenCL event belongs to "
                                      "one process's context)")
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = False
        self._marker = None

    @property
    def device(self):
        """The ``clgrad.device`` the event was recorded on; None before its first record."""
        return None if self._marker is None else of_runtime(self._marker.device)

    def record(self, stream: Stream | None = None) -> None:
        """Mark the current end of ``stream``'s work (default: ``current_stream()``, of the
        current GPU); recording again moves the mark. A timing event's record waits for
        that work to finish (class doc); other events' records return at once.

        Raises:  DeviceError without an OpenCL GPU; TypeError if ``stream`` is not a Stream;
                 RuntimeError if the event was recorded on another device before (PyTorch's
                 "Event device ... does not match recording stream's device ..."); CaptureError
                 (a RuntimeError) inside a graph capture, where nothing reaches the device"""
        stream = _stream_arg("Event.record", stream)
        if self._marker is not None and self._marker.device is not stream._dev:
            raise RuntimeError(f"Event device {self.device} does not match recording "
                               f"stream's device {stream.device}.")
        if is_current_stream_capturing():
            raise CaptureError("Event.record inside a graph capture: the capture runs "
                               "nothing on the device, so the mark would not sit between the "
                               "captured kernels; record outside the captured region")
        self._marker = Marker(stream._dev, self.enable_timing)

    def query(self) -> bool:
        """True once all work before the last ``record`` has finished; True if never recorded
        (as PyTorch).

        Raises:  RuntimeError if the OpenCL runtime reports that work failed"""
        return self._marker is None or self._marker.done()

    def synchronize(self) -> None:
        """Wait until all work before the last ``record`` has finished (nothing to wait for
        if never recorded)."""
        if self._marker is not None:
            self._marker.wait()

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on ``stream`` (default: ``current_stream()``) wait for this event.
        On the event's device that holds already (one in-order queue); on another device the
        host waits for the event here (module doc). Nothing for an event never recorded.

        Raises:  DeviceError without an OpenCL GPU (no current stream); TypeError if
                 ``stream`` is not a Stream"""
        stream = _stream_arg("Event.wait", stream)
        if self._marker is not None and self._marker.device is not stream._dev:
            self._marker.wait()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds (a float) from this event's completion to ``end_event``'s: the
        difference of the host clock's readings when each mark was seen complete (accurate
        to the OpenCL runtime's wake-up latency, microseconds: clgrad/runtime/markers.py),
        or of the device's profiling timestamps (ns) where the queue has profiling.
        Negative when ``end_event`` was recorded first, as CUDA's.

        Raises:  TypeError if ``end_event`` is not an Event; ValueError unless both were made
                 with ``enable_timing=True`` ("Both events must be created with argument
                 'enable_timing=True'.") or unless both were recorded ("Both events must be
                 recorded before calculating elapsed time."), as PyTorch; RuntimeError unless
                 both completed ("Both events must be completed before calculating elapsed
                 time.": call ``synchronize()`` first) or if they were recorded on different
                 devices or clocks"""
        if not isinstance(end_event, Event):
            raise TypeError(f"elapsed_time: expected a clgrad.cuda.Event, got "
                            f"{type(end_event).__name__}")
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        start, end = self._marker, end_event._marker
        if start is None or end is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if not (start.done() and end.done()):
            raise RuntimeError("Both events must be completed before calculating elapsed "
                               "time.")
        if start.device is not end.device or start.clock != end.clock:
            raise RuntimeError(f"elapsed_time: the events were recorded on different devices "
                               f"or clocks ({self.device}, {start.clock} clock and "
                               f"{end_event.device}, {end.clock} clock)")
        return (end.time_ns() - start.time_ns()) / 1e6

    def __repr__(self):
        if self._marker is None:
            return "<clgrad.cuda.Event uninitialized>"
        return f"<clgrad.cuda.Event recorded on {self.device}>"


def default_stream(device=None) -> Stream:
    """The default stream (``stream_id`` 0) of GPU ``device`` (default: the current one).

    Raises:  DeviceError without an OpenCL GPU; ValueError for a CPU device"""
    dev = _gpu_of(device, "default_stream")
    s = _DEFAULT.get(dev)
    if s is None:
        s = _DEFAULT[dev] = Stream.__new__(Stream)
        s._set(dev, 0)
    return s


def current_stream(device=None) -> Stream:
    """The calling thread's current stream of GPU ``device`` (default: the current one): the
    default stream unless ``set_stream`` or ``with stream(s):`` chose another.

    Raises:  DeviceError without an OpenCL GPU; ValueError for a CPU device"""
    dev = _gpu_of(device, "current_stream")
    s = getattr(_LOCAL, "current", {}).get(dev)
    return default_stream(dev) if s is None else s


def set_stream(stream: Stream | None) -> None:
    """Make ``stream`` the calling thread's current stream of its device, and its device the
    current GPU (as PyTorch's); nothing for None.

    Raises:  TypeError if ``stream`` is not a Stream"""
    if stream is None:
        return
    _as_stream("set_stream", stream)
    if not hasattr(_LOCAL, "current"):
        _LOCAL.current = weakref.WeakKeyDictionary()
    _LOCAL.current[stream._dev] = stream
    _CURRENT_GPU[0] = stream.device_index


class StreamContext:
    """``with StreamContext(s):`` (``with clgrad.cuda.stream(s):``): ``s`` is the current
    stream (and its device the current GPU) inside the block; the previous ones after it, as
    PyTorch's. Nothing for None."""

    def __init__(self, stream: Stream | None):
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"stream: expected a clgrad.cuda.Stream or None, got "
                            f"{type(stream).__name__}")
        self.stream = stream
        self._src_prev = self._dst_prev = None

    def __enter__(self):
        s = self.stream
        if s is None:
            return
        self._src_prev = current_stream(None)
        if self._src_prev._dev is not s._dev:
            self._dst_prev = current_stream(s._dev)
        set_stream(s)

    def __exit__(self, *exc):
        if self.stream is None:
            return
        if self._dst_prev is not None:
            set_stream(self._dst_prev)
        set_stream(self._src_prev)


def stream(stream: Stream | None) -> StreamContext:
    """``with clgrad.cuda.stream(s):`` (StreamContext)."""
    return StreamContext(stream)
