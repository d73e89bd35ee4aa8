"""Pure host time per kernel launch of an eager training step, by phase (issue 34's measure).

    python bench/host_split.py [--models resnet18,densenet] [--batch 8] [--steps 15]
    python bench/host_split.py --clgrad-path ../other-checkout     # another clgrad, same run

Builds each model of bench/zoo_models.py on the default device (one thread: set
``CL_CONFIG_CPU_NUM_THREADS``/``POCL_MAX_PTHREAD_COUNT`` as bench/zoo.py does if you want it),
runs 3 real SGD steps (kernels built, plans cached, conv choices measured), then replaces the
runtime's eager enqueue (``clgrad.runtime.device._enqueue``, pyopencl's
``enqueue_nd_range_kernel``; ``CLGRAD_ENQUEUE=pyopencl`` is set here so that every launch goes
through it) with a no-op and times ``--steps`` steps phase by phase: forward with the loss,
backward, SGD step (momentum 0.9, weight decay) + ``zero_grad``. Every Python path runs as in a
real step, argument setting included; no kernel runs, so the figure is the host's own cost per
launch, free of the device and of the queue's backlog (the zoo's kernel/host split, which
finishes the queue after every launch, mixes in the runtime's latency and the machine's load).
Prints, per model, the best and median over the steps of µs per launch per phase and the
launches per phase. The numbers are garbage after the stub (no kernel runs); nothing reads
them.
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["CLGRAD_ENQUEUE"] = "pyopencl"
HERE = Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet18,densenet")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--clgrad-path", default=None, help="measure the clgrad of this checkout")
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    if args.clgrad_path:
        sys.path.insert(0, str(Path(args.clgrad_path).resolve()))
    else:
        sys.path.insert(0, str(HERE.parent))
    import numpy as np

    import clgrad
    import zoo_models
    from clgrad.runtime import device as devmod

    F = clgrad.nn.functional
    print(f"clgrad from {Path(clgrad.__file__).parent}, device {clgrad.default_device()}")
    print("| model | phase | launches | best us/launch | median us/launch |")
    print("|---|---|---|---|---|")
    for name in args.models.split(","):
        (c, h, w), classes = zoo_models.input_shape(name)
        rng = np.random.default_rng(0)
        x = clgrad.from_numpy(rng.standard_normal((args.batch, c, h, w), dtype=np.float32))
        y = clgrad.from_numpy(rng.integers(0, classes, args.batch).astype(np.int64))
        clgrad.manual_seed(0)
        m = zoo_models.build(name, clgrad)
        opt = clgrad.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
        for _ in range(3):  # real steps: kernels, plans, measured choices
            opt.zero_grad()
            F.cross_entropy(m(x), y).backward()
            opt.step()
        clgrad.synchronize()
        real = devmod._enqueue
        devmod._enqueue = lambda *a: None
        times = {"forward": [], "backward": [], "step": []}
        counts = {}
        try:
            for _ in range(args.steps):
                n0 = devmod.launch_count()
                t0 = time.perf_counter()
                loss = F.cross_entropy(m(x), y)
                n1, t1 = devmod.launch_count(), time.perf_counter()
                loss.backward()
                n2, t2 = devmod.launch_count(), time.perf_counter()
                opt.step()
                opt.zero_grad()
                n3, t3 = devmod.launch_count(), time.perf_counter()
                del loss
                for ph, dt, dn in (("forward", t1 - t0, n1 - n0), ("backward", t2 - t1, n2 - n1),
                                   ("step", t3 - t2, n3 - n2)):
                    times[ph].append(dt / max(dn, 1) * 1e6)
                    counts[ph] = dn
        finally:
            devmod._enqueue = real
        total = sum(counts.values())
        whole = [sum(times[p][i] * counts[p] for p in times) / max(total, 1)
                 for i in range(args.steps)]
        for ph, v in (*times.items(), ("whole step", whole)):
            n = counts.get(ph, total)
            print(f"| {name} | {ph} | {n} | {min(v):.1f} | {statistics.median(v):.1f} |")
        clgrad.synchronize()


if __name__ == "__main__":
    main()
