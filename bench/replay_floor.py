"""The host floor of a replayed kernel (issue 24: <= 3 µs per replayed kernel on the H200).

    python bench/replay_floor.py                     # the default device
    python bench/replay_floor.py --device gpu        # an OpenCL GPU
    python bench/replay_floor.py --device pocl --kernels 200 --repeats 300

Prints the host µs per enqueue (enqueue calls only, no wait; median over --repeats rounds,
a queue finish between rounds) of:
- ``pyopencl``: pyopencl's ``enqueue_nd_range_kernel`` on kernels whose arguments were set
  once (what replay did before; one Event object per launch);
- ``ctypes``: ``clEnqueueNDRangeKernel`` of the same ICD loader through ctypes with a NULL
  event, arguments prepared once (clgrad/runtime/native.py);
- ``command_buffer``: the same launches recorded into one ``cl_khr_command_buffer`` buffer and
  enqueued by one call (where the device offers it), per kernel;
- ``graph[backend]``: ``CUDAGraph.replay()`` of a captured graph of --kernels tiny adds
  (``u = u + 1`` on 16 floats), per kernel, for each backend the device can use;
and the backend clgrad picks by itself (``clgrad.capture.replay_backends``). The raw kernels
are one-line kernels on 16 floats, so this is host time, not device time. One JSON line at the
end (also appended to bench/results/replay_floor.jsonl).
"""
import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _median_us(run, finish, repeats, per):
    ts = []
    for _ in range(repeats):
        finish()
        t0 = time.perf_counter()
        run()
        ts.append(time.perf_counter() - t0)
    finish()
    return statistics.median(ts) * 1e6 / per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default=None, help="CLGRAD_DEVICE (cpu, gpu, pocl ...)")
    ap.add_argument("--kernels", type=int, default=100, help="launches per round")
    ap.add_argument("--repeats", type=int, default=200, help="rounds per way")
    args = ap.parse_args()
    if args.device:
        os.environ["CLGRAD_DEVICE"] = args.device
    import numpy as np
    import pyopencl as cl

    import clgrad
    from clgrad.capture import REPLAY_BACKENDS, replay_backends
    from clgrad.runtime import device as rt
    from clgrad.runtime import native

    dev = clgrad.runtime.default_device()
    q, n = dev.queue, args.kernels
    row = {"bench": "replay_floor", "device": dev.name, "platform": dev.platform,
           "driver": dev.cl_device.driver_version, "kernels": n, "repeats": args.repeats,
           "time": time.strftime("%Y-%m-%d %H:%M:%S"), "python": sys.version.split()[0]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        prg = cl.Program(dev.context, "__kernel void inc(__global float* x) "
                                      "{ x[get_global_id(0)] += 1.0f; }").build()
    buf = cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 64)
    ks = []
    for _ in range(n):
        k = cl.Kernel(prg, "inc")
        k.set_arg(0, buf)
        ks.append(k)
    enq = native.enqueue_fn()
    ways = {"pyopencl": lambda: [rt._enqueue(q, k, (16,), None, None, None, False, False)
                                 for k in ks]}
    if enq is not None:
        cargs = [native.kernel_args(q, k, (16,), None) for k in ks]
        ways["ctypes"] = lambda: [enq(*a) for a in cargs]
    row["command_buffer"] = list(native.command_buffer_support(dev.cl_device))
    if row["command_buffer"][0]:
        cb = native.CommandBuffer(q)
        for k in ks:
            cb.add(k, (16,), None)
        cb.finalize()
        ways["command_buffer"] = cb.enqueue
    for name, run in ways.items():
        run()
        row[f"{name}_us"] = _median_us(run, q.finish, args.repeats, n)

    t = clgrad.ones(16)
    g = clgrad.cuda.CUDAGraph()
    with clgrad.cuda.graph(g):
        u = t
        for _ in range(n):
            u = u + 1
    auto = replay_backends(dev)
    row["auto_backend"] = auto["best"]
    row["auto_probe_us"] = auto["us_per_kernel"]
    for b in REPLAY_BACKENDS:
        if not auto["correct"].get(b):
            continue
        g._plan(b)
        g.replay()
        row[f"graph_{b}_us"] = _median_us(g.replay, dev.synchronize, args.repeats, n)
        if not np.array_equal(u.numpy(), np.full(16, n + 1, np.float32)):
            raise AssertionError(f"replay backend {b}: wrong result")
    for k, v in row.items():
        print(f"{k:>24}: {v:.2f}" if isinstance(v, float) else f"{k:>24}: {v}")
    line = json.dumps(row)
    print(line)
    out = Path(__file__).resolve().parent / "results" / "replay_floor.jsonl"
    with out.open("a") as f:
        f.write(line + "\n")


if __name__ == "__main__":
    main()
