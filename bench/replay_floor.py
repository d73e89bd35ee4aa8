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
are one-line kernels on 16 floats, so this is host time, not device time.

Where the time goes in a real graph (``--no-step`` skips it): the S4 training step
(bench/train_step.py's model, batch 64, SGD) captured, then each command of its replay timed
alone (median over 50 replays, a synchronize before each replay): ``step_<backend>_first_us``
(the first command: a runtime may pay to wake up an idle queue), ``..._kernel_us`` (median of
the other kernels with fixed arguments), ``..._dynamic_us`` (median of the kernels whose
arguments a replay recomputes: the SGD steps' learning rate), ``..._total_us`` (the sum).
One JSON line at the end (also appended to bench/results/replay_floor.jsonl).
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


def _step_breakdown(clgrad, dev, auto):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numpy as np

    import train_step as s4
    from clgrad.capture import REPLAY_BACKENDS
    rng = np.random.default_rng(1)
    x = clgrad.from_numpy(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
    y = clgrad.from_numpy(rng.integers(0, 10, 64).astype(np.int64))
    model = s4.build(clgrad.nn)
    opt = clgrad.optim.SGD(model.parameters(), lr=0.01)

    def step():
        opt.zero_grad()
        loss = clgrad.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    step()
    g = clgrad.cuda.CUDAGraph()
    with clgrad.cuda.graph(g):
        step()
    out = {"step_commands": g.num_commands}
    for b in REPLAY_BACKENDS:
        if not auto["correct"].get(b):
            continue
        g._plan(b)
        g.replay()
        per = [[] for _ in g._seq]
        for _ in range(50):
            dev.synchronize()
            for i, (a, op) in enumerate(g._seq):
                t0 = time.perf_counter()
                if a is None:
                    op()
                elif g._enq(*a):
                    raise RuntimeError(f"{b}: clEnqueueNDRangeKernel failed")
                per[i].append(time.perf_counter() - t0)
        dev.synchronize()
        med = [statistics.median(t) * 1e6 for t in per]
        out[f"step_{b}_total_us"] = sum(med)
        out[f"step_{b}_entries"] = len(med)
        out[f"step_{b}_first_us"] = med[0]
        if b != "command_buffer":  # one entry per command: split by kind
            kinds = [c[0] for c in g._cmds]
            for kind, name in (("k", "kernel"), ("d", "dynamic")):
                v = [m for m, k in zip(med[1:], kinds[1:]) if k == kind]
                if v:
                    out[f"step_{b}_{name}_us"] = statistics.median(v)
    g._plan()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default=None, help="CLGRAD_DEVICE (cpu, gpu, pocl ...)")
    ap.add_argument("--kernels", type=int, default=100, help="launches per round")
    ap.add_argument("--repeats", type=int, default=200, help="rounds per way")
    ap.add_argument("--no-step", action="store_true", help="skip the S4 step's breakdown")
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
    if not args.no_step:
        row.update(_step_breakdown(clgrad, dev, auto))
    for k, v in row.items():
        print(f"{k:>24}: {v:.2f}" if isinstance(v, float) else f"{k:>24}: {v}")
    line = json.dumps(row)
    print(line)
    out = Path(__file__).resolve().parent / "results" / "replay_floor.jsonl"
    with out.open("a") as f:
        f.write(line + "\n")


if __name__ == "__main__":
    main()
