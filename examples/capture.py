"""Captured steps: record a training step once, then replay its kernels (clgrad/capture.py).

    python examples/capture.py

A small model at a small batch is bound by Python, not by the device; a replay runs the
recorded kernels with no Python per op. This trains the same model three ways from the same
start (eager, ``torch.cuda.CUDAGraph`` by hand, ``torch.compile(mode="reduce-overhead")``) and
prints each way's losses: they are equal bit for bit, since a replay runs the same kernels in
the same order. The README's "Captured steps" block is this file's middle part.
"""
import numpy as np

import clgrad as torch
import clgrad.nn.functional as F


def make(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def batches(n=6, seed=1):
    rng = np.random.default_rng(seed)
    return [(torch.tensor(rng.standard_normal((8, 16), dtype=np.float32)),
             torch.tensor(rng.integers(0, 4, 8))) for _ in range(n)]


def main():
    data = batches()

    model, opt = make()

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    eager = [step(x, y).item() for x, y in data]

    # -- by hand: static inputs, one warm-up step (optimizer state, kernels), then capture ----
    model, opt = make()
    static_x, static_y = data[0][0].clone(), data[0][1].clone()
    graphed = [step(static_x, static_y).item()]          # warm-up: an eager step
    g = torch.cuda.CUDAGraph()                           # works on every OpenCL device
    with torch.cuda.graph(g):                            # records; runs nothing (as PyTorch)
        static_loss = step(static_x, static_y)
    for x, y in data[1:]:
        static_x.copy_(x)
        static_y.copy_(y)
        g.replay()                                       # the recorded kernels, in order
        graphed.append(static_loss.item())

    # -- torch.compile: eager, then capture, then replays ------------------------------------
    model, opt = make()
    compiled = torch.compile(step, mode="reduce-overhead")
    replayed = [compiled(x, y).item() for x, y in data]

    print("eager   ", " ".join(f"{v:.6f}" for v in eager))
    print("CUDAGraph", " ".join(f"{v:.6f}" for v in graphed))
    print("compile ", " ".join(f"{v:.6f}" for v in replayed))
    assert eager == graphed == replayed, "a replay differs from the eager step"
    return eager, graphed, replayed


if __name__ == "__main__":
    main()
