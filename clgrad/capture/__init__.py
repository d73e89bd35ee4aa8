"""Captured kernel sequences: record a region's kernels once, replay them with no Python per op
(PyTorch's CUDA graphs, ``torch.cuda.graph``; tinygrad's TinyJit).

Capture. Between ``CUDAGraph.capture_begin()`` and ``capture_end()`` (or inside ``with
clgrad.cuda.graph(g):``) every op runs its Python as usual (checks, shapes, autograd), but
nothing reaches the device: clgrad/runtime/device.py: ``Device.launch``, ``alloc``, ``copy`` and
``fill`` hand their work to the capturing graph (the hook is ``Device._capture``). A launch is
recorded as a kernel object of its own (a clone of the cached one) with its arguments set
once; a host-to-device copy as a copy of a snapshot of the host array; a fill as a fill. As in
PyTorch, the capture runs nothing: the first ``replay()`` does the work once.

Memory. Allocations during capture come from the graph's private memory pool (PyTorch's
graph pool): a tensor freed during capture gives its block back to that pool only, where a
later allocation of the same capture may reuse it, exactly as the eager run would; the pool
holds every block until ``reset()``. Buffers from outside the capture that a recorded kernel
uses (parameters, static inputs) are kept alive by the graph. Replays allocate nothing.

Replay. ``replay()`` enqueues the recorded commands in order on the device's in-order queue
(asynchronously: reading a result waits for it). Same kernels, same arguments, same order:
a replay gives bit for bit what the eager region gives on the same data. How the kernels are
enqueued (``CUDAGraph.replay_backend``): "pyopencl" (pyopencl's enqueue, one Event object per
kernel), "ctypes" (clEnqueueNDRangeKernel through ctypes with a NULL event, arguments prepared
at capture end: clgrad/runtime/native.py) or "command_buffer" (``cl_khr_command_buffer`` where
the device offers it: each run of kernels between a copy, a fill or a kernel with per-replay
arguments is recorded into one command buffer at capture end and enqueued by one call).
``CLGRAD_REPLAY`` forces one; by default ("auto") the ways that work on the device (checked
once per device on a tiny kernel, ``replay_backends(device)``) are tried on the graph itself:
after one warm-up replay, the next replays take turns (3 each), and the way with the least
host time per replay is kept (pyopencl unless another takes < 90% of its time);
``replay_backend`` is None until then. Every way enqueues the same kernels with the same
arguments in the same order: the results are the same bits.

Values that change between replays. Some kernel arguments are Python values that an eager
step recomputes every time: the learning rate and Adam's bias corrections (from the step
count), SGD's first-step flag, dropout's seed. Ops pass those through ``dynamic(fn)``:
``fn(commit)`` returns the trailing by-value arguments of the next launch; eagerly it is called
once with commit=True; under capture once with commit=False (placeholders, no side effect), and
then once per replay with commit=True, just before that kernel is enqueued. So a replay draws
dropout seeds from clgrad's generator in the order the eager step would, counts Adam's steps,
and reads ``group['lr']`` as an LR scheduler left it.

``compile(fn, mode="reduce-overhead")`` (clgrad/_compile.py, above the ops: its guards and
replays hold Tensors) captures differently: its capture runs each command
as it records it (``CUDAGraph._run``), so the capture call is an eager call, and what a
graph capture refuses (below) only stops the recording there: the call carries on eagerly
and ``fn`` runs once (see ``compile`` for its guards on Python state).

Refused, at capture time, with ``CaptureError`` naming the op: reading a tensor on the host
(``item``, ``tolist``, ``numpy``, printing, ``nonzero``, ``unique``, ``masked_select``, ``bool``
of a tensor, BatchNorm with ``momentum=None`` ...), host-side random draws
(``randn``/``rand``/``normal_``/``nn.init`` ...: they would be baked in and repeat), work on a
second device, or a capture inside a capture. Inside a capture the class-index losses
(``cross_entropy``, ``nll_loss``) skip their host-side target range check; an out-of-range
target then gives a NaN loss and gradient instead of an IndexError.

Threads: only the thread that began the capture records; other threads' work on the device
runs eagerly, as usual.

Modules: clgrad/capture/record.py (the recording: ``CUDAGraph``'s capture and hooks, ``graph``,
``dynamic``, ``paused``, the refusals), clgrad/capture/replay.py (the replay backends, the
"auto" trial, ``replay_backends``). Both import the runtime only (layer 5 of
docs/internals.md); this package's names are their public face.
"""
# private names used elsewhere: _ACTIVE (_compile.py, creation.py), refuse_random (creation.py)
from clgrad.capture.record import (  # noqa: F401
    _ACTIVE, CaptureError, CUDAGraph, _op_name, dynamic, graph, graph_pool_handle, is_capturing,
    is_current_stream_capturing, paused, refuse_random)
from clgrad.capture.replay import REPLAY_BACKENDS, replay_backends

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "CaptureError", "dynamic", "paused",
           "is_capturing", "is_current_stream_capturing", "replay_backends", "REPLAY_BACKENDS"]

# captures compile keeps per signature (torch._dynamo.config.recompile_limit); read at each call
# by clgrad/_compile.py, which also binds ``compile`` and ``make_graphed_callables`` here
RECOMPILE_LIMIT = 8
# signatures compile keeps per compiled callable (torch._dynamo.config.cache_size_limit)
SIGNATURE_LIMIT = 8
