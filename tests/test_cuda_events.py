"""``clgrad.cuda.Event`` and the streams (clgrad/_streams.py, clgrad/runtime/markers.py), and
``max_memory_allocated`` / ``reset_peak_memory_stats``.

Without a GPU (this machine) in-process: construction, the errors and PyTorch's messages
(``torch.Event`` as the oracle where PyTorch is importable). The GPU paths run in subprocesses
with CLGRAD_TEST_AS_GPU (tests/conftest.py: PoCL poses as the GPU "cuda:0"): record, query,
synchronize, wait, elapsed_time against the host clock around the region (an upper bound), a
host sleep after the region (must not count), a -> c = a -> b + b -> c; with the device's
queue swapped for a profiling one (the device-clock path), the region's kernels' own
profiled times (a lower bound); two posed GPUs for the cross-device cases; the streams'
current/default/context semantics; and the torch.compile tutorial's ``timed`` and its test.
"""
import subprocess
import sys
from pathlib import Path

import pytest

import clgrad
from subproc import checkout_env, run_as_gpu

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, as_gpu: str = "pocl", timeout: int = 600, **env) -> str:
    """Run ``code`` in a child Python with CLGRAD_TEST_AS_GPU=as_gpu and "cuda" the default
    device; it must print "ok" last."""
    pre = "import time\nimport numpy as np\nimport pytest\nimport clgrad as torch\n"
    r = run_as_gpu(pre + code, as_gpu, timeout, CLGRAD_DEVICE="cuda", **env)
    assert r.stdout.strip().endswith("ok"), r.stdout + r.stderr
    return r.stdout


def _need_pocl():
    try:
        clgrad.runtime.get_device("pocl")
    except clgrad.DeviceError:
        pytest.skip("needs PoCL to pose as a GPU")


# -- without a GPU ------------------------------------------------------------------------------

def test_event_without_gpu_is_lazy_and_record_says_there_is_none():
    if clgrad.cuda.is_available():
        pytest.skip("a machine without an OpenCL GPU")
    e = clgrad.cuda.Event(enable_timing=True)  # PyTorch's construction needs no GPU either
    assert e.query() is True and e.device is None and e.enable_timing
    e.synchronize()  # nothing recorded: nothing to wait for
    assert repr(e) == "<clgrad.cuda.Event uninitialized>"
    for call in (e.record, e.wait, clgrad.cuda.Stream, clgrad.cuda.current_stream,
                 clgrad.cuda.default_stream):
        with pytest.raises(clgrad.DeviceError, match="no OpenCL GPU was found"):
            call()
    with clgrad.cuda.stream(None):  # a no-op, as PyTorch's
        pass


def test_elapsed_time_errors_are_pytorchs():
    Event = clgrad.cuda.Event
    cases = [((False, False), "Both events must be created with argument 'enable_timing=True'."),
             ((True, False), "Both events must be created with argument 'enable_timing=True'."),
             ((True, True), "Both events must be recorded before calculating elapsed time.")]
    for (t1, t2), msg in cases:
        with pytest.raises(ValueError) as got:
            Event(enable_timing=t1).elapsed_time(Event(enable_timing=t2))
        assert str(got.value) == msg
    try:
        import torch
    except ImportError:
        return
    for (t1, t2), msg in cases:  # the same types and messages as PyTorch's events
        with pytest.raises(ValueError) as want:
            torch.Event(enable_timing=t1).elapsed_time(torch.Event(enable_timing=t2))
        assert str(want.value) == msg
    assert torch.Event().query() is Event().query() is True


def test_event_refusals():
    with pytest.raises(NotImplementedError, match="interprocess=True"):
        clgrad.cuda.Event(interprocess=True)
    with pytest.raises(TypeError, match="expected a clgrad.cuda.Event, got float"):
        clgrad.cuda.Event(enable_timing=True).elapsed_time(1.0)
    with pytest.raises(TypeError, match="expected a clgrad.cuda.Stream or None, got str"):
        clgrad.cuda.stream("cuda")
    e = clgrad.cuda.Event(blocking=True, external=True)  # accepted, change nothing
    assert e.blocking and not e.enable_timing and not e.interprocess


def test_max_memory_allocated_is_the_high_water_mark():
    cuda = clgrad.cuda
    cuda.reset_peak_memory_stats()
    base = cuda.memory_allocated()
    assert cuda.max_memory_allocated() == base
    a = clgrad.empty(100_000)  # one storage of 400000 bytes
    assert cuda.memory_allocated() == base + 400_000
    assert cuda.max_memory_allocated() == base + 400_000
    del a
    b = clgrad.empty(1000, dtype=clgrad.float64)  # 8000 bytes: the peak stays a's
    assert cuda.memory_allocated() == base + 8000
    assert cuda.max_memory_allocated() == base + 400_000
    cuda.reset_peak_memory_stats()
    assert cuda.max_memory_allocated() == cuda.memory_allocated() == base + 8000
    del b
    assert cuda.max_memory_allocated() == base + 8000 and cuda.memory_allocated() == base
    with pytest.raises(clgrad.DeviceError):
        cuda.max_memory_allocated("no-such-device")


# -- on a posed GPU (PoCL) ----------------------------------------------------------------------

_TIMING = """
x = torch.randn(256, 256)
assert str(x.device) == "cuda:0" and torch.cuda.is_available()
xn = x.numpy().astype(np.float64)
y = x @ x
torch.cuda.synchronize()
t0 = time.perf_counter()
y = x @ x
torch.cuda.synchronize()
one = (time.perf_counter() - t0) * 1e3            # one product, host-timed (ms)

# the region: elapsed within the host clock around it
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
t0 = time.perf_counter()
start.record()
for _ in range(4):
    y = x @ x
end.record()
end.synchronize()
host = (time.perf_counter() - t0) * 1e3
ms = start.elapsed_time(end)
assert type(ms) is float and 0 < ms <= host, (ms, host)
assert ms > 0.5 * host, (ms, host)  # the region is the products (each ~ `one`), not overhead
assert start.query() and end.query() and end.device == torch.device("cuda:0")
np.testing.assert_allclose(y.numpy(), xn @ xn, rtol=1e-4, atol=1e-3)

# a host sleep after the region, before synchronize, does not count
start.record()
for _ in range(2):
    y = x @ x
end.record()
time.sleep(0.5)
torch.cuda.synchronize()
ms = start.elapsed_time(end)
assert 0 < ms < 500, ms

# back to back, reversed, and additivity on one clock
a, b, c = (torch.cuda.Event(enable_timing=True) for _ in range(3))
a.record(); b.record(); b.synchronize()
assert a.elapsed_time(b) >= 0 and b.elapsed_time(a) == -a.elapsed_time(b)
a.record(); y = x @ x; b.record(); y = x @ x; c.record(); c.synchronize()
ab, bc, ac = a.elapsed_time(b), b.elapsed_time(c), a.elapsed_time(c)
assert ab > 0 and bc > 0 and ac == pytest.approx(ab + bc, rel=1e-9), (ab, bc, ac)
"""


def test_event_timing_on_a_posed_gpu():
    """The device queue as made (no profiling): the host clock, record of a timing event
    waits for the work before it."""
    _need_pocl()
    _run(_TIMING + """
e = torch.cuda.Event(enable_timing=True)
e.record()
assert e.query() and e._marker.clock == "host"  # recorded = waited for
print("ok")
""")


def test_event_timing_on_a_profiling_queue():
    """The device's queue swapped for a profiling one (as bench/gpu/events.py, with pyopencl's
    enqueue so launches have events): the device's clock, record returns at once, and the
    region's elapsed time covers its kernels' own profiled times."""
    _need_pocl()
    _run("""
import pyopencl as cl
from clgrad.runtime import device as rd
dev = torch.runtime.get_device("cuda")
dev.queue.finish()
dev.queue = cl.CommandQueue(dev.context, dev.cl_device,
                            properties=cl.command_queue_properties.PROFILING_ENABLE)
""" + _TIMING + """
kernels = []
orig = rd._enqueue
def enqueue(queue, kernel, *rest):
    ev = orig(queue, kernel, *rest)
    kernels.append(ev)
    return ev
rd._enqueue = enqueue
x = torch.randn(512, 512)
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
kernels.clear()
for _ in range(3):
    y = x @ x
end.record()
assert not end.query()  # ~3 x 300 ms of products: not done microseconds after the record
with pytest.raises(RuntimeError, match="^Both events must be completed before calculating "
                                       "elapsed time.$"):
    start.elapsed_time(end)
end.synchronize()
assert end.query() and end._marker.clock == "device" and len(kernels) >= 3
busy = sum(k.profile.end - k.profile.start for k in kernels) / 1e6
ms = start.elapsed_time(end)
assert busy <= ms, (busy, ms)
span = (max(k.profile.end for k in kernels) - min(k.profile.start for k in kernels)) / 1e6
assert span <= ms, (span, ms)
print("ok")
""", CLGRAD_ENQUEUE="pyopencl")


def test_streams_on_a_posed_gpu():
    _need_pocl()
    _run("""
S = torch.cuda
d = S.default_stream()
assert S.current_stream() is d is S.default_stream(0) is S.current_stream("cuda:0")
assert d.stream_id == 0 and d.device == torch.device("cuda:0") and d.device_index == 0
s = S.Stream(priority=-3)
assert s is not d and s.stream_id > 0 and s.priority == 0 and s != d
assert S.Stream.priority_range() == (0, 0)
with pytest.raises(ValueError, match="expected a cuda device"):
    S.Stream("cpu")
with pytest.raises(TypeError, match="Stream.priority"):
    S.Stream(priority=0.5)
x = torch.arange(6.0)
with S.stream(s):
    assert S.current_stream() is s
    y = x * 2  # "on" s: the one queue, in issue order
    with s:
        assert S.current_stream() is s
    assert S.current_stream() is s
assert S.current_stream() is d
S.set_stream(s)
assert S.current_stream() is s
S.set_stream(d)
# the CUDA-graphs warm-up idiom (torch.cuda docs): side stream, wait both ways
s.wait_stream(S.current_stream())
with S.stream(s):
    z = y + 1
S.current_stream().wait_stream(s)
assert z.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]
e = s.record_event()
assert isinstance(e, S.Event) and not e.enable_timing
s.wait_event(e); e.wait(); e.wait(d); e.synchronize()
assert e.query() and s.query() and d.query()
s.synchronize()
f = S.Event()
f.record(s)
assert f.device == torch.device("cuda:0") and repr(f) == "<clgrad.cuda.Event recorded on cuda:0>"
f.synchronize()
assert f.query()
g = torch.cuda.CUDAGraph()
with pytest.raises(RuntimeError, match="Event.record inside a graph capture"):
    with torch.cuda.graph(g):
        f.record()
print("ok")
""")


def test_events_across_two_posed_gpus():
    """Every OpenCL device a "GPU" (Intel's CPU runtime and PoCL here): cross-device wait
    (the host waits), the device checks of record and elapsed_time, and a stream context on
    the other device switching the current GPU and back."""
    _need_pocl()
    _run("""
S = torch.cuda
if S.device_count() < 2:
    print("one device only: ok")
    sys.exit(0)
s0, s1 = S.current_stream(0), S.Stream(1)
assert s0.device_index == 0 and s1.device_index == 1
x1 = torch.randn(384, 384, device="cuda:1")
torch.cuda.synchronize(1)
e = S.Event(enable_timing=True)
e.record(s0)
with pytest.raises(RuntimeError, match="^Event device cuda:0 does not match recording "
                                       "stream's device cuda:1.$"):
    e.record(s1)
f = S.Event(enable_timing=True)
f.record(s1)
with pytest.raises(RuntimeError, match="different devices"):
    e.elapsed_time(f)
g = S.Event()
for _ in range(3):
    y = x1 @ x1
g.record(s1)
g.wait(s0)       # another device: the host waits for g here
assert g.query()
assert S.current_device() == 0
with S.stream(s1):
    assert S.current_device() == 1 and S.current_stream() is s1
    assert S.current_stream(0) is s0
assert S.current_device() == 0 and S.current_stream(1) is S.default_stream(1)
print("ok")
""", as_gpu="*")


def test_torch_compile_tutorial_timing_on_a_posed_gpu():
    """The tutorial's ``timed`` (torch.cuda.Event's idiom) on the posed GPU, within the host
    clock around it; then the tutorial's speed-up test itself there."""
    _need_pocl()
    _run("""
from test_programs import load_program
prog = load_program("torch_compile_tutorial")
x = torch.randn(256, 256)
x @ x
torch.cuda.synchronize()
t0 = time.perf_counter()
out, secs = prog.timed(lambda: x @ x)
host = time.perf_counter() - t0
xn = x.numpy().astype(np.float64)
np.testing.assert_allclose(out.numpy(), xn @ xn, rtol=1e-4, atol=1e-3)
assert 0 < secs <= host, (secs, host)
print("ok")
""")
    e = checkout_env(CLGRAD_TEST_AS_GPU="pocl", CLGRAD_DEVICE="cuda")
    test = "tests/test_programs_round6.py::test_torch_compile_tutorial_speedup_sections"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        test], capture_output=True, text=True, env=e, timeout=600, cwd=ROOT)
    assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
