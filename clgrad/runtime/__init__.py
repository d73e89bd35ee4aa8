"""OpenCL device layer: runtimes, device choice, context, queue, memory, programs, launches.

Nothing here knows about tensors or ops. Programs are built once per (context, file, defines)
and cached in memory; pyopencl caches the binaries on disk across processes.

Runtimes. Besides every OpenCL driver registered on the system (``/etc/OpenCL/vendors``, or the
folder ``OCL_ICD_VENDORS`` names), clgrad makes the CPU runtimes installed from pip visible:
PoCL (``pocl-binary-distribution``, through pyopencl's bundled ICD loader) and Intel's OpenCL
CPU runtime (``intel-opencl-rt`` + ``intel-cmplr-lib-rt``), which also runs on AMD CPUs. Before
the first platform query it writes a vendors folder of its own (in clgrad's cache folder,
``CLGRAD_CACHE_DIR`` or ``$XDG_CACHE_HOME/clgrad`` or ``~/.cache/clgrad``, else the temporary
folder) listing those ICDs, and points ``OCL_ICD_VENDORS`` at it. Nothing is registered system
wide.

Probe before trusting. Every device is probed once: a separate process builds and runs one
tiny kernel on it (``clgrad/_probe.py``), so a runtime that cannot compile for this CPU (the
PoCL 3.0 of pyopencl's wheel on AMD Zen 5: ``unknown target CPU 'generic'``), that crashes or
that hangs is found without harm. The verdict is cached per platform, device and driver version
(``probe.json`` in the cache folder), so later processes pay nothing. A device that failed is
never chosen; ``python -m clgrad devices`` lists it as unusable with the reason.
The tiny kernel is not enough: PoCL 3.0 on AMD Zen 4 passes it, then returns some programs
without their kernels or aborts in LLVM while generating code for them. So before a device is
first used (chosen as the default, named, or listed by ``devices()``), a second child process
(``_probe.py --kernels``) builds a representative set of the programs clgrad ships (every
kernel file, float32 and float64, the CPU kernels at the device's vector width), re-creates each
from its binary as a later process loading pyopencl's cache does, and checks that every kernel
is there; a child that the compiler takes down names the program it was building. A CPU device
that fails at float vector width 16 is checked again at 8 (PoCL offers no setting for its
target CPU; the narrower vectors avoid LLVM 14's 512-bit code paths): passing there caps
``Device.vector_width`` at 8 and says so in the reason. This check's verdict is cached per
device, driver and version of the kernels; a device that fails it is unusable with the reason
("cannot build clgrad's kernels: ..."), and naming it (``CLGRAD_DEVICE=pocl``) raises that
reason. At launch, a kernel missing from its program raises DeviceError naming the program,
the kernel and the device.

Device choice (``CLGRAD_DEVICE``): ``cpu``, ``gpu``, ``cuda`` (= ``gpu``), ``cpu:N``/``gpu:N``/
``cuda:N`` (the N-th usable device of that kind), ``P:D`` (platform and device indices as listed
by ``clgrad.devices()``), or a case-insensitive substring of the platform name and version
(``intel``, ``pocl``, ``nvidia``) or of the device name; platform matches win over device-name
matches. Default (``default_device``, PyTorch's "cpu"): the usable CPU device of the preferred
CPU runtime (``CPU_RUNTIME_PREFERENCE``: Intel's, then PoCL, then any), else the first usable
GPU, else any usable device; ``fastest_device`` (the training job's choice) takes the first
usable GPU before the CPU devices.
Indices (``cpu:N``, ``cuda:N``) count usable devices of a kind in that order, the device
``CLGRAD_DEVICE`` names first, so that ``cpu``/``cuda`` mean the device the user chose.

Thread safety: device discovery and choice, program builds, allocations and kernel launches
(argument setting + enqueue, which must not interleave on a shared kernel object) each hold a
lock, so ops may be called from several threads. Results of ops issued from different threads
are ordered only by the device's single in-order queue; a tensor written in one thread and read
in another needs the usual synchronisation between those threads.
"""
from clgrad.errors import DeviceError  # noqa: F401  (runtime.DeviceError)
from clgrad.runtime.device import (  # noqa: F401  (private names: tests and cuda.py use them)
    Device, ForkedDeviceError, OutOfMemoryError, cache_dir, kernel_dir, launch_count, pack)
from clgrad.runtime.meta import META, MetaDevice, meta_error  # noqa: F401
from clgrad.runtime.discovery import (  # noqa: F401
    CPU_RUNTIME_PREFERENCE, _DEFAULT, _DEVICES, default_device, devices, fastest_device,
    get_device, runtime_notes, set_default_device, synchronize)

__all__ = ["Device", "devices", "default_device", "fastest_device", "set_default_device",
           "get_device", "synchronize", "kernel_dir", "launch_count", "cache_dir",
           "CPU_RUNTIME_PREFERENCE", "OutOfMemoryError", "ForkedDeviceError"]
