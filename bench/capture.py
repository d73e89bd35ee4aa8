"""Captured training steps (issue 24): the S4 step (bench/train_step.py's model, batch 64,
SGD lr 0.01) eager vs replayed from a CUDAGraph, and PyTorch eager beside them; plus the host
time per replayed kernel.

    python bench/capture.py                 # the default device (Intel's CPU runtime here)
    python bench/capture.py --device gpu    # an OpenCL GPU; PyTorch on CUDA
    python bench/capture.py --device pocl --batch 16 --seconds 3

Each mode runs a warm-up, then steps for about --seconds (each step ends with a device
synchronize, as bench/train_step.py); images/s is the median of five such runs' rates.
"Host µs per replayed kernel" is the time of the replay() call alone (enqueueing, no wait)
divided by the kernels it enqueues, median over 200 replays of the S4 step's graph (with the
backend clgrad picks, ``replay_backend``, and with each backend the device allows:
``host_us_per_replayed_kernel_<backend>``), and the same for a graph of 100 tiny adds (against
100 eager adds).

AlexNet inference at batch 1 (bench/zoo_models.py's Caffe-layout AlexNet, 3x227x227, eval
mode, ``no_grad``; the issue's GPU target: replayed >= 1.5x PyTorch CUDA eager): PyTorch eager,
clgrad eager and clgrad replayed (``clgrad.compile(fwd, mode="reduce-overhead")``), same
weights (PyTorch's, seed 0), the replayed logits checked bit-equal to clgrad's eager ones and
close to PyTorch's; ``alexnet_*`` fields, with the host µs per replayed command of its graph.
``--no-alexnet`` skips it. Appends one JSON line per run to bench/results/capture.jsonl and
prints it.
"""
import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _host_us(fn, reps, sync, per):
    """Median host µs of one ``fn()`` call (the queue drained before each), divided by
    ``per`` (commands or kernels of the call)."""
    host = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn()
        host.append(time.perf_counter() - t0)
    sync()
    return statistics.median(host) * 1e6 / per


def _rate(step, batch, seconds, sync):
    rates = []
    for _ in range(5):
        n, t0 = 0, time.perf_counter()
        while True:
            step()
            sync()
            n += 1
            dt = time.perf_counter() - t0
            if dt >= seconds / 5:
                break
        rates.append(n * batch / dt)
    return statistics.median(rates)


def _alexnet(clgrad, np, ax, weights, ref, seconds, dev):
    """AlexNet inference at batch 1: clgrad eager and replayed (fields alexnet_*)."""
    import zoo_models
    if weights is None:  # no PyTorch: its initialisation, seeded, is not available
        rng = np.random.default_rng(0)
        net = zoo_models.build("alexnet", clgrad)
        weights = {k: (rng.standard_normal(v.shape) * 0.01).astype(np.float32)
                   for k, v in net.state_dict().items()}
    net = zoo_models.build("alexnet", clgrad)
    net.load_state_dict(weights)
    net.eval()
    x = clgrad.from_numpy(ax)

    def fwd(x):
        return net(x)

    def eager():
        with clgrad.no_grad():
            return fwd(x)
    fast = clgrad.compile(fwd, mode="reduce-overhead")

    def replayed():
        with clgrad.no_grad():
            return fast(x)
    want = eager().numpy()
    out = {}
    for _ in range(3):  # warm-up (eager), capture + replay, replay
        got = replayed().numpy()
        if not np.array_equal(got, want):
            raise AssertionError("AlexNet: replayed logits differ from eager ones")
    if ref is not None:
        out["alexnet_max_abs_diff_vs_torch"] = float(np.abs(want - ref).max())
    out["alexnet_clgrad_eager_img_s"] = _rate(eager, 1, seconds, dev.synchronize)
    out["alexnet_clgrad_replay_img_s"] = _rate(replayed, 1, seconds, dev.synchronize)
    g = next(e[1] for e in fast._entries.values() if isinstance(e, tuple))
    out["alexnet_replayed_kernels"] = g.num_kernels
    out["alexnet_host_us_per_replayed_command"] = _host_us(g.replay, 50, dev.synchronize,
                                                           g.num_commands)
    out["alexnet_replay_over_eager"] = (out["alexnet_clgrad_replay_img_s"] /
                                        out["alexnet_clgrad_eager_img_s"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default=None, help="CLGRAD_DEVICE for clgrad (cpu, gpu, pocl...)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=5.0, help="timed seconds per mode")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-alexnet", action="store_true", help="skip AlexNet inference")
    args = ap.parse_args()
    if args.device:
        os.environ["CLGRAD_DEVICE"] = args.device
    import numpy as np

    import clgrad
    import train_step as s4
    import zoo_models
    ax = np.random.default_rng(3).standard_normal((1, 3, 227, 227)).astype(np.float32)
    anet_w = anet_ref = None
    xn, yn = (np.random.default_rng(1).standard_normal((args.batch, 1, 28, 28)).astype(
        np.float32), np.random.default_rng(2).integers(0, 10, args.batch).astype(np.int64))
    ws = s4.initial_weights()

    def make():
        model = s4.build(clgrad.nn)
        with clgrad.no_grad():
            for p, v in zip(model.parameters(), ws):
                p.copy_(clgrad.from_numpy(v))
        opt = clgrad.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = clgrad.nn.CrossEntropyLoss()

        def step(x, y):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    row = {"bench": "capture", "model": "S4", "batch": args.batch,
           "time": time.strftime("%Y-%m-%d %H:%M:%S")}
    # PyTorch first, before clgrad makes its OpenCL context: the CPU runtimes' worker threads
    # would otherwise compete with PyTorch's for the same cores.
    if not args.no_torch:
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            gpu = (args.device or "").split(":")[0] in ("gpu", "cuda", "nvidia")
            tdev = "cuda" if gpu and torch.cuda.is_available() else "cpu"
            tstep = s4.torch_step(torch, xn, yn, ws, tdev)
            for _ in range(3):
                tstep()
            row["torch_device"] = tdev
            row["torch_threads"] = torch.get_num_threads()
            sync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
            row["torch_eager_img_s"] = _rate(tstep, args.batch, args.seconds, sync)
            if not args.no_alexnet:
                torch.manual_seed(0)
                tnet = zoo_models.build("alexnet", torch).to(tdev).eval()
                anet_w = {k: v.detach().cpu().numpy() for k, v in tnet.state_dict().items()}
                tax = torch.from_numpy(ax).to(tdev)

                def tinf():
                    with torch.no_grad():
                        return tnet(tax)
                for _ in range(3):
                    tinf()
                sync()
                anet_ref = tinf().cpu().numpy()
                row["alexnet_torch_eager_img_s"] = _rate(tinf, 1, args.seconds, sync)

    dev = clgrad.runtime.default_device()
    row.update(device=dev.name, platform=dev.platform)
    x, y = clgrad.from_numpy(xn), clgrad.from_numpy(yn)
    eager = make()
    for _ in range(3):
        eager(x, y)
    n0 = clgrad.runtime.launch_count()
    eager(x, y)
    dev.synchronize()
    row["kernels_per_step"] = clgrad.runtime.launch_count() - n0
    row["clgrad_eager_img_s"] = _rate(lambda: eager(x, y), args.batch, args.seconds,
                                      dev.synchronize)

    replayed = make()
    replayed(x, y)  # warm-up step (optimizer state, kernels built)
    g = clgrad.cuda.CUDAGraph()
    with clgrad.cuda.graph(g):
        sloss = replayed(x, y)
    g.replay()
    dev.synchronize()
    row["replayed_kernels"] = g.num_kernels
    row["replayed_commands"] = g.num_commands
    row["clgrad_replay_img_s"] = _rate(g.replay, args.batch, args.seconds, dev.synchronize)
    row["host_us_per_replayed_kernel"] = _host_us(g.replay, 200, dev.synchronize,
                                                  g.num_commands)
    row["replay_backend"] = g.replay_backend
    from clgrad.capture import REPLAY_BACKENDS, replay_backends
    probe = replay_backends(dev)
    row["replay_probe_us_per_kernel"] = probe["us_per_kernel"]
    for b in REPLAY_BACKENDS:  # the same graph replayed each way the device allows
        if probe["correct"].get(b):
            g._plan(b)
            row[f"host_us_per_replayed_kernel_{b}"] = _host_us(g.replay, 200, dev.synchronize,
                                                               g.num_commands)
    g._plan()
    row["loss_after"] = float(sloss.item())
    # host cost of replay itself: a graph of 100 tiny kernels (adds on 16 floats)
    t = clgrad.ones(16)
    tiny = clgrad.cuda.CUDAGraph()
    with clgrad.cuda.graph(tiny):
        u = t
        for _ in range(100):
            u = u + 1
    row["host_us_per_tiny_replayed_kernel"] = _host_us(tiny.replay, 100, dev.synchronize,
                                                       tiny.num_kernels)
    host = []
    for _ in range(20):
        dev.synchronize()
        t0 = time.perf_counter()
        u = t
        for _ in range(100):
            u = u + 1
        host.append(time.perf_counter() - t0)
    row["host_us_per_tiny_eager_op"] = statistics.median(host) * 1e6 / 100
    row["replay_over_eager"] = row["clgrad_replay_img_s"] / row["clgrad_eager_img_s"]

    if "torch_eager_img_s" in row:
        row["replay_over_torch"] = row["clgrad_replay_img_s"] / row["torch_eager_img_s"]
    if not args.no_alexnet:
        row.update(_alexnet(clgrad, np, ax, anet_w, anet_ref, args.seconds, dev))
        if "alexnet_torch_eager_img_s" in row:
            row["alexnet_replay_over_torch"] = (row["alexnet_clgrad_replay_img_s"] /
                                                row["alexnet_torch_eager_img_s"])
    line = json.dumps(row)
    print(line)
    out = Path(__file__).resolve().parent / "results" / "capture.jsonl"
    with out.open("a") as f:
        f.write(line + "\n")


if __name__ == "__main__":
    main()
