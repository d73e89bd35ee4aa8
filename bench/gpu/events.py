"""Device time from OpenCL profiling events, for the GPU benches (kernel_profile.py,
bandwidth.py, bn_split.py).

    rec = events.Recorder(dev)   # the device's queue swapped for a profiling one
    rec.clear(); step(); clgrad.synchronize(); rec.ms()   # the kernels' summed device time
    rec.stop()                   # the runtime's enqueue as before

The runtime's enqueue (clgrad/runtime/device.py ``_enqueue``) is wrapped to keep each
launch's (kernel name, event); a kernel's device time is its event's end - start (OpenCL's own
clock, no host round trip). Importing this module sets CLGRAD_ENQUEUE=pyopencl: the NULL-event
ctypes enqueue would bypass the wrapper and the swapped queue.
"""
import os
from collections import defaultdict

os.environ["CLGRAD_ENQUEUE"] = "pyopencl"

import pyopencl as cl  # noqa: E402

from clgrad.runtime import device as rd  # noqa: E402


class Recorder:
    """The launches' events on ``dev`` from now on (see the module doc)."""

    def __init__(self, dev):
        dev.queue.finish()
        dev.queue = cl.CommandQueue(dev.context, dev.cl_device,
                                    properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.launches = []
        self._orig = orig = rd._enqueue

        def enqueue(queue, kernel, *a):
            ev = orig(queue, kernel, *a)
            if ev is not None:
                self.launches.append((kernel.function_name, ev))
            return ev
        rd._enqueue = enqueue

    def clear(self):
        self.launches.clear()

    def ms(self) -> float:
        """The recorded kernels' summed device time, ms (synchronise first)."""
        return sum(e.profile.end - e.profile.start for _, e in self.launches) * 1e-6

    def per_kernel(self) -> tuple:
        """({kernel name: seconds}, {kernel name: launches}) of the recorded launches."""
        times, counts = defaultdict(float), defaultdict(int)
        for name, e in self.launches:
            times[name] += (e.profile.end - e.profile.start) * 1e-9
            counts[name] += 1
        return times, counts

    def stop(self):
        rd._enqueue = self._orig
