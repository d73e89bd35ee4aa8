"""What CL_QUEUE_PROFILING_ENABLE on the device's queue costs eager work (clgrad.cuda.Event's
device-clock times need it).

    CLGRAD_DEVICE=gpu python3 bench/gpu/queue_profiling_cost.py [--rounds 7]

The same workloads run alternately on the device's queue as made (no properties) and on a
queue of the same context made with profiling (swapped in after a finish; the ctypes enqueue
re-reads the queue handle): 5000 ``c = a + b`` on 1000 float32 (launch bound), 2000 64x64
matrix products, and 20 training steps of a small CNN (batch 64, 3x32x32). Each round times
each workload between two synchronizes; the table gives the median and minimum over rounds,
ms. The results are compared for equality (same kernels, same values).
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
import numpy as np  # noqa: E402
import pyopencl as cl  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    import clgrad as torch
    nn = torch.nn
    dev = torch.runtime.get_device("cuda")
    plain = dev.queue
    prof = cl.CommandQueue(dev.context, dev.cl_device,
                           properties=cl.command_queue_properties.PROFILING_ENABLE)

    def use(q):
        dev.queue.finish()
        dev.queue = q
        dev._native, dev._native_epoch = None, -1

    torch.manual_seed(0)
    a, b = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    m = torch.randn(64, 64, device="cuda")
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(64 * 8 * 8, 10)).to("cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 3, 32, 32, device="cuda")
    y = torch.randint(10, (64,), device="cuda")

    def adds():
        for _ in range(5000):
            c = a + b
        return c

    def mms():
        c = m
        for _ in range(2000):
            c = m @ m
        return c

    def steps():
        for _ in range(20):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        return loss

    work = {"5000 adds": adds, "2000 matmul 64": mms, "20 CNN steps": steps}
    times = {(w, q): [] for w in work for q in ("plain", "profiling")}
    outs = {}
    for name, fn in work.items():  # warm-up: builds
        for label, q in (("plain", plain), ("profiling", prof)):
            use(q)
            outs[(name, label)] = fn().detach().numpy() if name != "20 CNN steps" else None
    np.testing.assert_array_equal(outs[("5000 adds", "plain")], outs[("5000 adds", "profiling")])
    for r in range(args.rounds):
        for name, fn in work.items():
            order = (("plain", plain), ("profiling", prof))
            for label, q in (order if r % 2 == 0 else order[::-1]):
                use(q)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                times[(name, label)].append((time.perf_counter() - t0) * 1e3)
    use(plain)
    print(f"{'workload':<18} {'queue':<10} {'median ms':>10} {'min ms':>10}")
    for (name, label), t in times.items():
        print(f"{name:<18} {label:<10} {statistics.median(t):10.3f} {min(t):10.3f}")


if __name__ == "__main__":
    main()
