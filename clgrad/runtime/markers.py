"""Markers on a device's in-order queue, and the time of their completion (what
``clgrad.cuda.Event`` records).

A marker (``clEnqueueMarkerWithWaitList`` without a wait list) completes once every command
enqueued on the queue before it has finished (OpenCL API spec: on an in-order queue it waits
for all previously enqueued commands), whatever way those were enqueued: pyopencl's launches
with an event, the ctypes ones with a NULL event (runtime/native.py), copies, fills, replays.

Time of a timed marker, one of two clocks:

- "device": where the queue was made with ``CL_QUEUE_PROFILING_ENABLE``, the marker's own
  ``CL_PROFILING_COMMAND_END`` (the device's clock, ns). The device's queue is made without
  it (runtime/device.py); the GPU benches swap in a profiling one (bench/gpu/events.py).
- "host" otherwise: the marker is waited for at once and the host's ``perf_counter_ns`` read
  when the wait returns, so the time is the completion as the host sees it, late by the
  runtime's wake-up latency (microseconds; more if another Python thread holds the
  interpreter lock then). Waiting makes recording a timed marker block the caller until
  the work before it has finished, as a ``synchronize()`` there would.

Rejected: a relay marker on a second, profiling queue that waits for the marker's event. On
PoCL the relay ran only once the device had finished the kernels queued after the marker (a
CPU device runs commands of its queues on one pool of threads), so a timestamp could be a
whole kernel late: 2 ms measured for a region whose kernels took 40 ms.
"""
from __future__ import annotations

import time

import pyopencl as cl

__all__ = ["Marker"]

_PROFILING = cl.command_queue_properties.PROFILING_ENABLE
_COMPLETE = cl.command_execution_status.COMPLETE


class Marker:
    """A marker enqueued now on ``device``'s queue (and flushed, so that the device reaches it
    without a later command pushing it), timed when ``timed``: ``clock`` is then "device" or
    "host" (see the module doc: "host" waits for the marker here), else None.

    Raises:  pyopencl's error if the runtime refuses the marker or reports failed work."""

    __slots__ = ("device", "event", "clock", "host_ns")

    def __init__(self, device, timed: bool):
        self.device = device
        with device._lock:  # every enqueue of the device holds its lock (runtime/device.py)
            queue = device.queue
            self.event = cl.enqueue_marker(queue)
            queue.flush()
            profiled = queue.properties & _PROFILING
        self.clock, self.host_ns = None, None
        if timed and profiled:
            self.clock = "device"
        elif timed:
            self.event.wait()  # outside the lock, as Device.copy's wait
            self.host_ns = time.perf_counter_ns()
            self.clock = "host"

    def done(self) -> bool:
        """True once every command enqueued before the marker has finished.

        Raises:  RuntimeError if the runtime reports the marker failed (a negative status: a
                 command before it failed, the device was lost)."""
        status = self.event.command_execution_status
        if status < 0:
            raise RuntimeError(f"the OpenCL marker on {self.device.name!r} failed with status "
                               f"{status} (a command enqueued before it failed)")
        return status == _COMPLETE

    def wait(self) -> None:
        """Block until the marker completed."""
        self.event.wait()

    def time_ns(self) -> int:
        """The marker's completion on its ``clock``, ns (waits for the marker first). Only for
        a timed marker; compare only times of the same clock and device."""
        if self.clock == "host":
            return self.host_ns
        self.event.wait()
        return self.event.get_profiling_info(cl.profiling_info.END)
