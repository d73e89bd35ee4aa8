"""``clgrad.cuda.Event``'s elapsed times on a GPU, checked against other clocks.

    CLGRAD_DEVICE=gpu python3 bench/gpu/event_check.py [--profiled]

For regions of k float32 4096x4096 matrix products (k = 1, 4, 16) it prints the events'
elapsed time (host clock: clgrad/runtime/markers.py), the host's wall time around the region
(device synchronised before, the end event waited for after: an upper bound) and, with
``--profiled`` (the device's queue swapped for a profiling one and the launches' events
kept, as bench/gpu/events.py; the events then read the device's clock, the markers' own
profiling END), the summed kernel times of the region's launches (a lower bound: the kernels
run one after another inside the region). Also: two events recorded
back to back, a -> c against a -> b + b -> c, a region followed by a host sleep before the
synchronize (the sleep must not count), and the host time of one ``record()``.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profiled", action="store_true")
    args = ap.parse_args()
    rec = None
    if args.profiled:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import events  # noqa: E402  (sets CLGRAD_ENQUEUE=pyopencl)
    import clgrad as torch
    dev = torch.runtime.get_device("cuda")
    if args.profiled:
        rec = events.Recorder(dev)
    print(dev, "queue properties", dev.queue.properties)
    x = torch.randn(4096, 4096, device="cuda")
    y = x @ x
    torch.cuda.synchronize()
    for k in (1, 4, 16):
        for _ in range(3):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            if rec is not None:
                rec.clear()
            t0 = time.perf_counter()
            s.record()
            for _ in range(k):
                y = x @ x
            e.record()
            e.synchronize()
            host = (time.perf_counter() - t0) * 1e3
            kern = f" kernels {rec.ms():9.3f}" if rec is not None else ""
            print(f"k={k:2d} elapsed {s.elapsed_time(e):9.3f} ms  host {host:9.3f}{kern}")
    a, b, c = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    for _ in range(3):
        a.record()
        b.record()
        b.synchronize()
        print(f"back to back {a.elapsed_time(b):.4f} ms")
    a.record()
    y = x @ x
    b.record()
    y = x @ x
    c.record()
    c.synchronize()
    ab, bc, ac = a.elapsed_time(b), b.elapsed_time(c), a.elapsed_time(c)
    print(f"a->b {ab:.4f} b->c {bc:.4f} sum {ab + bc:.4f} a->c {ac:.4f}")
    a.record()
    for _ in range(4):
        y = x @ x
    b.record()
    t0 = time.perf_counter()
    time.sleep(0.5)
    torch.cuda.synchronize()
    print(f"region then 500 ms sleep: elapsed {a.elapsed_time(b):.3f} ms (host "
          f"{(time.perf_counter() - t0) * 1e3:.3f} from sleep to sync)")
    times = []
    for _ in range(200):
        t0 = time.perf_counter_ns()
        a.record()
        times.append(time.perf_counter_ns() - t0)
    torch.cuda.synchronize()
    print(f"record() host time: median {statistics.median(times) / 1e3:.1f} us")
    del y


if __name__ == "__main__":
    main()
