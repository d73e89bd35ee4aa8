"""Where an S4 training step's time goes, launch by launch: kernel time against host time.

    python bench/profile_step.py                      # the default device
    CLGRAD_DEVICE=pocl python bench/profile_step.py   # another runtime
    python bench/profile_step.py --model s5           # the MobileNet-style S5 epoch (8 steps)

Two measurements of the same steady-state step (after warm-up):
- wall: the step as the user runs it (launches queued back to back, one synchronise at the end);
- per launch: every kernel launch is followed by a queue finish, so the time from the enqueue
  to the end of the finish is that kernel's device time (plus one round trip), and the time
  between the end of one launch and the next enqueue is host time (Python: checks, views,
  autograd bookkeeping, argument packing).
Kernels are grouped by (file, kernel name); the table lists count, total ms and share.
Prints a Markdown table; ``--json PATH`` also writes the rows.
"""
import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def make_step(model_name):
    import train_step
    if model_name == "s4":
        return train_step.clgrad_step(*train_step.batch(), train_step.initial_weights())
    import s5_mobilenet
    return s5_mobilenet.clgrad_epoch(s5_mobilenet.data())[0]


def profile(step, reps):
    """Wall time per step (queued) after 3 warm-up steps, then ``per_launch``'s split."""
    import clgrad
    for _ in range(3):
        step()
    t = time.perf_counter()
    for _ in range(reps):
        step()
    wall = (time.perf_counter() - t) / reps
    host, rows = per_launch(step, reps)
    return wall, host, rows, clgrad.default_device()


def per_launch(step, reps):
    """Run ``step`` ``reps`` times with a queue finish after every kernel launch; return
    (host seconds between launches per step, rows of kernel, launches and ms per step)."""
    import clgrad
    from clgrad import runtime
    dev = clgrad.default_device()
    names = {}
    for (file, name, *_), k in list(dev._kernels.items()):
        names[id(k)] = f"{file}::{name}"
    kernel_s, count = defaultdict(float), defaultdict(int)
    host = [0.0]
    last_end = [None]
    orig = runtime.Device.launch
    orig_split = getattr(runtime.Device, "launch_split", None)  # (checkouts before issue 23)

    def timed(self, kernel, *a, _launch=orig):
        t0 = time.perf_counter()
        if last_end[0] is not None:
            host[0] += t0 - last_end[0]
        _launch(self, kernel, *a)
        self.queue.finish()
        t1 = time.perf_counter()
        key = names.get(id(kernel))
        if key is None:
            for (file, name, *_), k in self._kernels.items():
                names[id(k)] = f"{file}::{name}"
            key = names.get(id(kernel), kernel.function_name)
        kernel_s[key] += t1 - t0
        count[key] += 1
        last_end[0] = time.perf_counter()

    runtime.Device.launch = timed
    if orig_split is not None:  # launch_1d's launches (arguments pre-split) count alike
        runtime.Device.launch_split = lambda self, kernel, *a: timed(self, kernel, *a,
                                                                     _launch=orig_split)
    try:
        for _ in range(reps):
            last_end[0] = None
            step()
    finally:
        runtime.Device.launch = orig
        if orig_split is not None:
            runtime.Device.launch_split = orig_split
    rows = [dict(kernel=k, launches=count[k] / reps, ms=kernel_s[k] / reps * 1e3)
            for k in sorted(kernel_s, key=kernel_s.get, reverse=True)]
    return host[0] / reps, rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="s4", choices=["s4", "s5"])
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    wall, host, rows, dev = profile(make_step(args.model), args.reps)
    total = sum(r["ms"] for r in rows)
    print(f"# {args.model} step on {dev.name} [{dev.platform} {dev.cl_device.driver_version}]")
    print(f"# wall {wall * 1e3:.2f} ms per step (queued); per-launch: kernels {total:.2f} ms, "
          f"host between launches {host * 1e3:.2f} ms, "
          f"{sum(r['launches'] for r in rows):.0f} launches\n")
    print("| kernel | launches | ms | share |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['kernel']} | {r['launches']:.0f} | {r['ms']:.3f} | "
              f"{r['ms'] / total:.0%} |")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(model=args.model, device=dev.name,
                                                   platform=dev.platform,
                                                   driver=dev.cl_device.driver_version,
                                                   date=time.strftime("%Y-%m-%dT%H:%M:%S"),
                                                   wall_ms=wall * 1e3, host_ms=host * 1e3,
                                                   rows=rows), indent=1))


if __name__ == "__main__":
    main()
